// Package runtime is the wazero runtime of wasmbox: modules are compiled
// once and instantiated once per command.
//
// A Runtime owns two wazero runtimes built with the optimizing compiler. A
// module that imports WASI's sched_yield (every Go guest does) is rewritten
// before it is compiled so that its loops spend fuel and call sched_yield
// every wasmbin.Fuel iterations (see internal/wasmbin.InstrumentLoops);
// wasmbox's sched_yield ends the guest when its context is done, so a
// deadline or a cancel stops even a guest spinning in a loop, and the Go
// scheduler can preempt it there. Such modules run in a runtime without
// wazero's own check. Every other module runs with
// WithCloseOnContextDone(true), whose check at every loop header is an exit
// to Go (Config.WazeroKillCheck selects it for all). Compiled code is
// persisted in an on-disk compilation cache and the compiled module is kept
// in memory, keyed by the SHA-256 of its bytes: compiling the same bytes
// twice costs a hash. wasi_snapshot_preview1 and the wasmbox host module
// (see [SpawnABI]) are instantiated once per wazero runtime.
//
// A wasmbox reactor module (see [SnapshotABI]; the tool modules are) is
// initialized once: every run starts from a copy-on-write snapshot of its
// memory and globals after _initialize, and a few instances are kept ready
// (Config.Spares).
//
// Every command runs in a fresh anonymous instance ([Runtime.Run]) with its
// own memory limit, enforced by a memory allocator installed on the
// instantiation context: a guest that grows past the limit sees memory.grow
// fail, and the run reports [ErrMemoryLimit].
//
//	rt, err := runtime.New(ctx, runtime.Config{})
//	if err != nil { ... }
//	defer rt.Close(ctx)
//	mod, err := rt.Compile(ctx, "hello", wasmBytes)
//	if err != nil { ... } // ErrNotWasm, *ImportError, ...
//	err = rt.Run(ctx, mod, wazero.NewModuleConfig().WithArgs("hello"), runtime.RunOptions{})
//
// # Caps
//
// A module makes the host allocate more than its linear memory: wazero
// decodes it, compiles every function and builds its tables, globals and
// segments in Go memory, which the memory limit of a run does not see.
// Compile therefore measures every module first (wasmbin.ModuleShape:
// counts and sizes of every section, and per function body its locals,
// instructions, branches, br_table targets, nesting depth, calls and
// memory accesses) and refuses one over a cap of wasmbin.DefaultCaps with
// an error wrapping [ErrModuleRefused] that names it:
//
//	NAME: module refused: function 12 declares 50000000 locals (cap 50000)
//
// A module these checks cannot parse is refused the same way
// ("module refused: malformed wasm module: ..."). The caps hold for what
// is compiled: a module whose loop metering would take it over one is
// refused too. Tables are not refused for growing: every table's maximum
// is lowered to the table cap (a table without one gets it), so that
// table.grow returns -1 past the cap, as the spec has it at a declared
// maximum, and valid modules keep working; a table whose declared initial
// size is over the cap is refused. memory.grow past the memory limit
// returns -1 as well (see the memory limit below).
//
// The caps sit at least 3-4 times above the largest legitimate modules
// wasmbox runs, its tool modules (measured on the modules of wasm/ and
// wasm/python/ at this commit; TestToolModulesWithinCaps in
// internal/wasmbin keeps a margin of 3 whenever they are rebuilt):
//
//	                            largest (module)        cap
//	module size                 9.8 MB (shell)          64 MiB
//	code section                6.0 MB (coreutils)      32 MiB
//	function body               291 KB (jq)             1 MiB
//	locals of a function        21 (coreutils)          50,000
//	instructions of a function  124,251 (jq)            524,288
//	branches of a function      6,902 (shell)           28,000
//	br_table targets            14,648 (python)         49,152
//	block nesting               2,962 (jq)              12,288
//	calls of a function         2,744 (jq)              16,384
//	memory accesses             30,702 (jq)             131,072
//	SSA block parameters        192,672 (shell)         600,000
//	estimated compile heap      ~225 MB (jq)            512 MiB
//	functions                   4,836 (shell)           100,000
//	table initial size          8,932 (shell)           262,144 (2 MiB)
//	tables                      1                       16
//	element entries             4,836 (shell)           262,144
//	data bytes                  3.8 MB (shell)          32 MiB
//	data segments               1 (tools/wasmopt)       100,000
//	globals / types / imports   8 / 21 / 45             65,536 / 65,536 / 10,000
//	exports / param+results     4 / 10                  100,000 / 1,000
//	custom sections             71 B                    32 MiB
//
// Compiling them (no disk cache, wazero's optimizing compiler, 2 workers)
// takes this much host memory, peak Go heap in use over the compile /
// process high-water RSS: awk 152 MiB / 196 MB, coreutils 113 MiB /
// 177 MB, jq 240 MiB / 295 MB, shell 180 MiB / 244 MB. The compile
// memory of a function grows with its instructions, not its bytes: 1 MB
// of loads, calls, ifs or br_table targets measured 0.7-2+ GiB of heap,
// and ifs and br_ifs took time quadratic in their count (20,000 ifs:
// 24 s; wazero's loop detection walked the dominator tree from every
// block, fixed by patch 9 of third_party/wazero: 28,000 ifs in a row now
// take about a second of CPU). The caps per function bound each of these, and the estimated
// compile heap (wasmbin.CostOf: the counts weighted by those measurements;
// jq's largest function is estimated at ~225 MB, and jq as a whole
// measured 240 MiB) bounds their sum, so a hostile function costs at most
// about 512 MiB of heap to compile, per compilation worker, and a body at
// the branch cap tens of seconds of compile time.
//
// The work of building SSA grows with the product of a function's blocks
// and its variables: the builder gives a block a parameter for each
// variable (param or local) that is read through it, so one function of
// 3000 nested loops around 10,000 locals (49 KB) made 30 million of them,
// gigabytes of heap and minutes of compile, under every cap of a count.
// FuncShape.Phis bounds that product ((blocks, loops, ifs, branches and
// br_table targets) × (params and locals)) at 600,000; a real phi costs
// about 1 KB of heap (1,000 loops around 1,000 locals that each changes:
// 990 MiB), so a function at that cap takes about 600 MB (300 loops
// around 1,000 changing locals: 300 MiB measured, 591 MiB estimated).
//
// # Compiles
//
// A compile belongs to the context of its caller, a run: Compile returns
// when the context ends, with its error, and wazero's compiler (patched,
// see third_party/wazero/PATCHES.md) stops soon after: it polls the
// context between functions, between the phases of one, every 256
// opcodes while lowering and between blocks while allocating registers.
// A compile that no cache answers is admitted first under
// CompileMemory, a bound on the estimated compiler heap of all the
// compiles of the process (CompileCost: the workers times the largest
// function's Cost and Phis, plus the code, with fewer workers where that
// would not fit; a compile that has to wait
// waits only while its context lasts); a compile whose caller left is
// counted until it has stopped. WithCompileReserve lets a memory budget
// reserve the same estimate.
//
// # Errors
//
// Compile reports [ErrNotWasm] for input without the \0asm magic,
// [ErrModuleRefused] for a module over a cap (see Caps), an
// [*ImportError] (errors.Is [ErrUnresolvedImport]) naming every import the
// runtime does not provide, and wazero's decode or validation error
// otherwise. Run returns nil for exit status 0, a *sys.ExitError for a
// non-zero exit or a context done (errors.Is(err, context.DeadlineExceeded)
// works), an error wrapping [ErrMemoryLimit] when the guest failed after
// hitting its memory limit, and the trap otherwise.
package runtime

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmbox/wasmbox/internal/budget"
	"github.com/wasmbox/wasmbox/internal/cachemac"
	"github.com/wasmbox/wasmbox/internal/wasmbin"
	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental/logging"
	"github.com/wasmbox/wasmbox/third_party/wazero/imports/wasi_snapshot_preview1"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// DefaultMemoryLimit is the memory limit of a command when neither Config
