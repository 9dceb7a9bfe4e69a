package sandbox

import (
	"context"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// The session rows, on each shell (go test ./sandbox -run '^$'
// -bench 'BenchmarkSession' -benchtime 200x): a new sandbox and its first
// command, a builtin-only Run, a Fork of a live session. No timing is
// asserted anywhere; TestSessionIdleMemory logs what idle sessions hold.

func benchShells(b *testing.B, f func(b *testing.B, opts ...Option)) {
	if !haveBash() {
		b.Skip("GNU bash is not built in (make bash)")
	}
	shells := []string{ShellBash}
	for _, sh := range shells {
		b.Run(shellName(sh), func(b *testing.B) {
			ctx := context.Background()
			if _, err := DefaultEngine(ctx); err != nil {
				b.Fatal(err)
			}
			// Warm: the shell's module is compiled (seconds for
			// bash.wasm) and its caches filled before the timer runs,
			// so that the rows measure a session, not the compiler.
			sb, err := New(ctx, WithShell(sh))
			if err != nil {
				b.Fatal(err)
			}
			if res, err := sb.Run(ctx, `echo hi`); err != nil || res.Stdout != "hi\n" {
				b.Fatal(res, err)
			}
			sb.Close()
			f(b, WithShell(sh))
		})
	}
}

func BenchmarkSessionNewFirstCommand(b *testing.B) {
	benchShells(b, func(b *testing.B, opts ...Option) {
		ctx := context.Background()
		for b.Loop() {
			sb, err := New(ctx, opts...)
			if err != nil {
				b.Fatal(err)
			}
			if res, err := sb.Run(ctx, `echo hi`); err != nil || res.Stdout != "hi\n" {
				b.Fatal(res, err)
			}
			sb.Close()
		}
	})
}

func BenchmarkSessionBuiltinRun(b *testing.B) {
	benchShells(b, func(b *testing.B, opts ...Option) {
		ctx := context.Background()
		sb, err := New(ctx, opts...)
		if err != nil {
			b.Fatal(err)
		}
		defer sb.Close()
		for b.Loop() {
			if res, err := sb.Run(ctx, `x=1; y=$((x+1)); echo "$x $y"`); err != nil || res.Stdout != "1 2\n" {
				b.Fatal(res, err)
			}
		}
	})
}

func BenchmarkSessionFork(b *testing.B) {
	benchShells(b, func(b *testing.B, opts ...Option) {
		ctx := context.Background()
		sb, err := New(ctx, opts...)
		if err != nil {
			b.Fatal(err)
		}
		defer sb.Close()
		if _, err := sb.Run(ctx, `x=1; f() { echo $x; }`); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			c, err := sb.Fork()
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
}

// pss is the process's proportional set size in bytes (0 when unknown).
func pss() int64 {
	debug.FreeOSMemory() // a GC first: what garbage held is not counted
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "Pss:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n << 10
		}
	}
	return 0
}

// TestSessionIdleMemory logs the PSS that idle sessions add, per session
// (set WASMBOX_IDLE_SESSIONS to a count; skipped otherwise: it measures,
// it asserts nothing).
func TestSessionIdleMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("WASMBOX_IDLE_SESSIONS"))
	if n <= 0 {
		t.Skip("WASMBOX_IDLE_SESSIONS is not set")
	}
	for _, sh := range sessionShells(t) {
		newSandbox(t, WithShell(sh)) // the engine and modules first
		before := pss()
		var sbs []*Sandbox
		var held uint64
		for i := 0; i < n; i++ {
			sb := newSandbox(t, WithShell(sh))
			run(t, sb, `x=1; f() { echo $x; }`)
			sbs = append(sbs, sb)
			held += sb.sh.MemorySize()
		}
		after := pss()
		t.Logf("%s: %d idle sessions: PSS +%d KiB each; linear memory %d KiB each", shellName(sh), n, (after-before)/int64(n)>>10, held/uint64(n)>>10)
		for _, sb := range sbs {
			sb.Close()
		}
	}
}
