package sandbox

import (
	"context"
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