// nor RunOptions set one: 256 MiB.
const DefaultMemoryLimit uint64 = 256 << 20

// DefaultMaxCachedModules is how many modules that are not pinned (see
// [Runtime.Pin]) stay compiled in memory; the least recently used beyond
// it are released (the on-disk cache still has their code).
const DefaultMaxCachedModules = 32

// Config configures a Runtime. The zero value is ready to use: on-disk
// compilation cache under os.UserCacheDir()/wasmbox/compile, min(NumCPU, 4)
// compilation workers, 256 MiB per command. Config never fails; New reports
// problems (e.g. a cache directory that cannot be created).
type Config struct {
	// CacheDir is the directory of the on-disk compilation cache. Empty
	// means os.UserCacheDir()/wasmbox/compile (no disk cache if the user
	// cache directory is unknown).
	CacheDir string
	// DisableCache turns the on-disk compilation cache off.
	DisableCache bool
	// CacheMaxBytes bounds the size of the on-disk cache: after a compile
	// that wrote to it, the least recently used entries are removed until
	// it fits (see TrimCache). 0 means DefaultCacheMaxBytes, a negative
	// value no bound.
	CacheMaxBytes int64
	// CompilationWorkers is the number of goroutines compiling one module;
	// 0 means min(NumCPU, 4).
	CompilationWorkers int
	// MemoryLimit is the default per-command memory limit in bytes; 0
	// means DefaultMemoryLimit. RunOptions.MemoryLimit overrides it.
	MemoryLimit uint64
	// MaxCachedModules bounds the unpinned compiled modules kept in
	// memory; 0 means DefaultMaxCachedModules.
	MaxCachedModules int
	// HostLogging, when not nil, receives an strace-like log of the host
	// calls (wazero experimental/logging) in the scopes of HostLogScopes
	// (logging.LogScopeFilesystem when zero) for every module of this
	// runtime.
	HostLogging io.Writer
	// HostLogScopes selects what HostLogging logs.
	HostLogScopes logging.LogScopes
	// WASI selects the wasi_snapshot_preview1 implementation: the
	// wasmbox one (package wasi/preview1, the default: it passes the
	// whole WASI conformance suite and reports quota errors as ENOSPC)
	// or wazero's built-in one. HostLogging implies wazero's (its logger
	// only decodes its own WASI functions).
	WASI WASIImpl
	// NoSnapshots makes every run of a reactor module (see SnapshotABI)
	// initialize its own instance instead of starting from the module's
	// snapshot: for comparing the two, and for hosts that refuse the
	// snapshot's memory mappings (they fall back to copying anyway).
	NoSnapshots bool
	// WazeroKillCheck stops guests the way wazero does
	// (WithCloseOnContextDone: compiled code checks at every loop header
	// whether the module was closed) instead of through the fuel wasmbox
	// adds to the module's loops (see wasmbin.InstrumentLoops), which
	// makes the guest call the host, where it can be ended, every
	// wasmbin.Fuel iterations. Fuel is the default: it costs a decrement
	// per loop iteration where wazero's check exits to Go, which makes
	// loop-heavy guests several times slower. Modules the instrumentation
	// does not apply to use wazero's check anyway, and so does every
	// module with wazero's WASI (its sched_yield ignores the context).
	WazeroKillCheck bool
	// MemoryBudget is the runtime's memory budget in bytes, the process
	// budget of package internal/budget: the linear memory of every
	// instance, every snapshot image, and whatever its users reserve in it
	// (Runtime.Budget) together stay within it, each admitted before it
	// is allocated. 0 means budget.DefaultProcessLimit() (three quarters
	// of the machine's memory or of the cgroup's limit).
	MemoryBudget uint64
	// Spares is how many ready instances of each reactor module the
	// runtime keeps, restored from the snapshot, so that a run starts
	// without waiting for an instantiation (see takeSpare); 0 means
	// DefaultSpares, a negative value none.
	Spares int
}

