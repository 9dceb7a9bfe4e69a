package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/third_party/wazero"
)

// Deep recursion grows the guest's stack and keeps every frame's values,
// and unbounded recursion ends with a stack overflow trap that leaves the
// module usable (third_party/wazero patch 17 moved the prologue's stack
// check to a compare with the stack's bottom, which sits a margin of 4096
// bytes above the stack's lowest byte, and a jbe to a grow path after the
// function; a function needing more than the margin subtracts the excess
// first). f_L(n, a) keeps L locals (a+1, ..., a+L) across a call of
// f_L(n-1, a+1): L = 1 (a small frame), 900 (about 3.7 KB of spill slots,
// within the margin) and 1200 (about 4.9 KB, beyond it), each recursing
// deep enough to grow the stack from its initial 10 KB to megabytes; the
// results are checked against Go. n = -1 recurses until the stack's
// ceiling.
func TestStackGrowthAndOverflow(t *testing.T) {
	i32 := runtimetest.I32
	get := func(i uint32) []byte { return runtimetest.ULEB([]byte{runtimetest.OpLocalGet}, uint64(i)) }
	set := func(i uint32) []byte { return runtimetest.ULEB([]byte{runtimetest.OpLocalSet}, uint64(i)) }
	c := runtimetest.I32Const
	cat := runtimetest.Cat
	sizes := []struct {
		locals uint32
		depth  uint32
	}{{1, 100000}, {900, 3000}, {1200, 2000}}
	typ := runtimetest.FuncType{Params: []byte{i32, i32}, Results: []byte{i32}}
	var funcs []runtimetest.Func
	for fi, s := range sizes {
		self := uint32(fi)
		body := cat(get(0), []byte{runtimetest.OpI32Eqz, runtimetest.OpIf, runtimetest.OpBlockVoid}, get(1), []byte{runtimetest.OpReturn, runtimetest.OpEnd})
		for k := uint32(1); k <= s.locals; k++ {
			body = cat(body, get(1), c(int32(k)), []byte{runtimetest.OpI32Add}, set(1+k))
		}
		body = cat(body, get(0), c(1), []byte{runtimetest.OpI32Sub}, get(1), c(1), []byte{runtimetest.OpI32Add}, runtimetest.Call(self))
		for k := uint32(1); k <= s.locals; k++ {
			body = cat(body, get(1+k), []byte{runtimetest.OpI32Add})
		}
		locals := make([]byte, s.locals)
		for k := range locals {
			locals[k] = i32
		}
		funcs = append(funcs, runtimetest.Func{Type: typ, Locals: locals, Body: body, Export: fmt.Sprintf("f%d", s.locals)})
	}
	bin := runtimetest.Module{Funcs: funcs}.Encode()

	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	mod, err := rt.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithName("m"))
	if err != nil {
		t.Fatal(err)
	}
	want := func(locals, n, a uint32) uint32 {
		var r uint32
		for ; n > 0; n-- {
			r += locals*a + locals*(locals+1)/2
			a++
		}
		return r + a
	}
	for round := 0; round < 2; round++ {
		for _, s := range sizes {
			name := fmt.Sprintf("f%d", s.locals)
			f := mod.ExportedFunction(name)
			for _, n := range []uint32{0, 1, 10, s.depth} {
				res, err := f.Call(ctx, uint64(n), 7)
				if err != nil {
					t.Fatalf("%s(%d, 7): %v", name, n, err)
				}
				if got, w := uint32(res[0]), want(s.locals, n, 7); got != w {
					t.Errorf("%s(%d, 7) = %d, want %d", name, n, got, w)
				}
			}
			// Unbounded: the stack grows to its ceiling, then traps.
			if _, err := f.Call(ctx, uint64(0xffffffff), 7); err == nil || !strings.Contains(err.Error(), "stack overflow") {
				t.Errorf("%s(-1, 7): %v, want a stack overflow", name, err)
			}
		}
	}
}
