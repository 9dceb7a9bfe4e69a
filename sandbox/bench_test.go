package sandbox

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkNew measures creating (and closing) a sandbox with the default
// layout and the tool entries installed, the engine already compiled.
func BenchmarkNew(b *testing.B) {
	ctx := context.Background()
	if _, err := DefaultEngine(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		sb, err := New(ctx)
		if err != nil {
			b.Fatal(err)
		}
		sb.Close()
	}
}

// BenchmarkRunBuiltins measures a small builtin-only script in a live
// sandbox (no wasm instance).
func BenchmarkRunBuiltins(b *testing.B) {
	ctx := context.Background()
	sb, err := New(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	for b.Loop() {
		if _, err := sb.Run(ctx, `x=1; for i in 1 2 3; do x=$((x+i)); done; echo $x`); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFind5000Files: find over 5,000 files in 50 directories below
// /tmp, as the sandbox user (every lookup checks the search permission of
// each directory on the way).
func BenchmarkFind5000Files(b *testing.B) {
	ctx := context.Background()
	sb, err := New(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	for d := 0; d < 50; d++ {
		dir := fmt.Sprintf("/tmp/tree/d%02d", d)
		if err := sb.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 100; f++ {
			if err := sb.WriteFile(fmt.Sprintf("%s/f%03d.txt", dir, f), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for b.Loop() {
		res, err := sb.Run(ctx, `find /tmp/tree -name '*.txt' | wc -l`)
		if err != nil || res.Stdout != "5000\n" {
			b.Fatalf("%v %q %q", err, res.Stdout, res.Stderr)
		}
	}
}

// BenchmarkFreshSandboxPipe is one warm `wasmbox run -c 'echo hi | cat'`
// in the resident engine: a new sandbox, the script (a shell instance and
// one coreutils instance), and Close.
func BenchmarkFreshSandboxPipe(b *testing.B) {
	ctx := context.Background()
	if _, err := DefaultEngine(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		sb, err := New(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if r, err := sb.Run(ctx, `echo hi | cat`); err != nil || r.Stdout != "hi\n" {
			b.Fatal(r, err)
		}
		sb.Close()
	}
}