// WASIImpl names an implementation of wasi_snapshot_preview1.
type WASIImpl int

const (
	// WASIWasmbox is wasmbox's own module (package wasi/preview1). A run
	// needs RunOptions.WASI.
	WASIWasmbox WASIImpl = iota
	// WASIWazero is wazero's imports/wasi_snapshot_preview1, configured
	// through the wazero.ModuleConfig of a run (see wasi.Configure).
	WASIWazero
)

// Runtime compiles and runs modules. It is safe for concurrent use.
type Runtime struct {
	rt          wazero.Runtime
	fast        wazero.Runtime // metered modules (wasmbin.InstrumentLoops)
	caches      []wazero.CompilationCache
	preparedDir string // the prepared-module cache (prepared.go), "" for none
	cacheDir    string // the on-disk cache, "" for none
	cacheMax    int64  // its size bound (cachesize.go); negative for none
	mac         *cachemac.MAC
	wazeroCheck bool
	workers     int
	memLimit    uint64
	maxCached   int
	listener    experimental.FunctionListenerFactory // host logging, if any
	provided    map[string]map[string]api.FunctionDefinition
	live        atomic.Int64
	liveMem     atomic.Int64
	budget      *Budget
	snapBytes   atomic.Uint64
	closeOnce   sync.Once
	closeErr    error
	// compiling is held (read) by every Compile and taken by Close, which
	// so waits for the compiles in flight; closed is set under it.
	compiling   sync.RWMutex
	closed      bool
	mu          sync.Mutex
	modules     map[[32]byte]*Module
	lru         *list.List // of *Module, unpinned only, most recent first
	compileLock map[[32]byte]*keyLock
	ownWASI     bool
	noSnapshot  bool
	spares      int
}

// OwnWASI reports whether the runtime uses wasmbox's WASI module: a run
// then takes its arguments, environment, stdio, clocks and filesystem from
// RunOptions.WASI instead of the wazero.ModuleConfig.
func (r *Runtime) OwnWASI() bool { return r.ownWASI }

