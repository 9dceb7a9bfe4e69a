package preview1_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi"
	"github.com/wasmbox/wasmbox/wasi/preview1"
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

// probe returns a runtime with this package's module and the compiled
// probe guest, shared by the tests of this file.
func probe(t testing.TB) (wazero.Runtime, wazero.CompiledModule) {
	t.Helper()
	bin := guestWasm(t, "probe")
	probeOnce.Do(func() {
		ctx := context.Background()
		rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(true)
		if d, err := os.UserCacheDir(); err == nil {
			if cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(d, "wasmbox-test", "wazero")); err == nil {
				rc = rc.WithCompilationCache(cache)
			}
		}
		probeRuntime = wazero.NewRuntimeWithConfig(ctx, rc)
		if _, probeErr = preview1.Instantiate(ctx, probeRuntime); probeErr != nil {
			return
		}
		probeCompiled, probeErr = probeRuntime.CompileModule(ctx, bin)
	})
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	return probeRuntime, probeCompiled
}

func runProbe(t *testing.T, ctx context.Context, cfg preview1.Config, args ...string) (string, uint32, error) {
	t.Helper()
	r, compiled := probe(t)
	var out bytes.Buffer
	if cfg.Stdout == nil {
		cfg.Stdout = &out
	}
	cfg.Args = append([]string{"probe"}, args...)
	code, err := run(ctx, r, compiled, cfg)
	return out.String(), code, err
}

