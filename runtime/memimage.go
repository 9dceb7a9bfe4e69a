package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/wasi/preview1"
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
// forks from it.
//
// On Linux nothing is copied to start an instance from an image: the
// image's pages go into a sealed memfd once (its mapped form, see
// MemoryImage.Hold), which each instance maps privately, copy-on-write,
// at the start of its reserved memory (image_linux.go), and the module's
// data segments are not written over it (wazero patch 12). A guest fork
// does the same with the caller's memory (forkCall), and a new instance of
// a session program starts from the module's fresh image (FreshImage).
// Elsewhere, or when the system refuses the memfd, the bytes are copied
// (loadImage, loadMemory).

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
	runs              []imageRun // ascending, page-aligned
	stored            uint64
	// retained is what the allocations of its runs hold (shared with the
	// images it was taken since: see newMemoryImageSince).
	retained uint64

	// The image's mapped form (Linux): a sealed memfd that instances
	// started from the image map copy-on-write (see image_linux.go), so
	// that starting one copies nothing. Made on the first InstantiateImage
	// while a holder holds the image (Hold), reserved from the runtime's
	// budget, and closed when the last holder lets go (Release); mappings
	// of live instances keep their pages until those instances close.
	mu      sync.Mutex
	holds   int
	mapped  *image
	mapFail bool // the system refused: instances copy
}

// Hold says that the caller will start instances from img (a session
// keeps the image it comes back to after a kill, and forks from): its
// mapped form, once made, is kept until the matching Release.
func (img *MemoryImage) Hold() {
	img.mu.Lock()
	img.holds++
	img.mu.Unlock()
}

// Release ends a Hold. The last one closes the mapped form and gives its
// bytes back to the budget they were reserved from.
func (img *MemoryImage) Release() {
	img.mu.Lock()
	defer img.mu.Unlock()
	if img.holds <= 0 {
		return
	}
	img.holds--
	if img.holds == 0 && img.mapped != nil {
		img.mapped.close()
		img.mapped = nil
	}
}

// Mapped says whether the image's mapped form is open (for tests).
func (img *MemoryImage) Mapped() bool {
	img.mu.Lock()
	defer img.mu.Unlock()
	return img.mapped != nil
}

// mappedForm returns the mapped form of img, made now if needed (reserved
// from b), and whether the caller must close it once its instance is made
// (no holder keeps it); nil when the system cannot map images.
func (img *MemoryImage) mappedForm(b *Budget) (im *image, temp bool) {
	img.mu.Lock()
	defer img.mu.Unlock()
	if img.mapped != nil {
		return img.mapped, false
	}
	if img.mapFail {
		return nil, false
	}
	im, err := newSparseImage(img.size, img.runs, b)
	if err != nil {
		if !errors.Is(err, ErrBudget) {
			img.mapFail = true
		}
		return nil, false
	}
	if img.holds == 0 {
		return im, true
	}
	img.mapped = im
	return im, false
}

// imageRun is a run of adjacent pages of an image.
type imageRun struct {
	off  uint64
	data []byte
	buf  *imageBuf // the allocation data is part of
}

// imageBuf is an allocation that runs of images are parts of: an image
// taken since another (see Instance.MemoryImageSince) shares the pages
// that did not change, and with them their allocations.
type imageBuf struct{ size uint64 }

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
	ib := &imageBuf{size: img.stored}
	for _, sp := range spans {
		start := len(buf)
		buf = append(buf, mem[sp.off:sp.end]...)
		img.runs = append(img.runs, imageRun{off: sp.off, data: buf[start:len(buf):len(buf)], buf: ib})
	}
	img.retained = img.stored
	return img
}

// maxRetained bounds what an image taken since another keeps alive: past
// it, the image is copied whole (see newMemoryImageSince).
func maxRetained(stored uint64) uint64 { return 2*stored + 1<<20 }