// New creates a Runtime: the wazero runtime, the compilation cache, and the
// host modules wasi_snapshot_preview1 and wasmbox.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	r := &Runtime{
		workers:     cfg.CompilationWorkers,
		memLimit:    cfg.MemoryLimit,
		maxCached:   cfg.MaxCachedModules,
		modules:     map[[32]byte]*Module{},
		lru:         list.New(),
		compileLock: map[[32]byte]*keyLock{},
		noSnapshot:  cfg.NoSnapshots,
		wazeroCheck: cfg.WazeroKillCheck,
		spares:      cfg.Spares,
	}
	if r.spares == 0 {
		r.spares = DefaultSpares
	}
	if r.workers <= 0 {
		r.workers = min(goruntime.NumCPU(), 4)
	}
	if r.memLimit == 0 {
		r.memLimit = DefaultMemoryLimit
	}
	if r.maxCached <= 0 {
		r.maxCached = DefaultMaxCachedModules
	}
	if cfg.MemoryBudget == 0 {
		cfg.MemoryBudget = budget.DefaultProcessLimit()
	}
	r.budget = budget.New("process", cfg.MemoryBudget)
	// Two wazero runtimes: modules whose loops InstrumentLoops could meter
	// run without wazero's termination check (they call sched_yield, which
	// ends them when their context is done, every Fuel loop iterations);
	// the others run with it (WithCloseOnContextDone). Each has its own
	// compilation cache: wazero keys cached code by module alone, not by
	// that setting.
	checked := wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true)
	loops := wazero.NewRuntimeConfigCompiler()
	if !cfg.DisableCache {
		dir := cfg.CacheDir
		if dir == "" {
			if base, err := os.UserCacheDir(); err == nil {
				dir = filepath.Join(base, "wasmbox", "compile")
			} else {
				dir = privateTempCache()
			}
		}
		if dir != "" {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("runtime: compilation cache %s: %w", dir, err)
			}
			// One key for everything the runtime reads back from dir:
			// wazero's compiled code and the prepared modules (package
			// cachemac). It lives in dir, which mounts may not cover
			// (sandbox.WithProtectedPaths, Runtime.CacheDir).
			key, err := cachemac.LoadKey(dir)
			if err != nil {
				return nil, fmt.Errorf("runtime: compilation cache %s: %w", dir, err)
			}
			if r.mac, err = cachemac.New(key); err != nil {
				return nil, fmt.Errorf("runtime: compilation cache %s: %w", dir, err)
			}
			c, err := wazero.NewCompilationCacheWithDirKey(dir, key)
			if err != nil {
				return nil, fmt.Errorf("runtime: compilation cache %s: %w", dir, err)
			}
			lc, err := wazero.NewCompilationCacheWithDirKey(filepath.Join(dir, "loops"), key)
			if err != nil {
				return nil, fmt.Errorf("runtime: compilation cache %s: %w", dir, err)
			}
			r.caches = []wazero.CompilationCache{c, lc}
			r.cacheDir = dir
			r.cacheMax = cfg.CacheMaxBytes
			if r.cacheMax == 0 {
				r.cacheMax = DefaultCacheMaxBytes
			}
			r.preparedDir = filepath.Join(dir, "prepared")
			checked = checked.WithCompilationCache(c)
			loops = loops.WithCompilationCache(lc)
		}
	}
	if cfg.HostLogging != nil {
		scopes := cfg.HostLogScopes
		if scopes == 0 {
			scopes = logging.LogScopeFilesystem
		}
		r.listener = logging.NewHostLoggingListenerFactory(asLogWriter(cfg.HostLogging), scopes)
	}
	// wazero's host logging decodes the parameters of its own WASI
	// functions only: with HostLogging, wazero's module is used.
	r.ownWASI = cfg.WASI == WASIWasmbox && cfg.HostLogging == nil
	if !r.ownWASI {
		r.wazeroCheck = true
	}
	r.rt = wazero.NewRuntimeWithConfig(ctx, checked)
	r.fast = wazero.NewRuntimeWithConfig(ctx, loops)
	for _, rt := range []wazero.Runtime{r.rt, r.fast} {
		if err := r.instantiateHosts(ctx, rt); err != nil {
			r.rt.Close(ctx)
			r.fast.Close(ctx)
			return nil, err
		}
	}
	return r, nil
}

