package amd64

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/backend"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/ssa"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

// The ALU instruction with a memory destination (patch 21) against the
// encodings of GNU as (objdump -d of the same instructions).
func TestAluRMEncoding(t *testing.T) {
	ctx := context.Background()
	mach := NewBackend().(*machine)
	c := backend.NewCompiler(ctx, mach, ssa.NewBuilder())
	for _, tc := range []struct {
		name string
		op   aluRmiROpcode
		src  operand
		am   *amode
		_64  bool
		want []byte
	}{
		{"addl $0x1,(%rbx)", aluRmiROpcodeAdd, newOperandImm32(1), mach.newAmodeImmReg(0, rbxVReg), false, []byte{0x83, 0x03, 0x01}},
		{"addl $0x1,0x4(%r12)", aluRmiROpcodeAdd, newOperandImm32(1), mach.newAmodeImmReg(4, r12VReg), false, []byte{0x41, 0x83, 0x44, 0x24, 0x04, 0x01}},
		{"subl $0x12c,0x100(%r13)", aluRmiROpcodeSub, newOperandImm32(300), mach.newAmodeImmReg(0x100, r13VReg), false, []byte{0x41, 0x81, 0xad, 0x00, 0x01, 0x00, 0x00, 0x2c, 0x01, 0x00, 0x00}},
		{"xor %esi,0x8(%rax,%rcx,1)", aluRmiROpcodeXor, newOperandReg(rsiVReg), mach.newAmodeRegRegShift(8, raxVReg, rcxVReg, 0), false, []byte{0x31, 0x74, 0x08, 0x08}},
		{"or %r9,(%r14,%r15,1)", aluRmiROpcodeOr, newOperandReg(r9VReg), mach.newAmodeRegRegShift(0, r14VReg, r15VReg, 0), true, []byte{0x4f, 0x09, 0x0c, 0x3e}},
		{"andq $-8,0x10(%rsp)", aluRmiROpcodeAnd, newOperandImm32(0xfffffff8), mach.newAmodeImmReg(16, rspVReg), true, []byte{0x48, 0x83, 0x64, 0x24, 0x10, 0xf8}},
		{"add %rax,0x7fffffff(%rbp)", aluRmiROpcodeAdd, newOperandReg(raxVReg), mach.newAmodeImmReg(0x7fffffff, rbpVReg), true, []byte{0x48, 0x01, 0x85, 0xff, 0xff, 0xff, 0x7f}},
	} {
		*c.BufPtr() = (*c.BufPtr())[:0]
		i := mach.allocateInstr().asAluRM(tc.op, tc.src, newOperandMem(tc.am), tc._64)
		if i.encode(c) {
			t.Errorf("%s: asks for a label resolution", tc.name)
		}
		if got := *c.BufPtr(); !bytes.Equal(got, tc.want) {
			t.Errorf("%s: % x, want % x", tc.name, got, tc.want)
		}
	}
}

// wasmbox patch 21: the store of an add of a load of the same address is
// one add with a memory destination. f(p, v) does p[1] += 1 (as CPython's
// Py_INCREF), p[2] ^= v, and p[3] = v - p[3] (a subtraction from the
// load's value is not one: it stays a load, a sub and a store).
func TestStoreOfLoadOpIsOneInstruction(t *testing.T) {
	i32 := wasm.ValueTypeI32
	m := &wasm.Module{
		TypeSection:     []wasm.FunctionType{{Params: []wasm.ValueType{i32, i32}}},
		MemorySection:   &wasm.Memory{Min: 1, Cap: 1, Max: 1},
		FunctionSection: []wasm.Index{0},
		CodeSection: []wasm.Code{{Body: []byte{
			wasm.OpcodeLocalGet, 0, wasm.OpcodeLocalGet, 0, wasm.OpcodeI32Load, 2, 4,
			wasm.OpcodeI32Const, 1, wasm.OpcodeI32Add, wasm.OpcodeI32Store, 2, 4,
			wasm.OpcodeLocalGet, 0, wasm.OpcodeLocalGet, 0, wasm.OpcodeI32Load, 2, 8,
			wasm.OpcodeLocalGet, 1, wasm.OpcodeI32Xor, wasm.OpcodeI32Store, 2, 8,
			wasm.OpcodeLocalGet, 0, wasm.OpcodeLocalGet, 1, wasm.OpcodeLocalGet, 0, wasm.OpcodeI32Load, 2, 12,
			wasm.OpcodeI32Sub, wasm.OpcodeI32Store, 2, 12,
			wasm.OpcodeEnd,
		}}},
	}
	listing := compileOne(t, m, 0).Format()
	if !regexp.MustCompile(`add\.l \$1, 4\(%\w+(,%\w+,1)?\)`).MatchString(listing) {
		t.Errorf("no add of 1 to 4(p):\n%s", listing)
	}
	if !regexp.MustCompile(`xor\.l %\w+, 8\(%\w+(,%\w+,1)?\)`).MatchString(listing) {
		t.Errorf("no xor of v into 8(p):\n%s", listing)
	}
	if regexp.MustCompile(`sub\.l [^,]+, 12\(`).MatchString(listing) {
		t.Errorf("v - p[3] done as p[3] -= v:\n%s", listing)
	}
	if n := len(regexp.MustCompile(`mov\.l %\w+, \d*\(`).FindAllString(listing, -1)); n != 1 {
		t.Errorf("%d stores from a register, want 1 (v - p[3]):\n%s", n, listing)
	}
}
