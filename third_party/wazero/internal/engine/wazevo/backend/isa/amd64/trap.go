package amd64

import (
	"encoding/binary"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/wazevoapi"
)

// Out-of-line traps (wasmbox patch): ssa.OpcodeExitIfTrueWithCode (the
// bounds checks of memory and table accesses, the null and type checks of
// call_indirect, ...) was lowered as a jcc over an inline exit sequence
// of about forty bytes, so that every check that passed was a taken
// branch, and most of a function's code was exit sequences. It is now one
// trapIf instruction, encoded as
//
//	jcc stub
//	site:
//
// and, after the function's last block (and its fuel slow paths), one
// stub per check and one exit per execution context register and exit
// code:
//
//	stub:
//	lea scratch, [rip + site]
//	jmp exit
//	...
//	exit:
//	mov [execCtx + goCallReturnAddress], scratch
//	mov [execCtx + stackPointerBeforeGoCall], rsp
//	mov [execCtx + framePointerBeforeGoCall], rbp
//	mov dword [execCtx + exitCode], code
//	mov rbp, [execCtx + originalFramePointer]
//	mov rsp, [execCtx + originalStackPointer]
//	ret
//
// which does what the inline sequence it replaces did (lowerExitWithCode
// followed by exitSequence), the address saved for the stack trace being
// the site in the function's body, so that the trap's frame and source
// offset are those of the check. scratch is RAX, or RCX when the context
// is in RAX: every exit code of an ExitIfTrueWithCode is a trap, the Go
// side never resumes the code after it, so that no register but RSP and
// RBP (saved above) matters there.

// trapStub is a trapIf whose stub is still to be emitted.
type trapStub struct {
	instr    *instruction
	jccImm32 int64 // offset of the jcc's rel32
	site     int64 // offset of the instruction after the jcc
}

// trapExitKey identifies an exit shared by the stubs of a function.
type trapExitKey struct {
	exec regEnc
	code uint32
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

// encodeTrapStubs emits the stubs of the trapIf instructions encoded by
// encodeTrapIf and their exits, and resolves their jumps.
func (m *machine) encodeTrapStubs() {
	if len(m.trapStubs) == 0 {
		return
	}
	bufPtr := m.c.BufPtr()
	if m.trapExits == nil {
		m.trapExits = map[trapExitKey]int64{}
	}
	clear(m.trapExits)
	// The stubs, with their jmp's rel32 to resolve below.
	jmps := m.trapJmps[:0]
	for _, p := range m.trapStubs {
		start := int64(len(*bufPtr))
		binary.LittleEndian.PutUint32((*bufPtr)[p.jccImm32:], uint32(int32(start-(p.jccImm32+4))))
		exec := regEncodings[p.instr.op1.reg().RealReg()]
		*bufPtr = appendTrapStub(*bufPtr, exec, p.site)
		jmps = append(jmps, int64(len(*bufPtr))-4)
		m.trapExits[trapExitKey{exec, uint32(p.instr.u2)}] = -1
	}
	// The exits, in the order of their first stub.
	for k, p := range m.trapStubs {
		key := trapExitKey{regEncodings[p.instr.op1.reg().RealReg()], uint32(p.instr.u2)}
		exit := m.trapExits[key]
		if exit < 0 {
			exit = int64(len(*bufPtr))
			m.trapExits[key] = exit
			*bufPtr = appendTrapExit(*bufPtr, key.exec, key.code)
		}
		binary.LittleEndian.PutUint32((*bufPtr)[jmps[k]:], uint32(int32(exit-(jmps[k]+4))))
	}
	m.trapJmps = jmps
}

// trapScratch is the register a stub puts the site's address in, for the
// execution context exec.
func trapScratch(exec regEnc) regEnc {
	if exec == regEncodings[rax] {
		return regEncodings[rcx]
	}
	return regEncodings[rax]
}

// appendTrapStub appends to code the stub of a trapIf whose execution
// context is in exec and whose site is site (an offset in code), with a
// jmp whose rel32 is left to resolve.
func appendTrapStub(code []byte, exec regEnc, site int64) []byte {
	scratch := trapScratch(exec)
	// lea scratch, [rip + site]
	code = append(code, rexW, 0x8d, scratch.encoding()<<3|0b101)
	code = binary.LittleEndian.AppendUint32(code, uint32(int32(site-(int64(len(code))+4))))
	// jmp exit
	return append(code, 0xe9, 0, 0, 0, 0)
}

// appendTrapExit appends to code the exit shared by the stubs of the
// execution context exec and the exit code exitCode.
func appendTrapExit(code []byte, exec regEnc, exitCode uint32) []byte {
	emit := func(b byte) { code = append(code, b) }
	const rspEnc, rbpEnc = 4, 5
	scratch := trapScratch(exec)
	// mov qword [exec + goCallReturnAddress], scratch
	emitMemOp8(emit, rexW, exec, 0x89, scratch.encoding(), int8(wazevoapi.ExecutionContextOffsetGoCallReturnAddress.U32()))
	// mov qword [exec + stackPointerBeforeGoCall], rsp
	emitMemOp8(emit, rexW, exec, 0x89, rspEnc, int8(wazevoapi.ExecutionContextOffsetStackPointerBeforeGoCall.U32()))
	// mov qword [exec + framePointerBeforeGoCall], rbp
	emitMemOp(emit, rexW, exec, 0x89, rbpEnc, int32(wazevoapi.ExecutionContextOffsetFramePointerBeforeGoCall.U32()))
	// mov dword [exec + exitCode], exitCode
	emitMemOp8(emit, 0, exec, 0xc7, 0, int8(wazevoapi.ExecutionContextOffsetExitCodeOffset.U32()))
	code = binary.LittleEndian.AppendUint32(code, exitCode)
	// mov rbp, qword [exec + originalFramePointer]
	emitMemOp8(emit, rexW, exec, 0x8b, rbpEnc, int8(wazevoapi.ExecutionContextOffsetOriginalFramePointer.U32()))
	// mov rsp, qword [exec + originalStackPointer]
	emitMemOp8(emit, rexW, exec, 0x8b, rspEnc, int8(wazevoapi.ExecutionContextOffsetOriginalStackPointer.U32()))
	// ret
	return append(code, 0xc3)
}

// emitMemOp8 is emitMemOp with an 8-bit displacement (ModRM mod 01).
func emitMemOp8(emit func(byte), rex byte, base regEnc, opcode byte, reg byte, disp int8) {
	if b := base.rexBit(); b != 0 || rex != 0 {
		emit(0x40 | rex | b)
	}
	emit(opcode)
	if base.encoding() == 0b100 {
		emit(0x40 | (reg&7)<<3 | 0b100)
		emit(0x24)
	} else {
		emit(0x40 | (reg&7)<<3 | base.encoding())
	}
	emit(byte(disp))
}
