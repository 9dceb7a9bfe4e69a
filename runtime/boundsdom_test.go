package runtime_test

import (
	"fmt"
	"testing"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// A bounds check that a check of the same address value with at least its
// end dominates is dropped (third_party/wazero patch 24), across loop
// iterations, calls and memory.grow. Run by the compiler: every access
// that a dominating check does not cover still traps, at the iteration
// and with the memory that it would trap on without the patch, and what
// the loops computed is right.
func TestDominatedBoundsChecks(t *testing.T) {
	const page = 65536
	cat := runtimetest.Cat
	i32 := runtimetest.I32Const
	get := func(l byte) []byte { return []byte{runtimetest.OpLocalGet, l} }
	set := func(l byte) []byte { return []byte{runtimetest.OpLocalSet, l} }
	load := func(off uint32) []byte { // i32.load align=2 offset=off, of the address on the stack
		return runtimetest.ULEB([]byte{runtimetest.OpI32Load, 2}, uint64(off))
	}
	store := func(off uint32) []byte { // i32.store: address, value on the stack
		return runtimetest.ULEB([]byte{runtimetest.OpI32Store, 2}, uint64(off))
	}
	add := []byte{runtimetest.OpI32Add}
	sub := []byte{runtimetest.OpI32Sub}
	grow := cat(i32(1), []byte{runtimetest.OpMemoryGrow, 0, runtimetest.OpDrop})
	loop := func(body ...[]byte) []byte {
		return cat([]byte{runtimetest.OpLoop, runtimetest.OpBlockVoid}, cat(body...), []byte{runtimetest.OpEnd})
	}
	// n = n - 1; br_if 0 (n != 0): the loop's back edge, counter in local 1.
	next := cat(get(1), i32(1), sub, []byte{runtimetest.OpLocalTee, 1, runtimetest.OpBrIf, 0})
	// sum += i32.load offset=off (p), sum in local 2.
	accumulate := func(off uint32) []byte { return cat(get(2), get(0), load(off), add, set(2)) }

	type call struct {
		p, n  int32
		want  int32
		trap  bool
		grown bool // memory.grow first
	}
	ret := runtimetest.FuncType{Params: []byte{runtimetest.I32, runtimetest.I32}, Results: []byte{runtimetest.I32}}
	locals := []byte{runtimetest.I32, runtimetest.I32}
	funcs := []struct {
		name  string
		body  []byte
		calls []call
	}{
		// p+8..p+12 checked before the loop covers p+0..p+4 in it.
		{"covered", cat(get(0), load(8), set(2), loop(accumulate(0), next), get(2)), []call{
			{p: 16, n: 3, want: 3*0x04030201 + 0x0c0b0a09},
			{p: page - 12, n: 2, want: 0},
			{p: page - 11, n: 2, trap: true},
		}},
		// p+0..p+4 before the loop does not cover p+8..p+12 in it.
		{"wider", cat(get(0), load(0), set(2), loop(accumulate(8), next), get(2)), []call{
			{p: 16, n: 2, want: 0x04030201 + 2*0x0c0b0a09},
			{p: page - 12, n: 1, want: 0},
			{p: page - 8, n: 1, trap: true},
		}},
		// p moves in the loop (a real phi): every iteration is checked,
		// and the loop traps at the iteration that leaves the memory.
		{"moving", cat(get(0), load(0), set(2), loop(cat(get(0), i32(4), add, set(0)), accumulate(0), next), get(2)), []call{
			{p: 16, n: 2, want: 0x04030201 + 0x08070605 + 0x0c0b0a09},
			{p: page - 12, n: 2, want: 0},
			{p: page - 12, n: 3, trap: true},
		}},
		// A check in one arm of an if covers nothing after the if.
		{"branch", cat(get(1), []byte{runtimetest.OpIf, runtimetest.OpBlockVoid}, get(0), load(8), set(2), []byte{runtimetest.OpEnd},
			get(2), get(0), load(4), add), []call{
			{p: 16, n: 1, want: 0x0c0b0a09 + 0x08070605},
			{p: page - 7, n: 0, trap: true},
			{p: page - 12, n: 0, want: 0},
		}},
		// After memory.grow the check before it still holds for the
		// loop, and an access in the new page after it is checked
		// against the grown memory.
		{"grow", cat(get(0), load(8), set(2), grow,
			loop(get(0), get(1), store(0), accumulate(0), next),
			get(0), i32(page), add, get(2), store(0), get(0), i32(page), add, load(0)), []call{
			{p: page - 12, n: 2, want: 3},
			{p: 2*page - 12, n: 1, trap: true},
		}},
		// p and q = p+n swap every iteration: two values, each
		// checked in the loop (the one before the loop covers only p).
		{"swap", cat(get(0), load(8), set(2), get(0), get(1), add, set(3),
			loop(cat(get(2), get(0), load(0), add, set(2), get(0), get(3), set(0), set(3)),
				cat(get(1), i32(0x10000), sub, []byte{runtimetest.OpLocalTee, 1, runtimetest.OpI32Eqz, runtimetest.OpI32Eqz, runtimetest.OpBrIf, 0})), get(2)), []call{
			{p: 16, n: 0x10000, want: 0x100e0c0a},
			{p: 16, n: 0x20000, trap: true},
		}},
		// A loop that exits before its check covers nothing after it.
		{"exitBeforeCheck", cat(get(1), i32(0), []byte{runtimetest.OpI32Eq, runtimetest.OpIf, runtimetest.OpBlockVoid}, get(0), load(0), set(2), []byte{runtimetest.OpEnd},
			[]byte{runtimetest.OpBlock, runtimetest.OpBlockVoid}, loop(cat(get(1), []byte{runtimetest.OpI32Eqz, runtimetest.OpBrIf, 1}), accumulate(8), next),
			[]byte{runtimetest.OpEnd}, get(2), get(0), load(8), add), []call{
			{p: page - 4, n: 0, trap: true},
			{p: page - 12, n: 2, want: 0},
		}},
	}
	m := runtimetest.Module{MemoryMin: 1, MemoryMax: 4, Data: []byte{16: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}
	for _, f := range funcs {
		m.Funcs = append(m.Funcs, runtimetest.Func{Type: ret, Locals: locals, Export: f.name, Body: f.body})
	}
	run := freshCaller(t, m.Encode())
	for _, f := range funcs {
		for _, c := range f.calls {
			res, err := run(f.name, uint64(uint32(c.p)), uint64(uint32(c.n)))
			checkAccess(t, fmt.Sprintf("%s(%d, %d)", f.name, c.p, c.n), res, err, uint32(c.want), c.trap)
		}
	}
}
