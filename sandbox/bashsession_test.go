package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	goruntime "runtime"

	"github.com/wasmbox/wasmbox/audit"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/wasm"
)

// sessionShells are the shells the session tests run on: GNU bash's
// session, the only one since the interpreter was removed (the subtests
// keep their names).
func sessionShells(t *testing.T) []string {
	needBash(t)
	return []string{ShellBash}
}

func shellName(sh string) string { return sh }

// TestSessionContracts: the contracts of a session shell, on each shell:
// state across Runs (variables, functions, aliases, the working
// directory), exit, a Run killed by its deadline going back to the state
// at its start, Fork diverging, Snapshot/Restore into a new sandbox,
// SetEnv/Env.
func TestSessionContracts(t *testing.T) {
	for _, sh := range sessionShells(t) {
		t.Run(shellName(sh), func(t *testing.T) {
			sb := newSandbox(t, WithShell(sh), WithTimeout(30*time.Second))
			run(t, sb, `x=1; f() { echo "f:$1:$x"; }; mkdir -p /tmp/w; cd /tmp/w; export E=exp`)
			res := run(t, sb, `echo "$x"; f a; pwd; printenv E`)
			wantEqual(t, res.Stdout, "1\nf:a:1\n/tmp/w\nexp\n")
			wantEqual(t, sb.Dir(), "/tmp/w")

			// exit: Exited, and the state persists all the same.
			res = run(t, sb, `y=2; exit 3`)
			if res.ExitCode != 3 || !res.Exited {
				t.Fatalf("exit 3: %+v", res)
			}
			wantEqual(t, run(t, sb, `echo $y`).Stdout, "2\n")

			// Killed mid-loop by its deadline: back to x=1, /tmp/w.
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			res, err := sb.Run(ctx, `x=2; f() { echo changed; }; cd /; echo kept > /tmp/kept; while :; do :; done`)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, 124, ClassTimeout)
			res = run(t, sb, `echo "$x"; f b; pwd; cat /tmp/kept`)
			wantEqual(t, res.Stdout, "1\nf:b:1\n/tmp/w\nkept\n")

			// Fork diverges from its parent.
			c, err := sb.Fork()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			run(t, c, `x=child; cd /tmp`)
			run(t, sb, `x=parent`)
			wantEqual(t, run(t, c, `echo $x; pwd`).Stdout, "child\n/tmp\n")
			wantEqual(t, run(t, sb, `echo $x; pwd`).Stdout, "parent\n/tmp/w\n")

			// SetEnv and Env.
			if err := sb.SetEnv("FROM_HOST", "a b"); err != nil {
				t.Fatal(err)
			}
			wantEqual(t, run(t, sb, `printenv FROM_HOST`).Stdout, "a b\n")
			if env := strings.Join(sb.Env(), "\n"); !strings.Contains(env, "FROM_HOST=a b") || !strings.Contains(env, "E=exp") {
				t.Errorf("Env() = %q", env)
			}
			run(t, sb, `readonly RO=1`)
			if err := sb.SetEnv("RO", "2"); err == nil || !strings.Contains(err.Error(), "read-only") {
				t.Errorf("SetEnv of a read-only variable: %v", err)
			}

			// Snapshot, then Restore into a new sandbox of the same shell.
			var snap bytes.Buffer
			if err := sb.Snapshot(&snap); err != nil {
				t.Fatal(err)
			}
			r := newSandbox(t, WithShell(sh))
			if err := r.Restore(bytes.NewReader(snap.Bytes())); err != nil {
				t.Fatal(err)
			}
			res = run(t, r, `echo "$x"; f c; pwd; printenv FROM_HOST`)
			wantEqual(t, res.Stdout, "parent\nf:c:parent\n/tmp/w\na b\n")
			wantEqual(t, r.Dir(), "/tmp/w")
		})
	}
}

