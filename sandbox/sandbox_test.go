package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func newSandbox(t *testing.T, opts ...Option) *Sandbox {
	t.Helper()
	sb, err := New(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

func run(t *testing.T, sb *Sandbox, script string) Result {
	t.Helper()
	res, err := sb.Run(context.Background(), script)
	if err != nil {
		t.Fatalf("Run(%q): %v", script, err)
	}
	return res
}

func TestRunTable(t *testing.T) {
	sb := newSandbox(t)
	cases := []struct {
		script string
		stdout string
		stderr string
		code   int
		class  ErrorClass
	}{
		{script: "echo hello | cat", stdout: "hello\n"},
		{script: "printf 'a\\nb\\nc\\n' > /tmp/f; cat /tmp/f | head -n 2", stdout: "a\nb\n"},
		{script: "echo $HOME $USER $PATH $SHELL; pwd", stdout: "/home/user user /bin:/usr/bin /bin/sh\n/home/user\n"},
		{script: "cat /nonexistent", stderr: "cat: /nonexistent: No such file or directory\n", code: 1},
		{script: "nosuchcommand", stderr: "bash: line 1: nosuchcommand: command not found\n", code: 127, class: ClassNotFound},
		{script: "exit 3", code: 3},
		{script: "echo 'unterminated", code: 2},
		{script: "cat /etc/passwd | head -n 1", stdout: "root:x:0:0:root:/root:/bin/sh\n"},
	}
	for _, c := range cases {
		t.Run(c.script, func(t *testing.T) {
			res := run(t, sb, c.script)
			if res.Stdout != c.stdout || res.ExitCode != c.code || res.ErrorClass != c.class {
				t.Fatalf("got stdout %q exit %d class %q (stderr %q), want %q %d %q", res.Stdout, res.ExitCode, res.ErrorClass, res.Stderr, c.stdout, c.code, c.class)
			}
			if c.stderr != "" && res.Stderr != c.stderr {
				t.Fatalf("stderr %q, want %q", res.Stderr, c.stderr)
			}
		})
	}
}

// TestStatePersistsAcrossRuns: the directory, variables, functions,
// aliases and shell options of one Run are the next Run's. (GNU bash
// expands aliases in a script only with expand_aliases, as /bin/bash
// 5.2.15 -c 'alias ll=...; ll' answers "ll: command not found".)
func TestStatePersistsAcrossRuns(t *testing.T) {
	sb := newSandbox(t)
	run(t, sb, `mkdir -p /tmp/w && cd /tmp/w; export GREETING=hi; count=1; f() { echo "f:$1"; }; shopt -s expand_aliases; alias ll='echo aliased'`)
	res := run(t, sb, `pwd; echo $GREETING $count; f x; ll`)
	if want := "/tmp/w\nhi 1\nf:x\naliased\n"; res.Stdout != want {
		t.Fatalf("got %q (stderr %q), want %q", res.Stdout, res.Stderr, want)
	}
	if sb.Dir() != "/tmp/w" {
		t.Fatalf("Dir() = %q", sb.Dir())
	}
}

func TestHostEnvironmentDoesNotLeak(t *testing.T) {
	t.Setenv("WASMBOX_TEST_SECRET", "hunter2")
	sb := newSandbox(t)
	res := run(t, sb, `echo "[$WASMBOX_TEST_SECRET]"; cat /proc/self/environ; echo $UID`)
	if strings.Contains(res.Stdout+res.Stderr, "hunter2") {
		t.Fatalf("host secret visible: %+v", res)
	}
	if !strings.HasPrefix(res.Stdout, "[]\n") || !strings.HasSuffix(res.Stdout, "1000\n") {
		t.Fatalf("got %+v", res)
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	sb := newSandbox(t, WithTimeout(200*time.Millisecond))
	base := runtime.NumGoroutine()
	var writers []*io.PipeWriter
	for _, script := range []string{"while :; do :; done", "cat /dev/zero > /dev/null", "cat | cat", "cat"} {
		start := time.Now()
		// Standard input is a pipe nobody writes to: reading it blocks.
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		var stdout, stderr bytes.Buffer
		res, err := sb.Stream(context.Background(), script, pr, &stdout, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		res.Stderr = stderr.String()
		if res.ExitCode != 124 || res.ErrorClass != ClassTimeout {
			t.Fatalf("%q: got exit %d class %q stderr %q", script, res.ExitCode, res.ErrorClass, res.Stderr)
		}
		// The scripts never end by themselves: a watchdog, not a
		// speed limit.
		if d := time.Since(start); d > time.Minute {
			t.Fatalf("%q: took %v to die", script, d)
		}
	}
	// Cancel from another goroutine, until the run has ended (a single
	// Cancel after a sleep could come before the run started, and then
	// nothing would end it).
	sb2 := newSandbox(t)
	ran := make(chan struct{})
	go func() {
		for {
			select {
			case <-ran:
				return
			case <-time.After(50 * time.Millisecond):
				sb2.Cancel()
			}
		}
	}()
	res := run(t, sb2, "cat /dev/zero > /dev/null")
	close(ran)
	if res.ExitCode != 125 || res.ErrorClass != ClassCancelled {
		t.Fatalf("cancel: got %+v", res)
	}
	// The sandbox is usable after a kill.
	if res := run(t, sb2, "echo alive | cat"); res.Stdout != "alive\n" {
		t.Fatalf("after cancel: %+v", res)
	}
	// A goroutine copying a caller's stdin lives until that reader ends:
	// an io.Reader cannot be interrupted.
	for _, w := range writers {
		w.Close()
	}
	waitGoroutines(t, base+2)
}

// waitGoroutines fails unless the goroutine count drops to at most n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a watchdog
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d > %d\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOutputIsCappedWhileWriting(t *testing.T) {
	sb := newSandbox(t, WithLimits(Limits{OutputBytes: 1000, Timeout: 5 * time.Second}))
	res := run(t, sb, `i=0; while [ $i -lt 500 ]; do echo 0123456789; i=$((i+1)); done; cat /etc/passwd; echo done >&2`)
	if !res.Truncated || len(res.Stdout) > 1000 {
		t.Fatalf("truncated=%v len=%d", res.Truncated, len(res.Stdout))
	}
	// Past the cap, the shell's own writes fail as on a pipe whose reader
	// left: GNU bash dies of SIGPIPE there, as /bin/bash 5.2.15 does
	// (status 141, "done" never written), and the session goes on.
	if res.ExitCode != 141 || res.ErrorClass != ClassNone || strings.Contains(res.Stderr, "done") {
		t.Fatalf("exit %d class %q stderr %q, want 141", res.ExitCode, res.ErrorClass, res.Stderr)
	}
	if res := run(t, sb, `echo x; echo y >&2`); res.Stdout != "x\n" || res.Stderr != "y\n" || res.Truncated {
		t.Fatalf("the next run: %+v", res)
	}
}

func TestScriptSizeLimit(t *testing.T) {
	sb := newSandbox(t)
	res := run(t, sb, "#"+strings.Repeat("x", 64<<10))
	if res.ErrorClass != ClassLimitExceeded || res.ExitCode == 0 {
		t.Fatalf("got %+v", res)
	}
}

func TestAllowlist(t *testing.T) {
	sb := newSandbox(t, WithAllow("cat"))
	if res := run(t, sb, "echo ok | cat"); res.Stdout != "ok\n" {
		t.Fatalf("allowed command: %+v", res)
	}
	for _, script := range []string{"head -n1 /etc/passwd", "echo x | head", "x=$(head -n1 /etc/passwd); echo $x", "/bin/head /etc/passwd"} {
		res := run(t, sb, script)
		if res.ErrorClass != ClassDenied && !strings.Contains(res.Stderr, "not allowed") {
			t.Fatalf("%q: got %+v", script, res)
		}
		if strings.Contains(res.Stdout, "root") {
			t.Fatalf("%q: denied command ran: %+v", script, res)
		}
	}
}

func TestFiles(t *testing.T) {
	sb := newSandbox(t)
	if err := sb.WriteFile("notes.txt", []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := run(t, sb, "cat /home/user/notes.txt | tail -n 1 > out.txt"); res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	got, err := sb.ReadFile("/home/user/out.txt")
	if err != nil || string(got) != "two\n" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	ents, err := sb.ReadDir("/home/user")
	if err != nil || len(ents) != 2 || ents[0].Name() != "notes.txt" {
		t.Fatalf("ReadDir = %v, %v", ents, err)
	}
	if err := sb.MkdirAll("/a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	if fi, err := sb.Stat("/a/b/c"); err != nil || !fi.IsDir() {
		t.Fatalf("Stat = %v, %v", fi, err)
	}
	if err := sb.Remove("/a/b/c"); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.ReadFile("/a/b/c"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after Remove: %v", err)
	}
	if err := sb.SetEnv("PROJECT", "wasmbox"); err != nil {
		t.Fatal(err)
	}
	if res := run(t, sb, `echo $PROJECT`); res.Stdout != "wasmbox\n" {
		t.Fatalf("SetEnv: %+v", res)
	}
}

func TestFork(t *testing.T) {
	sb := newSandbox(t)
	run(t, sb, `echo parent > /tmp/f; v=1; cd /tmp`)
	start := time.Now()
	child, err := sb.Fork()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fork took %v", time.Since(start))
	defer child.Close()
	run(t, child, `echo child > /tmp/f; v=2`)
	if res := run(t, sb, `cat /tmp/f; echo $v; pwd`); res.Stdout != "parent\n1\n/tmp\n" {
		t.Fatalf("parent changed: %+v", res)
	}
	if res := run(t, child, `cat /tmp/f; echo $v; pwd`); res.Stdout != "child\n2\n/tmp\n" {
		t.Fatalf("child: %+v", res)
	}
}

func TestSnapshotRestore(t *testing.T) {
	sb := newSandbox(t)
	run(t, sb, `mkdir -p /tmp/d/e; echo data > /tmp/d/e/f; ln -s e/f /tmp/d/l; cd /tmp/d; export K=v; g() { echo g; }`)
	var a bytes.Buffer
	if err := sb.Snapshot(&a); err != nil {
		t.Fatal(err)
	}
	other := newSandbox(t)
	if err := other.Restore(bytes.NewReader(a.Bytes())); err != nil {
		t.Fatal(err)
	}
	// Snapshot, Restore, Snapshot gives the same bytes. (A Run changes
	// GNU bash's memory even when it changes no variable: $_, the
	// allocator's state. The round trip is taken before one.)
	var b bytes.Buffer
	if err := other.Snapshot(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("round trip not byte-identical (%d vs %d bytes)", a.Len(), b.Len())
	}
	if res := run(t, other, `pwd; cat l; echo $K; g`); res.Stdout != "/tmp/d\ndata\nv\ng\n" {
		t.Fatalf("restored: %+v", res)
	}
	bad := append([]byte(nil), a.Bytes()...)
	bad[len(bad)/2] ^= 1
	if err := other.Restore(bytes.NewReader(bad)); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("corrupt snapshot: %v", err)
	}
	if res := run(t, other, `cat /tmp/d/e/f`); res.Stdout != "data\n" {
		t.Fatalf("state changed by a failed restore: %+v", res)
	}
}

func TestDeterministic(t *testing.T) {
	script := `echo $RANDOM $RANDOM; head -c 8 /dev/urandom | cat > /tmp/r; echo x > /tmp/t; ls -l /tmp 2>&1 | head -n 5`
	var outs []string
	var snaps [][]byte
	for i := 0; i < 2; i++ {
		sb := newSandbox(t, WithDeterministic(42))
		res := run(t, sb, script)
		outs = append(outs, res.Stdout+res.Stderr)
		var buf bytes.Buffer
		if err := sb.Snapshot(&buf); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, buf.Bytes())
	}
	if outs[0] != outs[1] {
		t.Fatalf("outputs differ:\n%s\n---\n%s", outs[0], outs[1])
	}
	if !bytes.Equal(snaps[0], snaps[1]) {
		t.Fatal("snapshots differ")
	}
}

func TestClose(t *testing.T) {
	sb, err := New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sb.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := sb.Run(context.Background(), "echo"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close: %v", err)
	}
}

func TestSpawnedCommands(t *testing.T) {
	sb := newSandbox(t)
	res := run(t, sb, `echo a b | xargs -n1 sh -c 'echo "[$0]"'; printf 'x y\n' | awk '{system("echo awk " $2)}'; find /etc -name group -exec sh -c 'echo found $1' _ {} \;`)
	if want := "[a]\n[b]\nawk y\nfound /etc/group\n"; res.Stdout != want {
		t.Fatalf("got %q (stderr %q), want %q", res.Stdout, res.Stderr, want)
	}
}

func TestAllowlistCoversSpawnedCommands(t *testing.T) {
	sb := newSandbox(t, WithAllow("xargs", "find", "echo", "cat"))
	for _, script := range []string{
		`echo /etc/passwd | xargs head -n1`,
		`find /etc -name passwd -exec head -n1 {} \;`,
		`echo /etc/passwd | xargs sh -c 'head -n1 $0'`,
	} {
		res := run(t, sb, script)
		if strings.Contains(res.Stdout, "root") {
			t.Fatalf("%q: a denied command ran through a spawn: %+v", script, res)
		}
	}
	if res := run(t, sb, `echo hi | xargs echo`); res.Stdout != "hi\n" {
		t.Fatalf("allowed spawn: %+v", res)
	}
}

// hostMemoryWatchdog returns a context that is cancelled if the test
// process's resident memory grows by more than limit over what it was
// when the watchdog started, before the test ends, so that a memory bomb
// that escapes its bound fails the test (ctx.Err() set) instead of taking
// the machine down. It measures the growth of RSS (guest memories are
// mappings of their own, outside Go's heap), not an absolute figure
// (runtime.MemStats.Sys never goes down, so earlier tests in the same
// process counted against this one).
func hostMemoryWatchdog(t *testing.T, limit uint64) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); cancel() })
	base := rssNow(t)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			b, err := os.ReadFile("/proc/self/statm")
			if err != nil {
				continue
			}
			f := strings.Fields(string(b))
			if len(f) < 2 {
				continue
			}
			pages, _ := strconv.ParseInt(f[1], 10, 64)
			if pages*int64(os.Getpagesize())-base > int64(limit) {
				cancel()
				return
			}
		}
	}()
	return ctx
}
