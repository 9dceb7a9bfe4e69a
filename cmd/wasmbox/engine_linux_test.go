package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wasmbox/wasmbox/internal/engine"
)

// sharedEngine is one in-process engine for the package's engine tests,
// on a socket in a private temporary directory, with the tests' cache.
var sharedEngine struct {
	once      sync.Once
	sock, key string
	err       error
}

func testEngine(t *testing.T) (sock, key string) {
	t.Helper()
	e := &sharedEngine
	e.once.Do(func() {
		dir, err := os.MkdirTemp("", "wasmbox-engine-test-") // mode 0700
		if err != nil {
			e.err = err
			return
		}
		testCleanups = append(testCleanups, func() { os.RemoveAll(dir) })
		e.sock = filepath.Join(dir, "e.sock")
		if e.key, e.err = engine.Key(testCacheDir()); e.err != nil {
			return
		}
		go func() {
			if err := serveEngine(context.Background(), e.sock, testCacheDir(), false, time.Hour, 0); err != nil {
				fmt.Fprintln(os.Stderr, "test engine:", err)
			}
		}()
		conn, err := engine.Wait(e.sock, 30*time.Second, nil)
		if err != nil {
			e.err = err
			return
		}
		conn.Close()
	})
	if e.err != nil {
		t.Fatal(e.err)
	}
	return e.sock, e.key
}

// engineResult is what a client of the engine saw.
type engineResult struct {
	stdout, stderr string
	rep            engine.Reply
	err            error
}

// viaTestEngine runs args in the test engine as a client in dir would,
// with stdin from a file; stdout and stderr are files (the same one when
// merged).
func viaTestEngine(t *testing.T, dir, stdin string, merged bool, args ...string) engineResult {
	t.Helper()
	return viaTestEngineEnv(t, dir, stdin, merged, []string{"HOME=/nowhere"}, args...)
}

