package frontend

import (
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/ssa"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/wazevoapi"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/leb128"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

// lowerLoad lowers `i32.const addr; i32.load offset=off` in a module whose
// memory has min pages (imported when imported is set) and returns the
// SSA text.
func lowerLoad(t *testing.T, min uint32, imported bool, addr int32, off uint32) string {
	t.Helper()
	body := append([]byte{wasm.OpcodeI32Const}, leb128.EncodeInt32(addr)...)
	body = append(body, wasm.OpcodeI32Load, 2)
	body = append(body, leb128.EncodeUint32(off)...)
	body = append(body, wasm.OpcodeEnd)
	m := &wasm.Module{
		TypeSection:     []wasm.FunctionType{{Results: []wasm.ValueType{wasm.ValueTypeI32}}},
		FunctionSection: []wasm.Index{0},
		CodeSection:     []wasm.Code{{Body: body}},
	}
	if imported {
		m.ImportSection = []wasm.Import{{Type: wasm.ExternTypeMemory, Module: "env", Name: "memory", DescMem: &wasm.Memory{Min: min, Max: 10}}}
		m.ImportMemoryCount = 1
	} else {
		m.MemorySection = &wasm.Memory{Min: min, Max: 10}
	}
	b := ssa.NewBuilder()
	offset := wazevoapi.NewModuleContextOffsetData(m, false)
	c := NewFrontendCompiler(m, b, &offset, false, false, false)
	c.Init(0, 0, &m.TypeSection[0], nil, body, false, 0)
	c.LowerToSSA()
	return b.Format()
}

// A load at a constant address that ends within the memory's minimum size
// has no bounds check; every other load keeps it (wasmbox patch 13).
func TestConstantAddressBoundsCheck(t *testing.T) {
	const page = 65536
	for _, tc := range []struct {
		name     string
		min      uint32
		imported bool
		addr     int32
		off      uint32
		checked  bool
	}{
		{"static data", 1, false, 1024, 0, false},
		{"last word of the minimum", 1, false, page - 4, 0, false},
		{"offset within the minimum", 1, false, 0, page - 4, false},
		{"one byte past the minimum", 1, false, page - 3, 0, true},
		{"offset past the minimum", 1, false, 0, page, true},
		{"address and offset past the minimum", 2, false, page, page, true},
		{"negative constant is a high address", 1, false, -4, 0, true},
		{"imported memory", 1, true, 1024, 0, true},
		{"no minimum", 0, false, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := lowerLoad(t, tc.min, tc.imported, tc.addr, tc.off)
			if got := strings.Contains(s, "ExitIfTrue "); got != tc.checked {
				t.Errorf("bounds check present %v, want %v:\n%s", got, tc.checked, s)
			}
		})
	}
}

// checksAfterPasses lowers body, a function (i32 p, i32 n) -> i32 with one
// more i32 local, in a module with one page of memory, runs the SSA passes
// and counts the bounds checks left.
func checksAfterPasses(t *testing.T, body []byte) int {
	t.Helper()
	body = append(body, wasm.OpcodeEnd)
	i32 := wasm.ValueTypeI32
	m := &wasm.Module{
		TypeSection:     []wasm.FunctionType{{Params: []wasm.ValueType{i32, i32}, Results: []wasm.ValueType{i32}}},
		FunctionSection: []wasm.Index{0},
		CodeSection:     []wasm.Code{{Body: body, LocalTypes: []wasm.ValueType{i32}}},
		MemorySection:   &wasm.Memory{Min: 1, Max: 10},
	}
	b := ssa.NewBuilder()
	offset := wazevoapi.NewModuleContextOffsetData(m, false)
	c := NewFrontendCompiler(m, b, &offset, false, false, false)
	c.Init(0, 0, &m.TypeSection[0], m.CodeSection[0].LocalTypes, body, false, 0)
	c.LowerToSSA()
	b.RunPasses()
	return strings.Count(b.Format(), "ExitIfTrue ")
}