// TestSessionShellMemory: a Run over --shell-memory ends LIMIT_EXCEEDED
// with the one-line message, and the session goes on from its state.
func TestSessionShellMemory(t *testing.T) {
	for _, sh := range sessionShells(t) {
		t.Run(shellName(sh), func(t *testing.T) {
			sb := newSandbox(t, WithShell(sh), WithShellMemory(32<<20))
			run(t, sb, `kept=yes`)
			res := run(t, sb, `kept=no; x=x; while :; do x=$x$x; done`)
			wantStatus(t, res, 137, ClassLimitExceeded)
			wantEqual(t, res.Stderr, "wasmbox: shell memory limit (32 MiB) exceeded\n")
			wantEqual(t, run(t, sb, `echo $kept`).Stdout, "yes\n")
		})
	}
}

// TestSessionDeterministic: the deterministic mode gives the same output
// in two sandboxes.
func TestSessionDeterministic(t *testing.T) {
	for _, sh := range sessionShells(t) {
		t.Run(shellName(sh), func(t *testing.T) {
			var outs []string
			for i := 0; i < 2; i++ {
				sb := newSandbox(t, WithShell(sh), WithDeterministic(42))
				res := run(t, sb, `echo $RANDOM $RANDOM; date +%s; head -c 8 /dev/urandom | od -An -tx1`)
				outs = append(outs, res.Stdout+res.Stderr)
			}
			if outs[0] != outs[1] {
				t.Fatalf("outputs differ:\n%s\n---\n%s", outs[0], outs[1])
			}
		})
	}
}

// TestSessionAuditRedaction: the audit log has the script with the values
// of secret-named variables it assigned redacted, and so does the output
// of later Runs.
func TestSessionAuditRedaction(t *testing.T) {
	for _, sh := range sessionShells(t) {
		t.Run(shellName(sh), func(t *testing.T) {
			var log bytes.Buffer
			sb := newSandbox(t, WithShell(sh), WithAudit(audit.New(&log, audit.WithRedactor(audit.NewRedactor(audit.WithEnviron(nil))))),
				WithRedactor(audit.NewRedactor(audit.WithEnviron(nil))))
			run(t, sb, `export API_KEY="key-in-script-1"`)
			res := run(t, sb, `echo "$API_KEY"`)
			wantEqual(t, res.Stdout, "[REDACTED]\n")
			if strings.Contains(log.String(), "key-in-script-1") || !strings.Contains(log.String(), `"script":"export API_KEY=[REDACTED]"`) {
				t.Errorf("audit log:\n%s", log.String())
			}
		})
	}
}

