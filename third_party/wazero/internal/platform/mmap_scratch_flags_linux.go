package platform

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// scratchFlags are the extra flags of MmapScratch (wasmbox patch).
const scratchFlags = 0

// adviseScratch asks for transparent huge pages on the scratch mapping of
// a cache entry (tens of MB read at once): a fault per 2 MiB instead of
// per 4 KiB page. Best effort; the kernel splits them when
// KeepScratchRange releases part of the mapping.
func adviseScratch(p unsafe.Pointer, size int) {
	_ = unix.Madvise(unsafe.Slice((*byte)(p), size), unix.MADV_HUGEPAGE)
}
