package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"

	"github.com/wasmbox/wasmbox/internal/wasmbin"
)

// module builds a wasm module with one exported memory of one page and the
// given active data segments.
func module(segs []wasmbin.Segment, dataCount bool) []byte {
	secs := []wasmbin.Section{
		{ID: wasmbin.SecMemory, Body: []byte{1, 0, 1}},                   // min 1 page
		{ID: wasmbin.SecExport, Body: []byte{1, 3, 'm', 'e', 'm', 2, 0}}, // "mem"
	}
	if dataCount {
		secs = append(secs, wasmbin.Section{ID: wasmbin.SecDataCount, Body: wasmbin.AppendUleb(nil, uint32(len(segs)))})
	}
	secs = append(secs, wasmbin.Section{ID: wasmbin.SecData, Body: wasmbin.AppendDataSection(nil, segs)})
	return wasmbin.Encode(secs)
}

// memoryOf instantiates mod with wazero and returns its memory image.
func memoryOf(t *testing.T, mod []byte) []byte {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	m, err := r.Instantiate(ctx, mod)
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	mem, ok := m.Memory().Read(0, m.Memory().Size())
	if !ok {
		t.Fatal("read memory")
	}
	return bytes.Clone(mem)
}

// TestDoMain runs the command on a module file: the output has the same
// memory image in fewer segments and the raised initial memory.
func TestDoMain(t *testing.T) {
	dir := t.TempDir()
	in := module([]wasmbin.Segment{
		{Offset: 100, Data: []byte("hello")},
		{Offset: 110, Data: []byte("world")},
		{Offset: 9000, Data: []byte("far")},
	}, true)
	inPath, outPath := filepath.Join(dir, "in.wasm"), filepath.Join(dir, "out.wasm")
	if err := os.WriteFile(inPath, in, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	if code := doMain([]string{"-v", "-gap", "16", "-min-pages", "3", "-o", outPath, inPath}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if want := "wasmopt: 3 -> 2 data segments"; !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("stderr %q, want prefix %q", stderr.String(), want)
	}
	out, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	want := memoryOf(t, in)
	got := memoryOf(t, out)
	if len(got) != 3*65536 || !bytes.Equal(got[:len(want)], want) || !bytes.Equal(got[len(want):], make([]byte, len(got)-len(want))) {
		t.Fatalf("memory of %d bytes, want %d with the input's image", len(got), 3*65536)
	}
}

func TestDoMainErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.wasm")
	if err := os.WriteFile(junk, []byte("not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.wasm")
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{junk}, 2, "usage:"},
		{[]string{"-o", out}, 2, "usage:"},
		{[]string{"-gap", "-1", "-o", out, junk}, 2, "usage:"},
		{[]string{"-bogus", "-o", out, junk}, 2, "flag provided but not defined"},
		{[]string{"-o", out, filepath.Join(dir, "missing.wasm")}, 1, "no such file"},
		{[]string{"-o", out, junk}, 1, "malformed wasm module: bad header"},
	}
	for _, tt := range tests {
		var stderr strings.Builder
		if code := doMain(tt.args, &stderr); code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), tt.code, tt.stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed run wrote %s: %v", out, err)
	}
}

// TestOptimizeGoModule runs the step of `make wasm` on the committed
// coreutils module (already optimized, so a second pass must keep its
// bytes: the merge and the memory size are idempotent).
func TestOptimizeGoModule(t *testing.T) {
	mod, err := os.ReadFile("../../wasm/coreutils.wasm")
	if err != nil {
		t.Skip(err)
	}
	out, st, err := optimize(mod, wasmbin.DefaultGap, 128)
	if err != nil {
		t.Fatal(err)
	}
	if st.SegmentsIn != st.SegmentsOut || !bytes.Equal(out, mod) {
		t.Errorf("second pass changed the module: %+v, %d -> %d bytes", st, len(mod), len(out))
	}
}
