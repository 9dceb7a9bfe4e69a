//go:build unix

package platform

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MmapScratch allocates size bytes of private, anonymous, read-write
// memory, page-aligned and without huge pages, so that KeepScratchRange can
// release any page of it. (wasmbox patch: a compilation cache entry is read
// into it, verified, and its code made executable in place.) It is mapped
// with the raw system call (unix.MmapPtr), not unix.Mmap, whose bookkeeping
// only lets a mapping be released whole.
func MmapScratch(size int) ([]byte, error) {
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE|scratchFlags)
	if err != nil {
		return nil, err
	}
	adviseScratch(p, size)
	return unsafe.Slice((*byte)(p), size), nil
}

// MunmapScratch releases memory from MmapScratch (whole or part).
func MunmapScratch(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)))
}

// KeepScratchRange keeps b[from:to] of the MmapScratch mapping b, where from
// is a multiple of the page size, and releases the pages of b that hold
// nothing of it. The result is released by MunmapCodeSegment. On error, all
// of b is released.
func KeepScratchRange(b []byte, from, to int) ([]byte, error) {
	page := os.Getpagesize()
	if from%page != 0 || from < 0 || to <= from || to > len(b) {
		_ = MunmapScratch(b)
		return nil, errBadRange
	}
	end := min((to+page-1)/page*page, len(b))
	if from > 0 {
		if err := MunmapScratch(b[:from]); err != nil {
			_ = MunmapScratch(b[from:])
			return nil, err
		}
	}
	if end < len(b) {
		if err := MunmapScratch(b[end:]); err != nil {
			_ = MunmapScratch(b[from:end])
			return nil, err
		}
	}
	return b[from:to:to], nil
}
