package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// Live instances.
//
// Run starts an instance for one command and closes it when the command
// ends. An Instance instead lives across calls: the guest keeps its state
// in its memory between them, as the wasm shell of a sandbox session keeps
// the shell's variables, functions and working directory. Each call runs
// under its own context: when it is done the guest ends wherever it is
// (the fuel of its loops, and every blocking host call, watch it) and the
// instance is dead; a caller that needs the state back starts a new
// instance and restores it. The children a call spawns through the process
// ABI never outlive the call.
//
// An instance of a reactor module starts from the module's snapshot, like a
// run, and is counted by LiveInstances until it is closed.

// InstanceOptions configure an Instance.
type InstanceOptions struct {
	// MemoryLimit in bytes; 0 means the runtime's default.
	MemoryLimit uint64
	// WASI is the instance's state for wasmbox's WASI module, kept for
	// its whole life (the descriptor table, the preopen, clocks). Required
	// with wasmbox's WASI. The instance does not close it.
	WASI *preview1.State
	// FS is what the metadata calls act on (see RunOptions.FS).
	FS vfs.FS
	// Spawner receives spawn and process ABI children; nil refuses them.
	Spawner Spawner
	// Budget is what the instance's memory is reserved from, for as long
	// as it lives (see RunOptions.Budget); nil means the runtime's own.
	Budget *Budget
	// OnMemoryLimit, when set, is called (on the guest's goroutine, from
	// inside memory.grow) when the guest asks for memory past its limit.
	// The guest sees memory.grow fail; a caller that wants it ended at
	// once cancels the call's context here.
	OnMemoryLimit func()
	// OnForkLimit, when set, is called when the process tree of a call
	// (its forked children, theirs, and the children of the commands
	// they spawn; see ForkABI and MaxProcesses) meets a limit: a fork
	// refused because its copy does not fit in the memory limit or the
	// budget, or a forked child asking for memory past them (err wraps
	// ErrMemoryLimit), or a fork or process ABI child refused because
	// MaxProcesses processes run (err is ErrProcessLimit). The guest sees
	// ENOMEM, EAGAIN or memory.grow fail; a caller that wants the call
	// ended cancels its context here. It may be called from any
	// goroutine of the tree, more than once.
	OnForkLimit func(err error)
	// MaxProcesses bounds the processes of a call's tree running at once
	// (see the package's MaxProcesses, which is also the default and the
	// most it may be).
	MaxProcesses int
}

// Instance is a live instance of a module. Its methods are safe for
// concurrent use, but calls into the guest are serialized.
type Instance struct {
	r     *Runtime
	m     *Module
	opts  InstanceOptions
	mod   api.Module
	alloc *limitAllocator

	mu     sync.Mutex // serializes calls
	closed atomic.Bool
	// cancelCall ends the call in progress (Close sets off its end).
	cancelCall atomic.Pointer[context.CancelCauseFunc]
	dead       error // why the guest ended, once it has
	counted    atomic.Bool
}

// ErrInstanceDead is wrapped by the error of a call on an instance whose
// guest ended (killed by a call's context, exited, trapped, over its memory
// limit) or that was closed.
var ErrInstanceDead = errors.New("instance is no longer running")

// Instantiate starts a live instance of m. ctx bounds the start (the
// module's _initialize runs when there is no snapshot).
func (r *Runtime) Instantiate(ctx context.Context, m *Module, opts InstanceOptions) (*Instance, error) {
	return r.instantiate(ctx, m, opts, nil)
}