// TestSessionCloseLeavesNothing: after Runs (with forks, a kill) and Close,
// no goroutine and no instance of the sandbox is left.
func TestSessionCloseLeavesNothing(t *testing.T) {
	for _, sh := range sessionShells(t) {
		t.Run(shellName(sh), func(t *testing.T) {
			eng, err := DefaultEngine(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// Start one sandbox first, so that the engine's own
			// goroutines and pooled shells are there before counting.
			newSandbox(t, WithShell(sh))
			g0 := goruntime.NumGoroutine()
			live0 := eng.rt.LiveInstances()
			sb, err := New(context.Background(), WithShell(sh), WithTimeout(300*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			run(t, sb, `x=$(echo a | tr a b); echo $x | cat`)
			run(t, sb, `(while :; do :; done) | cat`)
			c, err := sb.Fork()
			if err != nil {
				t.Fatal(err)
			}
			run(t, c, `echo forked`)
			c.Close()
			sb.Close()
			deadline := time.Now().Add(30 * time.Second) // a watchdog
			for goruntime.NumGoroutine() > g0 || eng.rt.LiveInstances() > live0 {
				if time.Now().After(deadline) {
					buf := make([]byte, 1<<20)
					t.Fatalf("left: goroutines %d > %d, instances %d > %d\n%s", goruntime.NumGoroutine(), g0,
						eng.rt.LiveInstances(), live0, buf[:goruntime.Stack(buf, true)])
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestBashSessionSnapshotRefusals: a bash snapshot whose image was
// corrupted (with a valid outer checksum, as a hostile snapshot would
// have) is refused with a clear error and leaves the sandbox as it was; a
// bash snapshot does not restore into the interpreter; an interpreter
// snapshot restores into bash (files, directory, exported variables).
func TestBashSessionSnapshotRefusals(t *testing.T) {
	needBash(t)
	sb := newSandbox(t, WithShell(ShellBash))
	run(t, sb, `v=kept; cd /tmp`)
	var snap bytes.Buffer
	if err := sb.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	img, err := decodeSnapshot(bytes.NewReader(snap.Bytes()), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if img.Bash == nil {
		t.Fatal("a bash snapshot without its image")
	}
	reencode := func(bash []byte) []byte {
		c := *img
		c.Bash = bash
		var b bytes.Buffer
		if err := encodeSnapshot(&b, &c); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	target := newSandbox(t, WithShell(ShellBash))
	run(t, target, `mine=1`)
	flip := append([]byte(nil), img.Bash...)
	flip[len(flip)-10] ^= 0xff
	// A memory larger than the target's shell memory (an image of zeros
	// is enough: the size is checked before anything else).
	small := newSandbox(t, WithShell(ShellBash), WithShellMemory(9<<20))
	big, err := encodeBashImage(runtime.NewMemoryImage(make([]byte, 16<<20), 1<<20), "/")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		sb   *Sandbox
		data []byte
		want string
	}{
		{"flipped byte", target, reencode(flip), "bash image"},
		{"truncated", target, reencode(img.Bash[:len(img.Bash)/2]), "bash memory"},
		{"other module", target, reencode(append(append([]byte(bashImageMagic), make([]byte, 32)...), img.Bash[len(bashImageMagic)+32:]...)), "another build of bash.wasm"},
		{"over the shell memory", small, reencode(big), "over the shell's memory limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.sb.Restore(bytes.NewReader(c.data))
			if err == nil || !errors.Is(err, ErrCorruptSnapshot) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Restore: %v, want ErrCorruptSnapshot with %q", err, c.want)
			}
		})
	}
	wantEqual(t, run(t, target, `echo $mine`).Stdout, "1\n")

	// From the interpreter: the files, the directory, variables,
	// functions, aliases, options. testdata/snapshot-v1-interp.bin is a
	// snapshot of the wasmbox interpreter written at c2e9b79, before it
	// was removed, after
	//	mkdir -p /tmp/i; echo data > /tmp/i/f; cd /tmp/i; export EXP=e1; V=plain
	//	g() { echo "g $1 $V"; }; alias al='echo alias'; set -o pipefail
	//	arr=(x "y z")
	isnap, err := os.ReadFile("testdata/snapshot-v1-interp.bin")
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Restore(bytes.NewReader(isnap)); err != nil {
		t.Fatal(err)
	}
	wantEqual(t, run(t, target, `pwd; cat f; echo $EXP; g a; shopt -s expand_aliases
al
set -o | grep pipefail; echo "${arr[1]}"; printenv EXP; printenv V || echo unexported`).Stdout,
		"/tmp/i\ndata\ne1\ng a plain\nalias\npipefail       \ton\ny z\ne1\nunexported\n")
}

// TestBashSessionSnapshotVersion: a snapshot of the interpreter (the
// fixture written before it was removed) is format version 1; one of
// bash is version 2.
func TestBashSessionSnapshotVersion(t *testing.T) {
	needBash(t)
	interp, err := os.ReadFile("testdata/snapshot-v1-interp.bin")
	if err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t)
	var b bytes.Buffer
	if err := sb.Snapshot(&b); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		snap    []byte
		version byte
	}{{"interpreter", interp, 1}, {"bash", b.Bytes(), 2}} {
		if v := c.snap[len(snapshotMagic)+3]; v != c.version {
			t.Errorf("%s: version %d, want %d", c.name, v, c.version)
		}
	}
}

func haveBash() bool {
	_, ok := wasm.Bash()
	return ok
}
