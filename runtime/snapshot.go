package runtime

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/wasmbox/wasmbox/internal/wasmbin"
	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// Reactor modules and snapshots.
//
// A module that exports _initialize and wasmbox_run (see
// [wasmbin.PrepareReactor]; the tool modules of wasm/ are built so) is a
// wasmbox reactor: _initialize runs the Go runtime's start and every
// package's init once, and wasmbox_run runs one command, reading its
// arguments, environment and working directory from WASI. A Go wasip1
// program keeps nothing on the wasm stack between calls to its exports, so
// the state after _initialize is its linear memory plus its mutable
// globals.
//
// The runtime takes that state once per module — a snapshot — and starts
// every run of the module from it: it instantiates the module (compiled
// without its data section, so instantiation writes no memory), maps the
// snapshot's memory copy-on-write (Linux; elsewhere it copies it), restores
// the globals and calls wasmbox_run. A command then pays for what it does,
// not for the runtime's start.
//
// The snapshot is taken in a fixed world, so that it is the same in every
// process: an empty filesystem preopened as "/" (as every run's), no
// arguments or environment, a clock standing at the Unix epoch and a
// deterministic random source. What the Go runtime derives from them — its
// hash seeds, the state of its internal random generator — is therefore the
// same in every run: a run's randomness comes from random_get calls made
// while it runs (crypto/rand). The monotonic clock of a run is shifted past
// the snapshot's last reading so that the guest never sees it go back.

// SnapshotABI documents the exports of a wasmbox reactor module.
const SnapshotABI = `A wasmbox reactor module exports:
  _initialize: () -> ()      initialize the program, then return
  wasmbox_run: () -> (i32)   run one command; the result is its exit status
                             (proc_exit ends it as usual)
wasmbox_run reads argv, the environment and $PWD from WASI on every call.`

// reactor is what the runtime keeps of a reactor module.
type reactor struct {
	segments []wasmbin.Segment
	globals  []string

	spares *sparePool // nil when the runtime keeps none

	// sem is the lock of what follows: a channel, so that a run waiting
	// for the snapshot another run is taking (its _initialize may run
	// until that run's deadline) gives up at its own deadline.
	sem  chan struct{}
	fs   vfs.FS // the snapshot world's filesystem (nil: empty)
	snap *snapshot
	// failed is why no snapshot can be taken; runs then initialize
	// every instance themselves.
	failed error
}

// snapshot is a module's state after _initialize.
type snapshot struct {
	img      *image
	pages    uint32
	globals  []uint64
	nanotime int64
}

// image is the linear memory of a snapshot.
type image struct {
	size uint64
	fd   int    // a memfd instances map (Linux), or -1
	data []byte // the bytes, when fd is -1
	// stored is what the image holds in memory (the memfd's pages that
	// are not zeros, or the copy), reserved from budget until close.
	stored  uint64
	budget  *Budget
	counter *atomic.Uint64 // the runtime's SnapshotBytes
}

// free gives the image's bytes back to its budget; idempotent.
func (im *image) free() {
	if im.counter != nil {
		im.counter.Add(-im.stored)
		im.counter = nil
	}
	im.budget.Release(im.stored)
	im.budget, im.stored = nil, 0
}

func (im *image) fallback(mem []byte) *image {
	im.data = append([]byte(nil), mem...)
	return im
}