// instantiate is Instantiate; with mapped (not nil, and m no reactor) the
// memory starts as that image, mapped copy-on-write, and the module's
// active data segments are not written (the image holds a later state of
// the same memory).
func (r *Runtime) instantiate(ctx context.Context, m *Module, opts InstanceOptions, mapped *image) (*Instance, error) {
	if m.reactor != nil {
		mapped = nil
	}
	if r.ownWASI && opts.WASI == nil {
		return nil, errors.New("runtime: Instantiate needs InstanceOptions.WASI")
	}
	limit := opts.MemoryLimit
	if limit == 0 {
		limit = r.memLimit
	}
	opts.MemoryLimit = limit
	b := opts.Budget
	if b == nil {
		b = r.budget
	}
	var snap *snapshot
	if m.reactor != nil {
		var err error
		if snap, err = r.snapshotOf(ctx, m, limit, b); err != nil {
			return nil, err
		}
	}
	need := uint64(m.minPages) * 65536
	if snap != nil {
		need = max(need, uint64(snap.pages)*65536)
	}
	if mapped != nil {
		need = max(need, mapped.size)
	}
	if need > limit {
		return nil, fmt.Errorf("%s: %w: the module needs %s of initial memory, the limit is %s",
			m.name, ErrMemoryLimit, FormatBytes(need), FormatBytes(limit))
	}
	// The initial memory is admitted before the instance is made.
	alloc := &limitAllocator{limit: limit, budget: b, live: &r.liveMem}
	if err := alloc.prepay(need); err != nil {
		return nil, fmt.Errorf("%s: %w: the module needs %s of initial memory: %w", m.name, ErrMemoryLimit, FormatBytes(need), err)
	}
	if !m.acquire() {
		alloc.release()
		return nil, fmt.Errorf("%s: %w", m.name, ErrReleased)
	}
	in := &Instance{r: r, m: m, opts: opts}
	cctx := in.callCtx(ctx)
	if snap != nil {
		opts.WASI.ShiftMonotonic(snap.nanotime)
	}
	if s := r.takeSpare(m, snap, limit, alloc); s != nil {
		in.mod, in.alloc = s.mod, s.alloc
		in.alloc.setOnHit(opts.OnMemoryLimit)
		// The spare counts itself as live (see newSpare).
		return in, nil
	}
	in.alloc = alloc
	in.alloc.setOnHit(opts.OnMemoryLimit)
	if snap != nil {
		in.alloc.image = snap.img
	}
	if mapped != nil {
		in.alloc.image = mapped
	}
	r.live.Add(1)
	in.counted.Store(true)
	notify := experimental.CloseNotifyFunc(func(context.Context, uint32) {
		if in.counted.CompareAndSwap(true, false) {
			r.live.Add(-1)
		}
	})
	ictx := experimental.WithMemoryAllocator(cctx, in.alloc)
	ictx = experimental.WithCloseNotifier(ictx, notify)
	if mapped != nil {
		ictx = experimental.WithoutActiveData(ictx)
	}
	mod, err := m.instantiate(ictx, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	in.mod = mod
	if err == nil && testHookInstantiated != nil {
		testHookInstantiated(mod)
	}
	if err == nil && mapped != nil && in.alloc.imageErr != nil {
		err = in.alloc.imageErr
	}
	if err == nil && m.reactor != nil {
		if snap != nil {
			err = restore(mod, m.reactor, snap, in.alloc)
		} else {
			err = initialize(cctx, mod, m.reactor)
		}
	}
	if err != nil {
		in.Close(ctx)
		return nil, fmt.Errorf("%s: %w", m.name, err)
	}
	return in, nil
}

// testHookInstantiated, set by tests only, runs between the making of an
// instance's module and its setup (image, snapshot): where a Close of the
// runtime must not release the memory under the setup's writes.
var testHookInstantiated func(api.Module)

// callCtx is ctx with what the host functions of a call look up.
func (in *Instance) callCtx(ctx context.Context) context.Context {
	cctx := context.WithValue(ctx, spawnerKey{}, in.opts.Spawner)
	if in.opts.FS != nil {
		cctx = context.WithValue(cctx, metaFSKey{}, in.opts.FS)
	}
	if in.r.ownWASI {
		cctx = preview1.WithState(cctx, in.opts.WASI)
	}
	b := in.opts.Budget
	if b == nil {
		b = in.r.budget
	}
	cctx = context.WithValue(cctx, forkEnvKey{}, &forkEnv{r: in.r, m: in.m, limit: in.opts.MemoryLimit, budget: b, onLimit: in.opts.OnForkLimit})
	return cctx
}

// Call calls the exported function name with params and returns its
// results. When ctx is done during the call, the guest ends at once and
// the error is a *sys.ExitError that errors.Is context.DeadlineExceeded or
// context.Canceled; a guest that exits, traps or fails after hitting its
// memory limit (errors.Is ErrMemoryLimit) ends too. After any of these,
// every later call fails with ErrInstanceDead. The children the call
// spawned (process ABI) are stopped and waited for before Call returns.
func (in *Instance) Call(ctx context.Context, name string, params ...uint64) ([]uint64, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed.Load() {
		return nil, fmt.Errorf("%s: %w", in.m.name, ErrInstanceDead)
	}
	if in.dead != nil {
		return nil, fmt.Errorf("%s: %w: %w", in.m.name, ErrInstanceDead, in.dead)
	}
	f := in.mod.ExportedFunction(name)
	if f == nil {
		return nil, fmt.Errorf("%s: no exported function %s", in.m.name, name)
	}
	callCtx, cancelCall := context.WithCancelCause(in.callCtx(ctx))
	defer cancelCall(nil)
	in.cancelCall.Store(&cancelCall)
	defer in.cancelCall.Store(nil)
	if in.closed.Load() {
		// Close ran before the call's cancel was in place.
		return nil, fmt.Errorf("%s: %w", in.m.name, ErrInstanceDead)
	}
	cctx, stopProcs := withProcs(callCtx, in.opts.MaxProcesses, in.opts.OnForkLimit)
	if in.r.ownWASI && in.opts.WASI != nil {
		in.opts.WASI.SetHalt(tableOf(cctx).halted)
	}
	res, err := callGuest(cctx, in.mod, f, params...)
	stopProcs()
	if err == nil {
		return res, nil
	}
	// The guest ended: whatever it was doing is lost.
	in.dead = err
	if in.mod.IsClosed() && callCtx.Err() != nil && in.m.rt == in.r.rt {
		releaseClosed(cctx, in.mod)
	}
	if in.closed.Load() || in.r.isClosed() {
		return nil, fmt.Errorf("%s: %s: %w: closed during the call (%w)", in.m.name, name, ErrInstanceDead, err)
	}
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		switch ee.ExitCode() {
		case sys.ExitCodeDeadlineExceeded, sys.ExitCodeContextCanceled:
			return nil, err
		}
	}
	if cerr := ctx.Err(); cerr != nil {
		return nil, exitErrorFor(cerr)
	}
	if in.alloc.hit.Load() {
		return nil, &limitError{name: in.m.name, limit: in.opts.MemoryLimit, budget: in.alloc.refusal.Load(), cause: err}
	}
	return nil, err
}

