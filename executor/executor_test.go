package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/internal/testcache"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi"
	"github.com/wasmbox/wasmbox/wasm"
)

var cacheDir string

func TestMain(m *testing.M) {
	// The user cache directory is the tests' own (package testcache).
	done := testcache.Setup()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	cacheDir = filepath.Join(base, "wasmbox-test", "compile")
	code := m.Run()
	done()
	os.Exit(code)
}

type env struct {
	rt *runtime.Runtime
	ex *executor.Executor
	fs vfs.FS
}

// guests registered as commands in every test environment.
var guestNames = []string{"args", "cat", "sleep", "fsprobe", "spawn", "hog"}

func newEnv(t testing.TB) *env {
	t.Helper()
	rt, err := runtime.New(context.Background(), runtime.Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	ex := executor.New(rt)
	for _, g := range guestNames {
		if err := ex.Register(g, runtimetest.Guest(t, g), g); err != nil {
			t.Fatal(err)
		}
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
	mustWrite(t, fsys, "/tmp/spin.wasm", runtimetest.Spin())
	mustWrite(t, fsys, "/tmp/trap.wasm", runtimetest.Hog()) // traps once memory.grow fails
	mustWrite(t, fsys, "/tmp/missing.wasm", runtimetest.MissingImport())
	mustWrite(t, fsys, "/tmp/notes.txt", []byte("hello\n"))
	mustWrite(t, fsys, "/tmp/unreachable.wasm", runtimetest.Module{HasMemory: true,
		Funcs: []runtimetest.Func{{Export: "_start", Body: []byte{runtimetest.OpUnreachable}}}}.Encode())
	return &env{rt: rt, ex: ex, fs: fsys}
}

func mustWrite(t testing.TB, fsys vfs.FS, p string, b []byte) {
	t.Helper()
	if err := afero.WriteFile(fsys, p, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func (e *env) run(ctx context.Context, job executor.Job) (executor.Result, string, string) {
	var out, errb bytes.Buffer
	if job.FS == nil {
		job.FS = e.fs
	}
	if job.Env == nil {
		job.Env = []string{"PATH=/bin:/usr/bin", "HOME=/home/user"}
	}
	if job.Dir == "" {
		job.Dir = "/home/user"
	}
	job.Stdout, job.Stderr = &out, &errb
	res := e.ex.Run(ctx, job)
	return res, out.String(), errb.String()
}

func TestRun(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name   string
		job    executor.Job
		exit   int
		class  executor.Class
		is     error
		stdout string
		stderr string
	}{
		{name: "path lookup", job: executor.Job{Argv: []string{"args", "a b", ""}, Env: []string{"PATH=/bin", "EXIT=3", "STDERR=oops"}},
			exit: 3, stdout: "argv[0]=args\nargv[1]=a b\nargv[2]=\nenv:EXIT=3\nenv:PATH=/bin\nenv:PWD=/home/user\nenv:STDERR=oops\n", stderr: "oops\n"},
		{name: "absolute", job: executor.Job{Argv: []string{"/usr/bin/args"}, Env: []string{}, Dir: "/tmp"},
			stdout: "argv[0]=/usr/bin/args\nenv:PWD=/tmp\n"},
		{name: "PWD overridden", job: executor.Job{Argv: []string{"args"}, Env: []string{"PWD=/nope", "PATH=/usr/bin"}, Dir: "/tmp/"},
			stdout: "argv[0]=args\nenv:PATH=/usr/bin\nenv:PWD=/tmp\n"},
		{name: "not found", job: executor.Job{Argv: []string{"nope"}}, exit: 127, class: executor.ClassNotFound, is: executor.ErrNotFound},
		{name: "not in PATH", job: executor.Job{Argv: []string{"args"}, Env: []string{"PATH=/tmp"}}, exit: 127, class: executor.ClassNotFound, is: executor.ErrNotFound},
		{name: "missing path", job: executor.Job{Argv: []string{"/bin/nope"}}, exit: 127, class: executor.ClassNotFound, is: executor.ErrNotFound},
		{name: "through a file", job: executor.Job{Argv: []string{"/tmp/notes.txt/x"}}, exit: 127, class: executor.ClassNotFound, is: executor.ErrNotFound},
		{name: "text file", job: executor.Job{Argv: []string{"/tmp/notes.txt"}}, exit: 126, is: executor.ErrNotExecutable},
		{name: "directory", job: executor.Job{Argv: []string{"/tmp"}}, exit: 126, is: executor.ErrNotExecutable},
		{name: "missing import", job: executor.Job{Argv: []string{"../../tmp/missing.wasm"}}, exit: 126, is: runtime.ErrUnresolvedImport},
		{name: "limit", job: executor.Job{Argv: []string{"/tmp/trap.wasm"}, MemoryLimit: 1 << 20}, exit: 137, class: executor.ClassLimitExceeded, is: runtime.ErrMemoryLimit},
		{name: "trap", job: executor.Job{Argv: []string{"/tmp/unreachable.wasm"}}, exit: 134},
		{name: "empty argv", job: executor.Job{Argv: nil}, exit: 126, is: executor.ErrBadJob},
		{name: "relative dir", job: executor.Job{Argv: []string{"args"}, Dir: "tmp"}, exit: 126, is: executor.ErrBadJob},
		{name: "bad env", job: executor.Job{Argv: []string{"args"}, Env: []string{"NOEQUALS"}}, exit: 126, is: executor.ErrBadJob},
		{name: "NUL arg", job: executor.Job{Argv: []string{"args", "a\x00b"}}, exit: 126, is: executor.ErrBadJob},
		{name: "fs", job: executor.Job{Argv: []string{"fsprobe", "pwd", "write", "f.txt", "data", "read", "/home/user/f.txt", "ls", "/tmp"}},
			stdout: "/home/user\ndatamissing.wasm\nnotes.txt\nspin.wasm\ntrap.wasm\nunreachable.wasm\n"},
		{name: "fs error", job: executor.Job{Argv: []string{"fsprobe", "read", "/nope"}}, exit: 1,
			stderr: "fsprobe: open /nope: No such file or directory\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, stdout, stderr := e.run(context.Background(), tc.job)
			if res.ExitCode != tc.exit || res.Class != tc.class {
				t.Errorf("exit=%d class=%q, want exit=%d class=%q (err %v, stderr %q)", res.ExitCode, res.Class, tc.exit, tc.class, res.Err, stderr)
			}
			if tc.is != nil && !errors.Is(res.Err, tc.is) {
				t.Errorf("err = %v, want errors.Is %v", res.Err, tc.is)
			}
			if tc.exit == 134 {
				if msg := fmt.Sprint(res.Err); !strings.HasPrefix(msg, "/tmp/unreachable.wasm: wasm error: unreachable\nwasm stack trace:") {
					t.Errorf("trap message %q", msg)
				}
			} else if tc.is == nil && res.Err != nil {
				t.Errorf("unexpected err %v", res.Err)
			}
			if stdout != tc.stdout {
				t.Errorf("stdout\n got %q\nwant %q", stdout, tc.stdout)
			}
			if stderr != tc.stderr {
				t.Errorf("stderr\n got %q\nwant %q", stderr, tc.stderr)
			}
		})
	}
	if got, _ := afero.ReadFile(e.fs, "/home/user/f.txt"); string(got) != "data" {
		t.Errorf("file written by the guest: %q", got)
	}
}

func TestEntries(t *testing.T) {
	e := newEnv(t)
	// A copied entry runs the command it names, with that name as argv[0].
	b, err := afero.ReadFile(e.fs, "/bin/args")
	if err != nil || string(b) != "#!wasmbox args\n" {
		t.Fatalf("entry = %q, %v", b, err)
	}
	if name, ok := vfs.CommandName(e.fs, "/usr/bin/args"); !ok || name != "args" {
		t.Errorf("vfs.CommandName = %q, %v", name, ok)
	}
	mustWrite(t, e.fs, "/tmp/renamed", b)
	res, out, _ := e.run(context.Background(), executor.Job{Argv: []string{"/tmp/renamed", "x"}, Env: []string{}})
	if res.ExitCode != 0 || out != "argv[0]=args\nargv[1]=x\nenv:PWD=/home/user\n" {
		t.Errorf("renamed entry: %+v %q", res, out)
	}
	// A removed command is not found, as on a real system.
	if err := e.fs.Remove("/bin/args"); err != nil {
		t.Fatal(err)
	}
	res, _, _ = e.run(context.Background(), executor.Job{Argv: []string{"args"}, Env: []string{"PATH=/bin"}})
	if res.Class != executor.ClassNotFound {
		t.Errorf("removed entry: %+v", res)
	}
	mustWrite(t, e.fs, "/tmp/ghost", []byte("#!wasmbox ghost\n"))
	res, _, _ = e.run(context.Background(), executor.Job{Argv: []string{"/tmp/ghost"}})
	if res.ExitCode != 126 || !strings.Contains(fmt.Sprint(res.Err), "command ghost is not registered") {
		t.Errorf("unregistered module: %+v", res)
	}
	if p, err := executor.Resolve(e.fs, []string{"PATH=/nope:/usr/bin"}, "/", "args"); err != nil || p != "/usr/bin/args" {
		t.Errorf("Resolve = %q, %v", p, err)
	}
}

func TestAllow(t *testing.T) {
	e := newEnv(t)
	var asked []string
	allow := func(name string) error {
		asked = append(asked, name)
		if name == "args" {
			return errors.New("args is not on the allowlist")
		}
		return nil
	}
	res, _, _ := e.run(context.Background(), executor.Job{Argv: []string{"args"}, Allow: allow})
	if res.ExitCode != 126 || res.Class != executor.ClassDenied || !errors.Is(res.Err, executor.ErrDenied) {
		t.Errorf("denied: %+v", res)
	}
	if want := "args: denied by policy: args is not on the allowlist"; fmt.Sprint(res.Err) != want {
		t.Errorf("message %q, want %q", res.Err, want)
	}
	// An allowed module runs: this one traps at once by itself (no
	// deadline to race: a 1 ms timeout could pass before Allow was asked).
	res, _, _ = e.run(context.Background(), executor.Job{Argv: []string{"/tmp/unreachable.wasm"}, Allow: allow})
	if res.ExitCode != 134 || res.Class == executor.ClassDenied {
		t.Errorf("allowed module: %+v", res)
	}
	// Spawned children are checked too.
	res, _, stderr := e.run(context.Background(), executor.Job{Argv: []string{"spawn", `{"argv":["args"]}`}, Allow: allow})
	if res.ExitCode != 102 || stderr != "args: denied by policy: args is not on the allowlist\nerrno=2 status=0\n" {
		t.Errorf("denied child: %+v %q", res, stderr)
	}
	if want := "args /tmp/unreachable.wasm spawn args"; strings.Join(asked, " ") != want {
		t.Errorf("asked %q, want %q", asked, want)
	}
}

func TestKill(t *testing.T) {
	e := newEnv(t)
	// Warm up: compile the guests before counting goroutines.
	e.run(context.Background(), executor.Job{Argv: []string{"sleep", "0s"}})
	e.run(context.Background(), executor.Job{Argv: []string{"cat"}})
	defer runtimetest.CheckGoroutines(t)()

	tests := []struct {
		name   string
		argv   []string
		cancel bool
		stdin  bool
	}{
		{"spin/timeout", []string{"/tmp/spin.wasm"}, false, false},
		{"spin/cancel", []string{"/tmp/spin.wasm"}, true, false},
		{"sleep/timeout", []string{"sleep", "1h"}, false, false},
		{"sleep/cancel", []string{"sleep", "1h"}, true, false},
		{"stdin/cancel", []string{"cat"}, true, true},
		{"stdin/timeout", []string{"cat"}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			job := executor.Job{Argv: tc.argv}
			if tc.cancel {
				time.AfterFunc(30*time.Millisecond, cancel)
			} else {
				job.Timeout = 30 * time.Millisecond
			}
			if tc.stdin {
				pr, pw := wasi.NewPipe(ctx)
				defer pw.Close()
				defer pr.Close()
				job.Stdin = pr
			}
			start := time.Now()
			res, _, _ := e.run(ctx, job)
			took := time.Since(start)
			want := executor.Result{ExitCode: 124, Class: executor.ClassTimeout}
			wantErr := context.DeadlineExceeded
			if tc.cancel {
				want = executor.Result{ExitCode: 125, Class: executor.ClassCancelled}
				wantErr = context.Canceled
			}
			if res.ExitCode != want.ExitCode || res.Class != want.Class || !errors.Is(res.Err, wantErr) {
				t.Errorf("got %+v, want %+v and errors.Is %v", res, want, wantErr)
			}
			if took > 500*time.Millisecond {
				t.Errorf("kill took %v", took)
			}
		})
	}
	if n := e.rt.LiveInstances(); n != 0 {
		t.Errorf("live instances after kills: %d", n)
	}
}

func spawnReq(argv []string, extra map[string]any) string {
	m := map[string]any{"argv": argv}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestSpawn(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name   string
		req    string
		stdin  string
		exit   int
		stdout string
		stderr string
	}{
		{"inherit env and dir", spawnReq([]string{"args", "x"}, nil), "", 0,
			"argv[0]=args\nargv[1]=x\nenv:HOME=/home/user\nenv:PATH=/bin:/usr/bin\nenv:PWD=/home/user\n", "errno=0 status=0\n"},
		{"explicit env and dir", spawnReq([]string{"args"}, map[string]any{"env": []string{"EXIT=9", "PATH=/bin"}, "dir": "/tmp"}), "", 9,
			"argv[0]=args\nenv:EXIT=9\nenv:PATH=/bin\nenv:PWD=/tmp\n", "errno=0 status=9\n"},
		{"not found", spawnReq([]string{"nope"}, nil), "", 144, "", "errno=44 status=0\n"},
		{"bad request", `{"argv":[]}`, "", 128, "", "errno=28 status=0\n"},
		{"stdin inherit", spawnReq([]string{"cat"}, nil), "piped\n", 0, "piped\n", "errno=0 status=0\n"},
		{"stdin null", spawnReq([]string{"cat"}, map[string]any{"stdin": "null"}), "piped\n", 0, "", "errno=0 status=0\n"},
		{"child timeout", spawnReq([]string{"sleep", "1h"}, map[string]any{"timeout_ms": 20}), "", 124, "", "errno=0 status=124\n"},
		{"child trap", spawnReq([]string{"/tmp/missing.wasm"}, nil), "", 126, "",
			"/tmp/missing.wasm: imports not provided by wasmbox: env.foo, wasi_snapshot_preview1.no_such_call\nerrno=0 status=126\n"},
		{"nested", spawnReq([]string{"spawn", spawnReq([]string{"args", "deep"}, map[string]any{"env": []string{}})}, nil), "", 0,
			"argv[0]=args\nargv[1]=deep\nenv:PWD=/home/user\n", "errno=0 status=0\nerrno=0 status=0\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, stdout, stderr := e.run(context.Background(), executor.Job{Argv: []string{"spawn", tc.req}, Stdin: strings.NewReader(tc.stdin)})
			if res.ExitCode != tc.exit || res.Err != nil {
				t.Errorf("exit=%d err=%v, want %d (stderr %q)", res.ExitCode, res.Err, tc.exit, stderr)
			}
			if stdout != tc.stdout || stderr != tc.stderr {
				t.Errorf("stdout %q stderr %q\nwant   %q        %q", stdout, stderr, tc.stdout, tc.stderr)
			}
		})
	}
}

