package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/internal/testcache"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// newRuntime returns a runtime with a per-test compilation cache.
func newRuntime(tb testing.TB, cfg runtime.Config) *runtime.Runtime {
	tb.Helper()
	if cfg.CacheDir == "" && !cfg.DisableCache {
		cfg.CacheDir = sharedCacheDir
	}
	rt, err := runtime.New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

var sharedCacheDir string

func TestMain(m *testing.M) {
	// The user cache directory is the tests' own (package testcache):
	// compiled code of the test guests is shared by the package's tests,
	// next to the guest binaries (keyed by module bytes and wazero version).
	done := testcache.Setup()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	sharedCacheDir = filepath.Join(base, "wasmbox-test", "compile")
	if err := os.MkdirAll(sharedCacheDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	done()
	os.Exit(code)
}

func compile(tb testing.TB, rt *runtime.Runtime, name string, b []byte) *runtime.Module {
	tb.Helper()
	m, err := rt.Compile(context.Background(), name, b)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func TestCompileErrors(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	tests := []struct {
		name    string
		bin     []byte
		is      error
		message string
	}{
		{"empty", nil, runtime.ErrNotWasm, "empty: not a WebAssembly module"},
		{"text", []byte("#!/bin/sh\necho hi\n"), runtime.ErrNotWasm, "text: not a WebAssembly module"},
		{"missing", runtimetest.MissingImport(), runtime.ErrUnresolvedImport,
			"missing: imports not provided by wasmbox: env.foo, wasi_snapshot_preview1.no_such_call"},
		{"badsig", runtimetest.Module{
			Imports: []runtimetest.Import{{Module: "wasi_snapshot_preview1", Name: "proc_exit", Type: runtimetest.FuncType{}}},
			Funcs:   []runtimetest.Func{{Export: "_start"}},
		}.Encode(), runtime.ErrUnresolvedImport,
			"badsig: imports not provided by wasmbox: wasi_snapshot_preview1.proc_exit (signature ()->(), want (i32)->())"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rt.Compile(context.Background(), tc.name, tc.bin)
			if !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want errors.Is %v", err, tc.is)
			}
			if err.Error() != tc.message {
				t.Errorf("message\n got: %s\nwant: %s", err, tc.message)
			}
		})
	}
	// A truncated module is wazero's decode error, not a panic.
	if _, err := rt.Compile(context.Background(), "trunc", runtimetest.Trivial()[:12]); err == nil {
		t.Error("truncated module compiled")
	}
}

func TestCompileOnce(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	bin := runtimetest.Exit(5)
	var wg sync.WaitGroup
	mods := make([]*runtime.Module, 8)
	for i := range mods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := rt.Compile(context.Background(), "exit5", bin)
			if err != nil {
				t.Error(err)
			}
			mods[i] = m
		}()
	}
	wg.Wait()
	for _, m := range mods[1:] {
		if m != mods[0] {
			t.Fatal("same bytes compiled into different modules")
		}
	}
	if !rt.Cached(bin) {
		t.Error("module not cached")
	}
}

func TestCacheEviction(t *testing.T) {
	rt := newRuntime(t, runtime.Config{MaxCachedModules: 2})
	pinned := compile(t, rt, "pinned", runtimetest.Exit(1))
	rt.Pin(pinned)
	a := compile(t, rt, "a", runtimetest.Exit(2))
	compile(t, rt, "b", runtimetest.Exit(3))
	compile(t, rt, "c", runtimetest.Exit(4))
	if rt.Cached(runtimetest.Exit(2)) {
		t.Error("least recently used module still cached")
	}
	if !rt.Cached(runtimetest.Exit(1)) {
		t.Error("pinned module evicted")
	}
	if err := rt.Run(context.Background(), a, wazero.NewModuleConfig(), runtime.RunOptions{}); !errors.Is(err, runtime.ErrReleased) {
		t.Errorf("run of evicted module: %v", err)
	}
	if err := rt.Run(context.Background(), pinned, wazero.NewModuleConfig(), runtime.RunOptions{}); exitCode(err) != 1 {
		t.Errorf("pinned module: %v", err)
	}
}

func exitCode(err error) int {
	var ee *sys.ExitError
	if err == nil {
		return 0
	}
	if errors.As(err, &ee) {
		return int(ee.ExitCode())
	}
	return -1
}

func TestRunExit(t *testing.T) {
	defer runtimetest.CheckGoroutines(t)()
	rt := newRuntime(t, runtime.Config{})
	for _, code := range []uint32{0, 1, 3, 255} {
		m := compile(t, rt, "exit", runtimetest.Exit(code))
		err := rt.Run(context.Background(), m, wazero.NewModuleConfig(), runtime.RunOptions{})
		if got := exitCode(err); got != int(code) {
			t.Errorf("exit %d: got %d (%v)", code, got, err)
		}
	}
	if err := rt.Run(context.Background(), compile(t, rt, "trivial", runtimetest.Trivial()), wazero.NewModuleConfig(), runtime.RunOptions{}); err != nil {
		t.Errorf("trivial: %v", err)
	}
	if n := rt.LiveInstances(); n != 0 {
		t.Errorf("live instances = %d", n)
	}
}

