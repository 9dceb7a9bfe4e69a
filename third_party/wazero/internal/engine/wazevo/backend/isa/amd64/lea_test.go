package amd64

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/backend"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/backend/regalloc"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/ssa"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

// lea with a memory operand (wasmbox patch 18 lowers 64-bit iadds to it)
// against objdump's encodings, and with no label to resolve: the
// encoder asked for a label resolution for every lea, which for an
// address of registers would have overwritten its last four bytes.
func TestLeaEncoding(t *testing.T) {
	ctx := context.Background()
	mach := NewBackend().(*machine)
	c := backend.NewCompiler(ctx, mach, ssa.NewBuilder())
	for _, tc := range []struct {
		name string
		am   *amode
		dst  regalloc.VReg
		want []byte
	}{
		{"lea 0x4(%rcx),%rax", mach.newAmodeImmReg(4, rcxVReg), raxVReg, []byte{0x48, 0x8d, 0x41, 0x04}},
		{"lea 0x7fffffff(%r12),%r13", mach.newAmodeImmReg(0x7fffffff, r12VReg), r13VReg, []byte{0x4d, 0x8d, 0xac, 0x24, 0xff, 0xff, 0xff, 0x7f}},
		{"lea (%r12,%r13,1),%r14", mach.newAmodeRegRegShift(0, r12VReg, r13VReg, 0), r14VReg, []byte{0x4f, 0x8d, 0x34, 0x2c}},
		{"lea 0x0(%rbp,%rax,1),%r8", mach.newAmodeRegRegShift(0, rbpVReg, raxVReg, 0), r8VReg, []byte{0x4c, 0x8d, 0x44, 0x05, 0x00}},
		{"lea 0x8(%r13),%rdx", mach.newAmodeImmReg(8, r13VReg), rdxVReg, []byte{0x49, 0x8d, 0x55, 0x08}},
	} {
		*c.BufPtr() = (*c.BufPtr())[:0]
		i := mach.allocateInstr().asLEA(newOperandMem(tc.am), tc.dst)
		if i.encode(c) {
			t.Errorf("%s: asks for a label resolution", tc.name)
		}
		if got := *c.BufPtr(); !bytes.Equal(got, tc.want) {
			t.Errorf("%s: % x, want % x", tc.name, got, tc.want)
		}
	}
}

// wasmbox patch 18: a 64-bit iadd is one lea into its destination. Every
// bounds check adds the access's end to the extended address, and the
// access uses the address next: as a two-address add it needed a copy of
// the address first (mov; add). sum(p) = i32.load(p) + i32.load offset=4 (p)
// has two such checks.
func TestIaddAsLea(t *testing.T) {
	m := &wasm.Module{
		TypeSection:     []wasm.FunctionType{{Params: []wasm.ValueType{wasm.ValueTypeI32}, Results: []wasm.ValueType{wasm.ValueTypeI32}}},
		MemorySection:   &wasm.Memory{Min: 1, Cap: 1, Max: 1},
		FunctionSection: []wasm.Index{0},
		CodeSection: []wasm.Code{{Body: []byte{
			wasm.OpcodeLocalGet, 0, wasm.OpcodeI32Load, 2, 0,
			wasm.OpcodeLocalGet, 0, wasm.OpcodeI32Load, 2, 4,
			wasm.OpcodeI32Add, wasm.OpcodeEnd,
		}}},
	}
	listing := compileOne(t, m, 0).Format()
	if n := len(regexp.MustCompile(`lea \d+\(%\w+\), %\w+`).FindAllString(listing, -1)); n != 2 {
		t.Errorf("%d leas of an address and the access's end, want 2:\n%s", n, listing)
	}
	if regexp.MustCompile(`movq %(\w+), %(\w+)\n\s*add \$\d+, %\w+`).MatchString(listing) {
		t.Errorf("a copy before an add of an immediate:\n%s", listing)
	}
}

// wasmbox patch 18: a conditional branch over a critical edge (its block
// has two successors, its target two predecessors) is replaced by a new
// branch to a trampoline block when the edge is split; the new branch
// keeps the original's instruction group, so its comparison still sets
// the flags the jcc reads. f(x, y) = (x == 0 ? 1 : y + 2) + 3, from
// `block (result i32) i32.const 1; local.get 0; i32.eqz; br_if 0; drop;
// local.get 1; i32.const 2; i32.add; end; i32.const 3; i32.add`: the br_if
// passes a value to the block's end, so its edge is split. It starts with
// `local.get 1; global.set 0`. Upstream gave
// the new branch group 0 and lowered `cmp; sete; movzx; test; jnz` (the
// comparison's group is 1: the global.set before it starts a new one).
func TestSplitEdgeBranchFusesCompare(t *testing.T) {
	i32 := wasm.ValueTypeI32
	m := &wasm.Module{
		TypeSection:     []wasm.FunctionType{{Params: []wasm.ValueType{i32, i32}, Results: []wasm.ValueType{i32}}},
		GlobalSection:   []wasm.Global{{Type: wasm.GlobalType{ValType: i32, Mutable: true}}},
		FunctionSection: []wasm.Index{0},
		CodeSection: []wasm.Code{{Body: []byte{
			wasm.OpcodeLocalGet, 1, wasm.OpcodeGlobalSet, 0,
			wasm.OpcodeBlock, 0x7f,
			wasm.OpcodeI32Const, 1,
			wasm.OpcodeLocalGet, 0, wasm.OpcodeI32Eqz, wasm.OpcodeBrIf, 0,
			wasm.OpcodeDrop,
			wasm.OpcodeLocalGet, 1, wasm.OpcodeI32Const, 2, wasm.OpcodeI32Add,
			wasm.OpcodeEnd,
			wasm.OpcodeI32Const, 3, wasm.OpcodeI32Add,
			wasm.OpcodeEnd,
		}}},
	}
	listing := compileOne(t, m, 0).Format()
	if regexp.MustCompile(`\sset\w+ %`).MatchString(listing) {
		t.Errorf("the comparison is materialized with setcc, not merged into the branch:\n%s", listing)
	}
	if !regexp.MustCompile(`cmpl \$0, %\w+\n\s*j(z|nz) L\d+`).MatchString(listing) {
		t.Errorf("no cmp followed by its jcc:\n%s", listing)
	}
}