// lock takes sem, or gives up when ctx is done first.
func (rc *reactor) lock(ctx context.Context) error {
	select {
	case rc.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (rc *reactor) unlock() { <-rc.sem }

func (rc *reactor) close() {
	if rc.spares != nil {
		rc.spares.stop()
	}
	_ = rc.lock(context.Background())
	defer rc.unlock()
	if rc.snap != nil {
		rc.snap.img.close()
		rc.snap = nil
	}
	rc.failed = errors.New("module released")
}

// SetSnapshotFS sets the filesystem of the fixed world in which the
// snapshot of a reactor module is taken (by default an empty MemFS): a
// program whose initialization reads files (an interpreter loading its
// standard library) sees fsys, preopened as "/". Call it before the first
// run; it has no effect on a module that is not a reactor or whose
// snapshot is taken already. fsys must read the same in every process for
// the snapshot to be (it is read, never written, by a well-behaved
// module: give a read-only view).
func (m *Module) SetSnapshotFS(fsys vfs.FS) {
	if m.reactor == nil {
		return
	}
	_ = m.reactor.lock(context.Background())
	defer m.reactor.unlock()
	if m.reactor.snap == nil {
		m.reactor.fs = fsys
	}
}

// snapshotOf returns m's snapshot, taking it on first use with the
// memory limit and budget of the run that asks (the snapshot's instance is
// that run's memory while it initializes). It is nil (and runs initialize
// every instance themselves) when snapshots are off or impossible, and
// for now when the asking run's limit or budget is too small for the
// module's initialization: a later run tries again.
func (r *Runtime) snapshotOf(ctx context.Context, m *Module, limit uint64, b *Budget) (*snapshot, error) {
	rc := m.reactor
	if r.noSnapshot || !r.ownWASI {
		return nil, nil
	}
	if err := rc.lock(ctx); err != nil {
		// Another run is taking the snapshot, and this one's context
		// ended first.
		return nil, exitErrorFor(err)
	}
	defer rc.unlock()
	if rc.snap != nil || rc.failed != nil {
		return rc.snap, nil
	}
	snap, err := r.takeSnapshot(ctx, m, limit, b)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			// The run's context ended first: the next run tries again.
			return nil, exitErrorFor(cerr)
		}
		if errors.Is(err, ErrMemoryLimit) {
			// Too small a limit or budget for this run, not a
			// property of the module: the run initializes its own
			// instance (and meets the same limit), the next tries
			// again.
			return nil, nil
		}
		rc.failed = err
		return nil, nil
	}
	rc.snap = snap
	return snap, nil
}

// SnapshotBytes is the memory the runtime's snapshots hold now (counted
// in its budget): the pages of their images that are not zeros.
func (r *Runtime) SnapshotBytes() uint64 { return r.snapBytes.Load() }

