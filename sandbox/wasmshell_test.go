package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/shell/session"
)

// The shell runs inside WebAssembly (bash.wasm): the tests of this file
// check the boundary that puts it there. On the code before it (the
// interpreter in the host process) the bombs grew the host to the OOM
// killer; rssWatch turns such a regression into a failed test.

// rssWatch samples the process's resident set until stop is called and
// returns the largest growth over the RSS at the start. When the growth
// passes abort, it prints why and ends the test binary: a regression must
// fail the test, not take the machine down.
func rssWatch(t *testing.T, abort int64) (stop func() int64) {
	t.Helper()
	base := rssNow(t)
	var peak atomic.Int64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			g := rssNow(t) - base
			if g > peak.Load() {
				peak.Store(g)
			}
			if g > abort {
				fmt.Fprintf(os.Stderr, "FAIL %s: the host's RSS grew by %d MiB (abort at %d MiB): the shell is not bounded\n",
					t.Name(), g>>20, abort>>20)
				os.Exit(3)
			}
		}
	}()
	return func() int64 {
		close(done)
		<-finished
		return peak.Load()
	}
}

func rssNow(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// TestShellBombs: expansions that want more memory than the shell has end
// with LIMIT_EXCEEDED (137) or the deadline (124) within the deadline plus
// a second, the host grows by less than 512 MiB, and the session goes on
// with the state it had before.
func TestShellBombs(t *testing.T) {
	if testing.Short() {
		t.Skip("memory bombs take a few seconds")
	}
	const deadline = 2 * time.Second
	// The set-up run may take longer on a loaded machine; each bomb runs
	// under the 2 s deadline of its own context.
	sb := newSandbox(t, WithTimeout(2*time.Minute))
	run(t, sb, `KEEP=before; cd /tmp; y=$(head -c 15000000 /dev/zero | tr "\0" a)`)
	bombs := []struct{ name, script string }{
		{"quadratic replace", `y=$(head -c 1000000 /dev/zero | tr "\0" a); z=${y//?/$y}`},
		{"80 references to a 15 MB variable", "z=" + strings.Repeat("$y", 80)},
		{"here-document of 40 references", "cat <<EOF | wc -c\n" + strings.Repeat("$y", 40) + "\nEOF"},
		{"brace expansion, 10 levels", "echo " + strings.Repeat("{1..10}", 10) + " | wc -c"},
		{"doubling loop", `x=x; while :; do x=$x$x; done`},
		{"array growth", `a=(); while :; do a+=("$y"); done`},
		{"command substitution of a flood", `x=$(cat /dev/zero); echo ${#x}`},
	}
	debug.FreeOSMemory()
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			stop := rssWatch(t, 1536<<20)
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			res, err := sb.Run(ctx, b.script)
			cancel()
			took := time.Since(start)
			grew := stop()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("exit %d %s after %v, host RSS +%d MiB; stderr %.120q", res.ExitCode, res.ErrorClass, took.Round(time.Millisecond), grew>>20, res.Stderr)
			switch {
			case res.ExitCode == 137 && res.ErrorClass == ClassLimitExceeded:
				wantEqual(t, res.Stderr, "wasmbox: shell memory limit (256 MiB) exceeded\n")
			case res.ErrorClass == ClassLimitExceeded:
				// One of the shell's own limits (variable size) came first.
				wantContains(t, res.Stderr, "limit")
			case res.ExitCode == 124 && res.ErrorClass == ClassTimeout:
			default:
				t.Errorf("exit %d class %q, want LIMIT_EXCEEDED or 124 TIMEOUT", res.ExitCode, res.ErrorClass)
			}
			if took > deadline+time.Second {
				t.Errorf("took %v, more than the deadline %v and a second", took, deadline)
			}
			if grew > 512<<20 {
				t.Errorf("the host's RSS grew by %d MiB (want < 512 MiB)", grew>>20)
			}
			got := run(t, sb, `echo "$KEEP $PWD ${#y}"`)
			wantEqual(t, got.Stdout, "before /tmp 15000000\n")
			debug.FreeOSMemory()
		})
	}
}

// TestShellMemoryOption: WithShellMemory sets the shell's limit, and the
// one-line message says it.
func TestShellMemoryOption(t *testing.T) {
	sb := newSandbox(t, WithShellMemory(32<<20))
	res := run(t, sb, `y=$(head -c 4000000 /dev/zero | tr "\0" a); z=$y$y$y$y$y$y$y$y$y$y; echo not reached`)
	wantStatus(t, res, 137, ClassLimitExceeded)
	wantEqual(t, res.Stdout, "")
	wantEqual(t, res.Stderr, "wasmbox: shell memory limit (32 MiB) exceeded\n")
	// A normal run after it.
	res = run(t, sb, `echo fine`)
	wantEqual(t, res.Stdout, "fine\n")
}