func TestRunKill(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	spin := compile(t, rt, "spin", runtimetest.Spin())
	sleep := compile(t, rt, "sleep", runtimetest.Guest(t, "sleep"))
	defer runtimetest.CheckGoroutines(t)()
	for _, tc := range []struct {
		name   string
		mod    *runtime.Module
		cancel bool
		want   error
	}{
		{"spin/deadline", spin, false, context.DeadlineExceeded},
		{"spin/cancel", spin, true, context.Canceled},
		{"sleep/deadline", sleep, false, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ctx context.Context
			var cancel context.CancelFunc
			if tc.cancel {
				ctx, cancel = context.WithCancel(context.Background())
				time.AfterFunc(50*time.Millisecond, cancel)
			} else {
				ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
			}
			defer cancel()
			start := time.Now()
			err := rt.Run(ctx, tc.mod, wazero.NewModuleConfig(), runtime.RunOptions{})
			elapsed := time.Since(start)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			// The sleeper blocks in a host call wazero cannot interrupt
			// (its nanosleep ignores ctx); the wasi package supplies one
			// that watches ctx. Spin loops never end by themselves: a
			// watchdog, not a speed limit.
			if tc.mod == spin && elapsed > 30*time.Second {
				t.Errorf("kill took %v", elapsed)
			}
		})
	}
	if n := rt.LiveInstances(); n != 0 {
		t.Errorf("live instances = %d", n)
	}
	if n := rt.LiveMemories(); n != 0 {
		t.Errorf("live memories = %d", n)
	}
}