// A bounds check that a check of the same address value with at least its
// end dominates is dropped, also inside a loop whose header reads the
// value as a parameter that turns out to be the value from before the loop
// (wasmbox patch 24). runtime.TestDominatedBoundsChecks runs the same
// shapes.
func TestDominatedBoundsChecks(t *testing.T) {
	get := func(l byte) []byte { return []byte{wasm.OpcodeLocalGet, l} }
	set := func(l byte) []byte { return []byte{wasm.OpcodeLocalSet, l} }
	load := func(off uint32) []byte { return append([]byte{wasm.OpcodeI32Load, 2}, leb128.EncodeUint32(off)...) }
	cat := func(bs ...[]byte) (out []byte) {
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	i32 := func(v int32) []byte { return append([]byte{wasm.OpcodeI32Const}, leb128.EncodeInt32(v)...) }
	loop := func(body ...[]byte) []byte {
		return cat([]byte{wasm.OpcodeLoop, 0x40}, cat(body...), []byte{wasm.OpcodeEnd})
	}
	next := cat(get(1), i32(1), []byte{wasm.OpcodeI32Sub, wasm.OpcodeLocalTee, 1, wasm.OpcodeBrIf, 0})
	accumulate := func(off uint32) []byte { return cat(get(2), get(0), load(off), []byte{wasm.OpcodeI32Add}, set(2)) }
	for _, tc := range []struct {
		name string
		body []byte
		want int
	}{
		{"covered in the loop", cat(get(0), load(8), set(2), loop(accumulate(0), next), get(2)), 1},
		{"covered across memory.grow", cat(get(0), load(8), set(2), i32(1), []byte{wasm.OpcodeMemoryGrow, 0, wasm.OpcodeDrop}, loop(accumulate(4), next), get(2)), 1},
		{"wider in the loop", cat(get(0), load(0), set(2), loop(accumulate(8), next), get(2)), 2},
		{"moving base", cat(get(0), load(0), set(2), loop(get(0), i32(4), []byte{wasm.OpcodeI32Add}, set(0), accumulate(0), next), get(2)), 2},
		{"in one arm of an if", cat(get(1), []byte{wasm.OpcodeIf, 0x40}, get(0), load(8), set(2), []byte{wasm.OpcodeEnd}, get(2), get(0), load(4), []byte{wasm.OpcodeI32Add}), 2},
		{"nested loops", cat(get(0), load(12), set(2), loop(loop(accumulate(0), next), accumulate(8), next), get(2)), 1},
		// Two loop parameters that swap each iteration stay two values.
		{"swapped bases", cat(get(0), load(8), set(2), loop(get(2), get(0), load(0), []byte{wasm.OpcodeI32Add}, set(2), get(0), get(1), set(0), set(1), get(2), []byte{wasm.OpcodeBrIf, 0}), get(2)), 2},
		// A loop exit before the loop's check: the check after the loop stays.
		{"exit before the check", cat([]byte{wasm.OpcodeBlock, 0x40}, loop(get(1), []byte{wasm.OpcodeI32Eqz, wasm.OpcodeBrIf, 1}, accumulate(8), next), []byte{wasm.OpcodeEnd}, get(2), get(0), load(8), []byte{wasm.OpcodeI32Add}), 2},
		// The only exit is after the check: it covers what follows the loop.
		{"exit after the check", cat(loop(accumulate(8), get(1), []byte{wasm.OpcodeI32Eqz, wasm.OpcodeBrIf, 0}), get(2), get(0), load(8), []byte{wasm.OpcodeI32Add}), 1},
		// A check in one arm of a br_table covers nothing after the join.
		{"br_table arm", cat([]byte{wasm.OpcodeBlock, 0x40, wasm.OpcodeBlock, 0x40}, get(1), []byte{wasm.OpcodeBrTable, 1, 0, 1, wasm.OpcodeEnd}, get(0), load(8), set(2), []byte{wasm.OpcodeEnd}, get(2), get(0), load(8), []byte{wasm.OpcodeI32Add}), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checksAfterPasses(t, tc.body); got != tc.want {
				t.Errorf("%d bounds checks, want %d", got, tc.want)
			}
		})
	}
}
