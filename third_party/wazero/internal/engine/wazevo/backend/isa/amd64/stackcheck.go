package amd64

import (
	"encoding/binary"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/wazevoapi"
)

// The stack bound check of a function's prologue (wasmbox patch 17). It
// was, after `push rbp; mov rbp, rsp`,
//
//	sub rsp, N
//	cmp rsp, [rax + stackBottomPtr]
//	ja ok
//	add rsp, N
//	push r15; mov r15, N; mov [rax + stackGrowRequiredSize], r15; pop r15
//	call [rax + stackGrowCallTrampolineAddress]
//	jmp cont
//	ok:
//	add rsp, N
//	cont:
//
// four instructions and a taken branch on every call, and about fifty
// bytes. The recorded bottom of the stack is now StackCheckMargin bytes
// above its lowest byte (call_engine.go), so that the check is
//
//	cmp rsp, [rax + stackBottomPtr]
//	jbe grow
//	cont:
//
// when N <= StackCheckMargin (RSP above the recorded bottom leaves more
// than N bytes below RSP: what RSP - N above the lowest byte meant), and
//
//	sub rsp, K
//	cmp rsp, [rax + stackBottomPtr]
//	lea rsp, [rsp + K]
//	jbe grow
//	cont:
//
// with K = N - StackCheckMargin otherwise (lea leaves the flags alone).
// After the function's last block:
//
//	grow:
//	mov qword [rax + stackGrowRequiredSize], N
//	call [rax + stackGrowCallTrampolineAddress]
//	jmp cont
//
// The Go side sees what it saw: the same trampoline, the same required
// size N, the same registers (no register but RSP is written before the
// call, and the trampoline saves and restores the others), a return
// address in this function's code.

// stackGrowPath is a stackCheck whose grow path is still to be emitted.
type stackGrowPath struct {
	required   uint32 // N
	jbeImm32   int64  // offset of the jbe's rel32
	contOffset int64  // offset of the instruction after the jbe
}

// encodeStackCheck emits the fast path of a stackCheck instruction.
func (m *machine) encodeStackCheck(i *instruction) {
	c := m.c
	required := int64(i.u1)
	k := required - wazevoapi.StackCheckMargin
	rax := regEncodings[rax]
	const rspEnc = 4
	if k > 0 {
		// sub rsp, K
		c.EmitByte(rexW)
		c.EmitByte(0x81)
		c.EmitByte(0xc0 | 5<<3 | rspEnc)
		c.Emit4Bytes(uint32(k))
	}
	// cmp rsp, qword [rax + stackBottomPtr]
	emitMemOp8(c.EmitByte, rexW, rax, 0x3b, rspEnc, int8(wazevoapi.ExecutionContextOffsetStackBottomPtr.U32()))
	if k > 0 {
		// lea rsp, [rsp + K]
		emitMemOp(c.EmitByte, rexW, regEncodings[rsp], 0x8d, rspEnc, int32(k))
	}
	// jbe rel32 (resolved by encodeStackGrowPaths)
	c.EmitByte(0x0f)
	c.EmitByte(0x80 | condBE.encoding())
	c.Emit4Bytes(0)
	n := int64(len(*c.BufPtr()))
	m.stackGrowPaths = append(m.stackGrowPaths, stackGrowPath{required: uint32(required), jbeImm32: n - 4, contOffset: n})
}

// encodeStackGrowPaths emits the grow path of every stack check encoded by
// encodeStackCheck (there is one, in the prologue), and resolves the jumps.
func (m *machine) encodeStackGrowPaths() {
	bufPtr := m.c.BufPtr()
	for _, p := range m.stackGrowPaths {
		start := int64(len(*bufPtr))
		binary.LittleEndian.PutUint32((*bufPtr)[p.jbeImm32:], uint32(int32(start-(p.jbeImm32+4))))
		*bufPtr = appendStackGrowPath(*bufPtr, p.required)
		binary.LittleEndian.PutUint32((*bufPtr)[len(*bufPtr)-4:], uint32(int32(p.contOffset-int64(len(*bufPtr)))))
	}
}

// appendStackGrowPath appends to code the grow path of a function that
// needs required bytes of stack, with a jmp whose rel32 is left to resolve.
func appendStackGrowPath(code []byte, required uint32) []byte {
	emit := func(b byte) { code = append(code, b) }
	rax := regEncodings[rax]
	// mov qword [rax + stackGrowRequiredSize], required
	emitMemOp8(emit, rexW, rax, 0xc7, 0, int8(wazevoapi.ExecutionContextOffsetStackGrowRequiredSize.U32()))
	code = binary.LittleEndian.AppendUint32(code, required)
	// call qword [rax + stackGrowCallTrampolineAddress]
	emitMemOp8(emit, 0, rax, 0xff, 2, int8(wazevoapi.ExecutionContextOffsetStackGrowCallTrampolineAddress.U32()))
	// jmp cont
	return append(code, 0xe9, 0, 0, 0, 0)
}
