package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/wasmbox/wasmbox/third_party/wazero/api"
)

// Memory images of idle instances.
//
// A C guest built with build/posix keeps its whole state in its linear
// memory and its __stack_pointer once its stack is unwound (Asyncify): at
// a fork (see ForkABI), and while a session program waits for its next
// call (build/posix/src/session.c). MemoryImage is that state, taken from
// an idle instance; InstantiateImage starts a new instance of the same
// module in it. A session keeps the image of its last idle point, and
// comes back to it after a killed call (a new instance from the image), or
// forks from it. fork and InstantiateImage share the copy (loadMemory).

// MemoryImage is the state of an idle instance of a build/posix guest.
// The host treats its bytes as the guest's: it runs them inside the
// guest's boundary, never interprets them.
//
// It holds only the 4 KiB pages that are not zeros, and not those of its
// dead range: the shadow stack below the idle guest's __stack_pointer,
// whose content no frame uses (see Instance.MemoryImage). An idle bash
// session has 8.6 MiB of memory, most of it its 8 MiB stack, and its image
// holds about 400 KiB.
type MemoryImage struct {
	size uint64
	sp   uint64
	// deadLow, deadHigh: the dead range, whole pages; the pages there
	// are neither kept nor cleared when the image is loaded.
	deadLow, deadHigh uint64
	runs              []imageRun // ascending, page-aligned, non-adjacent
	stored            uint64
}

// imageRun is a run of adjacent pages of an image.
type imageRun struct {
	off  uint64
	data []byte
}

const imagePage = 4096

// NewMemoryImage makes an image of a memory mem (a whole number of 64 KiB
// pages) and stack pointer sp. It copies what it keeps of mem.
func NewMemoryImage(mem []byte, sp uint64) *MemoryImage {
	return newMemoryImage(mem, sp, 0, 0)
}

func newMemoryImage(mem []byte, sp, deadLow, deadHigh uint64) *MemoryImage {
	img := &MemoryImage{size: uint64(len(mem)), sp: sp}
	// The dead range, shrunk to whole pages.
	lo, hi := (deadLow+imagePage-1)&^(imagePage-1), deadHigh&^(imagePage-1)
	if lo < hi && hi <= img.size {
		img.deadLow, img.deadHigh = lo, hi
	}
	type span struct{ off, end uint64 }
	var spans []span
	for off := uint64(0); off < img.size; off += imagePage {
		if off >= img.deadLow && off < img.deadHigh {
			off = img.deadHigh - imagePage
			continue
		}
		end := min(off+imagePage, img.size)
		if isZeroPage(mem[off:end]) {
			continue
		}
		if n := len(spans); n > 0 && spans[n-1].end == off {
			spans[n-1].end = end
		} else {
			spans = append(spans, span{off, end})
		}
		img.stored += end - off
	}
	buf := make([]byte, 0, img.stored)
	for _, sp := range spans {
		start := len(buf)
		buf = append(buf, mem[sp.off:sp.end]...)
		img.runs = append(img.runs, imageRun{off: sp.off, data: buf[start:len(buf):len(buf)]})
	}
	return img
}

var zeroPage [imagePage]byte

func isZeroPage(b []byte) bool { return bytes.Equal(b, zeroPage[:len(b)]) }

// Size is the size of the image's linear memory in bytes.
func (img *MemoryImage) Size() uint64 { return img.size }

// StackPointer is the image's __stack_pointer.
func (img *MemoryImage) StackPointer() uint64 { return img.sp }

// Stored is how many bytes of memory the image holds.
func (img *MemoryImage) Stored() uint64 { return img.stored }

// Bytes returns the whole memory of the image (zeros in its dead range).
func (img *MemoryImage) Bytes() []byte {
	b := make([]byte, img.size)
	for _, r := range img.runs {
		copy(b[r.off:], r.data)
	}
	return b
}

// ErrBadImage is wrapped by InstantiateImage's error for an image that
// cannot be an instance's state (its size, its stack pointer).
var ErrBadImage = errors.New("bad memory image")

// Check says why img cannot be loaded under a memory limit of limit bytes.
func (img *MemoryImage) Check(limit uint64) error {
	n := img.size
	switch {
	case n == 0 || n%65536 != 0 || n > 1<<32:
		return fmt.Errorf("%w: %d bytes of memory, not a whole number of 64 KiB pages", ErrBadImage, n)
	case n > limit:
		return fmt.Errorf("%w: %w: the image holds %s of memory, the limit is %s", ErrBadImage, ErrMemoryLimit, FormatBytes(n), FormatBytes(limit))
	case img.sp == 0 || img.sp > n || img.sp%16 != 0:
		return fmt.Errorf("%w: stack pointer %#x outside its %s of memory", ErrBadImage, img.sp, FormatBytes(n))
	}
	return nil
}

