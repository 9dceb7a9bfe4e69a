package runtime

import (
	"context"
	"errors"
	"fmt"
	"github.com/wasmbox/wasmbox/internal/budget"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi/preview1"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"
)

// ErrMemoryLimit is wrapped by the error of a run that failed after its
// guest hit the memory limit (memory.grow refused), or whose module
// declares more initial memory than the limit allows.
var ErrMemoryLimit = errors.New("memory limit exceeded")

// ErrReleased is returned by Run for a module that was evicted from the
// in-memory cache before the run started; compile it again.
var ErrReleased = errors.New("compiled module was released")

// ErrNoEntry is returned by Run for a module with nothing to run: no
// _start export, no start function, and not a wasmbox reactor (see
// SnapshotABI). Before, such a module instantiated, did nothing and ended
// 0: a reactor whose build broke the ABI printed nothing for every
// command. Its exports can still be called through an Instance.
var ErrNoEntry = errors.New("the module has nothing to run")

// RunOptions tune one run.
type RunOptions struct {
	// MemoryLimit in bytes; 0 means the runtime's default.
	MemoryLimit uint64
	// Spawner receives the run's wasmbox.spawn calls; nil refuses them.
	Spawner Spawner
	// Budget, when set, is shared with other runs (spawned children): the
	// linear memory of all of them together stays within it. Nil means
	// the runtime's own (Runtime.Budget); a budget made inside it (its
	// Child or Carve) counts in it too. The initial memory is reserved
	// before the instance is made, and every growth before it happens.
	Budget *Budget
	// FS is the filesystem the wasmbox metadata calls (stat, chmod,
	// chown; see MetaABI) act on: the one mounted as the guest's root.
	// Nil makes them fail with ENOSYS.
	FS vfs.FS
	// WASI is the state of the run for wasmbox's WASI module (see
	// Runtime.OwnWASI): arguments, environment, stdio, clocks and the
	// filesystem. Nil gives the guest none of them (no arguments, no
	// environment, no filesystem, empty input, discarded output). Ignored
	// with wazero's module, which takes them from the ModuleConfig.
	WASI *preview1.State
	// Dir is the working directory that the guest's wasmbox.getcwd
	// reports (see CwdABI); empty gives none.
	Dir string
	// OnMemoryLimit, when set, is called (on the guest's goroutine) when
	// the guest asks for memory past its limit or budget, before the
	// guest learns of the refusal: e.g. to silence the crash report a Go
	// guest then prints.
	OnMemoryLimit func()
	// Name is what the run's errors call the guest: the command's name,
	// e.g. "sh" for the bash module run as sh. Empty: the module's name.
	Name string
}

// RunStats describes a finished run.
type RunStats struct {
	// PeakMemory is the largest linear memory size of the run, in bytes.
	PeakMemory uint64
	// LimitHit reports that the guest asked for memory past its limit.
	LimitHit bool
}

// Run instantiates m as a fresh anonymous instance configured by mc, runs
// its _start function to the end and closes it. mc's name is replaced by
// "" so that any number of instances run at once; set args, env, stdio
// and filesystem on mc. ctx bounds the run: when it is done the guest is
// closed wherever it is (WithCloseOnContextDone).
//
// The error is nil for exit status 0; see the package documentation for
// the others.
func (r *Runtime) Run(ctx context.Context, m *Module, mc wazero.ModuleConfig, opts RunOptions) error {
	_, err := r.RunStats(ctx, m, mc, opts)
	return err
}

