package runtime

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wasmbox/wasmbox/wasm"
)

func TestPreparedRoundTrip(t *testing.T) {
	pm, err := prepare("coreutils", wasm.Coreutils(), false)
	if err != nil {
		t.Fatal(err)
	}
	if !pm.metered || !pm.reactor || len(pm.segments) == 0 || len(pm.globals) == 0 {
		t.Fatalf("coreutils not metered and prepared: %v %v %d %d", pm.metered, pm.reactor, len(pm.segments), len(pm.globals))
	}
	b := encodePrepared(pm)
	got, err := decodePrepared(b)
	if err != nil || !reflect.DeepEqual(got, pm) {
		t.Fatalf("round trip: %v", err)
	}
	// Any flipped byte, and any truncation, is a miss, never a module.
	for _, i := range []int{0, len(preparedMagic), len(b) / 2, len(b) - 1} {
		c := append([]byte(nil), b...)
		c[i] ^= 1
		if _, err := decodePrepared(c); err == nil {
			t.Errorf("byte %d flipped: accepted", i)
		}
	}
	if _, err := decodePrepared(b[:len(b)-1]); err == nil {
		t.Error("truncated entry accepted")
	}
}

// A second runtime on the same cache directory compiles from the prepared
// entry, and a corrupt entry is rewritten.
func TestPreparedCache(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	compile := func() *Module {
		r, err := New(ctx, Config{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(ctx) })
		m, err := r.Compile(ctx, "coreutils", wasm.Coreutils())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	compile()
	entries, _ := filepath.Glob(filepath.Join(dir, "prepared", "*"))
	if len(entries) != 1 {
		t.Fatalf("prepared entries: %v", entries)
	}
	if m := compile(); m.reactor == nil || m.rt == nil {
		t.Fatal("module from the prepared entry is not a metered reactor")
	}
	os.WriteFile(entries[0], []byte("garbage"), 0o600)
	compile()
	if b, _ := os.ReadFile(entries[0]); string(b) == "garbage" {
		t.Fatal("a corrupt entry was not replaced")
	}
}

func BenchmarkCompileWarmCache(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	for b.Loop() {
		r, err := New(ctx, Config{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Compile(ctx, "coreutils", wasm.Coreutils()); err != nil {
			b.Fatal(err)
		}
		r.Close(ctx)
	}
}
