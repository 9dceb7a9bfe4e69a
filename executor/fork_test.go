package executor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/vfs"
)

// The process model of C guests (build/posix, runtime.ForkABI), through
// testdata/posix/forktest.c: a C program built with libwasmbox_posix.a and
// Asyncify (`make posix-testdata` rebuilds forktest.wasm, `make
// posix-check` proves it is what the source builds).

type forkEnv struct {
	rt  *runtime.Runtime
	ex  *executor.Executor
	fs  vfs.FS
	mod *runtime.Module
}

func newForkEnv(t testing.TB) *forkEnv {
	t.Helper()
	wasmBytes, err := os.ReadFile("../testdata/posix/forktest.wasm")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), runtime.Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	ex := executor.New(rt)
	if err := ex.RegisterTools(); err != nil {
		t.Fatal(err)
	}
	fsys := vfs.NewMemFS()
	for _, d := range []string{"/home/user", "/tmp"} {
		if err := fsys.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := ex.Install(fsys, "/bin", "/usr/bin"); err != nil {
		t.Fatal(err)
	}
	mod, err := rt.Compile(context.Background(), "forktest", wasmBytes)
	if err != nil {
		t.Fatal(err)
	}
	return &forkEnv{rt: rt, ex: ex, fs: fsys, mod: mod}
}

func (e *forkEnv) run(ctx context.Context, job executor.Job, stdout ...*syncBuffer) (executor.Result, string, string) {
	out := &syncBuffer{}
	if len(stdout) > 0 {
		out = stdout[0]
	}
	var errb syncBuffer
	job.Module = e.mod
	job.FS = e.fs
	job.Env = []string{"PATH=/bin:/usr/bin", "HOME=/home/user"}
	job.Dir = "/home/user"
	job.Stdout, job.Stderr = out, &errb
	if job.Timeout == 0 {
		job.Timeout = 2 * time.Minute // a watchdog, not a measure
	}
	res := e.ex.Run(ctx, job)
	return res, out.String(), errb.String()
}

// syncBuffer is a bytes.Buffer that several writers (a guest and its
// forked children) share, and that tells when it first holds want.
type syncBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	want string
	seen chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if s.seen != nil && strings.Contains(s.b.String(), s.want) {
		close(s.seen)
		s.seen = nil
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestForkModes(t *testing.T) {
	e := newForkEnv(t)
	tests := []struct {
		mode, stdout, stderr string
	}{
		{"setjmp", "across frames: 42\ninner: 5\nouter: 7\nzero: 1\nrounds: 1001 trace 0\n", ""},
		{"pipe", "I am 1, read: hello from 2, child of 1\nwaitpid 1: same 1 exited 1 status 7\nhandle at 1024: 1, closed by waitpid: 1\nno more children\n", ""},
		// echo hi | tr a-z A-Z with fork, pipe, dup2 and execvp: both
		// through the executor, with the descriptors dup2 set.
		{"exec", "HI\necho 0, tr 0\nmissing: 127\n", "no-such-command: No such file or directory\n"},
		{"status", "exit: exited 1 status 3\nnohang: 0\nkill: signaled 1 signal 9 exited 0\nkill unknown: -1 No such process\n", ""},
		{"dup", "shared offset: abcdef\nF_DUPFD: 20\nfile after dup2: 20 bytes, tail into the file\n" +
			"dup2 bad: -1 Bad file descriptor\nF_GETFD free: -1 Bad file descriptor, open: 1\nafter fork: child\nparent\n", ""},
		// __wasmbox_nest segments (bash's evalexp and test run in one):
		// setjmp/longjmp inside a segment, longjmp out of one and of two,
		// fork two segments deep (both sides go on with their locals).
		{"nest", "mode 0: 102\nmode 1: 1010\nmode 2: top 20, reached 1\n" +
			"child: local 1234 rounds 4 level 2\nparent: local 1234 rounds 4 child status 34\nmode 3: 102\n", ""},
		// build/posix moves the preopened directories out of the way
		// (start.c): a program's descriptor 3 is its own.
		// exec hands the command its open descriptors from 4 up, but
		// not a close-on-exec one (build/posix exec.c and proc.c,
		// runtime.SpawnABI's inherit_fds).
		{"inherit", "F_GETFD 40: 0, 41: 1\nlent\ncat: exit 1\n", "cat: /proc/self/fd/41: No such file or directory\n"},
		{"preopen", "first open: 3\ndup2 onto 3: 3\nopen after close(3): 3, read 1 x\nchild open: exit 0\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			res, out, stderr := e.run(context.Background(), executor.Job{Argv: []string{"forktest", tc.mode}})
			if res.ExitCode != 0 || res.Err != nil {
				t.Errorf("result %+v, stderr %q", res, stderr)
			}
			if out != tc.stdout {
				t.Errorf("stdout\n got %q\nwant %q", out, tc.stdout)
			}
			if stderr != tc.stderr {
				t.Errorf("stderr\n got %q\nwant %q", stderr, tc.stderr)
			}
		})
	}
	if n := e.rt.LiveInstances(); n != 0 {
		t.Errorf("live instances after the runs: %d", n)
	}
}

