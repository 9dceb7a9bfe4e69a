package sandbox

import (
	"context"
	"fmt"
	"sync"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasm"
)

// Engine is the WebAssembly side shared by sandboxes: a wazero runtime with
// the embedded tool modules compiled once. Sandboxes are cheap; an Engine
// is not (the first compile of the tools takes a second or two, then the
// on-disk compilation cache makes it fast). Most programs use DefaultEngine.
type Engine struct {
	rt   *runtime.Runtime
	exec *executor.Executor
	// bin holds the command entries, built once and mounted read-only at
	// /bin and /usr/bin of every sandbox (root-owned, as on a real system:
	// the sandbox user cannot change them).
	bin vfs.FS
	// pyLib is Python's standard library, mounted read-only at
	// wasm.PythonStdlibDir of every sandbox (nil when the interpreter is
	// not built in; see python.go).
	pyLib vfs.FS
}

// NewEngine returns an engine over a new runtime configured by cfg, with
// the embedded tools registered and GNU bash and the coreutils module
// compiled (jq and awk compile on first use; the on-disk cache makes that
// fast after the first time).
func NewEngine(ctx context.Context, cfg runtime.Config) (*Engine, error) {
	rt, err := runtime.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	ex := executor.New(rt)
	if err := ex.RegisterTools(); err != nil {
		rt.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	// GNU bash runs every script (and sh -c) and the coreutils module
	// serves almost every one: compile (or load) them now, under ctx,
	// rather than in a sandbox's first session; jq and awk are compiled
	// on first use.
	mods := []string{wasm.CoreutilsModule}
	if _, ok := wasm.Bash(); ok {
		mods = append(mods, wasm.BashModule)
	}
	if err := ex.PrecompileModules(ctx, mods...); err != nil {
		rt.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("sandbox: compiling the tools: %w", err)
	}
	bin := vfs.NewMemFS(vfs.WithOwner(0, 0))
	if err := ex.Install(bin, "/"); err != nil {
		rt.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	var pyLib vfs.FS
	if _, lib, ok := wasm.Python(); ok {
		// Read-only in the view too, so that a write there is EROFS (the
		// guest's permission checks come after a read-only mount's).
		pyLib = vfs.ReadOnlyView(newLazyFS(func() (vfs.FS, error) { return loadPythonStdlib(lib) }))
		// The interpreter initializes once, with its standard library
		// mounted, and every run starts from that snapshot.
		world, err := vfs.NewDefault()
		if err == nil {
			err = world.Mount(wasm.PythonStdlibDir, pyLib)
		}
		if err == nil {
			err = ex.SetSnapshotFS(wasm.PythonModule, vfs.ReadOnlyView(world))
		}
		if err != nil {
			rt.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	return &Engine{rt: rt, exec: ex, bin: vfs.ReadOnlyView(bin), pyLib: pyLib}, nil
}

// Executor returns the executor the engine runs commands with.
func (e *Engine) Executor() *executor.Executor { return e.exec }

// Runtime returns the engine's runtime.
func (e *Engine) Runtime() *runtime.Runtime { return e.rt }

// Close releases the runtime. Sandboxes using the engine must be closed
// first.
func (e *Engine) Close(ctx context.Context) error {
	return e.rt.Close(ctx)
}

var (
	defaultMu     sync.Mutex
	defaultEngine *Engine
)

// DefaultEngine returns the process-wide engine, creating it on first use
// with the default runtime configuration (on-disk compilation cache under
// the user cache directory). A failed creation is retried by the next call.
func DefaultEngine(ctx context.Context) (*Engine, error) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultEngine != nil {
		return defaultEngine, nil
	}
	e, err := NewEngine(ctx, runtime.Config{})
	if err != nil {
		return nil, err
	}
	defaultEngine = e
	return e, nil
}
