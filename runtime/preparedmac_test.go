package runtime

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// A prepared-module entry decides what wazero compiles (its binary) and
// what memory a guest starts with (its segments). One rewritten by
// something other than the runtime, with a correct CRC-32C, is a miss: the
// module is prepared again from the real binary and the entry replaced.
// Before the MAC (b1f9305) the substituted binary was compiled and run.
func TestPreparedTamperedCorrectCRC(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	real, other := runtimetest.Trivial(), runtimetest.Exit(42)
	compile := func() *Module {
		t.Helper()
		r, err := New(ctx, Config{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(ctx) })
		m, err := r.Compile(ctx, "trivial", real)
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
	b, err := os.ReadFile(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	// The entry with the MAC's 28 bytes after the content, or (before the
	// MAC) without.
	content, tail := b, []byte(nil)
	pm, err := decodePrepared(content)
	if err != nil {
		content, tail = b[:len(b)-28], b[len(b)-28:]
		if pm, err = decodePrepared(content); err != nil {
			t.Fatalf("cannot decode the entry: %v", err)
		}
	}
	pm.binary = other
	forged := append(encodePrepared(pm), tail...) // CRC-32C recomputed
	if err := os.WriteFile(entries[0], forged, 0o600); err != nil {
		t.Fatal(err)
	}
	m := compile()
	if now, _ := os.ReadFile(entries[0]); bytes.Equal(now, forged) {
		t.Fatal("the forged prepared entry (correct CRC) was loaded as a hit and kept")
	}
	// The forged binary imports proc_exit; the real one, prepared, imports
	// only the sched_yield that loop metering adds.
	for _, def := range m.compiled.ImportedFunctions() {
		if _, name, _ := def.Import(); name != "sched_yield" {
			t.Fatalf("the module compiled is the forged binary (it imports %s)", name)
		}
	}
}