func TestSpawnDepth(t *testing.T) {
	e := newEnv(t)
	e.ex.SetMaxDepth(2)
	req := spawnReq([]string{"args"}, map[string]any{"env": []string{}})
	for i := 0; i < 3; i++ {
		req = spawnReq([]string{"spawn", req}, nil)
	}
	// depth 0 spawn → 1 spawn → 2 spawn → 3 refused.
	res, stdout, stderr := e.run(context.Background(), executor.Job{Argv: []string{"spawn", req}})
	want := "spawn: spawn nesting deeper than 2\nerrno=6 status=126\nerrno=0 status=106\nerrno=0 status=106\n"
	if res.ExitCode != 106 || stdout != "" || stderr != want {
		t.Errorf("got %+v %q %q, want stderr %q", res, stdout, stderr, want)
	}
}

// A deadline of the parent reaches a spawned child: the whole tree dies.
func TestSpawnKilledWithParent(t *testing.T) {
	e := newEnv(t)
	e.run(context.Background(), executor.Job{Argv: []string{"spawn", spawnReq([]string{"sleep", "0s"}, nil)}})
	defer runtimetest.CheckGoroutines(t)()
	start := time.Now()
	res, _, _ := e.run(context.Background(), executor.Job{
		Argv:    []string{"spawn", spawnReq([]string{"spawn", spawnReq([]string{"/tmp/spin.wasm"}, nil)}, nil)},
		Timeout: 50 * time.Millisecond,
	})
	if res.Class != executor.ClassTimeout || !errors.Is(res.Err, context.DeadlineExceeded) {
		t.Errorf("got %+v", res)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %v", took)
	}
	if n := e.rt.LiveInstances(); n != 0 {
		t.Errorf("live instances: %d", n)
	}
}

