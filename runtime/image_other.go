//go:build !linux

package runtime

import "errors"

// Elsewhere instances copy the image into memory of their own.

// newImage copies mem, after reserving its size from b.
func newImage(mem []byte, b *Budget) (*image, error) {
	im := &image{size: uint64(len(mem)), fd: -1}
	if err := b.Reserve(uint64(len(mem))); err != nil {
		return nil, err
	}
	im.stored, im.budget = uint64(len(mem)), b
	return im.fallback(mem), nil
}

func (im *image) close() { im.free() }

type mappedMemory struct{}

func (im *image) mapMemory(uint64) (*mappedMemory, error) {
	return nil, errors.New("snapshot mapping is not supported on this system")
}

func (m *mappedMemory) bytes(uint64) []byte { return nil }

func (m *mappedMemory) free() {}

func (im *image) copyTo(buf []byte) error {
	copy(buf, im.data)
	return nil
}

// newSparseImage: images are not mapped on this system (the caller copies).
func newSparseImage(uint64, []imageRun, *Budget) (*image, error) {
	return nil, errors.New("memory images are not mapped on this system")
}