// A fork bomb (every process forks until fork fails) is bounded by
// MaxProcesses, or by the memory budget first: the tree that meets either
// ends the run with 137 LIMIT_EXCEEDED and an error naming the limit (the
// guest does not see EAGAIN or ENOMEM and go on), and the run's end stops
// every child: no instance or goroutine is left.
func TestForkBomb(t *testing.T) {
	e := newForkEnv(t)
	e.run(context.Background(), executor.Job{Argv: []string{"forktest", "pipe"}}) // warm up
	defer runtimetest.CheckGoroutines(t)()
	for _, tc := range []struct {
		name   string
		budget *runtime.Budget
		why    string
	}{
		{"processes", nil, "process limit exceeded: 256 processes"},
		{"budget", runtime.NewBudget(16 << 20), "command memory budget (16MiB) exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, out, stderr := e.run(context.Background(), executor.Job{Argv: []string{"forktest", "bomb"}, Budget: tc.budget})
			if res.ExitCode != 137 || res.Class != executor.ClassLimitExceeded || res.Err == nil || !strings.Contains(res.Err.Error(), tc.why) {
				t.Fatalf("result %+v, stdout %q, stderr %q; want 137 LIMIT_EXCEEDED %q", res, out, stderr, tc.why)
			}
			if n := e.rt.LiveInstances(); n != 0 {
				t.Errorf("live instances after the bomb: %d", n)
			}
			if n := e.rt.LiveMemories(); n != 0 {
				t.Errorf("live memories after the bomb: %d", n)
			}
			if tc.budget != nil && tc.budget.Used() != 0 {
				t.Errorf("budget still holds %d bytes", tc.budget.Used())
			}
		})
	}
}