// RunStats is Run that also reports memory statistics.
func (r *Runtime) RunStats(ctx context.Context, m *Module, mc wazero.ModuleConfig, opts RunOptions) (RunStats, error) {
	var st RunStats
	name := m.name
	if opts.Name != "" {
		name = opts.Name
	}
	if m.noEntry != "" {
		return st, fmt.Errorf("%s: %w: %s", name, ErrNoEntry, m.noEntry)
	}
	if r.ownWASI && opts.WASI == nil {
		empty, err := preview1.NewState(preview1.Config{})
		if err != nil {
			return st, err
		}
		defer empty.Close()
		opts.WASI = empty
	}
	limit := opts.MemoryLimit
	if limit == 0 {
		limit = r.memLimit
	}
	b := opts.Budget
	if b == nil {
		b = r.budget
	}
	var snap *snapshot
	if m.reactor != nil {
		var err error
		if snap, err = r.snapshotOf(ctx, m, limit, b); err != nil {
			return st, err
		}
	}
	need := uint64(m.minPages) * 65536
	if snap != nil {
		need = max(need, uint64(snap.pages)*65536)
	}
	if need > limit {
		st.LimitHit = true
		return st, fmt.Errorf("%s: %w: the module needs %s of initial memory, the limit is %s",
			name, ErrMemoryLimit, FormatBytes(need), FormatBytes(limit))
	}
	// The initial memory is admitted before the instance is made.
	alloc := &limitAllocator{limit: limit, budget: b, live: &r.liveMem}
	if err := alloc.prepay(need); err != nil {
		st.LimitHit = true
		return st, fmt.Errorf("%s: %w: the module needs %s of initial memory: %w", name, ErrMemoryLimit, FormatBytes(need), err)
	}
	defer alloc.release() // when no memory was made (Free releases it otherwise)
	if err := ctx.Err(); err != nil {
		return st, exitErrorFor(err)
	}
	if !m.acquire() {
		return st, fmt.Errorf("%s: %w", name, ErrReleased)
	}
	defer m.release(ctx)

	cctx := context.WithValue(ctx, spawnerKey{}, opts.Spawner)
	if opts.FS != nil {
		cctx = context.WithValue(cctx, metaFSKey{}, opts.FS)
	}
	if opts.Dir != "" {
		cctx = context.WithValue(cctx, cwdKey{}, opts.Dir)
	}
	if r.ownWASI {
		cctx = preview1.WithState(cctx, opts.WASI)
	}
	// A fork tree that meets a limit (a fork or a forked child refused
	// memory; MaxProcesses, when this run is the root of its tree) ends
	// the run with that limit's error, as the guest's own memory limit
	// does, rather than the guest seeing ENOMEM or EAGAIN and going on.
	// Every caller of onTree returns only once the tree is ended: a
	// process refused while another one's refusal is still being handled
	// must not go on (a root that saw ENOMEM there exited 0, and the run
	// with it). sync.Once makes the later callers wait for the first.
	cctx, cancelTree := context.WithCancelCause(cctx)
	defer cancelTree(nil)
	var treeErr atomic.Pointer[error]
	var treeOnce sync.Once
	onTree := func(err error) {
		treeOnce.Do(func() {
			treeErr.Store(&err)
			if errors.Is(err, ErrMemoryLimit) && opts.OnMemoryLimit != nil {
				opts.OnMemoryLimit()
			}
			cancelTree(err)
		})
	}
	// Children of the process ABI never outlive the run.
	cctx, stopProcs := withProcs(cctx, 0, onTree)
	if r.ownWASI && opts.WASI != nil {
		opts.WASI.SetHalt(tableOf(cctx).halted)
	}
	cctx = context.WithValue(cctx, forkEnvKey{}, &forkEnv{r: r, m: m, limit: limit, budget: b, onLimit: onTree})
	defer stopProcs()

	if snap != nil {
		// The guest keeps the snapshot's idea of the monotonic time.
		opts.WASI.ShiftMonotonic(snap.nanotime)
	}
	var mod api.Module
	var err error
	var closed atomic.Bool // the instance's close was counted
	if s := r.takeSpare(m, snap, limit, alloc); s != nil {
		closed.Store(true) // the spare counts its own (see newSpare)
		alloc, mod = s.alloc, s.mod
		defer alloc.release()
		alloc.setOnHit(opts.OnMemoryLimit)
		err = runCommand(cctx, mod)
	} else {
		alloc.setOnHit(opts.OnMemoryLimit)
		if snap != nil {
			alloc.image = snap.img
		}
		r.live.Add(1)
		notify := experimental.CloseNotifyFunc(func(context.Context, uint32) {
			if closed.CompareAndSwap(false, true) {
				r.live.Add(-1)
			}
		})
		ictx := experimental.WithMemoryAllocator(cctx, alloc)
		ictx = experimental.WithCloseNotifier(ictx, notify)
		mod, err = r.execute(ictx, m, mc, snap, alloc)
	}
	if mod != nil {
		// Only wazero's context watcher (the checked runtime) closes a
		// module without releasing it; a closed module of the other
		// runtime would run the function releaseClosed calls.
		if m.rt == r.rt && mod.IsClosed() && ctx.Err() != nil {
			releaseClosed(cctx, mod)
		}
		_ = mod.Close(context.WithoutCancel(ctx))
	}
	if closed.CompareAndSwap(false, true) {
		// wazero never created the instance (e.g. a link error).
		r.live.Add(-1)
	}
	st.PeakMemory = alloc.peak.Load()
	st.LimitHit = alloc.hit.Load()
	if err == nil {
		return st, nil
	}
	if p := treeErr.Load(); p != nil && ctx.Err() == nil {
		// The fork tree's limit ended the run.
		st.LimitHit = true
		if errors.Is(*p, ErrMemoryLimit) {
			le := &limitError{name: name, limit: limit, cause: *p}
			// A budget that refused a fork or a child's growth is named,
			// not the per-instance limit the guest never reached.
			var be *budget.ExceededError
			if errors.As(*p, &be) {
				le.budget = be
			}
			return st, le
		}
		return st, fmt.Errorf("%s: %w", name, *p)
	}
	// A context that ended wins over whatever the guest was doing.
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		switch ee.ExitCode() {
		case sys.ExitCodeDeadlineExceeded, sys.ExitCodeContextCanceled:
			return st, err
		}
	}
	if cerr := ctx.Err(); cerr != nil {
		return st, exitErrorFor(cerr)
	}
	// wazero wraps a trap as "module[] function[_start] failed: <trap>";
	// name the module instead of the anonymous instance.
	if inner := errors.Unwrap(err); inner != nil && strings.HasPrefix(err.Error(), "module[") {
		err = fmt.Errorf("%s: %w", name, inner)
	}
	if st.LimitHit {
		return st, &limitError{name: name, limit: limit, budget: alloc.refusal.Load(), cause: err}
	}
	return st, err
}