// newMemoryImageSince is newMemoryImage, sharing with prev (an image of
// the same memory taken earlier) the pages that have not changed since:
// only the changed ones are copied. What the image keeps alive (the
// allocations its pages are parts of) is bounded by maxRetained: past it,
// it copies everything instead, as newMemoryImage.
func newMemoryImageSince(mem []byte, sp, deadLow, deadHigh uint64, prev *MemoryImage) *MemoryImage {
	if prev == nil || prev.size != uint64(len(mem)) {
		return newMemoryImage(mem, sp, deadLow, deadHigh)
	}
	img := &MemoryImage{size: uint64(len(mem)), sp: sp}
	lo, hi := (deadLow+imagePage-1)&^(imagePage-1), deadHigh&^(imagePage-1)
	if lo < hi && hi <= img.size {
		img.deadLow, img.deadHigh = lo, hi
	}
	type page struct {
		off  uint64
		data []byte // prev's, when unchanged
		buf  *imageBuf
	}
	var pages []page
	changed := uint64(0)
	j := 0 // prev.runs[j] is the first run that does not end before off
	for _, r := range memoryRuns(mem, img.deadLow, img.deadHigh) {
		for off := r.off; off < r.off+uint64(len(r.data)); off += imagePage {
			cur := mem[off : off+imagePage]
			for j < len(prev.runs) && prev.runs[j].off+uint64(len(prev.runs[j].data)) <= off {
				j++
			}
			if j < len(prev.runs) && prev.runs[j].off <= off {
				pr := prev.runs[j]
				if old := pr.data[off-pr.off : off-pr.off+imagePage]; bytes.Equal(old, cur) {
					pages = append(pages, page{off, old, pr.buf})
					continue
				}
			}
			pages = append(pages, page{off: off})
			changed += imagePage
		}
	}
	var nb []byte
	var ib *imageBuf
	if changed > 0 {
		nb = make([]byte, 0, changed)
		ib = &imageBuf{size: changed}
	}
	seen := map[*imageBuf]bool{}
	for _, p := range pages {
		data, buf := p.data, p.buf
		if data == nil {
			start := len(nb)
			nb = append(nb, mem[p.off:p.off+imagePage]...)
			data, buf = nb[start:len(nb):len(nb)], ib
		}
		img.stored += imagePage
		if !seen[buf] {
			seen[buf] = true
			img.retained += buf.size
		}
		// Adjacent in memory and in the same allocation: one run.
		if n := len(img.runs); n > 0 {
			last := &img.runs[n-1]
			if last.buf == buf && last.off+uint64(len(last.data)) == p.off &&
				unsafe.Add(unsafe.Pointer(unsafe.SliceData(last.data)), len(last.data)) == unsafe.Pointer(unsafe.SliceData(data)) {
				last.data = unsafe.Slice(unsafe.SliceData(last.data), len(last.data)+len(data))
				continue
			}
		}
		img.runs = append(img.runs, imageRun{off: p.off, data: data, buf: buf})
	}
	if img.retained > maxRetained(img.stored) {
		return newMemoryImage(mem, sp, deadLow, deadHigh)
	}
	return img
}

