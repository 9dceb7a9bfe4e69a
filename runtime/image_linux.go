//go:build linux

package runtime

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On Linux the image lives in a sealed memfd that every instance maps
// privately (copy-on-write) at the start of an address range reserved up to
// its memory limit: starting an instance copies nothing, pages the guest
// only reads stay shared by all instances, and the guest's memory grows in
// place (no reallocation, no copy) by opening more of the reserved range.

// newImage stores mem in a sealed memfd (its pages of zeros are holes),
// or else in a copy, after reserving from b what it stores.
func newImage(mem []byte, b *Budget) (*image, error) {
	im := &image{size: uint64(len(mem)), fd: -1}
	// What the memfd holds: the pages that are not zeros.
	sparse := uint64(0)
	for off := 0; off < len(mem); off += 4096 {
		if !isZero(mem[off:min(off+4096, len(mem))]) {
			sparse += uint64(min(4096, len(mem)-off))
		}
	}
	if err := b.Reserve(sparse); err != nil {
		return nil, err
	}
	im.stored, im.budget = sparse, b
	fallback := func() (*image, error) {
		// The copy holds every byte: reserve the rest.
		if err := b.Reserve(im.size - sparse); err != nil {
			im.free()
			return nil, err
		}
		im.stored = im.size
		return im.fallback(mem), nil
	}
	fd, err := unix.MemfdCreate("wasmbox-snapshot", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return fallback()
	}
	if err := writeSparse(fd, mem); err != nil {
		unix.Close(fd)
		return fallback()
	}
	// Sealed, the image cannot change under the instances mapping it.
	_, _ = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL)
	im.fd = fd
	// Prove the mapping works here (a seccomp filter or a kernel may
	// refuse it); if not, instances copy the bytes instead.
	mm, err := im.mapMemory(im.size)
	if err != nil {
		unix.Close(fd)
		im.fd = -1
		return fallback()
	}
	mm.free()
	return im, nil
}

// writeSparse fills the memfd with mem, skipping pages of zeros (the file
// reads them as zeros without storing them).
func writeSparse(fd int, mem []byte) error {
	if err := unix.Ftruncate(fd, int64(len(mem))); err != nil {
		return err
	}
	const page = 4096
	for off := 0; off < len(mem); {
		if isZero(mem[off:min(off+page, len(mem))]) {
			off += page
			continue
		}
		end := off + page
		for end < len(mem) && !isZero(mem[end:min(end+page, len(mem))]) {
			end += page
		}
		end = min(end, len(mem))
		for p := off; p < end; {
			n, err := unix.Pwrite(fd, mem[p:end], int64(p))
			if err != nil {
				return err
			}
			p += n
		}
		off = end
	}
	return nil
}

func isZero(b []byte) bool {
	for len(b) >= 8 {
		if *(*uint64)(unsafe.Pointer(&b[0])) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// copyTo copies the image to the start of buf.
func (im *image) copyTo(buf []byte) error {
	if im.fd < 0 {
		copy(buf, im.data)
		return nil
	}
	buf = buf[:im.size]
	for off := 0; off < len(buf); {
		n, err := unix.Pread(im.fd, buf[off:], int64(off))
		if err != nil {
			return fmt.Errorf("reading snapshot: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("reading snapshot: short file")
		}
		off += n
	}
	return nil
}

func (im *image) close() {
	if im.fd >= 0 {
		unix.Close(im.fd)
		im.fd = -1
	}
	im.free()
}

// mappedMemory is a linear memory mapped from an image.
type mappedMemory struct {
	base      unsafe.Pointer
	reserve   uint64 // bytes of address space reserved at base
	committed uint64 // bytes at base the guest may use
}

// mapMemory reserves reserve bytes (at least the image) and maps the image
// at their start. It fails when the image is not in a memfd.
func (im *image) mapMemory(reserve uint64) (*mappedMemory, error) {
	if im.fd < 0 {
		return nil, fmt.Errorf("snapshot image is not mapped")
	}
	reserve = roundPage(max(reserve, im.size))
	base, err := unix.MmapPtr(-1, 0, nil, uintptr(reserve), unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("reserving memory: %w", err)
	}
	if im.size > 0 {
		if _, err := unix.MmapPtr(im.fd, 0, base, uintptr(im.size), unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
			_ = unix.MunmapPtr(base, uintptr(reserve))
			return nil, fmt.Errorf("mapping snapshot: %w", err)
		}
	}
	return &mappedMemory{base: base, reserve: reserve, committed: im.size}, nil
}

// bytes returns the first size bytes, opening the reserved range up to
// size when the memory grows; nil when size is past the reservation.
func (m *mappedMemory) bytes(size uint64) []byte {
	if size > m.reserve {
		return nil
	}
	if size > m.committed {
		to := roundPage(size)
		b := unsafe.Slice((*byte)(unsafe.Add(m.base, m.committed)), to-m.committed)
		if err := unix.Mprotect(b, unix.PROT_READ|unix.PROT_WRITE); err != nil {
			return nil
		}
		m.committed = to
	}
	return unsafe.Slice((*byte)(m.base), size)
}

func (m *mappedMemory) free() {
	if m.base != nil {
		_ = unix.MunmapPtr(m.base, uintptr(m.reserve))
		m.base = nil
	}
}

func roundPage(n uint64) uint64 {
	const page = 65536 // wasm's page, a multiple of the host's
	return (n + page - 1) &^ (page - 1)
}

// newSparseImage stores a memory of size bytes whose non-zero pages are
// runs (each at its offset) in a sealed memfd, after reserving from b
// what it stores; an error when the system cannot map one (the caller
// then copies instead).
func newSparseImage(size uint64, runs []imageRun, b *Budget) (*image, error) {
	stored := uint64(0)
	for _, r := range runs {
		stored += uint64(len(r.data))
	}
	if err := b.Reserve(stored); err != nil {
		return nil, err
	}
	im := &image{size: size, fd: -1, stored: stored, budget: b}
	fd, err := unix.MemfdCreate("wasmbox-image", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		im.free()
		return nil, err
	}
	fail := func(err error) (*image, error) {
		unix.Close(fd)
		im.free()
		return nil, err
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return fail(err)
	}
	for _, r := range runs {
		for p := 0; p < len(r.data); {
			n, err := unix.Pwrite(fd, r.data[p:], int64(r.off)+int64(p))
			if err != nil {
				return fail(err)
			}
			p += n
		}
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		return fail(err)
	}
	im.fd = fd
	return im, nil
}