// instantiateHosts instantiates the host modules (WASI and wasmbox) in rt
// and records the functions they provide.
func (r *Runtime) instantiateHosts(ctx context.Context, rt wazero.Runtime) error {
	hostCtx := r.hostCtx(ctx)
	var wasiFuncs map[string]api.FunctionDefinition
	if r.ownWASI {
		if _, err := preview1.Instantiate(hostCtx, rt); err != nil {
			return fmt.Errorf("runtime: wasi_snapshot_preview1: %w", err)
		}
		wasiFuncs = rt.Module(wasi_snapshot_preview1.ModuleName).ExportedFunctionDefinitions()
	} else {
		wasiMod, err := wasi_snapshot_preview1.NewBuilder(rt).Compile(hostCtx)
		if err != nil {
			return fmt.Errorf("runtime: wasi_snapshot_preview1: %w", err)
		}
		if _, err := rt.InstantiateModule(hostCtx, wasiMod, wazero.NewModuleConfig()); err != nil {
			return fmt.Errorf("runtime: wasi_snapshot_preview1: %w", err)
		}
		wasiFuncs = wasiMod.ExportedFunctions()
	}
	boxMod, err := newSpawnModule(rt).Compile(hostCtx)
	if err != nil {
		return fmt.Errorf("runtime: wasmbox host module: %w", err)
	}
	if _, err := rt.InstantiateModule(hostCtx, boxMod, wazero.NewModuleConfig()); err != nil {
		return fmt.Errorf("runtime: wasmbox host module: %w", err)
	}
	r.provided = map[string]map[string]api.FunctionDefinition{
		wasi_snapshot_preview1.ModuleName: wasiFuncs,
		SpawnModuleName:                   boxMod.ExportedFunctions(),
	}
	return nil
}

// hostCtx is ctx with the host-logging listener factory of the runtime,
// if any: wazero attaches listeners when a module is compiled.
func (r *Runtime) hostCtx(ctx context.Context) context.Context {
	if r.listener != nil {
		return experimental.WithFunctionListenerFactory(ctx, r.listener)
	}
	return ctx
}

// Close releases the runtime, every compiled module and the cache handle.
// It is idempotent; instances still running are closed with it.
func (r *Runtime) Close(ctx context.Context) error {
	r.closeOnce.Do(func() {
		ctx = context.WithoutCancel(ctx)
		r.compiling.Lock()
		r.closed = true
		r.compiling.Unlock()
		r.closeErr = r.rt.Close(ctx)
		r.mu.Lock()
		for _, m := range r.modules {
			if m.reactor != nil {
				m.reactor.close() // running instances keep their mappings
			}
			m.dropFresh()
		}
		r.mu.Unlock()
		if err := r.fast.Close(ctx); r.closeErr == nil {
			r.closeErr = err
		}
		for _, c := range r.caches {
			if err := c.Close(ctx); r.closeErr == nil {
				r.closeErr = err
			}
		}
	})
	return r.closeErr
}

// isClosed reports whether Close has begun.
func (r *Runtime) isClosed() bool {
	r.compiling.RLock()
	defer r.compiling.RUnlock()
	return r.closed
}

// LiveInstances is the number of module instances created by Run that
// wazero has not closed yet. It drops back to zero once every command has
// returned, however it ended: tests use it to prove a kill leaves nothing
// behind.
func (r *Runtime) LiveInstances() int64 { return r.live.Load() }

// LiveMemories is the number of guest linear memories allocated by Run and
// not yet freed by wazero.
func (r *Runtime) LiveMemories() int64 { return r.liveMem.Load() }

// MemoryLimit is the default per-command memory limit in bytes.
func (r *Runtime) MemoryLimit() uint64 { return r.memLimit }

// Budget is the runtime's memory budget (Config.MemoryBudget), the root of
// every budget of its runs: make a run's or a session's with its Child or
// Carve method. A caller about to allocate memory the runtime does not
// see (a compile: its estimated heap) reserves it here first and releases
// it after.
func (r *Runtime) Budget() *Budget { return r.budget }

// ReserveCompile reserves n bytes of the runtime's budget for a compile
// (its estimated heap) before it starts, in b when not nil (a run's budget,
// inside the runtime's) else in the runtime's own; release gives them back
// when the compile is done. A refusal is an error wrapping ErrMemoryLimit
// and ErrBudget (a *budget.ExceededError says which budget was full).
func (r *Runtime) ReserveCompile(b *Budget, n uint64) (release func(), err error) {
	if b == nil {
		b = r.budget
	}
	if err := b.Reserve(n); err != nil {
		return nil, fmt.Errorf("%w: compiling needs %s: %w", ErrMemoryLimit, budget.Format(n), err)
	}
	var once sync.Once
	return func() { once.Do(func() { b.Release(n) }) }, nil
}

// ErrNotWasm is returned by Compile for input that is not a WebAssembly
// binary (no \0asm magic).
var ErrNotWasm = errors.New("not a WebAssembly module")

// ErrClosed is returned by Compile on a runtime that is closed.
var ErrClosed = errors.New("runtime closed")

// ErrUnresolvedImport is the sentinel of *ImportError.
var ErrUnresolvedImport = errors.New("unresolved import")