func TestGoGuestFiles(t *testing.T) {
	fsys := vfs.NewMemFS()
	if err := fsys.Mkdir("/work", 0o755); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	out, code, err := runProbe(t, context.Background(), preview1.Config{FS: fsys, Stderr: &stderr}, "files")
	if err != nil || code != 0 {
		t.Fatalf("code %d err %v\n%s%s", code, err, out, stderr.String())
	}
	want := `read "hello\nworld\n"
old name gone: true
symlink -> sub/b.txt: "hello\nworld\n"
hard link size 12
lstat symlink: true
readdir 51 b.txt f49
missing: open /work/missing: No such file or directory
rmdir non-empty: remove /work/sub: Directory not empty
removed: true
mkdir under file: mkdir /work/hard/x: No such file or directory
seek 7 read "789" err <nil>
truncated 4
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	// The guest's writes are in the vfs for the host to see.
	b, err := readVFSFile(fsys, "/work/hard")
	if err != nil || string(b) != "hello\nworld\n" {
		t.Errorf("host sees %q, %v", b, err)
	}
}

func readVFSFile(fsys vfs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func TestGoGuestArgsEnvExit(t *testing.T) {
	out, code, err := runProbe(t, context.Background(), preview1.Config{Env: []string{"GREETING=hi there"}}, "env", "a", "b c")
	if err != nil || code != 0 || out != "a,b c hi there\n" {
		t.Errorf("env: %q code %d err %v", out, code, err)
	}
	_, code, err = runProbe(t, context.Background(), preview1.Config{}, "exit")
	if err != nil || code != 7 {
		t.Errorf("exit: code %d err %v", code, err)
	}
	if _, err := preview1.NewState(preview1.Config{Args: []string{"a\x00b"}}); err == nil {
		t.Error("NUL in an argument accepted")
	}
}

// TestGoGuestQuota: a guest filling a MemFS with a quota sees ENOSPC
// ("no space left on device"), not wazero's EIO, after the bytes that fit:
// the write that crosses the quota is a short write (fd_write reports what
// was stored), the next one fails, and the file keeps exactly the quota.
func TestGoGuestQuota(t *testing.T) {
	const quota = 1<<20 + 1000 // not a multiple of the guest's 64 KiB writes
	fsys := vfs.NewMemFS(vfs.WithQuota(vfs.Quota{Bytes: quota}))
	out, code, err := runProbe(t, context.Background(), preview1.Config{FS: fsys}, "fill", "/big")
	if err != nil || code != 1 {
		t.Fatalf("code %d err %v: %s", code, err, out)
	}
	// Go's wasip1 port spells errno strings capitalised.
	if !strings.Contains(out, "write /big: No space left on device") {
		t.Errorf("guest saw %q", out)
	}
	if want := fmt.Sprintf("wrote %d\n", quota); !strings.HasSuffix(out, want) {
		t.Errorf("guest saw %q, want it to end with %q", out, want)
	}
	if fi, err := fsys.Stat("/big"); err != nil || fi.Size() != quota {
		t.Errorf("file after the quota: %v %v, want %d bytes", fi, err, quota)
	}
}

func TestGoGuestStdioPipes(t *testing.T) {
	for _, cmd := range []string{"cat", "pollcat"} {
		t.Run(cmd, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			stdin, stdinW := wasi.NewPipe(ctx)
			stdoutR, stdoutW := wasi.NewPipe(ctx)
			go func() {
				// Dribble the input so the guest has to wait for it.
				for i := 0; i < 5; i++ {
					fmt.Fprintf(stdinW, "line %d\n", i)
					time.Sleep(5 * time.Millisecond)
				}
				stdinW.Close()
			}()
			got := make(chan string, 1)
			go func() {
				b, _ := io.ReadAll(stdoutR)
				got <- string(b)
			}()
			var stderr bytes.Buffer
			_, code, err := runProbe(t, ctx, preview1.Config{Stdin: stdin, Stdout: stdoutW, Stderr: &stderr}, cmd)
			stdoutW.Close()
			if err != nil || code != 0 {
				t.Fatalf("code %d err %v: %s", code, err, stderr.String())
			}
			if out := <-got; out != "line 0\nline 1\nline 2\nline 3\nline 4\n" {
				t.Errorf("stdout %q", out)
			}
		})
	}
}

// TestGoGuestBrokenPipe: a guest writing to a pipe whose reader closed ends
// with 141, as with SIGPIPE.
func TestGoGuestBrokenPipe(t *testing.T) {
	ctx := context.Background()
	r, w := wasi.NewPipe(ctx)
	r.Close()
	_, code, err := runProbe(t, ctx, preview1.Config{Stdout: w}, "write", "100000")
	if err != nil || code != wasi.ExitCodeBrokenPipe {
		t.Errorf("code %d err %v", code, err)
	}
}

// TestGoGuestFaults: guest pointers out of bounds are EFAULT, never a host
// panic.
func TestGoGuestFaults(t *testing.T) {
	out, code, err := runProbe(t, context.Background(), preview1.Config{FS: vfs.NewMemFS()}, "faults")
	if err != nil || code != 0 {
		t.Fatalf("code %d err %v: %s", code, err, out)
	}
	want := `fd_write iovs 21
fd_write iovs_len 28
fd_read 21
args_get 21
path_open 21
poll_oneoff 21
poll_oneoff huge 28
random_get 21
prestat_dir_name 21
bad fd 8
`
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

// TestCancelBlockedGuest: a guest blocked in fd_read on a pipe, in
// poll_oneoff on stdin, sleeping, or in fd_write to a full pipe returns within milliseconds of a
// cancel, with the cancel's exit code, and leaves no goroutine behind.
func TestCancelBlockedGuest(t *testing.T) {
	probe(t)
	for _, args := range [][]string{{"read"}, {"pollcat"}, {"sleep", "1h"}, {"write", "1000000"}} {
		t.Run(args[0], func(t *testing.T) {
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			stdin, stdinW := wasi.NewPipe(ctx)
			defer stdinW.Close()
			// stdout is a pipe nobody reads: "write" blocks when it is full.
			_, stdoutW := wasi.NewPipe(ctx)
			done := make(chan struct{})
			var code uint32
			var err error
			go func() {
				defer close(done)
				_, code, err = runProbe(t, ctx, preview1.Config{Stdin: stdin, Stdout: stdoutW}, args...)
			}()
			time.Sleep(100 * time.Millisecond)
			start := time.Now()
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second): // a watchdog, not a speed limit
				t.Fatal("guest still blocked 30s after cancel")
			}
			// Typically well under a millisecond.
			t.Logf("returned %v after cancel", time.Since(start))
			if err != nil || code != sys.ExitCodeContextCanceled {
				t.Errorf("code %d err %v", code, err)
			}
			deadline := time.Now().Add(2 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				t.Errorf("%d goroutines left (before %d)", n, before)
			}
		})
	}
}

func TestGoGuestSleep(t *testing.T) {
	start := time.Now()
	out, code, err := runProbe(t, context.Background(), preview1.Config{}, "sleep", "30ms")
	if err != nil || code != 0 || out != "slept\n" {
		t.Fatalf("%q %d %v", out, code, err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("slept only %v", d)
	}
}

// TestConcurrentGuests: one host module serves many guests at once, each
// with its own State (files, stdio, args).
func TestConcurrentGuests(t *testing.T) {
	probe(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			fsys := vfs.NewMemFS()
			if err := fsys.Mkdir("/work", 0o755); err != nil {
				errs <- err
				return
			}
			out, code, err := runProbe(t, context.Background(), preview1.Config{FS: fsys, Env: []string{fmt.Sprintf("GREETING=g%d", i)}}, "env", fmt.Sprint(i))
			if err != nil || code != 0 || out != fmt.Sprintf("%d g%d\n", i, i) {
				errs <- fmt.Errorf("guest %d: %q %d %v", i, out, code, err)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestHaltedGuestCannotAct: once the State's halt (SetHalt) reports that
// the guest's process tree is being ended, the guest's next host call ends
// it with the halt's exit code, even though its own context was never
// canceled: a guest that was blocked reading and is woken by the data a
// dying process left (here, the test's write) cannot write it on.
func TestHaltedGuestCannotAct(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code uint32
	}{
		{context.Canceled, sys.ExitCodeContextCanceled},
		{context.DeadlineExceeded, sys.ExitCodeDeadlineExceeded},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			r, compiled := probe(t)
			stdin, stdinW := wasi.NewPipe(context.Background())
			var out bytes.Buffer
			st, err := preview1.NewState(preview1.Config{Args: []string{"probe", "cat"}, Stdin: stdin, Stdout: &out})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var halted atomic.Bool
			st.SetHalt(func() error {
				if halted.Load() {
					return tc.err
				}
				return nil
			})
			ctx := preview1.WithState(context.Background(), st)
			mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
			if err != nil {
				t.Fatal(err)
			}
			defer mod.Close(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := mod.ExportedFunction("_start").Call(ctx)
				done <- err
			}()
			// The guest is blocked in fd_read (or about to be): halt, then
			// hand it data and the end of its input.
			time.Sleep(50 * time.Millisecond)
			halted.Store(true)
			if _, err := stdinW.Write([]byte("after the halt\n")); err != nil {
				t.Fatal(err)
			}
			stdinW.Close()
			var werr error
			select {
			case werr = <-done:
			case <-time.After(30 * time.Second): // a watchdog
				t.Fatal("guest still running 30s after its input ended")
			}
			var ee *sys.ExitError
			if !errors.As(werr, &ee) || ee.ExitCode() != tc.code {
				t.Errorf("guest ended with %v, want exit code %d", werr, tc.code)
			}
			if out.Len() != 0 {
				t.Errorf("a halted guest wrote %q", out.String())
			}
		})
	}
}