func TestRunDoneContext(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	m := compile(t, rt, "trivial", runtimetest.Trivial())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := rt.Run(ctx, m, wazero.NewModuleConfig(), runtime.RunOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

func TestMemoryLimit(t *testing.T) {
	defer runtimetest.CheckGoroutines(t)()
	rt := newRuntime(t, runtime.Config{MemoryLimit: 4 << 20})
	hog := compile(t, rt, "hog", runtimetest.Hog())
	st, err := rt.RunStats(context.Background(), hog, wazero.NewModuleConfig(), runtime.RunOptions{})
	if !errors.Is(err, runtime.ErrMemoryLimit) {
		t.Fatalf("hog: %v", err)
	}
	if !st.LimitHit || st.PeakMemory != 4<<20 {
		t.Errorf("stats = %+v, want limit hit at peak 4MiB", st)
	}
	if !strings.Contains(err.Error(), "more than 4MiB") {
		t.Errorf("message: %v", err)
	}
	// Per command: a larger limit for one run lets it go further.
	st, err = rt.RunStats(context.Background(), hog, wazero.NewModuleConfig(), runtime.RunOptions{MemoryLimit: 8 << 20})
	if !errors.Is(err, runtime.ErrMemoryLimit) || st.PeakMemory != 8<<20 {
		t.Errorf("8MiB run: %+v %v", st, err)
	}

	big := compile(t, rt, "big", runtimetest.BigMemory(100)) // 6.25 MiB initial
	err = rt.Run(context.Background(), big, wazero.NewModuleConfig(), runtime.RunOptions{})
	want := "big: memory limit exceeded: the module needs 6400KiB of initial memory, the limit is 4MiB"
	if !errors.Is(err, runtime.ErrMemoryLimit) || err.Error() != want {
		t.Errorf("big: %v", err)
	}
	if err := rt.Run(context.Background(), big, wazero.NewModuleConfig(), runtime.RunOptions{MemoryLimit: 7 << 20}); err != nil {
		t.Errorf("big under 7MiB: %v", err)
	}
	if n := rt.LiveMemories(); n != 0 {
		t.Errorf("live memories = %d", n)
	}
}

func TestMemoryLimitGoGuest(t *testing.T) {
	// Configured through the ModuleConfig: wazero's WASI.
	rt := newRuntime(t, runtime.Config{WASI: runtime.WASIWazero})
	hog := compile(t, rt, "hog", runtimetest.Guest(t, "hog"))
	var stdout, stderr bytes.Buffer
	mc := wazero.NewModuleConfig().WithArgs("hog").WithStdout(&stdout).WithStderr(&stderr)
	err := rt.Run(context.Background(), hog, mc, runtime.RunOptions{MemoryLimit: 32 << 20})
	if !errors.Is(err, runtime.ErrMemoryLimit) {
		t.Fatalf("err = %v\nstderr: %.300s", err, stderr.String())
	}
	stdout.Reset()
	mc = wazero.NewModuleConfig().WithArgs("hog", "8").WithStdout(&stdout)
	if err := rt.Run(context.Background(), hog, mc, runtime.RunOptions{MemoryLimit: 32 << 20}); err != nil {
		t.Fatalf("8 MiB under 32 MiB: %v", err)
	}
	if stdout.String() != "allocated 8 MiB\n" {
		t.Errorf("stdout = %q", stdout.String())
	}
}

func TestHostLogging(t *testing.T) {
	var log bytes.Buffer
	rt := newRuntime(t, runtime.Config{HostLogging: &log, DisableCache: true})
	m := compile(t, rt, "args", runtimetest.Guest(t, "args"))
	if err := rt.Run(context.Background(), m, wazero.NewModuleConfig().WithArgs("args"), runtime.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "==> wasi_snapshot_preview1.fd_prestat_get(fd=3)") {
		t.Errorf("log lacks fd_prestat_get:\n%s", log.String())
	}
}

func TestCompilationCacheDir(t *testing.T) {
	dir := t.TempDir()
	rt := newRuntime(t, runtime.Config{CacheDir: dir})
	compile(t, rt, "exit", runtimetest.Exit(9))
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("cache dir empty: %v", err)
	}
}

// A budget shared by a parent and the child it spawns bounds them together.
func TestMemoryBudget(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	hog := compile(t, rt, "hog", runtimetest.Hog())
	budget := runtime.NewBudget(2 << 20)
	var childStats runtime.RunStats
	var childErr error
	sp := runtime.SpawnFunc(func(ctx context.Context, req runtime.SpawnRequest) (uint32, error) {
		childStats, childErr = rt.RunStats(ctx, hog, wazero.NewModuleConfig(), runtime.RunOptions{MemoryLimit: 4 << 20, Budget: budget})
		return 9, nil
	})
	req := []byte(`{"argv":["hog"]}`)
	parent := compile(t, rt, "parent", runtimetest.SpawnRaw(req, 0, uint32(len(req)), 1024))
	err := rt.Run(context.Background(), parent, wazero.NewModuleConfig(), runtime.RunOptions{Budget: budget, Spawner: sp})
	if exitCode(err) != 9 {
		t.Fatalf("parent: %v", err)
	}
	if !errors.Is(childErr, runtime.ErrMemoryLimit) || childStats.PeakMemory != 2<<20-64<<10 {
		t.Errorf("child: %+v %v (want peak 2MiB minus the parent's 64KiB)", childStats, childErr)
	}
	if budget.Used() != 0 {
		t.Errorf("budget used after the runs: %d", budget.Used())
	}
	big := compile(t, rt, "big", runtimetest.BigMemory(40))
	err = rt.Run(context.Background(), big, wazero.NewModuleConfig(), runtime.RunOptions{Budget: budget})
	want := "big: memory limit exceeded: the module needs 2560KiB of initial memory: command memory budget (2MiB) exceeded: 0B in use, 2560KiB more asked"
	if !errors.Is(err, runtime.ErrMemoryLimit) || err.Error() != want {
		t.Errorf("big: %v", err)
	}
}

// TestOwnWASIState runs a Go guest on wasmbox's WASI module, which takes
// the arguments and streams from RunOptions.WASI.
func TestOwnWASIState(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	if !rt.OwnWASI() {
		t.Fatal("the default runtime should use wasmbox's WASI")
	}
	hog := compile(t, rt, "hog", runtimetest.Guest(t, "hog"))
	var stdout bytes.Buffer
	st, err := preview1.NewState(preview1.Config{Args: []string{"hog", "8"}, Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := rt.Run(context.Background(), hog, wazero.NewModuleConfig(), runtime.RunOptions{MemoryLimit: 32 << 20, WASI: st}); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "allocated 8 MiB\n" {
		t.Errorf("stdout = %q", stdout.String())
	}
}

func TestPrivateTempCacheWithoutHome(t *testing.T) {
	t.Setenv("HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	newDefault := func() {
		rt, err := runtime.New(context.Background(), runtime.Config{})
		if err != nil {
			t.Fatal(err)
		}
		rt.Close(context.Background())
	}
	newDefault()
	dir := filepath.Join(tmp, fmt.Sprintf("wasmbox-%d", os.Getuid()), "compile")
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("cache dir %s: %v %v", dir, fi, err)
	}
	// A directory others can write to is never used.
	bad := t.TempDir()
	t.Setenv("TMPDIR", bad)
	if err := os.MkdirAll(filepath.Join(bad, fmt.Sprintf("wasmbox-%d", os.Getuid())), 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(bad, fmt.Sprintf("wasmbox-%d", os.Getuid())), 0o777)
	newDefault()
	if _, err := os.ReadDir(filepath.Join(bad, fmt.Sprintf("wasmbox-%d", os.Getuid()), "compile")); err == nil {
		entries, _ := os.ReadDir(filepath.Join(bad, fmt.Sprintf("wasmbox-%d", os.Getuid()), "compile"))
		if len(entries) > 0 {
			t.Fatalf("used a world-writable cache directory: %v", entries)
		}
	}
}