// takeSnapshot initializes an instance of m in the fixed world, under
// limit and budget b, and keeps its memory and globals. The image is
// reserved from the runtime's budget for what it stores, before it is
// stored.
func (r *Runtime) takeSnapshot(ctx context.Context, m *Module, limit uint64, b *Budget) (*snapshot, error) {
	var clock int64
	var fsys vfs.FS = vfs.NewMemFS()
	if m.reactor.fs != nil {
		fsys = m.reactor.fs
	}
	st, err := preview1.NewState(preview1.Config{
		FS:       fsys,
		Walltime: func() time.Time { return time.Unix(0, 0) },
		Nanotime: func() int64 { clock += int64(time.Microsecond); return clock },
		Rand:     rand.NewChaCha8([32]byte{'w', 'a', 's', 'm', 'b', 'o', 'x'}),
		Sleep:    func(context.Context, time.Duration) error { return nil },
	})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	// The snapshot is taken under the limit of the run that asks for it:
	// a module whose initialization grows its memory cannot make an image
	// larger than that run may use (every later run checks its own limit
	// against the snapshot's size).
	need := uint64(m.minPages) * 65536
	if need > limit {
		return nil, fmt.Errorf("%s: %w: the module needs %s of initial memory", m.name, ErrMemoryLimit, FormatBytes(need))
	}
	alloc := &limitAllocator{limit: limit, budget: b, live: &r.liveMem}
	if err := alloc.prepay(need); err != nil {
		return nil, fmt.Errorf("%s: snapshot: %w: %w", m.name, ErrMemoryLimit, err)
	}
	defer alloc.release()
	ictx := experimental.WithMemoryAllocator(ctx, alloc)
	ictx = preview1.WithState(ictx, st)
	mod, err := m.instantiate(ictx, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if mod != nil {
		defer mod.Close(context.WithoutCancel(ctx))
	}
	if err != nil {
		return nil, err
	}
	if err := initialize(ictx, mod, m.reactor); err != nil {
		if alloc.hit.Load() {
			return nil, fmt.Errorf("%s: snapshot: %w: %w", m.name, ErrMemoryLimit, err)
		}
		return nil, fmt.Errorf("%s: snapshot: %w", m.name, err)
	}
	snap := &snapshot{pages: mod.Memory().Size() / 65536, nanotime: clock + int64(time.Microsecond)}
	for _, name := range m.reactor.globals {
		g := mod.ExportedGlobal(name)
		if g == nil {
			return nil, fmt.Errorf("%s: snapshot: global %s is not exported", m.name, name)
		}
		snap.globals = append(snap.globals, g.Get())
	}
	mem, _ := mod.Memory().Read(0, mod.Memory().Size())
	if snap.img, err = newImage(mem, r.budget); err != nil {
		return nil, fmt.Errorf("%s: snapshot: %w: %w", m.name, ErrMemoryLimit, err)
	}
	r.snapBytes.Add(snap.img.stored)
	snap.img.counter = &r.snapBytes
	return snap, nil
}

// initialize starts a fresh instance of a reactor: the data section the
// compiled module lacks, then _initialize.
func initialize(ctx context.Context, mod api.Module, rc *reactor) error {
	for _, s := range rc.segments {
		if !mod.Memory().Write(s.Offset, s.Data) {
			return fmt.Errorf("data segment at %d does not fit in memory", s.Offset)
		}
	}
	_, err := callGuest(ctx, mod, mod.ExportedFunction(wasmbin.ExportInitialize))
	return err
}

// restore makes a fresh instance of a reactor the snapshot's: its memory
// is the snapshot's already (alloc mapped or copied it, or failed to);
// grow it to the snapshot's size and set the globals.
func restore(mod api.Module, rc *reactor, snap *snapshot, alloc *limitAllocator) error {
	if alloc.imageErr != nil {
		return alloc.imageErr
	}
	unpin, err := pin(mod)
	if err != nil {
		return err
	}
	defer unpin()
	mem := mod.Memory()
	if cur := mem.Size() / 65536; snap.pages > cur {
		if _, ok := mem.Grow(snap.pages - cur); !ok {
			return fmt.Errorf("%w: the snapshot needs %s of memory", ErrMemoryLimit, FormatBytes(uint64(snap.pages)*65536))
		}
	}
	for i, name := range rc.globals {
		g, ok := mod.ExportedGlobal(name).(api.MutableGlobal)
		if !ok {
			return fmt.Errorf("global %s is not a mutable export", name)
		}
		g.Set(snap.globals[i])
	}
	return nil
}

// execute instantiates m and runs it to its end: a command module's
// _start, or one command of a reactor (from the snapshot when there is
// one, else after initializing the instance).
func (r *Runtime) execute(ctx context.Context, m *Module, mc wazero.ModuleConfig, snap *snapshot, alloc *limitAllocator) (api.Module, error) {
	if m.reactor == nil {
		return runStart(ctx, m, mc)
	}
	mod, err := m.instantiate(ctx, mc.WithName("").WithStartFunctions())
	if err != nil {
		return mod, err
	}
	if snap != nil {
		if err := restore(mod, m.reactor, snap, alloc); err != nil {
			return mod, fmt.Errorf("%s: %w", m.name, err)
		}
	} else if err := initialize(ctx, mod, m.reactor); err != nil {
		return mod, err
	}
	return mod, runCommand(ctx, mod)
}

// runStart instantiates a command module and calls its _start, as wazero's
// InstantiateModule does with the default start function, but under the
// fuel clock (see startFuelClock), which needs the instance: a proc_exit
// of 0 is no error, another is the *sys.ExitError, and a trap is wrapped
// as wazero wraps it ("module[] function[_start] failed: ...").
func runStart(ctx context.Context, m *Module, mc wazero.ModuleConfig) (api.Module, error) {
	mod, err := m.instantiate(ctx, mc.WithName("").WithStartFunctions())
	if err != nil {
		return mod, err
	}
	start := mod.ExportedFunction("_start")
	if start == nil {
		return mod, nil
	}
	if _, err := callGuest(ctx, mod, start); err != nil {
		if se, ok := err.(*sys.ExitError); ok {
			if se.ExitCode() == 0 {
				return mod, nil
			}
			return mod, err
		}
		return mod, fmt.Errorf("module[] function[_start] failed: %w", err)
	}
	return mod, nil
}

// runCommand calls wasmbox_run of a ready reactor instance: the command's
// exit status as a *sys.ExitError (nil for 0).
func runCommand(ctx context.Context, mod api.Module) error {
	res, err := callGuest(ctx, mod, mod.ExportedFunction(wasmbin.ExportRun))
	if err != nil {
		var ee *sys.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 0 {
			return nil
		}
		return err
	}
	if code := uint32(res[0]); code != 0 {
		return sys.NewExitError(code)
	}
	return nil
}