// memoryRuns returns the runs of pages of mem that are not zeros, outside
// [deadLow, deadHigh) shrunk to whole pages, as views of mem (no copy).
func memoryRuns(mem []byte, deadLow, deadHigh uint64) []imageRun {
	size := uint64(len(mem))
	lo, hi := (deadLow+imagePage-1)&^(imagePage-1), deadHigh&^(imagePage-1)
	if lo >= hi || hi > size {
		lo, hi = 0, 0
	}
	var runs []imageRun
	for off := uint64(0); off < size; off += imagePage {
		if off >= lo && off < hi {
			off = hi - imagePage
			continue
		}
		end := min(off+imagePage, size)
		if isZeroPage(mem[off:end]) {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1].off+uint64(len(runs[n-1].data)) == off {
			runs[n-1].data = mem[runs[n-1].off:end]
		} else {
			runs = append(runs, imageRun{off: off, data: mem[off:end]})
		}
	}
	return runs
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

// Pages calls fn for each 4 KiB page of the image that is not zeros, in
// ascending order of offset, with a view of its bytes (not to be changed
// or kept): what Bytes holds, without the zeros between.
func (img *MemoryImage) Pages(fn func(off uint64, page []byte)) {
	for _, r := range img.runs {
		for i := uint64(0); i < uint64(len(r.data)); i += imagePage {
			p := r.data[i:min(i+imagePage, uint64(len(r.data)))]
			if !isZeroPage(p) {
				fn(r.off+i, p)
			}
		}
	}
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

// pinner is wazero's module instance (patch 25): its resources stay while
// it is pinned.
type pinner interface {
	EnterCall() error
	ExitCall()
}

// pin keeps mod's resources, its memory above all, from being released
// until unpin is called: for host code that touches them outside any
// call (an instance's setup before it is handed out, a fork's child
// before it runs). A Close of the runtime meanwhile marks mod closed at
// once and releases them at unpin (wazero patch 25), instead of under
// the host's writes, where the memory of an image is a mapping. ok is
// false, and nothing pinned, when mod is closed already; the error then
// wraps ErrClosed.
func pin(mod api.Module) (unpin func(), err error) {
	p, ok := mod.(pinner)
	if !ok {
		return func() {}, nil // not wazero's module instance: nothing is deferred
	}
	if p.EnterCall() != nil {
		return nil, fmt.Errorf("%w: the instance was closed while it was made", ErrClosed)
	}
	return p.ExitCall, nil
}

// MemoryImage copies the state of the instance, which must be idle (no
// call in progress; the guest's stack unwound). stackLow, when not 0, is
// the lowest address of the guest's shadow stack: the stack between it
// and the __stack_pointer is dead while the guest is idle, and the image
// does not keep it.
func (in *Instance) MemoryImage(stackLow uint64) (*MemoryImage, error) {
	return in.MemoryImageSince(stackLow, nil)
}

// MemoryImageSince is MemoryImage, sharing with prev (an image of this
// instance's memory taken earlier, or nil) the pages that did not change
// since: a session that takes the image of its idle point after every run
// copies only what the run changed.
func (in *Instance) MemoryImageSince(stackLow uint64, prev *MemoryImage) (*MemoryImage, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed.Load() || in.dead != nil || in.mod == nil {
		return nil, fmt.Errorf("%s: %w", in.m.name, ErrInstanceDead)
	}
	// Pinned: a concurrent Close (the instance's or the runtime's)
	// releases the memory only after the copy (wazero patch 25).
	p, ok := in.mod.(pinner)
	if !ok || p.EnterCall() != nil {
		return nil, fmt.Errorf("%s: %w", in.m.name, ErrInstanceDead)
	}
	defer p.ExitCall()
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
	return newMemoryImageSince(b, spv, lo, hi, prev), nil
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
	var in *Instance
	var err error
	if im, temp := img.mappedForm(r.budget); im != nil && m.reactor == nil {
		// The memory is the image, mapped copy-on-write: nothing is
		// copied (a page is when the guest first writes it).
		in, err = r.instantiate(ctx, m, opts, im)
		if temp {
			im.close() // the instance's mapping keeps what it maps
		}
		if err != nil {
			return nil, err
		}
		unpin, err := pin(in.mod)
		if err != nil {
			in.Close(ctx)
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
		defer unpin()
		if errno := growTo(in.mod.Memory(), uint32(img.size)); errno != ErrnoSuccess {
			in.Close(ctx)
			err = fmt.Errorf("%s: %w: the image needs %s of memory", m.name, ErrMemoryLimit, FormatBytes(img.size))
			if lerr := in.LimitError(); lerr != nil {
				err = fmt.Errorf("%s: %w", m.name, lerr)
			}
			return nil, err
		}
		if errno := setStackPointer(in.mod, img.sp); errno != ErrnoSuccess {
			in.Close(ctx)
			return nil, fmt.Errorf("%s: loading the memory image: %w", m.name, ErrBadImage)
		}
		return in, nil
	} else if temp {
		im.close()
	}
	in, err = r.Instantiate(ctx, m, opts)
	if err != nil {
		return nil, err
	}
	unpin, err := pin(in.mod)
	if err != nil {
		in.Close(ctx)
		return nil, fmt.Errorf("%s: %w", m.name, err)
	}
	defer unpin()
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

// StackLowExport is the export of a build/posix guest that returns the
// lowest address of its shadow stack (wasm-ld's __stack_low).
const StackLowExport = "wasmbox_session_stack_low"

// ErrNoFreshImage is FreshImage's error for a module whose fresh state is
// not its memory alone: it has a start function, which runs at every
// instantiation, or it is a reactor module (see SnapshotABI), whose
// instances start from its snapshot.
var ErrNoFreshImage = errors.New("the module has no fresh image")

// FreshImage returns the state of a new instance of m before any of its
// code runs: its memory as its data segments make it, and its initial
// __stack_pointer. An instance started from it (InstantiateImage) is the
// same as one Instantiate makes, but maps the image copy-on-write instead
// of allocating a zeroed memory and writing the segments into it: for GNU
// bash, whose initial memory is 8.6 MiB, that allocation was most of a new
// session. It is made once per module, on first use, from an instance in
// which nothing runs; the module holds it (its mapped form is reserved
// from the runtime's budget) until the module is released.
func (r *Runtime) FreshImage(ctx context.Context, m *Module) (*MemoryImage, error) {
	if m.reactor != nil || m.startSec {
		return nil, fmt.Errorf("%s: %w", m.name, ErrNoFreshImage)
	}
	m.freshMu.Lock()
	defer m.freshMu.Unlock()
	if m.fresh != nil || m.freshErr != nil {
		return m.fresh, m.freshErr
	}
	st, err := preview1.NewState(preview1.Config{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	in, err := r.Instantiate(ctx, m, InstanceOptions{WASI: st})
	if err != nil {
		return nil, err // a budget or a context: tried again next time
	}
	defer in.Close(ctx)
	unpin, err := pin(in.mod)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.name, err)
	}
	mem := in.mod.Memory()
	sp, ok := in.mod.ExportedGlobal(StackPointerExport).(api.MutableGlobal)
	if mem == nil || !ok {
		unpin()
		m.freshErr = fmt.Errorf("%s: %w: no memory or no exported %s", m.name, ErrNoFreshImage, StackPointerExport)
		return nil, m.freshErr
	}
	b, _ := mem.Read(0, mem.Size())
	img := NewMemoryImage(b, sp.Get())
	unpin()
	if in.mod.ExportedFunction(StackLowExport) != nil {
		// A constant of the module (wasm-ld's __stack_low): forks of
		// its instances need not copy the stack below their
		// __stack_pointer (see forkCall).
		if res, err := in.Call(ctx, StackLowExport); err == nil && len(res) == 1 {
			m.stackLow.Store(uint64(uint32(res[0])))
		}
	}
	img.Hold()
	m.fresh = img
	return img, nil
}

// dropFresh lets go of the module's fresh image (instances mapped from it
// keep their mappings).
func (m *Module) dropFresh() {
	m.freshMu.Lock()
	defer m.freshMu.Unlock()
	if m.fresh != nil {
		m.fresh.Release()
		m.fresh = nil
	}
}