// ImportError names every import of a module that the runtime does not
// provide, as "module.function" (plus memories, tables and globals, which
// wasmbox never provides).
type ImportError struct {
	Module  string   // name of the module being compiled
	Missing []string // sorted
}

func (e *ImportError) Error() string {
	return fmt.Sprintf("%s: imports not provided by wasmbox: %s", e.Module, strings.Join(e.Missing, ", "))
}

// Is makes errors.Is(err, ErrUnresolvedImport) true.
func (e *ImportError) Is(target error) bool { return target == ErrUnresolvedImport }

// Module is a compiled module, ready to instantiate any number of times.
type Module struct {
	name     string
	key      [32]byte
	size     int
	compiled wazero.CompiledModule
	minPages uint32
	reactor  *reactor // for a wasmbox reactor module (see SnapshotABI)
	imports  map[[2]string]bool
	rt       wazero.Runtime // r.rt, or r.fast for a metered module
	pinned   bool
	elem     *list.Element
	// startSec: the module has a start function (it runs at every
	// instantiation; see FreshImage).
	startSec bool
	// noEntry, when not empty, says why Run has nothing to call: a module
	// without _start, a start function or the reactor ABI would
	// instantiate, do nothing and end 0 (its exports are for Instance).
	noEntry string

	freshMu  sync.Mutex
	fresh    *MemoryImage // see FreshImage; held until closeCompiled
	freshErr error
	// stackLow is the lowest address of the guest's shadow stack, when
	// known (StackLowExport, asked by FreshImage); 0 otherwise.
	stackLow atomic.Uint64

	mu      sync.Mutex
	running int
	evicted bool
}

// Name is the name given to Compile.
func (m *Module) Name() string { return m.name }

// Size is the size of the module's binary in bytes.
func (m *Module) Size() int { return m.size }

// Sum is the SHA-256 of the module's binary.
func (m *Module) Sum() [32]byte { return m.key }

// acquire marks a run in progress; false if the module was released.
func (m *Module) acquire() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.evicted {
		return false
	}
	m.running++
	return true
}

func (m *Module) release(ctx context.Context) {
	m.mu.Lock()
	m.running--
	closeNow := m.evicted && m.running == 0
	m.mu.Unlock()
	if closeNow {
		m.closeCompiled(ctx)
	}
}

// closeCompiled releases the compiled code and the snapshot.
func (m *Module) closeCompiled(ctx context.Context) {
	if m.reactor != nil {
		m.reactor.close()
	}
	m.dropFresh()
	_ = m.compiled.Close(context.WithoutCancel(ctx))
}

var wasmMagic = []byte{0, 'a', 's', 'm'}

// IsWasm reports whether b starts with the WebAssembly magic \0asm.
func IsWasm(b []byte) bool { return bytes.HasPrefix(b, wasmMagic) }

// Cached reports whether a module with these bytes is compiled in memory.
func (r *Runtime) Cached(wasm []byte) bool {
	key := sha256.Sum256(wasm)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.modules[key]
	return ok
}

// Compile compiles wasm (or returns the module already compiled from the
// same bytes) and checks that the runtime provides every import. name is
// used in messages. Concurrent calls with the same bytes compile once.
//
// A compile belongs to its caller's context: it waits for its turn under
// CompileMemory (see CompileCost) only while ctx lasts, it stops soon
// after ctx is done (wazero polls it inside the compile), and Compile
// returns as soon as ctx is done with an error wrapping ctx's cause
// (context.DeadlineExceeded for a run's timeout), while the compile winds
// down in the background, still counted under CompileMemory until it has
// (Close waits for it). A caller that wants the compile to finish for
// later callers passes a context without a deadline
// (context.WithoutCancel), as the executor does for its registered
// modules.
func (r *Runtime) Compile(ctx context.Context, name string, wasm []byte) (*Module, error) {
	if !IsWasm(wasm) {
		return nil, fmt.Errorf("%s: %w", name, ErrNotWasm)
	}
	key := sha256.Sum256(wasm)
	if m := r.lookup(key); m != nil {
		return m, nil
	}
	if err := context.Cause(ctx); err != nil {
		return nil, fmt.Errorf("%s: compile: %w", name, err)
	}
	r.compiling.RLock()
	if r.closed {
		r.compiling.RUnlock()
		return nil, fmt.Errorf("%s: %w", name, ErrClosed)
	}
	// One compile per key: a second caller waits for the first one's
	// result, or for its own context.
	r.mu.Lock()
	lk, ok := r.compileLock[key]
	if !ok {
		lk = &keyLock{ch: make(chan struct{}, 1)}
		r.compileLock[key] = lk
	}
	lk.refs++
	r.mu.Unlock()
	unref := func() {
		r.mu.Lock()
		if lk.refs--; lk.refs == 0 {
			delete(r.compileLock, key)
		}
		r.mu.Unlock()
		r.compiling.RUnlock()
	}
	select {
	case lk.ch <- struct{}{}:
	case <-ctx.Done():
		unref()
		return nil, fmt.Errorf("%s: compile: %w", name, context.Cause(ctx))
	}
	type result struct {
		m   *Module
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer unref()
		defer func() { <-lk.ch }()
		m, err := r.compileLocked(ctx, name, wasm, key)
		done <- result{m, err}
	}()
	select {
	case res := <-done:
		return res.m, res.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: compile: %w", name, context.Cause(ctx))
	}
}

