package preview1_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi"
	"github.com/wasmbox/wasmbox/wasi/preview1"
	"github.com/wasmbox/wasmbox/wasi/wasitest"
)

// testsuiteFloor is how many of the 72 wasi-testsuite cases must pass with
// this package's module over MemFS. Raise it when the module gets better;
// never lower it to make a run pass.
const testsuiteFloor = 72

// newRuntime returns a runtime with this package's module, close on
// context done, and the on-disk compilation cache the wasi tests share.
func newRuntime(ctx context.Context, t testing.TB) wazero.Runtime {
	t.Helper()
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(true)
	if d, err := os.UserCacheDir(); err == nil {
		if cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(d, "wasmbox-test", "wazero")); err == nil {
			rc = rc.WithCompilationCache(cache)
		}
	}
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	t.Cleanup(func() { r.Close(context.Background()) })
	if _, err := preview1.Instantiate(ctx, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// run runs compiled once with cfg (as _start under a context carrying the
// State) and returns the exit code, or an error for a trap.
func run(ctx context.Context, r wazero.Runtime, compiled wazero.CompiledModule, cfg preview1.Config) (uint32, error) {
	st, err := preview1.NewState(cfg)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	ctx = preview1.WithState(ctx, st)
	mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return 0, err
	}
	defer mod.Close(context.Background())
	start := mod.ExportedFunction("_start")
	if start == nil {
		return 0, errors.New("no _start")
	}
	_, err = start.Call(ctx)
	var exitErr *sys.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode(), nil
	}
	return 0, err
}

// TestWASITestsuite runs every case of the WebAssembly wasi-testsuite with
// this package's module, each against a fresh in-memory copy of its root,
// and fails below testsuiteFloor.
func TestWASITestsuite(t *testing.T) {
	cases := wasitest.Cases(t, 2)
	ctx := context.Background()
	r := newRuntime(ctx, t)
	wasitest.Tally(t, "preview1 wasi-testsuite", cases, testsuiteFloor, func(wasmPath string) error {
		return runSuiteCase(ctx, r, wasmPath)
	})
}

func runSuiteCase(ctx context.Context, r wazero.Runtime, wasmPath string) error {
	tc, err := wasitest.LoadCase(wasmPath)
	if err != nil {
		return fmt.Errorf("bad json: %w", err)
	}
	// A case without a root gets no preopen at all (c/sock_shutdown-
	// invalid_fd expects descriptor 3 to be closed).
	var fsys vfs.FS
	if tc.Root != "" {
		fsys = vfs.NewMemFS()
		if err := wasitest.CopyTree(fsys, filepath.Join(filepath.Dir(wasmPath), tc.Root)); err != nil {
			return fmt.Errorf("load root: %w", err)
		}
	}
	bin, err := os.ReadFile(wasmPath)
	if err != nil {
		return err
	}
	compiled, err := r.CompileModule(ctx, bin)
	if err != nil {
		return err
	}
	defer compiled.Close(ctx)

	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	stdin, stdinW := wasi.NewPipe(ctx)
	stdinW.Close()
	var stdout, stderr bytes.Buffer
	keys := make([]string, 0, len(tc.Env))
	for k := range tc.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var env []string
	for _, k := range keys {
		env = append(env, k+"="+tc.Env[k])
	}
	code, err := run(ctx, r, compiled, preview1.Config{
		FS:    fsys,
		Args:  append([]string{filepath.Base(wasmPath)}, tc.Args...),
		Env:   env,
		Stdin: stdin, Stdout: &stdout, Stderr: &stderr,
	})
	return tc.Check(err, code, stdout.String(), stderr.String())
}
