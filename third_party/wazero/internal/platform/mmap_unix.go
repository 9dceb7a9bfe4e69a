//go:build unix

package platform

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

func munmapCodeSegment(code []byte) error {
	err := unix.Munmap(code)
	if errors.Is(err, unix.EINVAL) {
		// wasmbox patch: code kept from an MmapScratch mapping
		// (KeepScratchRange) was mapped with the raw system call, which
		// unix.Munmap's bookkeeping does not know.
		err = unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(code)), uintptr(len(code)))
	}
	return err
}

// MprotectCodeSegment is like unix.Mprotect with RX permission.
func MprotectCodeSegment(b []byte) (err error) {
	return unix.Mprotect(b, unix.PROT_READ|unix.PROT_EXEC)
}
