package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/internal/wasmbin"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/third_party/wazero"
)

// withDataCount inserts an empty data count section before the code
// section, as binaryen writes one into any module it outputs with bulk
// memory on.
func withDataCount(t *testing.T, b []byte) []byte {
	t.Helper()
	secs, err := wasmbin.Sections(b)
	if err != nil {
		t.Fatal(err)
	}
	ci := wasmbin.Find(secs, wasmbin.SecCode)
	if ci < 0 {
		t.Fatal("no code section")
	}
	out := append(append(secs[:ci:ci], wasmbin.Section{ID: wasmbin.SecDataCount, Body: []byte{0}}), secs[ci:]...)
	return wasmbin.Encode(out)
}

// TestRunNothingToRun: Run of a module that has no _start, no start
// function and is not a wasmbox reactor ends with ErrNoEntry and says why,
// instead of instantiating it, doing nothing and ending 0. The case that
// met it: python.wasm through binaryen's wasm-opt, whose data count
// section PrepareReactor refuses, printed nothing for every python3
// command. A reactor and a command still run; a library's exports still
// serve an Instance.
func TestRunNothingToRun(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, runtime.Config{DisableCache: true})
	run := func(name string, b []byte) error {
		t.Helper()
		m, err := rt.Compile(ctx, name, b)
		if err != nil {
			t.Fatalf("%s: compile: %v", name, err)
		}
		return rt.Run(ctx, m, wazero.NewModuleConfig(), runtime.RunOptions{})
	}
	exit7 := runtimetest.I32Const(7) // Encode ends each body
	reactor := runtimetest.Module{MemoryMin: 1, Funcs: []runtimetest.Func{
		{Export: "_initialize", Body: nil},
		{Export: "wasmbox_run", Type: runtimetest.FuncType{Results: []byte{0x7f}}, Body: exit7},
	}}.Encode()

	var ee interface{ ExitCode() uint32 }
	if err := run("reactor", reactor); !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("a reactor's command: %v, want exit 7", err)
	}
	for _, tc := range []struct {
		name, why string
		bin       []byte
	}{
		{"reactor with a data count section", "has a data count section", withDataCount(t, reactor)},
		{"library", "does not export both _initialize and wasmbox_run", runtimetest.Module{MemoryMin: 1, Funcs: []runtimetest.Func{
			{Export: "add", Type: runtimetest.FuncType{Results: []byte{0x7f}}, Body: exit7}}}.Encode()},
		{"no exports", "it exports nothing", runtimetest.Module{Funcs: []runtimetest.Func{{Body: nil}}}.Encode()},
	} {
		err := run(tc.name, tc.bin)
		if !errors.Is(err, runtime.ErrNoEntry) || !strings.Contains(err.Error(), tc.name+": the module has nothing to run: it exports no _start") ||
			!strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v, want ErrNoEntry saying %q", tc.name, err, tc.why)
		}
	}
	// A command still runs.
	cmd := runtimetest.Module{Funcs: []runtimetest.Func{{Export: "_start", Body: nil}}}.Encode()
	if err := run("command", cmd); err != nil {
		t.Errorf("a command: %v", err)
	}
}