// TestKillRestoresShellState: a Run killed by its deadline, its context, a
// Cancel or the shell's memory limit leaves the shell as it was before the
// Run began (directory, variables, exports, functions, aliases, options,
// traps, umask), and the filesystem with what the Run wrote.
func TestKillRestoresShellState(t *testing.T) {
	sb := newSandbox(t, WithShellMemory(64<<20))
	const setup = `cd /tmp; V=before; export E=exported; f() { echo f-before; }; alias a='echo a-before'; shopt -s expand_aliases; set -o pipefail; trap 'echo err' ERR; umask 027`
	const show = `echo "$PWD $V $E"; f; a; shopt expand_aliases; set -o | grep pipefail; trap; umask`
	run(t, sb, setup)
	want := run(t, sb, show).Stdout
	const change = `cd /; V=during; export E=changed; f() { echo f-during; }; alias a='echo a-during'; set +o pipefail; trap - ERR; umask 077; echo written > /tmp/kept-$N; `
	kills := []struct {
		name  string
		loop  string
		kill  func(ctx context.Context) (context.Context, context.CancelFunc)
		class ErrorClass
	}{
		{"deadline", `while :; do :; done`, func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 200*time.Millisecond)
		}, ClassTimeout},
		{"cancel", `seq 1000000000 | while read l; do :; done`, func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(200*time.Millisecond, cancel)
			return ctx, cancel
		}, ClassCancelled},
		{"Cancel", `sleep 100`, func(ctx context.Context) (context.Context, context.CancelFunc) {
			stop := time.AfterFunc(200*time.Millisecond, sb.Cancel)
			return ctx, func() { stop.Stop() }
		}, ClassCancelled},
		{"memory limit", `x=x; while :; do x=$x$x; done`, nil, ClassLimitExceeded},
	}
	for i, k := range kills {
		t.Run(k.name, func(t *testing.T) {
			ctx := context.Background()
			if k.kill != nil {
				var cancel context.CancelFunc
				ctx, cancel = k.kill(ctx)
				defer cancel()
			}
			res, err := sb.Run(ctx, "N="+strconv.Itoa(i)+"; "+change+k.loop)
			if err != nil {
				t.Fatal(err)
			}
			if res.ErrorClass != k.class {
				t.Fatalf("exit %d class %q (stderr %q), want %q", res.ExitCode, res.ErrorClass, res.Stderr, k.class)
			}
			wantEqual(t, run(t, sb, show).Stdout, want)
			got, err := sb.ReadFile(fmt.Sprintf("/tmp/kept-%d", i))
			if err != nil || string(got) != "written\n" {
				t.Errorf("the file the run wrote: %q, %v", got, err)
			}
		})
	}
}

// TestHostPidNeverSeen: $$, $PPID and ${!name} give the sandbox's pids.
// (On the host interpreter, ${!y} with y='$' expanded the host's pid.)
func TestHostPidNeverSeen(t *testing.T) {
	sb := newSandbox(t)
	res := run(t, sb, `y='$'; p=PPID; echo $$ $PPID ${!y} ${!p}; (echo $$); bash -c 'echo $$ $PPID'`)
	for _, f := range strings.Fields(res.Stdout) {
		if f == strconv.Itoa(os.Getpid()) || f == strconv.Itoa(os.Getppid()) {
			t.Fatalf("the host's pid %s leaked: %q", f, res.Stdout)
		}
	}
	// The session's bash is pid 1 of the sandbox (its parent 0); a
	// subshell keeps $$, as in bash; bash -c is the run's third process
	// (after the subshell), its parent the session.
	wantEqual(t, res.Stdout, "1 0 1 0\n1\n3 1\n")
}

// TestCommandEnvironmentExact: a command gets exactly the environment it
// was given, and still starts in its directory (the executor gives it
// through wasmbox.getcwd, not $PWD): bash prints nothing for env -i
// printenv. The shell exports PWD and OLDPWD itself, as bash does.
func TestCommandEnvironmentExact(t *testing.T) {
	sb := newSandbox(t)
	res := run(t, sb, `env -i printenv; echo "s=$?"; cd /tmp; env -i pwd; printenv PWD OLDPWD; env -i A=1 sh -c 'echo "$A $PWD"'`)
	wantEqual(t, res.Stdout, "s=0\n/tmp\n/tmp\n/home/user\n1 /tmp\n")
}