// SetSpawner makes sp receive the spawn and process ABI children of the
// following calls.
func (in *Instance) SetSpawner(sp Spawner) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.opts.Spawner = sp
}

// SetOnMemoryLimit replaces InstanceOptions.OnMemoryLimit.
func (in *Instance) SetOnMemoryLimit(f func()) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.opts.OnMemoryLimit = f
	if in.alloc != nil {
		in.alloc.setOnHit(f)
	}
}

// Adopt moves the instance's memory to budget b (nil: the runtime's): it
// is reserved in b, then given back to the budget that held it. An error
// (b has no room) leaves the instance where it was. An instance started
// ahead of use (a pooled shell) is adopted by the session it serves.
func (in *Instance) Adopt(b *Budget) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if b == nil {
		b = in.r.budget
	}
	a := in.alloc
	if a == nil || a.budget == b {
		return nil
	}
	n := a.charged.Load()
	if err := b.Reserve(n); err != nil {
		return err
	}
	old := a.budget
	a.budget = b
	old.Release(n)
	in.opts.Budget = b
	return nil
}

// SetFS makes fsys what the metadata calls of the following calls act on
// (see InstanceOptions.FS; the WASI state has its own, State.SetFS).
func (in *Instance) SetFS(fsys vfs.FS) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.opts.FS = fsys
}

// Memory returns the guest's linear memory (nil once closed). The host
// reads and writes the guest's buffers through it between and during
// calls.
//
// Memory is not safe against a concurrent Close (or the runtime's): the
// caller keeps the two apart, or uses ReadMemory and WriteMemory, which
// are.
func (in *Instance) Memory() api.Memory {
	if in.closed.Load() || in.mod == nil || in.mod.IsClosed() {
		return nil
	}
	return in.mod.Memory()
}