func TestMemoryLimitGuest(t *testing.T) {
	e := newEnv(t)
	res, _, stderr := e.run(context.Background(), executor.Job{Argv: []string{"hog"}, MemoryLimit: 32 << 20})
	if res.ExitCode != 137 || res.Class != executor.ClassLimitExceeded || !errors.Is(res.Err, runtime.ErrMemoryLimit) {
		t.Errorf("got %+v (stderr %.200q)", res, stderr)
	}
	if !strings.Contains(res.Err.Error(), "more than 32MiB") {
		t.Errorf("message: %v", res.Err)
	}
}

// The embedded tools run through the same path as any command.
func TestTools(t *testing.T) {
	e := newEnv(t)
	if err := e.ex.RegisterTools(); err != nil {
		t.Fatal(err)
	}
	if err := e.ex.Install(e.fs, "/bin", "/usr/bin"); err != nil {
		t.Fatal(err)
	}
	res, out, stderr := e.run(context.Background(), executor.Job{Argv: []string{"cat", "/tmp/notes.txt", "-"}, Stdin: strings.NewReader("stdin\n")})
	if res.ExitCode != 0 || out != "hello\nstdin\n" {
		t.Errorf("cat: %+v %q %q", res, out, stderr)
	}
	res, _, stderr = e.run(context.Background(), executor.Job{Argv: []string{"cat", "nope"}})
	if res.ExitCode != 1 || res.Err != nil || !strings.Contains(stderr, "nope") {
		t.Errorf("cat nope: %+v %q", res, stderr)
	}
	// SQLite's shell, when built in, is registered and installed as sqlite3.
	if names := wasm.SQLite3Commands(); names != nil {
		if !slices.Equal(names, []string{"sqlite3"}) || !slices.Contains(e.ex.Commands(), "sqlite3") {
			t.Errorf("sqlite3 names %q, registered: %v", names, slices.Contains(e.ex.Commands(), "sqlite3"))
		}
		res, out, stderr = e.run(context.Background(), executor.Job{Argv: []string{"sqlite3", ":memory:", "select 6*7"}})
		if res.ExitCode != 0 || out != "42\n" {
			t.Errorf("sqlite3: %+v %q %q", res, out, stderr)
		}
	}
}

