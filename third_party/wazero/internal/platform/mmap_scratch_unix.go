//go:build unix

package platform

import (
	"os"

	"golang.org/x/sys/unix"
)

// MmapScratch allocates size bytes of private, anonymous, read-write
// memory, page-aligned and without huge pages, so that KeepScratchRange can
// release any page of it. (wasmbox patch: a compilation cache entry is read
// into it, verified, and its code made executable in place.)
func MmapScratch(size int) ([]byte, error) {
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
}

// MunmapScratch releases memory from MmapScratch.
func MunmapScratch(b []byte) error { return unix.Munmap(b) }

// KeepScratchRange keeps b[from:to] of the MmapScratch mapping b, where from
// is a multiple of the page size, and releases the pages of b that hold
// nothing of it. The result is released by MunmapCodeSegment. On error, all
// of b is released.
func KeepScratchRange(b []byte, from, to int) ([]byte, error) {
	page := os.Getpagesize()
	if from%page != 0 || from < 0 || to <= from || to > len(b) {
		_ = unix.Munmap(b)
		return nil, errBadRange
	}
	if from > 0 {
		if err := unix.Munmap(b[:from]); err != nil {
			_ = unix.Munmap(b[from:])
			return nil, err
		}
	}
	if end := (to + page - 1) / page * page; end < len(b) {
		if err := unix.Munmap(b[end:]); err != nil {
			_ = unix.Munmap(b[from:end])
			return nil, err
		}
	}
	return b[from:to:to], nil
}
