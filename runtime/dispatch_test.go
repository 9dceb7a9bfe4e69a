package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
)

// instantiateYielding compiles m with wazero's compiler and instantiates it
// with env.yield, the () -> i32 that its fuel checks call, which counts its
// calls in *yields.
func instantiateYielding(t *testing.T, m runtimetest.Module) (mod api.Module, yields *int) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	t.Cleanup(func() { rt.Close(ctx) })
	yields = new(int)
	if _, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(_ context.Context, stack []uint64) { *yields++; stack[0] = 0 }), nil, []api.ValueType{api.ValueTypeI32}).
		Export("yield").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := rt.Instantiate(ctx, m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	return mod, yields
}

// The amd64 backend copies a small block ending in a br_table in place of
// each jump to it (wazero patch 23): every handler of an interpreter's loop
// dispatches the next opcode itself, with its own copy of the fuel check,
// the opcode's bounds check and the indirect jump. Programs for
// runtimetest.BytecodeMachine give what its Go twin (RunBytecode) gives;
// the fuel spent in every copy adds up (the host's yield is called once per
// 1000 dispatches over all the runs, so a copy without the check shows);
// and an opcode fetched outside the memory by a copy traps as out of
// bounds.
func TestDispatchCopies(t *testing.T) {
	programs := []struct {
		name string
		code []byte
	}{
		{"straight", []byte{1, 5, 2, 3, 1, 250, 0}},
		{"counted", []byte{3, 200, 1, 7, 4, 2, 0}},
		{"nested", []byte{3, 250, 1, 1, 2, 3, 1, 0, 4, 2, 0}},
		{"every handler", []byte{1, 12, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 2, 2, 4, 14, 6}},
		{"out of bounds", []byte{1, 200, 2, 200, 2, 200, 5}},
	}
	ctx := context.Background()
	mod, yields := instantiateYielding(t, runtimetest.BytecodeMachine())
	mem, _ := mod.Memory().Read(0, mod.Memory().Size())
	run := mod.ExportedFunction("run")
	total := 0
	for round := range 4 {
		for _, p := range programs {
			clear(mem[:256])
			copy(mem, p.code)
			want, dispatches, oob := runtimetest.RunBytecode(mem, 0)
			total += dispatches
			res, err := run.Call(ctx, 0)
			switch {
			case oob:
				if err == nil || !strings.Contains(err.Error(), "out of bounds memory access") {
					t.Errorf("%s: %v, %v; want out of bounds memory access", p.name, res, err)
				}
			case err != nil:
				t.Fatalf("%s: %v", p.name, err)
			case uint32(res[0]) != want:
				t.Errorf("%s (round %d): %d, want %d", p.name, round, uint32(res[0]), want)
			}
		}
	}
	if want := total / 1000; *yields != want {
		t.Errorf("%d yields over %d dispatches, want %d", *yields, total, want)
	}
}

// A dispatch on the index its branches back set (a Go function's, on
// PC_B) keeps its jumps (wazero patch 23 copies only a dispatch that
// computes its index): runtimetest.StateMachine, whose states go to
// constant states (0 among them, and one past the table: its default),
// gives what its Go twin gives for counts from 1 to 300, and spends fuel
// at every dispatch.
func TestDispatchConstantIndex(t *testing.T) {
	ctx := context.Background()
	mod, yields := instantiateYielding(t, runtimetest.StateMachine())
	run := mod.ExportedFunction("run")
	total := 0
	for n := uint32(1); n <= 300; n++ {
		want, dispatches := runtimetest.RunStateMachine(n)
		total += dispatches
		res, err := run.Call(ctx, uint64(n))
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if uint32(res[0]) != want {
			t.Errorf("n=%d: %d, want %d", n, uint32(res[0]), want)
		}
	}
	if want := total / 1000; *yields != want {
		t.Errorf("%d yields over %d dispatches, want %d", *yields, total, want)
	}
}