func TestRunModule(t *testing.T) {
	e := newEnv(t)
	mod, err := e.rt.Compile(context.Background(), "exit7", runtimetest.Exit(7))
	if err != nil {
		t.Fatal(err)
	}
	var asked string
	res, _, _ := e.run(context.Background(), executor.Job{Argv: []string{"not/in/the/vfs"}, Module: mod,
		Allow: func(name string) error { asked = name; return nil }})
	if res.ExitCode != 7 || res.Err != nil || asked != "not/in/the/vfs" {
		t.Errorf("got %+v, allow asked %q", res, asked)
	}
	// A child spawned by a module run this way is looked up by its own name.
	spawn, err := e.rt.Compile(context.Background(), "spawn", runtimetest.Guest(t, "spawn"))
	if err != nil {
		t.Fatal(err)
	}
	res, out, _ := e.run(context.Background(), executor.Job{Argv: []string{"x", `{"argv":["args"],"env":[]}`}, Module: spawn})
	if res.ExitCode != 0 || out != "argv[0]=args\nenv:PWD=/home/user\n" {
		t.Errorf("child of a Job.Module: %+v %q", res, out)
	}
}

// A spawned child shares its parent's memory budget: 19 MiB of blocks fit
// in 24 MiB alone, not next to the parent's own memory.
func TestSpawnMemoryBudget(t *testing.T) {
	e := newEnv(t)
	res, out, _ := e.run(context.Background(), executor.Job{Argv: []string{"hog", "19"}, MemoryLimit: 24 << 20})
	if res.ExitCode != 0 || out != "allocated 19 MiB\n" {
		t.Errorf("alone: %+v %q", res, out)
	}
	res, out, stderr := e.run(context.Background(), executor.Job{Argv: []string{"spawn", `{"argv":["hog","19"]}`}, MemoryLimit: 24 << 20})
	if res.ExitCode != 137 || out != "" || !strings.Contains(stderr, "hog: memory limit exceeded") || !strings.HasSuffix(stderr, "errno=0 status=137\n") {
		t.Errorf("spawned: %+v %q %q", res, out, stderr)
	}
}