// keyLock serializes the compiles of one module.
type keyLock struct {
	ch   chan struct{} // holds a token while a compile runs
	refs int           // callers holding or waiting for it, under Runtime.mu
}

// compileLocked is Compile under the module's key lock.
func (r *Runtime) compileLocked(ctx context.Context, name string, wasm []byte, key [32]byte) (*Module, error) {
	if m := r.lookup(key); m != nil {
		return m, nil
	}
	compileStart := time.Now()
	pm, ok := r.loadPrepared(key)
	if !ok {
		var err error
		if pm, err = prepare(name, wasm, r.wazeroCheck); err != nil {
			return nil, err
		}
		r.storePrepared(key, pm)
	}
	binary, minPages, target := pm.binary, pm.minPages, r.rt
	if pm.metered {
		target = r.fast
	}
	var rc *reactor
	if pm.reactor {
		rc = &reactor{segments: pm.segments, globals: pm.globals, sem: make(chan struct{}, 1)}
		if r.spares > 0 {
			rc.spares = &sparePool{}
		}
	}
	cctx := experimental.WithCompilationWorkers(r.hostCtx(ctx), r.workers)
	cctx = experimental.WithCompileGate(cctx, func(ctx context.Context) (context.Context, func(), error) {
		return r.admitCompile(ctx, binary)
	})
	compiled, err := target.CompileModule(cctx, binary)
	if err != nil {
		if cerr := context.Cause(ctx); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("compile: %w", cerr)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.trimCache(compileStart)
	if err := r.checkImports(name, compiled); err != nil {
		_ = compiled.Close(ctx)
		return nil, err
	}
	m := &Module{name: name, key: key, size: len(wasm), compiled: compiled, minPages: minPages,
		reactor: rc, rt: target, imports: map[[2]string]bool{}}
	if secs, err := wasmbin.Sections(binary); err != nil || wasmbin.Find(secs, wasmbin.SecStart) >= 0 {
		m.startSec = true
	}
	if _, ok := compiled.ExportedFunctions()["_start"]; !ok && rc == nil && !m.startSec {
		m.noEntry = "it exports no _start function (a WASI command's entry), has no start function, and is not a wasmbox reactor"
		if why := wasmbin.ReactorRefusal(wasm); why != "" {
			m.noEntry += " (" + why + ")"
		}
	}
	for _, def := range compiled.ImportedFunctions() {
		if mod, fn, ok := def.Import(); ok {
			m.imports[[2]string{mod, fn}] = true
		}
	}
	r.mu.Lock()
	r.modules[key] = m
	m.elem = r.lru.PushFront(m)
	var evict []*Module
	for r.lru.Len() > r.maxCached {
		old := r.lru.Remove(r.lru.Back()).(*Module)
		old.elem = nil
		delete(r.modules, old.key)
		evict = append(evict, old)
	}
	r.mu.Unlock()
	for _, old := range evict {
		old.mu.Lock()
		old.evicted = true
		closeNow := old.running == 0
		old.mu.Unlock()
		if closeNow {
			old.closeCompiled(ctx)
		}
	}
	return m, nil
}

// prepare applies Compile's rewrites to a module: the caps, loop metering
// (unless wazeroCheck) and the reactor preparation.
func prepare(name string, wasm []byte, wazeroCheck bool) (prepared, error) {
	// Bound what the module makes the host allocate before anything
	// decodes it (see Caps in the package documentation).
	binary, err := wasmbin.ApplyCaps(wasm, wasmbin.DefaultCaps)
	if err != nil {
		return prepared{}, fmt.Errorf("%s: %w", name, refused(err))
	}
	pm := prepared{}
	if pm.minPages, err = minMemoryPages(binary); err != nil {
		return prepared{}, fmt.Errorf("%s: %w", name, err)
	}
	// The host stores into the global exported under this name while
	// the guest runs (fuelclock.go): a module that names it is refused in
	// either mode (InstrumentLoops refuses it too).
	if exportsName(binary, wasmbin.ExportFuel) {
		return prepared{}, fmt.Errorf("%s: %w", name, refused(fmt.Errorf("%w: it exports %q, the name of the fuel global", wasmbin.ErrRefused, wasmbin.ExportFuel)))
	}
	if !wazeroCheck {
		// A module that does not import sched_yield (a C or Rust program)
		// gets the import, so that it is metered too instead of running
		// under wazero's check, several times slower.
		//
		// A module the metering cannot take is refused, not run
		// unmetered: wazero's check looks at loop headers and function
		// entries only, so a guest that chose that path could run bulk
		// instructions of all its memory without a bound. The decoders
		// know every instruction and type that wazero's features here
		// accept, so such a module would fail to compile or link anyway;
		// refusing it here keeps that true by construction.
		in, ok, err := wasmbin.AddYieldImport(binary)
		if err == nil && !ok {
			err = errors.New("it uses a proposal that the metering does not decode (exception handling, GC types) or imports sched_yield with another type")
		}
		if err != nil {
			return prepared{}, fmt.Errorf("%s: %w (loop metering)", name, refused(err))
		}
		out, ok, err := wasmbin.InstrumentLoops(in)
		if err == nil && !ok {
			err = errors.New("its code uses an instruction that the metering does not decode")
		}
		if err != nil {
			return prepared{}, fmt.Errorf("%s: %w (loop metering)", name, refused(err))
		}
		// Metering adds code (a call of sched_yield in each check): the
		// caps hold for what is compiled, not only for what was given.
		if err := checkCaps(out); err != nil {
			return prepared{}, fmt.Errorf("%s: %w (after loop metering)", name, refused(err))
		}
		binary, pm.metered = out, true
	}
	if prep, ok, err := wasmbin.PrepareReactor(binary); err == nil && ok {
		pm.reactor, pm.segments, pm.globals = true, prep.Segments, prep.Globals
		binary = prep.Binary
	}
	pm.binary = binary
	return pm, nil
}

func (r *Runtime) lookup(key [32]byte) *Module {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.modules[key]
	if m != nil && m.elem != nil {
		r.lru.MoveToFront(m.elem)
	}
	return m
}

// Pin keeps m compiled in memory for the life of the runtime (registered
// tool modules are pinned).
func (r *Runtime) Pin(m *Module) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.elem != nil {
		r.lru.Remove(m.elem)
		m.elem = nil
	}
	m.pinned = true
}

