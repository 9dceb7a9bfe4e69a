package runtime

import (
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
type MemoryImage struct {
	// Memory is the linear memory, a whole number of 64 KiB pages.
	Memory []byte
	// StackPointer is the exported global __stack_pointer.
	StackPointer uint64
}

// ErrBadImage is wrapped by InstantiateImage's error for an image that
// cannot be an instance's state (its size, its stack pointer).
var ErrBadImage = errors.New("bad memory image")

// Check says why img cannot be loaded under a memory limit of limit bytes.
func (img *MemoryImage) Check(limit uint64) error {
	n := uint64(len(img.Memory))
	switch {
	case n == 0 || n%65536 != 0:
		return fmt.Errorf("%w: %d bytes of memory, not a whole number of 64 KiB pages", ErrBadImage, n)
	case n > limit:
		return fmt.Errorf("%w: %w: the image holds %s of memory, the limit is %s", ErrBadImage, ErrMemoryLimit, FormatBytes(n), FormatBytes(limit))
	case img.StackPointer == 0 || img.StackPointer > n || img.StackPointer%16 != 0:
		return fmt.Errorf("%w: stack pointer %#x outside its %s of memory", ErrBadImage, img.StackPointer, FormatBytes(n))
	}
	return nil
}

// MemoryImage copies the state of the instance, which must be idle (no
// call in progress; the guest's stack unwound).
func (in *Instance) MemoryImage() (*MemoryImage, error) {
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
	return &MemoryImage{Memory: append([]byte(nil), b...), StackPointer: sp.Get()}, nil
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
	if errno := loadMemory(in.mod, img.Memory, img.StackPointer); errno != ErrnoSuccess {
		err := fmt.Errorf("%s: loading the memory image: %w", m.name, ErrBadImage)
		if errno == ErrnoNomem {
			err = fmt.Errorf("%s: %w: the image needs %s of memory", m.name, ErrMemoryLimit, FormatBytes(uint64(len(img.Memory))))
			if lerr := in.LimitError(); lerr != nil {
				err = fmt.Errorf("%s: %w", m.name, lerr)
			}
		}
		in.Close(ctx)
		return nil, err
	}
	return in, nil
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
	size := uint32(len(src))
	if cur := mem.Size(); cur < size {
		if _, ok := mem.Grow((size - cur) / 65536); !ok {
			return ErrnoNomem
		}
	}
	if !mem.Write(0, src) {
		return ErrnoNomem
	}
	g, ok := dst.ExportedGlobal(StackPointerExport).(api.MutableGlobal)
	if !ok {
		return ErrnoNosys
	}
	g.Set(sp)
	return ErrnoSuccess
}