// Many jobs at once, half of them killed: every result is right and
// nothing is left behind.
func TestConcurrent(t *testing.T) {
	e := newEnv(t)
	e.run(context.Background(), executor.Job{Argv: []string{"args"}})
	defer runtimetest.CheckGoroutines(t)()
	const n = 16
	results := make(chan string, n)
	for i := 0; i < n; i++ {
		go func() {
			if i%2 == 0 {
				res, _, _ := e.run(context.Background(), executor.Job{Argv: []string{"/tmp/spin.wasm"}, Timeout: 20 * time.Millisecond})
				results <- fmt.Sprintf("%d %s", res.ExitCode, res.Class)
				return
			}
			res, out, _ := e.run(context.Background(), executor.Job{Argv: []string{"args", fmt.Sprint(i)}, Env: []string{}})
			if want := fmt.Sprintf("argv[0]=args\nargv[1]=%d\nenv:PWD=/home/user\n", i); out != want {
				results <- fmt.Sprintf("job %d: %q", i, out)
				return
			}
			results <- fmt.Sprintf("%d %s", res.ExitCode, res.Class)
		}()
	}
	counts := map[string]int{}
	for i := 0; i < n; i++ {
		counts[<-results]++
	}
	if counts["124 TIMEOUT"] != n/2 || counts["0 "] != n/2 {
		t.Errorf("results: %v", counts)
	}
	if l := e.rt.LiveInstances(); l != 0 {
		t.Errorf("live instances: %d", l)
	}
}