func (r *Runtime) checkImports(name string, c wazero.CompiledModule) error {
	var missing []string
	for _, def := range c.ImportedFunctions() {
		mod, fn, _ := def.Import()
		got, ok := r.provided[mod][fn]
		switch {
		case !ok:
			missing = append(missing, mod+"."+fn)
		case !sameSignature(got, def):
			missing = append(missing, fmt.Sprintf("%s.%s (signature %s, want %s)", mod, fn, signature(def), signature(got)))
		}
	}
	for _, def := range c.ImportedMemories() {
		mod, n, _ := def.Import()
		missing = append(missing, mod+"."+n+" (memory)")
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	return &ImportError{Module: name, Missing: missing}
}

func sameSignature(a, b api.FunctionDefinition) bool {
	return bytes.Equal(a.ParamTypes(), b.ParamTypes()) && bytes.Equal(a.ResultTypes(), b.ResultTypes())
}

func signature(d api.FunctionDefinition) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return strings.Join(s, ",")
	}
	return "(" + names(d.ParamTypes()) + ")->(" + names(d.ResultTypes()) + ")"
}

// asLogWriter adapts w to the writer the logging package wants.
func asLogWriter(w io.Writer) logging.Writer {
	if lw, ok := w.(logging.Writer); ok {
		return lw
	}
	return stringWriter{w}
}

type stringWriter struct{ io.Writer }

func (s stringWriter) WriteString(str string) (int, error) { return s.Write([]byte(str)) }

// privateTempCache is the compilation cache directory when the user has no
// cache directory (no $HOME, as under some service managers): a directory
// of the temp dir private to this user. Compiled code is executed, so a
// directory another user could write to is never used; "" means no disk
// cache.
func privateTempCache() string {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("wasmbox-%d", os.Getuid()), "compile")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	for d := dir; d != filepath.Dir(os.TempDir()) && d != os.TempDir(); d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || !ownedByMe(fi) {
			return ""
		}
	}
	return dir
}

// exportsName says whether the (capped) module exports name; a module
// whose exports do not parse says no here, and fails to compile.
func exportsName(bin []byte, name string) bool {
	secs, err := wasmbin.Sections(bin)
	if err != nil {
		return false
	}
	xi := wasmbin.Find(secs, wasmbin.SecExport)
	if xi < 0 {
		return false
	}
	exps, err := wasmbin.Exports(secs[xi].Body)
	if err != nil {
		return false
	}
	for _, e := range exps {
		if e.Name == name {
			return true
		}
	}
	return false
}
