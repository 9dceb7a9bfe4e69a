//go:build unix

package platform

import (
	"os"

	"golang.org/x/sys/unix"
)

// MmapCodeSegmentFromFile maps size bytes of f at offset (a multiple of
// CodeFileAlignment) as a private, read-only and executable code segment,
// released by MunmapCodeSegment like one of MmapCodeSegment. Its pages are
// read from the file when first executed, not copied up front. It fails,
// and the caller reads the code instead, where the file system forbids
// executable mappings (noexec). (wasmbox patch.)
func MmapCodeSegmentFromFile(f *os.File, offset int64, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), offset, size, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
}