// ReadMemory copies n bytes of the guest's memory at off. Unlike reads
// through Memory, it is safe against a concurrent Close of the instance or
// of its runtime: the memory stays mapped until the copy is made. The
// error wraps ErrInstanceDead once the instance is closed, and says so for
// a range outside the memory.
func (in *Instance) ReadMemory(off, n uint32) ([]byte, error) {
	var out []byte
	err := in.withMemory(func(mem api.Memory) error {
		b, ok := mem.Read(off, n)
		if !ok {
			return fmt.Errorf("%s: %d bytes at %#x are outside the guest's memory of %d", in.m.name, n, off, mem.Size())
		}
		out = append([]byte(nil), b...)
		return nil
	})
	return out, err
}

// WriteMemory writes b into the guest's memory at off, as ReadMemory
// reads.
func (in *Instance) WriteMemory(off uint32, b []byte) error {
	return in.withMemory(func(mem api.Memory) error {
		if !mem.Write(off, b) {
			return fmt.Errorf("%s: %d bytes at %#x are outside the guest's memory of %d", in.m.name, len(b), off, mem.Size())
		}
		return nil
	})
}

// withMemory runs fn on the guest's memory with the module pinned (see
// pin): a Close meanwhile releases the memory after fn returns.
func (in *Instance) withMemory(fn func(api.Memory) error) error {
	if in.closed.Load() || in.mod == nil || in.mod.IsClosed() {
		return fmt.Errorf("%s: %w", in.m.name, ErrInstanceDead)
	}
	unpin, err := pin(in.mod)
	if err != nil {
		return fmt.Errorf("%s: %w", in.m.name, ErrInstanceDead)
	}
	defer unpin()
	mem := in.mod.Memory()
	if mem == nil {
		return fmt.Errorf("%s: the module has no memory", in.m.name)
	}
	return fn(mem)
}

// MemorySize is the size of the guest's linear memory in bytes.
func (in *Instance) MemorySize() uint64 {
	if m := in.Memory(); m != nil {
		return uint64(m.Size())
	}
	return 0
}

// LimitHit reports that the guest asked for memory past its limit.
func (in *Instance) LimitHit() bool { return in.alloc != nil && in.alloc.hit.Load() }

// Dead reports whether the guest has ended (see Call).
func (in *Instance) Dead() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.dead != nil || in.closed.Load()
}

// Close ends the instance and releases its memory. It is idempotent and
// does not wait: a call in progress (on another goroutine) ends at its
// next termination check with an error wrapping ErrInstanceDead, and the
// memory is released when it has returned, never under it (wazero patch
// 25).
func (in *Instance) Close(ctx context.Context) error {
	if !in.closed.CompareAndSwap(false, true) {
		return nil
	}
	// A call in progress ends: one blocked in a host function (a read
	// of a pipe, a sleep) too, not only at its next termination check.
	if c := in.cancelCall.Load(); c != nil {
		(*c)(ErrInstanceDead)
	}
	var err error
	if in.mod != nil {
		err = in.mod.Close(context.WithoutCancel(ctx))
	}
	if in.counted.CompareAndSwap(true, false) {
		in.r.live.Add(-1)
	}
	if in.alloc != nil && (in.mod == nil || !in.alloc.created.Load()) {
		// wazero made no memory. Otherwise the memory's Free gives the
		// budget back when the memory is released, which for a module
		// closed during a call is when the call returns (patch 25):
		// given back here, other instances would be admitted against
		// memory still in use.
		in.alloc.release()
	}
	in.m.release(ctx)
	return err
}

// LimitError is why the guest was last refused memory: a
// *budget.ExceededError when a budget refused it (errors.Is ErrBudget), an
// error wrapping ErrMemoryLimit when its own limit did, nil when it never
// was.
func (in *Instance) LimitError() error {
	if in.alloc == nil || !in.alloc.hit.Load() {
		return nil
	}
	if e := in.alloc.refusal.Load(); e != nil {
		return e
	}
	return fmt.Errorf("%w: the guest asked for more than %s of memory", ErrMemoryLimit, FormatBytes(in.opts.MemoryLimit))
}
