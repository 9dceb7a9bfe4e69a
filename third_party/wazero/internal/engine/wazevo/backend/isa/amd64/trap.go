package amd64

import (
	"encoding/binary"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/wazevoapi"
)

// Out-of-line traps (wasmbox patch): ssa.OpcodeExitIfTrueWithCode (the
// bounds checks of memory and table accesses, the null and type checks of
// call_indirect, ...) was lowered as a jcc over an inline exit sequence
// of about fifty bytes, so that every check that passed was a taken
// branch, and the code of a function was mostly exit sequences. It is now
// one trapIf instruction, encoded as
//
//	jcc stub
//	site:
//
// and, after the function's last block (and its fuel slow paths),
//
//	stub:
//	mov [execCtx + stackPointerBeforeGoCall], rsp
//	mov [execCtx + framePointerBeforeGoCall], rbp
//	mov dword [execCtx + exitCode], code
//	lea rbp, [rip + site]
//	mov [execCtx + goCallReturnAddress], rbp
//	mov rbp, [execCtx + originalFramePointer]
//	mov rsp, [execCtx + originalStackPointer]
//	ret
//
// which is the inline sequence it replaces (lowerExitWithCode followed by
// exitSequence), but for the address saved for the stack trace: the site
// in the function's body, so that the trap's frame and source offset are
// those of the check. Every exit code of an ExitIfTrueWithCode is a trap:
// the Go side never resumes the code after it.

// trapStub is a trapIf whose stub is still to be emitted.
type trapStub struct {
	instr    *instruction
	jccImm32 int64 // offset of the jcc's rel32
	site     int64 // offset of the instruction after the jcc
}

// encodeTrapIf emits the jcc of a trapIf instruction.
func (m *machine) encodeTrapIf(i *instruction) {
	c := m.c
	c.EmitByte(0x0f)
	c.EmitByte(0x80 | cond(i.u1).encoding())
	c.Emit4Bytes(0) // resolved by encodeTrapStubs
	n := int64(len(*c.BufPtr()))
	m.trapStubs = append(m.trapStubs, trapStub{instr: i, jccImm32: n - 4, site: n})
}

// encodeTrapStubs emits the stub of every trapIf encoded by encodeTrapIf,
// and resolves their jumps.
func (m *machine) encodeTrapStubs() {
	bufPtr := m.c.BufPtr()
	for _, p := range m.trapStubs {
		start := int64(len(*bufPtr))
		binary.LittleEndian.PutUint32((*bufPtr)[p.jccImm32:], uint32(int32(start-(p.jccImm32+4))))
		*bufPtr = appendTrapStub(*bufPtr, regEncodings[p.instr.op1.reg().RealReg()], uint32(p.instr.u2), p.site)
	}
}

// appendTrapStub appends to code the stub of a trapIf whose execution
// context is in exec, with the exit code code and the site site (an offset
// in code).
func appendTrapStub(code []byte, exec regEnc, exitCode uint32, site int64) []byte {
	emit := func(b byte) { code = append(code, b) }
	emit4 := func(v uint32) { code = binary.LittleEndian.AppendUint32(code, v) }
	const rspEnc, rbpEnc = 4, 5
	// mov qword [exec + stackPointerBeforeGoCall], rsp
	emitMemOp(emit, rexW, exec, 0x89, rspEnc, int32(wazevoapi.ExecutionContextOffsetStackPointerBeforeGoCall.U32()))
	// mov qword [exec + framePointerBeforeGoCall], rbp
	emitMemOp(emit, rexW, exec, 0x89, rbpEnc, int32(wazevoapi.ExecutionContextOffsetFramePointerBeforeGoCall.U32()))
	// mov dword [exec + exitCode], exitCode
	emitMemOp(emit, 0, exec, 0xc7, 0, int32(wazevoapi.ExecutionContextOffsetExitCodeOffset.U32()))
	emit4(exitCode)
	// lea rbp, [rip + site]
	emit(rexW)
	emit(0x8d)
	emit(rbpEnc<<3 | 0b101)
	emit4(uint32(int32(site - (int64(len(code)) + 4))))
	// mov qword [exec + goCallReturnAddress], rbp
	emitMemOp(emit, rexW, exec, 0x89, rbpEnc, int32(wazevoapi.ExecutionContextOffsetGoCallReturnAddress.U32()))
	// mov rbp, qword [exec + originalFramePointer]
	emitMemOp(emit, rexW, exec, 0x8b, rbpEnc, int32(wazevoapi.ExecutionContextOffsetOriginalFramePointer.U32()))
	// mov rsp, qword [exec + originalStackPointer]
	emitMemOp(emit, rexW, exec, 0x8b, rspEnc, int32(wazevoapi.ExecutionContextOffsetOriginalStackPointer.U32()))
	// ret
	emit(0xc3)
	return code
}