// MemoryImage copies the state of the instance, which must be idle (no
// call in progress; the guest's stack unwound). stackLow, when not 0, is
// the lowest address of the guest's shadow stack: the stack between it
// and the __stack_pointer is dead while the guest is idle, and the image
// does not keep it.
func (in *Instance) MemoryImage(stackLow uint64) (*MemoryImage, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed.Load() || in.dead != nil || in.mod == nil {
		return nil, fmt.Errorf("%s: %w", in.m.name, ErrInstanceDead)
	}
	mem := in.mod.Memory()
	sp, ok := in.mod.ExportedGlobal(StackPointerExport).(api.MutableGlobal)
	if mem == nil || !ok {
		return nil, fmt.Errorf("%s: no memory or no exported %s", in.m.name, StackPointerExport)
	}
	b, ok := mem.Read(0, mem.Size())
	if !ok {
		return nil, fmt.Errorf("%s: reading memory", in.m.name)
	}
	spv := sp.Get()
	var lo, hi uint64
	if stackLow != 0 && stackLow < spv && spv <= uint64(len(b)) {
		lo, hi = stackLow, spv
		// The dead stack's bytes that share a page with live data are
		// kept: they are cleared first, so that an image holds nothing
		// of what the guest did before (the same program and inputs give
		// the same image, whatever frames ran last).
		clear(b[max(lo, hi&^(imagePage-1)):hi])
		clear(b[lo:min(hi, (lo+imagePage-1)&^(imagePage-1))])
	}
	return newMemoryImage(b, spv, lo, hi), nil
}

// InstantiateImage starts a live instance of m in the state img (see
// MemoryImage): an instance of m whose memory and __stack_pointer are
// img's. No function of it runs. An image larger than the instance's
// memory limit, or that the budget has no room for, is an error.
func (r *Runtime) InstantiateImage(ctx context.Context, m *Module, img *MemoryImage, opts InstanceOptions) (*Instance, error) {
	limit := opts.MemoryLimit
	if limit == 0 {
		limit = r.memLimit
	}
	if err := img.Check(limit); err != nil {
		return nil, fmt.Errorf("%s: %w", m.name, err)
	}
	in, err := r.Instantiate(ctx, m, opts)
	if err != nil {
		return nil, err
	}
	if errno := loadImage(in.mod, img); errno != ErrnoSuccess {
		err := fmt.Errorf("%s: loading the memory image: %w", m.name, ErrBadImage)
		if errno == ErrnoNomem {
			err = fmt.Errorf("%s: %w: the image needs %s of memory", m.name, ErrMemoryLimit, FormatBytes(img.size))
			if lerr := in.LimitError(); lerr != nil {
				err = fmt.Errorf("%s: %w", m.name, lerr)
			}
		}
		in.Close(ctx)
		return nil, err
	}
	return in, nil
}

// loadImage makes a fresh instance's memory img's: it writes the pages
// img keeps, clears the others that are not zeros already (outside the
// dead range), and sets __stack_pointer.
func loadImage(dst api.Module, img *MemoryImage) uint32 {
	mem := dst.Memory()
	if mem == nil {
		return ErrnoNosys
	}
	if errno := growTo(mem, uint32(img.size)); errno != ErrnoSuccess {
		return errno
	}
	b, ok := mem.Read(0, uint32(img.size))
	if !ok {
		return ErrnoNomem
	}
	next := uint64(0)
	clearTo := func(end uint64) {
		for off := next; off < end; off += imagePage {
			if off >= img.deadLow && off < img.deadHigh {
				off = img.deadHigh - imagePage
				continue
			}
			if p := b[off:min(off+imagePage, end)]; !isZeroPage(p) {
				clear(p)
			}
		}
	}
	for _, r := range img.runs {
		clearTo(r.off)
		copy(b[r.off:], r.data)
		next = r.off + uint64(len(r.data))
	}
	clearTo(img.size)
	return setStackPointer(dst, img.sp)
}

func growTo(mem api.Memory, size uint32) uint32 {
	if cur := mem.Size(); cur < size {
		if _, ok := mem.Grow((size - cur) / 65536); !ok {
			return ErrnoNomem
		}
	}
	return ErrnoSuccess
}

func setStackPointer(dst api.Module, sp uint64) uint32 {
	g, ok := dst.ExportedGlobal(StackPointerExport).(api.MutableGlobal)
	if !ok {
		return ErrnoNosys
	}
	g.Set(sp)
	return ErrnoSuccess
}

// loadMemory makes dst's linear memory src (its size and bytes) and its
// __stack_pointer sp: the copy of fork and of InstantiateImage. It
// returns ErrnoNomem when the memory cannot grow to src's size, ErrnoNosys
// when dst has no memory or no exported __stack_pointer.
func loadMemory(dst api.Module, src []byte, sp uint64) uint32 {
	mem := dst.Memory()
	if mem == nil {
		return ErrnoNosys
	}
	if errno := growTo(mem, uint32(len(src))); errno != ErrnoSuccess {
		return errno
	}
	if !mem.Write(0, src) {
		return ErrnoNomem
	}
	return setStackPointer(dst, sp)
}