// viaTestEngineEnv is viaTestEngine with the client's environment env.
func viaTestEngineEnv(t *testing.T, dir, stdin string, merged bool, env []string, args ...string) engineResult {
	t.Helper()
	sock, key := testEngine(t)
	conn, err := engine.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tmp := t.TempDir()
	in := filepath.Join(tmp, "in")
	os.WriteFile(in, []byte(stdin), 0o600)
	inF, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer inF.Close()
	outF, err := os.Create(filepath.Join(tmp, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer outF.Close()
	errF := outF
	if !merged {
		if errF, err = os.Create(filepath.Join(tmp, "err")); err != nil {
			t.Fatal(err)
		}
		defer errF.Close()
	}
	rep, err := engine.Submit(conn, engine.Request{Op: "run", Key: key, Args: args, Dir: dir, Env: env}, inF, outF, errF, nil)
	b, _ := os.ReadFile(outF.Name())
	var eb []byte
	if !merged {
		eb, _ = os.ReadFile(errF.Name())
	}
	return engineResult{string(b), string(eb), rep, err}
}

// TestEngineMatchesInProcess runs the same command lines through the
// resident engine and in-process (doMain): output, order of stdout and
// stderr, and exit status must be the same.
func TestEngineMatchesInProcess(t *testing.T) {
	host := t.TempDir()
	os.WriteFile(filepath.Join(host, "in.txt"), []byte("from host\n"), 0o644)
	os.WriteFile(filepath.Join(host, "s.sh"), []byte("echo from file; exit 4\n"), 0o644)
	cases := []struct {
		name   string
		stdin  string
		merged bool
		args   []string // through the engine, from host as the working directory
		local  []string // in-process, when the paths differ (else args)
	}{
		{name: "pipe", args: []string{"run", "-c", "echo hi | tr a-z A-Z"}},
		{name: "status", args: []string{"run", "-c", "echo out; echo err >&2; exit 3"}},
		{name: "order", merged: true, args: []string{"run", "-c", "echo a; echo b >&2; echo c; ls /nonexistent; echo d"}},
		{name: "stdin", stdin: "abc\ndef\n", args: []string{"run", "-c", "cat; echo done"}},
		{name: "read", stdin: "line1\nline2\n", args: []string{"run", "-c", "read x; echo got $x"}},
		{name: "script on stdin", stdin: "echo from stdin; exit 5\n", args: []string{"run"}},
		{name: "script on stdin dash", stdin: "echo dash\n", args: []string{"run", "-"}},
		{name: "relative file", args: []string{"run", "s.sh"}, local: []string{"run", filepath.Join(host, "s.sh")}},
		{name: "relative mount", args: []string{"run", "--mount", ".:/h", "-c", "cat /h/in.txt; ls /h"},
			local: []string{"run", "--mount", host + ":/h", "-c", "cat /h/in.txt; ls /h"}},
		{name: "missing file", args: []string{"run", "nope.sh"}, local: []string{"run", filepath.Join(host, "nope.sh")}},
		{name: "env", args: []string{"run", "--env", "K=V", "-c", "echo $K; env | grep -c ^HOME="}},
		{name: "deterministic", args: []string{"run", "--deterministic", "-c", "date; echo $RANDOM"}},
		{name: "timeout", args: []string{"run", "--timeout", "300ms", "-c", "echo before; while :; do :; done"}},
		{name: "usage", args: []string{"run", "--bogus"}},
		{name: "bad timeout", args: []string{"run", "--timeout", "-1s", "-c", "true"}},
		{name: "two sources", args: []string{"run", "-c", "true", "x.sh"}},
		{name: "help", args: []string{"run", "--help"}},
		{name: "not found", args: []string{"run", "-c", "nosuchcmd"}},
		{name: "truncated", args: []string{"run", "-c", "yes | head -c 2000000; echo end"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			local := c.local
			if local == nil {
				local = c.args
			}
			var out, errb bytes.Buffer
			errw := &errb
			if c.merged {
				errw = &out
			}
			code := doMain(append([]string{"--cachedir", testCacheDir()}, local...), strings.NewReader(c.stdin), &out, errw)
			got := viaTestEngine(t, host, c.stdin, c.merged, c.args...)
			if got.err != nil {
				t.Fatalf("engine: %v", got.err)
			}
			if got.rep.Exit != code || got.stdout != out.String() || got.stderr != errb.String() {
				t.Errorf("engine: exit %d\nstdout %q\nstderr %q\nin-process: exit %d\nstdout %q\nstderr %q",
					got.rep.Exit, trunc(got.stdout), got.stderr, code, trunc(out.String()), errb.String())
			}
		})
	}
}

func trunc(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// TestEngineJSON: run --json through the engine gives the in-process
// object (but for the duration).
func TestEngineJSON(t *testing.T) {
	args := []string{"run", "--json", "-c", "echo x; echo y >&2; exit 2"}
	var out bytes.Buffer
	doMain(append([]string{"--cachedir", testCacheDir()}, args...), nil, &out, &bytes.Buffer{})
	got := viaTestEngine(t, "/", "", false, args...)
	norm := func(s string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		delete(m, "duration_ms")
		return m
	}
	a, b := norm(got.stdout), norm(out.String())
	if fmt.Sprint(a) != fmt.Sprint(b) || got.rep.Exit != 2 {
		t.Fatalf("engine %v (exit %d), in-process %v", a, got.rep.Exit, b)
	}
}

// TestEngineLeavesToProcess: runs that start host programs, or want
// another compilation cache, are not taken, and nothing was written.
func TestEngineLeavesToProcess(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(cfg, []byte(`{"mcpServers":{}}`), 0o600)
	for _, args := range [][]string{
		{"run", "--native", "git", "-c", "echo no"},
		{"run", "--native-unjailed", "-c", "echo no"},
		{"run", "--mcp-config", cfg, "-c", "echo no"},
		{"run", "--cachedir", t.TempDir(), "-c", "echo no"},
		{"--nocache", "run", "-c", "echo no"},
	} {
		got := viaTestEngine(t, "/", "stdin stays unread", false, args...)
		if !errors.Is(got.err, engine.ErrNotTaken) || got.stdout != "" || got.stderr != "" {
			t.Errorf("%q: err %v, stdout %q, stderr %q", args, got.err, got.stdout, got.stderr)
		}
	}
}

// waitIdle waits for the test engine to have no run in flight and for
// this process's goroutines to come back to at most base.
func waitIdle(t *testing.T, sock string, base int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rep, err := engine.Op(sock, "status")
		if err != nil {
			t.Fatal(err)
		}
		n := goruntime.NumGoroutine()
		if rep.Status.Active == 0 && n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:goruntime.Stack(buf, true)]
			t.Fatalf("after 20 s: %d runs active, %d goroutines (base %d)\n%s", rep.Status.Active, n, base, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// baseline warms the engine up and returns the goroutine count at rest.
func baseline(t *testing.T) int {
	t.Helper()
	if got := viaTestEngine(t, "/", "", false, "run", "-c", "echo warm | cat"); got.stdout != "warm\n" {
		t.Fatalf("warm-up: %+v", got)
	}
	goruntime.GC()
	time.Sleep(100 * time.Millisecond)
	return goruntime.NumGoroutine()
}

// startRun starts args in the test engine with the given output files
// and returns its connection once started says the run has begun.
func startRun(t *testing.T, stdout, stderr *os.File, started func() bool, sigs chan os.Signal, args ...string) (conn *net.UnixConn, done chan engineResult) {
	t.Helper()
	sock, key := testEngine(t)
	conn, err := engine.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	done = make(chan engineResult, 1)
	go func() {
		rep, err := engine.Submit(conn, engine.Request{Op: "run", Key: key, Args: args, Dir: "/"}, nil, stdout, stderr, sigs)
		done <- engineResult{rep: rep, err: err}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !started() {
		if time.Now().After(deadline) {
			t.Fatal("the run did not start in 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return conn, done
}

func fileHas(name, s string) func() bool {
	return func() bool {
		b, _ := os.ReadFile(name)
		return strings.Contains(string(b), s)
	}
}

// TestEngineClientGone: a client killed in the middle of a run (its
// connection closes) cancels the run, and the engine keeps no goroutine
// of it, also when the run was blocked writing to a pipe nobody reads.
func TestEngineClientGone(t *testing.T) {
	sock, _ := testEngine(t)

	t.Run("computing", func(t *testing.T) {
		base := baseline(t)
		out := filepath.Join(t.TempDir(), "out")
		f, _ := os.Create(out)
		defer f.Close()
		conn, _ := startRun(t, f, f, fileHas(out, "started"), nil, "run", "--timeout", "60s", "-c", "echo started; while :; do :; done")
		conn.Close() // the client is killed
		waitIdle(t, sock, base)
	})
	t.Run("full pipe", func(t *testing.T) {
		base := baseline(t)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		// Nobody reads r: once the pipe is full, the run's write blocks.
		errf := filepath.Join(t.TempDir(), "err")
		ef, _ := os.Create(errf)
		defer ef.Close()
		conn, _ := startRun(t, w, ef, fileHas(errf, "started"), nil, "run", "--timeout", "60s", "-c", "echo started >&2; yes")
		w.Close()
		time.Sleep(200 * time.Millisecond) // let the pipe fill
		conn.Close()
		waitIdle(t, sock, base)
	})
}

// TestEngineCancel: the client's SIGINT reaches the run as a cancel: exit
// 125, as in-process.
func TestEngineCancel(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	f, _ := os.Create(out)
	defer f.Close()
	sigs := make(chan os.Signal, 1)
	_, done := startRun(t, f, f, fileHas(out, "started"), sigs, "run", "--timeout", "60s", "-c", "echo started; while :; do :; done")
	sigs <- syscall.SIGINT
	select {
	case r := <-done:
		if r.err != nil || r.rep.Exit != 125 {
			t.Fatalf("got %+v, want exit 125", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no end 20 s after the cancel")
	}
}

// TestEngineSIGPIPE: output to a pipe whose reader is gone ends the run
// and tells the client to die of SIGPIPE, as the process would have.
func TestEngineSIGPIPE(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	got := func() engineResult {
		sock, key := testEngine(t)
		conn, err := engine.Dial(sock)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		errf, _ := os.Create(filepath.Join(t.TempDir(), "err"))
		defer errf.Close()
		rep, err := engine.Submit(conn, engine.Request{Op: "run", Key: key, Args: []string{"run", "-c", "yes"}, Dir: "/"}, nil, w, errf, nil)
		return engineResult{rep: rep, err: err}
	}()
	if got.err != nil || !got.rep.SIGPIPE {
		t.Fatalf("got %+v, want SIGPIPE", got)
	}
}

// cli runs the test binary as the wasmbox process with env.
func cli(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	exe, _ := os.Executable()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(env, "WASMBOX_TEST_AS_CLI=1")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// gone reports whether pid has exited (a zombie counts: its parent, init,
// reaps it).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// TestEngineLifecycle: the first `wasmbox run` starts the engine, the
// next ones use it, it exits by itself when idle (nothing left behind),
// and `engine stop` stops it.
func TestEngineLifecycle(t *testing.T) {
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skip(err)
	}
	rt := t.TempDir()
	env := []string{
		"XDG_RUNTIME_DIR=" + rt,
		// A cache of the tests' own, kept between runs: the engine
		// compiles the tools once.
		"XDG_CACHE_HOME=" + filepath.Join(cache, "wasmbox-test-xdg"),
		"WASMBOX_ENGINE_IDLE=2s",
		"PATH=" + os.Getenv("PATH"),
		// A secret of the client that starts the engine: the engine
		// does not keep it, and runs still redact it (from their own
		// request's environment).
		"MY_API_TOKEN=s3cret-of-the-client",
	}
	status := func() engine.Status {
		t.Helper()
		out, errs, code := cli(t, env, "", "engine", "status")
		if code != 0 {
			t.Fatalf("engine status: %d %s", code, errs)
		}
		var st engine.Status
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	waitGone := func(pid int, sock, what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !gone(pid) {
			// Status polls do not keep an engine awake.
			engine.Op(sock, "status")
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("the engine (pid %d) did not exit %s", pid, what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if _, _, code := cli(t, env, "", "engine", "status"); code != 1 {
		t.Fatalf("status with no engine: exit %d, want 1", code)
	}
	out, errs, code := cli(t, env, "in\n", "run", "-c", "cat; echo one; exit 7")
	if out != "in\none\n" || errs != "" || code != 7 {
		t.Fatalf("first run: %q %q %d", out, errs, code)
	}
	st := status()
	if st.Runs != 1 || st.PID <= 0 {
		t.Fatalf("after one run: %+v", st)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", st.PID)); err != nil || bytes.Contains(b, []byte("s3cret")) || !bytes.Contains(b, []byte("XDG_RUNTIME_DIR=")) {
		t.Fatalf("the engine's environment (%v): %q", err, b)
	}
	if out, _, _ := cli(t, env, "", "run", "--redact-output", "-c", "echo s3cret-of-the-client"); out != "[REDACTED]\n" {
		t.Fatalf("--redact-output of the client's secret: %q", out)
	}
	st.Runs++
	if out, _, _ := cli(t, env, "", "run", "-c", "echo two"); out != "two\n" {
		t.Fatalf("second run: %q", out)
	}
	if st2 := status(); st2.PID != st.PID || st2.Runs != st.Runs+1 {
		t.Fatalf("second run: %+v, first %+v", st2, st)
	}
	// Off: in-process, the engine sees nothing.
	if out, _, _ := cli(t, append(env, "WASMBOX_ENGINE=off"), "", "run", "-c", "echo three"); out != "three\n" {
		t.Fatalf("off: %q", out)
	}
	if st3 := status(); st3.Runs != st.Runs+1 {
		t.Fatalf("WASMBOX_ENGINE=off went to the engine: %+v", st3)
	}
	waitGone(st.PID, st.Socket, "2 s after its last run")
	if _, err := os.Stat(st.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
	// A stale socket file (an engine killed hard) does not stop the next run.
	os.WriteFile(st.Socket, nil, 0o600)
	if out, errs, code := cli(t, env, "", "run", "-c", "echo four"); out != "four\n" || code != 0 {
		t.Fatalf("after a stale socket: %q %q %d", out, errs, code)
	}
	st = status()
	out, errs, code = cli(t, env, "", "engine", "stop")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("pid %d", st.PID)) || !strings.Contains(out, st.Socket) || !strings.Contains(out, "build "+st.Build) || st.Build == "" {
		t.Fatalf("engine stop: %d %q %q, want what it stopped: pid %d, socket %s, build %q", code, out, errs, st.PID, st.Socket, st.Build)
	}
	waitGone(st.PID, st.Socket, "after engine stop")
	// With no engine left, stop says so.
	if out, _, code := cli(t, env, "", "engine", "stop"); code != 0 || !strings.Contains(out, "no engine") {
		t.Fatalf("engine stop without an engine: %d %q", code, out)
	}
}

// TestEngineLargeRequest: a command line and environment of several
// hundred KB (under Linux's 2 MiB ARG_MAX) is more than one sendmsg takes
// on a Unix stream socket: the client must send the rest of the frame, or
// the engine waits for it until its deadline and the run falls back.
func TestEngineLargeRequest(t *testing.T) {
	big := strings.Repeat("a", 100<<10)
	args := []string{"run"}
	for i := range 6 {
		args = append(args, "--env", fmt.Sprintf("K%d=%s", i, big))
	}
	args = append(args, "-c", "echo ${#K0} ${#K5}")
	got := viaTestEngine(t, "/", "", false, args...)
	if want := fmt.Sprintf("%d %d\n", len(big), len(big)); got.err != nil || got.stdout != want || got.rep.Exit != 0 {
		t.Fatalf("got %+v, want stdout %q", got, want)
	}
}

// TestEngineOnlyRuns: the engine runs `run` and nothing else of the
// command line (serve, mcp, engine serve would run in the engine process,
// for as long as their client stays); a client asking for something else
// is told to do it itself, and nothing is written.
func TestEngineOnlyRuns(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"mcp", "--help"}, {}} {
		got := viaTestEngine(t, "/", "", false, args...)
		if !errors.Is(got.err, engine.ErrNotTaken) || got.stdout != "" || got.stderr != "" {
			t.Errorf("%q: err %v, stdout %q, stderr %q", args, got.err, trunc(got.stdout), got.stderr)
		}
	}
}

// TestEngineRelativePathsAsKernel: relative host paths (FILE, --mount HOST,
// --audit-log) mean what they mean to the client's kernel, which resolves
// "link/.." through the link (not lexically, as filepath.Join would), also
// from a working directory reached through a symlink ($PWD) or holding ':'
// (which a HOST:GUEST mount spec cannot hold).
func TestEngineRelativePathsAsKernel(t *testing.T) {
	host := t.TempDir()
	os.MkdirAll(filepath.Join(host, "real", "sub"), 0o755)
	os.WriteFile(filepath.Join(host, "real", "s.sh"), []byte("echo real\n"), 0o644)
	os.WriteFile(filepath.Join(host, "s.sh"), []byte("echo wrong\n"), 0o644)
	os.Symlink(filepath.Join("real", "sub"), filepath.Join(host, "link"))
	colon := filepath.Join(host, "a:b")
	os.Mkdir(colon, 0o755)
	os.WriteFile(filepath.Join(colon, "f.txt"), []byte("colon\n"), 0o644)
	for _, c := range []struct {
		dir  string
		args []string
		want string
	}{
		{host, []string{"run", "link/../s.sh"}, "real\n"},
		{filepath.Join(host, "link"), []string{"run", "../s.sh"}, "real\n"},
		{filepath.Join(host, "link"), []string{"run", "--mount", "..:/h", "-c", "cat /h/s.sh"}, "echo real\n"},
		{colon, []string{"run", "--mount", ".:/h", "-c", "cat /h/f.txt"}, "colon\n"},
		{colon, []string{"run", "--mount", "./:/h:ro", "-c", "cat /h/f.txt"}, "colon\n"},
	} {
		got := viaTestEngine(t, c.dir, "", false, c.args...)
		if got.err != nil || got.stdout != c.want || got.rep.Exit != 0 {
			t.Errorf("%q in %s: %+v, want %q", c.args, c.dir, got, c.want)
		}
	}
	// The audit log too.
	got := viaTestEngine(t, filepath.Join(host, "link"), "", false, "run", "--audit-log", "../audit.log", "-c", "true")
	if _, err := os.Stat(filepath.Join(host, "real", "audit.log")); err != nil || got.err != nil || got.rep.Exit != 0 {
		t.Errorf("audit log: %+v, %v", got, err)
	}
}

// cliEngineEnv is an environment for cli whose engine (the test binary)
// has a runtime directory of its own; the engine is stopped at the end.
func cliEngineEnv(t *testing.T, rt string) []string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skip(err)
	}
	env := []string{
		"XDG_RUNTIME_DIR=" + rt,
		"XDG_CACHE_HOME=" + filepath.Join(cache, "wasmbox-test-xdg"),
		"WASMBOX_ENGINE_IDLE=5s",
		"PATH=" + os.Getenv("PATH"),
	}
	t.Cleanup(func() { cli(t, env, "", "engine", "stop") })
	return env
}

// TestEngineSIGPIPEDeath: a client whose stdout is a pipe without reader
// dies of SIGPIPE, as the process does in-process (exit status 141 is
// what a shell shows for both, but a parent's wait tells them apart).
func TestEngineSIGPIPEDeath(t *testing.T) {
	env := cliEngineEnv(t, t.TempDir())
	for _, mode := range []string{"off", "on"} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		exe, _ := os.Executable()
		cmd := exec.Command(exe, "run", "-c", "yes")
		cmd.Env = append(env, "WASMBOX_TEST_AS_CLI=1", "WASMBOX_ENGINE="+mode)
		cmd.Stdout = w
		var errb bytes.Buffer
		cmd.Stderr = &errb
		cmd.Run()
		w.Close()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGPIPE {
			t.Errorf("engine %s: %v, want death by SIGPIPE (stderr %q)", mode, cmd.ProcessState, errb.String())
		}
	}
}

// TestEngineCannotListen: where no engine can listen (a socket path longer
// than sun_path), run works in-process without starting one.
func TestEngineCannotListen(t *testing.T) {
	rt := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	os.Mkdir(rt, 0o700)
	env := cliEngineEnv(t, rt)
	out, errs, code := cli(t, env, "", "run", "-c", "echo hi")
	if out != "hi\n" || errs != "" || code != 0 {
		t.Fatalf("got %q %q %d", out, errs, code)
	}
	if ents, _ := os.ReadDir(filepath.Join(rt, "wasmbox")); len(ents) != 0 {
		t.Fatalf("an engine was started for a socket it cannot bind: %v", ents)
	}
}

// TestEngineUmask: files a run creates on the host (a rw mount) get the
// client's umask, not that of the client that started the engine: a
// umask is a process's, so each umask has an engine of its own.
func TestEngineUmask(t *testing.T) {
	env := cliEngineEnv(t, t.TempDir())
	host := t.TempDir()
	create := func(umask int, name string) {
		t.Helper()
		old := syscall.Umask(umask) // the cli process inherits it
		defer syscall.Umask(old)
		script := fmt.Sprintf("echo > /w/%s; mkdir /w/%s.d", name, name)
		if out, errs, code := cli(t, env, "", "run", "--mount", host+":/w:rw", "-c", script); code != 0 {
			t.Fatalf("umask %#o: %q %q %d", umask, out, errs, code)
		}
	}
	create(0o022, "first") // starts the engine
	create(0o077, "private")
	for name, want := range map[string]os.FileMode{"first": 0o644, "first.d": 0o755 | os.ModeDir, "private": 0o600, "private.d": 0o700 | os.ModeDir} {
		fi, err := os.Stat(filepath.Join(host, name))
		if err != nil || fi.Mode() != want {
			t.Errorf("%s: %v %v, want %v", name, fi.Mode(), err, want)
		}
	}
}

// TestEngineClientGoneBlockedOutput: a client killed while the run is
// blocked writing to a socket or a terminal nobody reads (a stopped
// terminal, a peer that does not read) leaves no run behind either: a
// blocking write there never returned, and the engine never went idle.
func TestEngineClientGoneBlockedOutput(t *testing.T) {
	sock, _ := testEngine(t)
	socketOut := func(t *testing.T) (w *os.File, closeAll func()) {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		r, w := os.NewFile(uintptr(fds[0]), "peer"), os.NewFile(uintptr(fds[1]), "out")
		return w, func() { r.Close(); w.Close() }
	}
	ttyOut := func(t *testing.T) (w *os.File, closeAll func()) {
		m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
		if err != nil {
			t.Skip(err)
		}
		n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
		if err == nil {
			err = unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0)
		}
		if err != nil {
			m.Close()
			t.Skip(err)
		}
		s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_WRONLY|syscall.O_NOCTTY, 0)
		if err != nil {
			m.Close()
			t.Skip(err)
		}
		return s, func() { m.Close(); s.Close() }
	}
	for name, out := range map[string]func(*testing.T) (*os.File, func()){"socket": socketOut, "terminal": ttyOut} {
		t.Run(name, func(t *testing.T) {
			base := baseline(t)
			w, closeAll := out(t)
			defer closeAll()
			errf := filepath.Join(t.TempDir(), "err")
			ef, _ := os.Create(errf)
			defer ef.Close()
			// Nobody reads w's other end: once its buffer is full, the
			// run's write blocks.
			conn, _ := startRun(t, w, ef, fileHas(errf, "started"), nil, "run", "--timeout", "60s", "-c", "echo started >&2; yes")
			time.Sleep(200 * time.Millisecond) // let the buffer fill
			conn.Close()
			waitIdle(t, sock, base)
		})
	}
}

// TestEngineCompileFailureEnds: an engine whose compile failed exits
// (the runs waiting for it get the error, exit 1 as in-process), so that
// the next run starts an engine that tries again instead of one that fails
// every run until it is idle.
func TestEngineCompileFailureEnds(t *testing.T) {
	dir := t.TempDir()
	priv := filepath.Join(dir, "priv")
	os.Mkdir(priv, 0o700)
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o600)
	cache := filepath.Join(notDir, "cache") // below a regular file: unusable
	sock := filepath.Join(priv, "e.sock")
	served := make(chan error, 1)
	go func() { served <- serveEngine(context.Background(), sock, cache, false, time.Hour, 0) }()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the engine still serves 30 s after its compile failed")
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
}

// TestEngineScriptNotRegular: a script or audit log that is not a regular
// file (a FIFO, which would hold the engine in open or read until a
// writer comes; /dev/stdin and /proc/self/fd/N, which name the engine's
// descriptors, not the client's) is left to the client: the engine reads
// and writes nothing and is not held.
func TestEngineScriptNotRegular(t *testing.T) {
	sock, _ := testEngine(t)
	dir := t.TempDir()
	for _, name := range []string{"script", "audit"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Skip(err)
		}
	}
	os.Symlink("/proc/self/fd/0", filepath.Join(dir, "link"))
	for _, args := range [][]string{
		{"run", "script"},
		{"run", "--audit-log", "audit", "-c", "echo no"},
		{"run", "/dev/stdin"},
		{"run", "link"},
		{"run", "/proc/self/fd/0"},
	} {
		done := make(chan engineResult, 1)
		go func() { done <- viaTestEngine(t, dir, "echo from stdin", false, args...) }()
		select {
		case got := <-done:
			if !errors.Is(got.err, engine.ErrNotTaken) || got.stdout != "" || got.stderr != "" {
				t.Errorf("%q: %+v, want the run left to the client", args, got)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%q: the engine is still at it 30 s later", args)
		}
	}
	// The engine ends a refused run's connection after it answered: its
	// count of active runs settles shortly after the client saw the answer.
	deadline := time.Now().Add(30 * time.Second)
	for {
		rep, err := engine.Op(sock, "status")
		if err == nil && rep.Status.Active == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status 30 s after the last run: %v %+v", err, rep.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEngineNotFromGoRun: a binary that `go run` built (in a go-build*
// directory under $GOTMPDIR or the temporary directory, .../exe/NAME)
// starts no engine: each distinct build would leave one of ~550 MB for
// the idle time after `go run` exits. It runs in-process.
func TestEngineNotFromGoRun(t *testing.T) {
	tmp := t.TempDir()
	rt := filepath.Join(tmp, "rt")
	os.Mkdir(rt, 0o700)
	exeDir := filepath.Join(tmp, "go-build1234567", "b001", "exe")
	os.MkdirAll(exeDir, 0o755)
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(exeDir, "wasmbox")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skip(err)
	}
	env := []string{
		"TMPDIR=" + tmp, "XDG_RUNTIME_DIR=" + rt, "PATH=" + os.Getenv("PATH"), "WASMBOX_TEST_AS_CLI=1",
		"XDG_CACHE_HOME=" + filepath.Join(cache, "wasmbox-test-xdg"),
	}
	runBin := func(args ...string) (string, string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	defer runBin("engine", "stop")
	out, errs, err := runBin("run", "-c", "echo hi")
	if out != "hi\n" || err != nil {
		t.Fatalf("run: %q %q %v", out, errs, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(rt, "wasmbox")); len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("a go run binary started an engine: %v", names)
	}
	// WASMBOX_ENGINE=on starts one anyway (the bench's warm-start rows).
	env = append(env, "WASMBOX_ENGINE=on", "WASMBOX_ENGINE_IDLE=30s")
	if out, errs, err := runBin("run", "-c", "echo on"); out != "on\n" || err != nil {
		t.Fatalf("run with WASMBOX_ENGINE=on: %q %q %v", out, errs, err)
	}
	if out, _, err := runBin("engine", "status"); err != nil || !strings.Contains(out, `"runs": 1`) {
		t.Fatalf("WASMBOX_ENGINE=on: no engine took the run: %q %v", out, err)
	}
}

// TestEngineTrim: an engine without a run for its trim time drops its
// compiled tools, snapshots and spares and gives the memory back; the
// next run makes them again and works as before.
func TestEngineTrim(t *testing.T) {
	dir, err := os.MkdirTemp("", "we-trim-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "e.sock")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serveEngine(ctx, sock, testCacheDir(), false, time.Hour, 200*time.Millisecond) }()
	defer func() {
		cancel()
		<-served
	}()
	conn, err := engine.Wait(sock, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	key, _ := engine.Key(testCacheDir())
	run := func(script string) string {
		t.Helper()
		conn, err := engine.Dial(sock)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		out, _ := os.Create(filepath.Join(t.TempDir(), "out"))
		defer out.Close()
		rep, err := engine.Submit(conn, engine.Request{Op: "run", Key: key, Args: []string{"run", "-c", script}, Dir: "/"}, nil, out, out, nil)
		if err != nil || rep.Exit != 0 {
			t.Fatalf("%q: %+v %v", script, rep, err)
		}
		b, _ := os.ReadFile(out.Name())
		return string(b)
	}
	waitTrims := func(n int64) *engine.Status {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			rep, err := engine.Op(sock, "status")
			if err != nil {
				t.Fatal(err)
			}
			if rep.Status.Trims >= n {
				return rep.Status
			}
			if time.Now().After(deadline) {
				t.Fatalf("no trim %d 30 s after the last run: %+v", n, rep.Status)
			}
		}
	}
	if out := run("echo one | tr a-z A-Z"); out != "ONE\n" {
		t.Fatalf("first run: %q", out)
	}
	st := waitTrims(1)
	t.Logf("after the first trim: %d MiB resident", st.RSS>>20)
	if out := run("echo two | tr a-z A-Z"); out != "TWO\n" {
		t.Fatalf("run after a trim: %q", out)
	}
	waitTrims(2)
}

// TestEngineScriptBytes: a script that is not UTF-8 runs unchanged with
// the engine on (its JSON request would have made each such byte U+FFFD):
// the output is bash's.
func TestEngineScriptBytes(t *testing.T) {
	env := cliEngineEnv(t, t.TempDir())
	for _, s := range byteScripts {
		want := bashOutput(t, s)
		if out, errs, _ := cli(t, env, "", "run", "-c", s); out != want {
			t.Errorf("script %q:\n got %q (stderr %q)\nwant %q (bash)", s, out, errs, want)
		}
	}
}

// TestEngineShellFromClientEnv: WASMBOX_SHELL is the client's, not the
// engine's (the engine ran the wasmbox interpreter for
// WASMBOX_SHELL=bash clients: $BASH_VERSION 5.2.0). GNU bash is the
// default and the only shell: WASMBOX_SHELL=interp (the removed
// interpreter) is refused with its line.
func TestEngineShellFromClientEnv(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ env, want, wantErr string }{
		{"WASMBOX_SHELL=interp", "", "the wasmbox interpreter was removed"},
		{"WASMBOX_SHELL=bash", "5.2.15(1)-release\n", ""},
		{"WASMBOX_SHELL=", "5.2.15(1)-release\n", ""},
	} {
		r := viaTestEngineEnv(t, dir, "", false, []string{"HOME=/nowhere", c.env}, "run", "-c", "echo $BASH_VERSION")
		if c.wantErr != "" {
			if r.stdout != "" || r.rep.Exit == 0 || !strings.Contains(r.stderr, c.wantErr) {
				t.Errorf("%s: %q %q %+v %v, want an error with %q", c.env, r.stdout, r.stderr, r.rep, r.err, c.wantErr)
			}
			continue
		}
		if r.err != nil || r.stdout != c.want || r.rep.Exit != 0 {
			t.Errorf("%s: %q %q %+v %v, want %q", c.env, r.stdout, r.stderr, r.rep, r.err, c.want)
		}
	}
}
