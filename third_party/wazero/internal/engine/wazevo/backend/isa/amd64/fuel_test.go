package amd64

import (
	"bytes"
	"testing"
)

// The memory operands of the fuel check's code, against encodings checked
// with objdump (wasmbox patch): RSP and R12 as a base need a SIB byte, R8
// and up a REX.B, a register operand of R8 and up a REX.R.
func TestFuelCheckEncoding(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rex    byte
		base   regEnc
		opcode byte
		reg    byte
		disp   int32
		want   []byte
	}{
		{"subl $1, 0x40(%r12)", 0, regEncodings[r12], 0x83, 5, 0x40, []byte{0x41, 0x83, 0xac, 0x24, 0x40, 0, 0, 0}},
		{"subl $1, 0x40(%rbx)", 0, regEncodings[rbx], 0x83, 5, 0x40, []byte{0x83, 0xab, 0x40, 0, 0, 0}},
		{"subl $1, 0x40(%r13)", 0, regEncodings[r13], 0x83, 5, 0x40, []byte{0x41, 0x83, 0xad, 0x40, 0, 0, 0}},
		{"subl $1, 0x40(%rsp)", 0, regEncodings[rsp], 0x83, 5, 0x40, []byte{0x83, 0xac, 0x24, 0x40, 0, 0, 0}},
		{"mov %r13, 0x8(%rax)", rexW | regEncodings[r13].rexBit()<<2, regEncodings[rax], 0x89, regEncodings[r13].encoding(), 8, []byte{0x4c, 0x89, 0xa8, 8, 0, 0, 0}},
		{"mov %rbx, 0x8(%r12)", rexW, regEncodings[r12], 0x89, regEncodings[rbx].encoding(), 8, []byte{0x49, 0x89, 0x9c, 0x24, 8, 0, 0, 0}},
		{"movq $imm, 0x40(%rax)", rexW, regEncodings[rax], 0xc7, 0, 0x40, []byte{0x48, 0xc7, 0x80, 0x40, 0, 0, 0}},
		{"call *0x4d8(%rax)", 0, regEncodings[rax], 0xff, 2, 0x4d8, []byte{0xff, 0x90, 0xd8, 0x04, 0, 0}},
		{"movl $imm, 0x40(%r13)", 0, regEncodings[r13], 0xc7, 0, 0x40, []byte{0x41, 0xc7, 0x85, 0x40, 0, 0, 0}},
	} {
		var got []byte
		emitMemOp(func(b byte) { got = append(got, b) }, tc.rex, tc.base, tc.opcode, tc.reg, tc.disp)
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s: % x, want % x", tc.name, got, tc.want)
		}
	}
}
