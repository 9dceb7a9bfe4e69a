package shell

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/internal/sh/interp"

	"github.com/wasmbox/wasmbox/vfs"
)

// testExecutor is a TEST DOUBLE for the real (wasm) executor: a handful of
// commands written in Go, enough to drive pipelines, redirections and
// cancellation. The lead's integration tests run the real tools.
type testExecutor struct {
	fs    vfs.FS
	mu    sync.Mutex
	calls [][]string
}

func (e *testExecutor) Resolve(name string) (string, bool) {
	switch name {
	case "cat", "seq", "sleep", "yes", "wc", "sort", "head", "env", "argv", "spin", "panic":
		return "/usr/bin/" + name, true
	}
	return "", false
}

func (e *testExecutor) Exec(ctx context.Context, c Command) (int, error) {
	e.mu.Lock()
	e.calls = append(e.calls, slices.Clone(c.Argv))
	e.mu.Unlock()
	name := c.Argv[0]
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	stdin := c.Stdin
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	switch name {
	case "cat":
		if len(c.Argv) == 1 {
			_, err := io.Copy(c.Stdout, stdin)
			return 0, ignoreWriteErr(err)
		}
		for _, p := range c.Argv[1:] {
			f, err := e.fs.Open(resolve(c.Dir, p))
			if err != nil {
				fmt.Fprintf(c.Stderr, "cat: %s: No such file or directory\n", p)
				return 1, nil
			}
			io.Copy(c.Stdout, f)
			f.Close()
		}
		return 0, nil
	case "seq":
		n, _ := strconv.Atoi(c.Argv[len(c.Argv)-1])
		for i := 1; i <= n; i++ {
			if _, err := fmt.Fprintln(c.Stdout, i); err != nil {
				return 1, nil
			}
		}
		return 0, nil
	case "sleep":
		d, _ := strconv.ParseFloat(c.Argv[1], 64)
		select {
		case <-time.After(time.Duration(d * float64(time.Second))):
			return 0, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	case "panic": // stands for a bug: a panic on an interpreter goroutine
		panic("testExecutor: deliberate panic")
	case "spin": // a command that never ends until cancelled
		<-ctx.Done()
		return 0, ctx.Err()
	case "yes":
		line := []byte("y\n")
		for {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			if _, err := c.Stdout.Write(line); err != nil {
				return 1, nil
			}
		}
	case "wc":
		sc := bufio.NewScanner(stdin)
		n := 0
		for sc.Scan() {
			n++
		}
		fmt.Fprintln(c.Stdout, n)
		return 0, nil
	case "sort":
		b, _ := io.ReadAll(stdin)
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		slices.Sort(lines)
		fmt.Fprintln(c.Stdout, strings.Join(lines, "\n"))
		return 0, nil
	case "head":
		n := 10
		if len(c.Argv) > 2 && c.Argv[1] == "-n" {
			n, _ = strconv.Atoi(c.Argv[2])
		}
		r := bufio.NewReader(stdin)
		for i := 0; i < n; i++ {
			line, err := r.ReadString('\n')
			io.WriteString(c.Stdout, line)
			if err != nil {
				break
			}
		}
		return 0, nil
	case "env":
		for _, kv := range c.Env {
			fmt.Fprintln(c.Stdout, kv)
		}
		return 0, nil
	case "argv":
		for _, a := range c.Argv[1:] {
			fmt.Fprintf(c.Stdout, "<%s>", a)
		}
		fmt.Fprintln(c.Stdout)
		return 0, nil
	}
	return 127, ErrNotFound
}

func ignoreWriteErr(err error) error { return nil }

// syncBuffer is a bytes.Buffer safe for the concurrent writes of
// background jobs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

type testShell struct {
	*Shell
	fs             vfs.FS
	exec           *testExecutor
	stdout, stderr *syncBuffer
}

func newTestShell(t testing.TB, mod func(*Config)) *testShell {
	t.Helper()
	fs, err := vfs.NewDefault()
	if err != nil {
		t.Fatal(err)
	}
	ex := &testExecutor{fs: fs}
	ts := &testShell{fs: fs, exec: ex, stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	cfg := Config{FS: fs, Executor: ex, Dir: "/home/user", Stdout: ts.stdout, Stderr: ts.stderr,
		Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/user", "USER=user", "LANG=C.UTF-8"}}
	if mod != nil {
		mod(&cfg)
	}
	sh, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts.Shell = sh
	return ts
}

// run runs script with a timeout and returns stdout, stderr and status.
func (ts *testShell) run(t testing.TB, script string) (string, string, int, error) {
	t.Helper()
	ts.stdout.Reset()
	ts.stderr.Reset()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code, err := ts.Run(ctx, script)
	return ts.stdout.String(), ts.stderr.String(), code, err
}

func (ts *testShell) writeFile(t testing.TB, p, content string) {
	t.Helper()
	f, err := ts.fs.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, content); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// settleGoroutines waits until the number of goroutines is back to at
// most want, and fails the test if it never is.
func settleGoroutines(t testing.TB, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a watchdog; a settled count returns at once
	for {
		n := runtime.NumGoroutine()
		if n <= want {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines: %d, want at most %d\n%s", n, want, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func interpHandlerContextForTest() interp.HandlerContext { return interp.HandlerContext{} }
