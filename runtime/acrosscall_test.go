package runtime_test

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
)

// Values that live across calls keep their values (third_party/wazero
// patch 16 keeps them in callee-saved registers, rdx, r12-r15 and
// xmm8-xmm15 on amd64, instead of spilling them around each call). rec(n, a)
// recurses n deep; each level keeps three i32 and one f64 computed from a,
// n, a and the memory across a direct call of itself, a call_indirect of
// grow (memory.grow by one page: the memory's base and length change under
// the caller) and a call of a Go host function, then stores at the new last
// word of the memory and reads its own word back. The module's result is
// checked against the same computation in Go, three times in one instance.
func TestValuesAcrossCalls(t *testing.T) {
	const (
		f64         = 0x7c
		importH     = 0
		funcGrow    = 1
		funcRec     = 2
		localN      = 0
		localA      = 1
		localV0     = 2
		localV1     = 3
		localV2     = 4
		localV3     = 5 // f64
		localResult = 6
	)
	i32 := runtimetest.I32
	c := runtimetest.I32Const
	get := func(i byte) []byte { return []byte{runtimetest.OpLocalGet, i} }
	set := func(i byte) []byte { return []byte{runtimetest.OpLocalSet, i} }
	cat := runtimetest.Cat
	f64Const := func(v float64) []byte {
		return binary.LittleEndian.AppendUint64([]byte{runtimetest.OpF64Const}, math.Float64bits(v))
	}
	lastWord := cat([]byte{runtimetest.OpMemorySize, 0}, c(16), []byte{runtimetest.OpI32Shl}, c(4), []byte{runtimetest.OpI32Sub}) // memory.size*65536 - 4
	ownWord := cat(get(localN), c(2), []byte{runtimetest.OpI32Shl})                                                               // n*4
	recBody := cat(
		get(localN), []byte{runtimetest.OpI32Eqz, runtimetest.OpIf, runtimetest.OpBlockVoid}, get(localA), []byte{runtimetest.OpReturn, runtimetest.OpEnd},
		get(localA), c(3), []byte{runtimetest.OpI32Mul}, set(localV0),
		get(localA), c(5), []byte{runtimetest.OpI32Add}, set(localV1),
		get(localA), c(0x55), []byte{runtimetest.OpI32Xor}, set(localV2),
		get(localA), []byte{runtimetest.OpF64FromI32S}, f64Const(1.5), []byte{runtimetest.OpF64Mul}, set(localV3),
		ownWord, get(localA), []byte{runtimetest.OpI32Store, 2, 0},
		get(localN), c(1), []byte{runtimetest.OpI32Sub}, get(localA), c(1), []byte{runtimetest.OpI32Add}, runtimetest.Call(funcRec),
		c(0), []byte{runtimetest.OpCallIndirect, 0, 0}, // grow(r), through the table
		runtimetest.Call(importH),
		set(localResult),
		lastWord, get(localV1), []byte{runtimetest.OpI32Store, 2, 0},
		get(localResult), get(localV0), []byte{runtimetest.OpI32Add}, get(localV1), []byte{runtimetest.OpI32Add},
		get(localV2), []byte{runtimetest.OpI32Add}, get(localV3), []byte{runtimetest.OpI32TruncF64S, runtimetest.OpI32Add},
		ownWord, []byte{runtimetest.OpI32Load, 2, 0, runtimetest.OpI32Add},
		lastWord, []byte{runtimetest.OpI32Load, 2, 0, runtimetest.OpI32Add},
	)
	i32ToI32 := runtimetest.FuncType{Params: []byte{i32}, Results: []byte{i32}}
	bin := runtimetest.Module{
		Imports: []runtimetest.Import{{Module: "env", Name: "h", Type: i32ToI32}},
		Funcs: []runtimetest.Func{
			{Type: i32ToI32, Body: cat(c(1), []byte{runtimetest.OpMemoryGrow, 0, runtimetest.OpDrop}, get(0), c(7), []byte{runtimetest.OpI32Add})},
			{Type: runtimetest.FuncType{Params: []byte{i32, i32}, Results: []byte{i32}}, Locals: []byte{i32, i32, i32, f64, i32}, Body: recBody, Export: "rec"},
		},
		MemoryMin: 1,
		MemoryMax: 100,
		Table:     []uint32{funcGrow},
	}.Encode()

	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	if _, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithFunc(func(_ context.Context, _ api.Module, x uint32) uint32 { return x*3 + 1 }).
		Export("h").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithName("m"))
	if err != nil {
		t.Fatal(err)
	}

	var want func(n, a uint32) uint32
	want = func(n, a uint32) uint32 {
		if n == 0 {
			return a
		}
		v0, v1, v2 := a*3, a+5, a^0x55
		v3 := uint32(int32(float64(int32(a)) * 1.5))
		r := want(n-1, a+1)
		r = (r+7)*3 + 1
		return r + v0 + v1 + v2 + v3 + a + v1
	}
	for i, a := range []uint32{1000, 7, 123456} {
		res, err := mod.ExportedFunction("rec").Call(ctx, 20, uint64(a))
		if err != nil {
			t.Fatalf("rec(20, %d): %v", a, err)
		}
		if got, w := uint32(res[0]), want(20, a); got != w {
			t.Errorf("rec(20, %d) = %d, want %d", a, got, w)
		}
		if pages, _ := mod.ExportedMemory("memory").Grow(0); pages != uint32(1+20*(i+1)) {
			t.Errorf("after %d calls the memory has %d pages, want %d", i+1, pages, 1+20*(i+1))
		}
	}
}
