package preview1_test

import (
	"context"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// clockModule exports now(id i32) i64: clock_time_get(id, 0, 0), then the
// i64 it wrote at address 0.
func clockModule() []byte {
	clockTimeGet := runtimetest.Import{Module: "wasi_snapshot_preview1", Name: "clock_time_get",
		Type: runtimetest.FuncType{Params: []byte{runtimetest.I32, runtimetest.I64, runtimetest.I32}, Results: []byte{runtimetest.I32}}}
	body := []byte{runtimetest.OpLocalGet, 0, 0x42, 0} // local.get 0; i64.const 0
	body = append(body, runtimetest.I32Const(0)...)
	body = append(body, runtimetest.Call(0)...)
	body = append(body, runtimetest.OpDrop)
	body = append(body, runtimetest.I32Const(0)...)
	body = append(body, 0x29, 3, 0) // i64.load align=3 offset=0
	return runtimetest.Module{
		Imports:   []runtimetest.Import{clockTimeGet},
		HasMemory: true, MemoryMin: 1,
		Funcs: []runtimetest.Func{{
			Type:   runtimetest.FuncType{Params: []byte{runtimetest.I32}, Results: []byte{runtimetest.I64}},
			Body:   body,
			Export: "now",
		}},
	}.Encode()
}

// TestShiftMonotonic checks that ShiftMonotonic moves the monotonic clock
// (and the process and thread clocks, which read it) and leaves the
// realtime clock alone: a guest started from another instance's snapshot
// must see its monotonic time continue, not start again.
func TestShiftMonotonic(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	if _, err := preview1.Instantiate(ctx, rt); err != nil {
		t.Fatal(err)
	}
	wall := time.Unix(1700000000, 0)
	st, err := preview1.NewState(preview1.Config{
		Walltime: func() time.Time { return wall },
		Nanotime: func() int64 { return 1000 },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mod, err := rt.InstantiateWithConfig(preview1.WithState(ctx, st), clockModule(), wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	now := func(id uint64) int64 {
		t.Helper()
		res, err := mod.ExportedFunction("now").Call(preview1.WithState(ctx, st), id)
		if err != nil {
			t.Fatal(err)
		}
		return int64(res[0])
	}
	const realtime, monotonic, process = 0, 1, 2
	if got := now(monotonic); got != 1000 {
		t.Fatalf("monotonic %d, want 1000", got)
	}
	st.ShiftMonotonic(5_000_000)
	for _, id := range []uint64{monotonic, process} {
		if got := now(id); got != 5_001_000 {
			t.Errorf("clock %d after the shift: %d, want 5001000", id, got)
		}
	}
	if got := now(realtime); got != wall.UnixNano() {
		t.Errorf("realtime %d moved, want %d", got, wall.UnixNano())
	}
}
