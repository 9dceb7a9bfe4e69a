package runtime_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// TestBulkChunksKeepSemantics: memory.copy and memory.fill, which a
// metered module runs in chunks of 1 MiB with a fuel check after each
// (wazero patch 27), give the bytes one memmove gives: copies that overlap
// forward and backward, sizes at and around the chunk and its multiples,
// fills of every such size; checked against Go's copy on a model of the
// memory, with the fuel and with wazero's check (not chunked).
func TestBulkChunksKeepSemantics(t *testing.T) {
	const size = 8 << 20
	i32 := runtimetest.I32
	lget := func(i byte) []byte { return []byte{runtimetest.OpLocalGet, i} }
	mod := runtimetest.Module{MemoryMin: size / 65536, MemoryMax: size / 65536, Funcs: []runtimetest.Func{
		{Type: runtimetest.FuncType{Params: []byte{i32, i32, i32}}, Export: "copy",
			Body: runtimetest.Cat(lget(0), lget(1), lget(2), []byte{0xfc, 10, 0, 0})},
		{Type: runtimetest.FuncType{Params: []byte{i32, i32, i32}}, Export: "fill",
			Body: runtimetest.Cat(lget(0), lget(1), lget(2), []byte{0xfc, 11, 0})},
		// pattern: mem[4i] = i*2654435761 for every word.
		{Type: runtimetest.FuncType{}, Locals: []byte{i32}, Export: "pattern", Body: runtimetest.Cat(
			[]byte{runtimetest.OpLoop, runtimetest.OpBlockVoid},
			lget(0), runtimetest.I32Const(2), []byte{runtimetest.OpI32Shl},
			lget(0), runtimetest.I32Const(-1640531535), []byte{runtimetest.OpI32Mul, 0x36, 2, 0},
			lget(0), runtimetest.I32Const(1), []byte{runtimetest.OpI32Add, runtimetest.OpLocalTee, 0},
			runtimetest.I32Const(size/4), []byte{0x47, runtimetest.OpBrIf, 0, runtimetest.OpEnd})},
	}}.Encode()
	const c = 1 << 20
	type op struct {
		fill        bool
		dst, src, n uint32
	}
	ops := []op{
		{false, 0, 100, 3*c + 5},   // forward, overlapping
		{false, 100, 0, 3*c + 5},   // backward, overlapping
		{false, 7, 0, 2 * c},       // backward, a multiple
		{false, 0, 1 << 22, c},     // one chunk
		{false, 1 << 22, 3, c + 1}, // forward, one byte past
		{false, 5, 1 << 22, c - 1}, // under a chunk
		{false, 1, 0, size - 1},    // backward, nearly all
		{false, 0, 1, size - 1},    // forward, nearly all
		{true, 13, 0xab, 3*c + 7},  // fills
		{true, 0, 0x11, c},
		{true, c, 0x22, c + 1},
		{true, 0, 0x33, size},
		{true, 9, 0x44, 2*c - 9},
	}
	for _, cfg := range []runtime.Config{{DisableCache: true}, {DisableCache: true, WazeroKillCheck: true}} {
		rt := newRuntime(t, cfg)
		in := liveInstance(t, rt, compile(t, rt, "bulk", mod), preview1.Config{})
		ctx := context.Background()
		for i, o := range ops {
			if _, err := in.Call(ctx, "pattern"); err != nil {
				t.Fatal(err)
			}
			model, err := in.ReadMemory(0, size)
			if err != nil {
				t.Fatal(err)
			}
			if o.fill {
				_, err = in.Call(ctx, "fill", uint64(o.dst), uint64(o.src), uint64(o.n))
				for j := range o.n {
					model[o.dst+j] = byte(o.src)
				}
			} else {
				_, err = in.Call(ctx, "copy", uint64(o.dst), uint64(o.src), uint64(o.n))
				copy(model[o.dst:o.dst+o.n], model[o.src:o.src+o.n])
			}
			if err != nil {
				t.Fatalf("op %d %+v: %v", i, o, err)
			}
			got, err := in.ReadMemory(0, size)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, model) {
				at := 0
				for at < size && got[at] == model[at] {
					at++
				}
				t.Errorf("op %d %+v (WazeroKillCheck %t): memory differs from the model at %d", i, o, cfg.WazeroKillCheck, at)
			}
		}
		// Past the end: a trap (the bounds checks come before the chunks).
		if _, err := in.Call(ctx, "fill", 0, 0x55, size+1); err == nil {
			t.Error("a fill past the end did not trap")
		}
		in.Close(ctx)
	}
}