// A child with its own timeout, blocked reading the stdin it shares with
// its parent (a pipe bound to a longer-lived context), dies on time.
func TestSpawnTimeoutOnSharedStdin(t *testing.T) {
	e := newEnv(t)
	e.run(context.Background(), executor.Job{Argv: []string{"spawn", spawnReq([]string{"cat"}, nil)}})
	defer runtimetest.CheckGoroutines(t)()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := wasi.NewPipe(ctx)
	defer pw.Close()
	start := time.Now()
	res, _, stderr := e.run(ctx, executor.Job{Argv: []string{"spawn", spawnReq([]string{"cat"}, map[string]any{"timeout_ms": 30})}, Stdin: pr})
	if res.ExitCode != 124 || res.Class != "" || stderr != "errno=0 status=124\n" {
		t.Errorf("got %+v %q", res, stderr)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %v", took)
	}
	// The parent's stdin is still usable.
	go pw.Write([]byte("still open\n"))
	buf := make([]byte, 64)
	if n, err := pr.Read(buf); err != nil || string(buf[:n]) != "still open\n" {
		t.Errorf("parent stdin after the child's kill: %q %v", buf[:n], err)
	}
}

// Writing to a pipe whose reader is gone ends the guest with 141, like
// SIGPIPE.
func TestBrokenPipe(t *testing.T) {
	e := newEnv(t)
	pr, pw := wasi.NewPipe(context.Background())
	pr.Close()
	res := e.ex.Run(context.Background(), executor.Job{Argv: []string{"args"}, FS: e.fs, Stdout: pw})
	if res.ExitCode != 141 || res.Class != "" {
		t.Errorf("got %+v", res)
	}
}

// TestRefusedModule: a module over the runtime's caps is an error like any
// other invalid module (exit 126, the refusal naming the cap), and a
// table.grow loop under a small memory limit ends with the guest's answer.
func TestRefusedModule(t *testing.T) {
	e := newEnv(t)
	mustWrite(t, e.fs, "/home/user/locals.wasm", runtimetest.ManyLocals(50_000_000))
	mustWrite(t, e.fs, "/home/user/tables.wasm", runtimetest.TableGrow(1<<20, 42))
	res, _, _ := e.run(context.Background(), executor.Job{Argv: []string{"/home/user/locals.wasm"}, MemoryLimit: 64 << 20})
	if res.ExitCode != executor.ExitCannotExecute || res.Class != executor.ClassNone ||
		!errors.Is(res.Err, runtime.ErrModuleRefused) ||
		res.Err.Error() != "/home/user/locals.wasm: module refused: function 0 declares 50000000 locals (cap 50000)" {
		t.Errorf("locals: exit %d class %q err %v", res.ExitCode, res.Class, res.Err)
	}
	res, _, _ = e.run(context.Background(), executor.Job{Argv: []string{"/home/user/tables.wasm"}, MemoryLimit: 64 << 20, Timeout: 10 * time.Second})
	if res.ExitCode != 42 || res.Err != nil {
		t.Errorf("table.grow: exit %d class %q err %v, want 42 (table.grow returned -1 at the cap)", res.ExitCode, res.Class, res.Err)
	}
}