// exitErrorFor turns a context error into the *sys.ExitError wazero uses.
func exitErrorFor(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return sys.NewExitError(sys.ExitCodeDeadlineExceeded)
	}
	return sys.NewExitError(sys.ExitCodeContextCanceled)
}

type limitError struct {
	name   string
	limit  uint64
	budget *budget.ExceededError // the budget that refused, if not the limit
	cause  error
}

func (e *limitError) Error() string {
	if e.budget != nil {
		return fmt.Sprintf("%s: %v: %v", e.name, ErrMemoryLimit, e.budget)
	}
	return fmt.Sprintf("%s: %v: the guest asked for more than %s of memory", e.name, ErrMemoryLimit, FormatBytes(e.limit))
}

func (e *limitError) Unwrap() []error {
	if e.budget != nil {
		return []error{ErrMemoryLimit, e.budget, e.cause}
	}
	return []error{ErrMemoryLimit, e.cause}
}

// FormatBytes renders n in the largest binary unit that divides it
// evenly, e.g. "256MiB", "1536KiB", "17B".
func FormatBytes(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && n%1024 == 0 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return fmt.Sprintf("%d%s", n, units[i])
}

// releaseClosed frees the resources (linear memory) of a module that
// wazero's context watcher closed while a host function unwound the guest
// with a *sys.ExitError panic (our WASI does that when the context ends
// inside a blocking call): wazero recovers the panic without releasing them,
// and a later Close is a no-op on a closed module. A call on the closed
// module with a done context takes wazero's early path, which releases
// them (FailIfClosed) without running any guest code.
func releaseClosed(ctx context.Context, mod api.Module) {
	dctx, cancel := context.WithCancel(ctx)
	cancel()
	for name := range mod.ExportedFunctionDefinitions() {
		if f := mod.ExportedFunction(name); f != nil {
			_, _ = f.Call(dctx)
			return
		}
	}
}