// TestPipelinesRunAtOnce: every stage of a pipeline runs at once, whatever
// mix of shell code and commands it holds, with bash's subshell
// semantics.
func TestPipelinesRunAtOnce(t *testing.T) {
	sb := newSandbox(t)
	run(t, sb, `seq 20000 > /tmp/big; f() { while read l; do echo "f$l"; done; }; g() { while read l; do echo "g$l"; done; }`)
	for _, c := range []struct{ script, want string }{
		{`seq 3 | f | tr f F | g`, "gF1\ngF2\ngF3\n"},
		{`cat /tmp/big | while read l; do :; done; echo done`, "done\n"},
		{`yes | head -1`, "y\n"},
		{`cat /tmp/big | (read a; echo "first $a"; wc -l)`, "first 1\n19999\n"},
		{`f < /tmp/big | tail -1`, "f20000\n"},
		{`seq 3 | f & seq 2 | g & wait; echo both`, ""},
		{`echo x | X=after; echo "[$X]"`, "[]\n"},
		{`shopt -s lastpipe; echo x | read Y; echo "[$Y]"`, "[x]\n"},
		{`(sleep 0.2; echo late) & echo early; wait`, "early\nlate\n"},
		{`cat /tmp/big | sort -rn | head -2 | f | g`, "gf20000\ngf19999\n"},
		{`f() { yes; }; f | head -2`, "y\ny\n"},
		{`printf '%s\n' {1..5000} | while read n; do echo $n; done | wc -l`, "5000\n"},
	} {
		res := run(t, sb, c.script)
		if c.want == "" {
			// Two background pipelines: their lines interleave.
			lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
			if len(lines) != 6 || lines[5] != "both" {
				t.Errorf("%s: %q", c.script, res.Stdout)
			}
			continue
		}
		if res.Stdout != c.want || res.ExitCode != 0 {
			t.Errorf("%s: exit %d stdout %q stderr %q, want %q", c.script, res.ExitCode, res.Stdout, res.Stderr, c.want)
		}
	}
}

// TestForkAndSnapshotCarryShellState: Fork copies the shell with the
// filesystem, and a snapshot restores it, in a new sandbox.
func TestForkAndSnapshotCarryShellState(t *testing.T) {
	sb := newSandbox(t)
	run(t, sb, `cd /tmp; V=1; export E=2; f() { echo "f $V"; }; alias a='echo alias'; shopt -s expand_aliases; set -o pipefail; echo data > file`)
	const show = `echo "$PWD $V $E"; f; a; set -o | grep pipefail; cat file`
	want := run(t, sb, show).Stdout
	fork, err := sb.Fork()
	if err != nil {
		t.Fatal(err)
	}
	defer fork.Close()
	wantEqual(t, run(t, fork, show).Stdout, want)
	// They are independent.
	run(t, fork, `V=forked`)
	wantEqual(t, run(t, sb, `echo $V`).Stdout, "1\n")
	var buf bytes.Buffer
	if err := sb.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	dst := newSandbox(t)
	if err := dst.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	wantEqual(t, run(t, dst, show).Stdout, want)
	// The restored sandbox runs its own commands.
	wantEqual(t, run(t, dst, `echo x | cat; pwd`).Stdout, "x\n/tmp\n")
}

// TestOldSnapshotRestores: a snapshot written by the format of the host
// interpreter (testdata/snapshot-v1-host-shell.bin, written at commit
// 3ceb857) restores into the WebAssembly shell.
func TestOldSnapshotRestores(t *testing.T) {
	b, err := os.ReadFile("testdata/snapshot-v1-host-shell.bin")
	if err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t)
	if err := sb.Restore(bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	res := run(t, sb, `echo "$PWD $V $E"; f; a; set -o | grep pipefail; cat file`)
	// set -o in bash's format (/bin/bash 5.2.15: "%-15s\t%s").
	wantEqual(t, res.Stdout, "/tmp 1 2\nf 1\nalias\npipefail       \ton\ndata\n")
}

// TestHostLineAfterKill: the shell's own line about how a run ended gets
// out through the writers a Run gives the shell even when the run's context
// is already done (a limit met as the deadline came: TestShellBombs saw 137
// LIMIT_EXCEEDED with no line under load), while what the guest writes
// after the kill does not.
func TestHostLineAfterKill(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var buf bytes.Buffer
	capped := newCapWriter(&buf, 1<<20)
	stderr := &tailWriter{w: ctxWriter{ctx, capped}}
	cancel()
	fmt.Fprintf(stderr, "the guest, after the kill\n")
	res := session.KilledResult(ctx, stderr, context.Canceled, true, nil, 256<<20, nil)
	capped.flush()
	if res.Code != 137 {
		t.Errorf("code %d, want 137", res.Code)
	}
	wantEqual(t, buf.String(), "wasmbox: shell memory limit (256 MiB) exceeded\n")

	// A command's own line (runBashScript's streams are ctxWriters).
	buf.Reset()
	fmt.Fprintf(hostLines(ctxWriter{ctx, &buf}), "wasmbox: %s: memory limit (%s) exceeded\n", "awk", spacedBytes(64<<20))
	fmt.Fprintf(ctxWriter{ctx, &buf}, "the guest, after the kill\n")
	wantEqual(t, buf.String(), "wasmbox: awk: memory limit (64 MiB) exceeded\n")
}
