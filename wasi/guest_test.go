package wasi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// guestWasm builds testdata/<name> with GOOS=wasip1 GOARCH=wasm once per
// source hash (runtimetest.BuildGoDir caches it).
func guestWasm(t testing.TB, name string) []byte {
	t.Helper()
	b, err := runtimetest.BuildGoDir(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("building guest %s: %v", name, err)
	}
	return b
}

var (
	probeOnce     sync.Once
	probeRuntime  wazero.Runtime
	probeCompiled wazero.CompiledModule
	probeErr      error
)

// probe returns the shared runtime and the compiled testdata/probe guest.
func probe(t testing.TB) (wazero.Runtime, wazero.CompiledModule) {
	t.Helper()
	bin := guestWasm(t, "probe")
	probeOnce.Do(func() {
		ctx := context.Background()
		probeRuntime = newSharedRuntime(ctx)
		probeCompiled, probeErr = probeRuntime.CompileModule(ctx, bin)
	})
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	return probeRuntime, probeCompiled
}

// readyWriter signals once the guest wrote "ready\n" to stderr.
type readyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
	once  sync.Once
}

func newReadyWriter() *readyWriter { return &readyWriter{ready: make(chan struct{})} }

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), "ready\n") {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

func (w *readyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// settleGoroutines waits (briefly) for the goroutine count to drop back to
// at most want and returns the last count seen.
func settleGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 100 && n > want; i++ {
		time.Sleep(5 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// TestCancelBlockedGuest proves that a guest blocked in a host call returns
// promptly when its context is cancelled, with a context error, and leaves no
// goroutine behind.
func TestCancelBlockedGuest(t *testing.T) {
	r, compiled := probe(t)
	tests := []struct {
		name  string
		args  []string
		stdin bool // give the guest a pipe as stdin that nobody writes to
		flood bool // give the guest a pipe as stdout that nobody reads
	}{
		{name: "fd_read on stdin pipe", args: []string{"cat"}, stdin: true},
		{name: "poll_oneoff clock", args: []string{"pollclock", "1h"}},
		{name: "poll_oneoff stdin and clock", args: []string{"pollstdin", "1h"}, stdin: true},
		{name: "time.Sleep", args: []string{"sleep"}},
		{name: "fd_write on full stdout pipe", args: []string{"flood", "10000000"}, flood: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()

			stderr := newReadyWriter()
			mc := wazero.NewModuleConfig().WithName("").
				WithArgs(append([]string{"probe"}, tc.args...)...).
				WithStderr(stderr)
			var closers []io.Closer
			var opts Options
			if tc.stdin {
				r, w := NewPipe(ctx)
				opts.Stdin = r
				closers = append(closers, w)
			}
			if tc.flood {
				r, w := NewPipe(ctx)
				opts.Stdout = w
				closers = append(closers, r)
			}
			mc = Configure(ctx, mc, newTestFS(t), opts)

			done := make(chan error, 1)
			go func() {
				mod, err := r.InstantiateModule(ctx, compiled, mc)
				if mod != nil {
					mod.Close(context.Background())
				}
				done <- err
			}()
			select {
			case <-stderr.ready:
			case err := <-done:
				t.Fatalf("guest ended before blocking: %v; stderr %q", err, stderr.String())
			case <-time.After(20 * time.Second):
				t.Fatalf("guest never got ready; stderr %q", stderr.String())
			}
			// Let it reach the blocking call.
			time.Sleep(50 * time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("guest did not block: %v; stderr %q", err, stderr.String())
			default:
			}

			start := time.Now()
			cancel()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second): // a watchdog, not a speed limit
				t.Fatal("guest still running 30s after cancel")
			}
			elapsed := time.Since(start)
			t.Logf("returned %v after cancel: %v", elapsed, err)
			var exit *sys.ExitError
			if !errors.Is(err, context.Canceled) || !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeContextCanceled {
				t.Errorf("err = %v, want an exit with sys.ExitCodeContextCanceled", err)
			}
			for _, c := range closers {
				c.Close()
			}
			if after := settleGoroutines(before); after > before {
				buf := make([]byte, 1<<16)
				t.Errorf("goroutines: %d before, %d after\n%s", before, after, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

// newSharedRuntime is newTestRuntime for a runtime shared by several tests
// (closed with the process).
func newSharedRuntime(ctx context.Context) wazero.Runtime {
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(true)
	if d, err := os.UserCacheDir(); err == nil {
		if cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(d, "wasmbox-test", "wazero")); err == nil {
			rc = rc.WithCompilationCache(cache)
		}
	}
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	instantiateWASI(ctx, r)
	return r
}

// TestDeadlineWhileSleeping: a deadline that passes while the guest sleeps
// ends the run with sys.ExitCodeDeadlineExceeded.
func TestDeadlineWhileSleeping(t *testing.T) {
	r, compiled := probe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	mc := Configure(ctx, wazero.NewModuleConfig().WithName("").WithArgs("probe", "sleep"), newTestFS(t), Options{})
	start := time.Now()
	mod, err := r.InstantiateModule(ctx, compiled, mc)
	if mod != nil {
		mod.Close(context.Background())
	}
	var exit *sys.ExitError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeDeadlineExceeded {
		t.Errorf("err = %v, want an exit with sys.ExitCodeDeadlineExceeded", err)
	}
	// The guest sleeps an hour: a watchdog, not a speed limit.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %v for a 100ms deadline", d)
	}
}

// TestBrokenPipe: a guest writing to a stdout pipe whose reader closed ends
// with ExitCodeBrokenPipe, as a process killed by SIGPIPE.
func TestBrokenPipe(t *testing.T) {
	r, compiled := probe(t)
	ctx := context.Background()
	pr, pw := NewPipe(ctx)
	pr.Close()
	mc := Configure(ctx, wazero.NewModuleConfig().WithName("").WithArgs("probe", "flood", "1000000"),
		newTestFS(t), Options{Stdout: pw})
	mod, err := r.InstantiateModule(ctx, compiled, mc)
	if mod != nil {
		mod.Close(ctx)
	}
	var exit *sys.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitCodeBrokenPipe {
		t.Errorf("err = %v, want exit code %d", err, ExitCodeBrokenPipe)
	}
}