// A forked child spinning in `for(;;);` dies with its run: by the run's
// deadline (the loops of the Asyncify output are metered) and by a cancel,
// leaving no instance or goroutine.
func TestForkKillEndsChildren(t *testing.T) {
	e := newForkEnv(t)
	e.run(context.Background(), executor.Job{Argv: []string{"forktest", "pipe"}}) // warm up
	defer runtimetest.CheckGoroutines(t)()
	t.Run("deadline", func(t *testing.T) {
		res, out, _ := e.run(context.Background(), executor.Job{Argv: []string{"forktest", "spin"}, Timeout: 300 * time.Millisecond})
		if res.ExitCode != 124 || res.Class != executor.ClassTimeout || out != "spinning child 2\n" {
			t.Errorf("result %+v, stdout %q", res, out)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out := &syncBuffer{want: "spinning child", seen: make(chan struct{})}
		seen := out.seen
		go func() {
			<-seen // the child runs: kill the run
			cancel()
		}()
		res, _, _ := e.run(ctx, executor.Job{Argv: []string{"forktest", "spin"}}, out)
		if res.ExitCode != 125 || res.Class != executor.ClassCancelled || !errors.Is(res.Err, context.Canceled) {
			t.Errorf("result %+v, stdout %q", res, out.String())
		}
	})
	if n := e.rt.LiveInstances(); n != 0 {
		t.Errorf("live instances after the kills: %d", n)
	}
}

// A child's memory counts against the run's budget from the fork on: the
// parent holds 4 MiB, the child's copy as much, and the child's own 4 MiB
// more do not fit in 11 MiB (they do in 64). A child refused memory ends
// the run with the budget's error, as the parent's own growth would.
func TestForkMemoryBudget(t *testing.T) {
	e := newForkEnv(t)
	for _, tc := range []struct {
		budget uint64
		out    string // "": the run ends on the budget
	}{
		{11 << 20, ""},
		{64 << 20, "child: allocated 4 MiB\nchild exited 0\n"},
	} {
		b := runtime.NewBudget(tc.budget)
		res, out, stderr := e.run(context.Background(), executor.Job{Argv: []string{"forktest", "mem", "4"}, Budget: b})
		if tc.out == "" {
			want := "command memory budget (" + runtime.FormatBytes(tc.budget) + ") exceeded"
			if res.ExitCode != 137 || res.Class != executor.ClassLimitExceeded || res.Err == nil || !strings.Contains(res.Err.Error(), want) {
				t.Errorf("budget %s: result %+v, stdout %q, stderr %q; want 137 LIMIT_EXCEEDED %q", runtime.FormatBytes(tc.budget), res, out, stderr, want)
			}
		} else if res.ExitCode != 0 || out != tc.out {
			t.Errorf("budget %s: result %+v, stdout %q, stderr %q; want %q", runtime.FormatBytes(tc.budget), res, out, stderr, tc.out)
		}
		if b.Used() != 0 {
			t.Errorf("budget %s still holds %d bytes", runtime.FormatBytes(tc.budget), b.Used())
		}
	}
}

// BenchmarkFork reports the mean time fork takes in the parent (unwind,
// the host's new instance and copy of the memory, rewind), measured by
// the guest, for a process of about 2 MiB and 16 MiB of linear memory.
//
//	go test ./executor -run '^$' -bench BenchmarkFork -benchtime 20x
func BenchmarkFork(b *testing.B) {
	for _, mib := range []int{2, 16} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			e := newForkEnv(b)
			res, out, stderr := e.run(context.Background(), executor.Job{Argv: []string{"forktest", "forkbench", strconv.Itoa(mib), strconv.Itoa(b.N)}})
			var ns, kib int64
			if _, err := fmt.Sscanf(out, "fork: %d ns/op, memory %d KiB", &ns, &kib); err != nil || res.ExitCode != 0 {
				b.Fatalf("result %+v, stdout %q, stderr %q", res, out, stderr)
			}
			b.ReportMetric(float64(ns), "ns/fork")
			b.ReportMetric(float64(kib)/1024, "MiB")
		})
	}
}

// A setjmp under more frames than a jmp_buf holds, or a longjmp under
// more than the unwind area holds, stops the program with a message
// (Asyncify itself does not bound its writes).
func TestForkDeepStack(t *testing.T) {
	e := newForkEnv(t)
	for _, tc := range []struct {
		depth, exit    int
		stdout, stderr string
	}{
		{20, 0, "deep 20: 524288\n", ""}, // rec(k) = 2^(k-1)
		{1000, 134, "", "wasmbox posix: setjmp: the stack is deeper than a jmp_buf holds"},
		{3400, 134, "", "wasmbox posix: the stack is deeper than the unwind area of setjmp, longjmp and fork holds"},
	} {
		res, out, stderr := e.run(context.Background(), executor.Job{Argv: []string{"forktest", "deep", strconv.Itoa(tc.depth)}})
		if res.ExitCode != tc.exit || out != tc.stdout || !strings.HasPrefix(stderr, tc.stderr) {
			t.Errorf("depth %d: result %+v, stdout %q, stderr %q; want exit %d, %q, %q...", tc.depth, res, out, stderr, tc.exit, tc.stdout, tc.stderr)
		}
	}
}
