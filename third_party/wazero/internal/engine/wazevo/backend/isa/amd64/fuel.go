package amd64

import (
	"encoding/binary"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/wazevoapi"
)

// The fuel check (wasmbox patch): ssa.OpcodeFuelCheck, the metering that
// wasmbox's wasmbin.InstrumentLoops puts at every loop header and function
// entry, as
//
//	sub dword [modCtx + off], 1
//	jz slow
//	cont:
//
// and, after the function's last block,
//
//	slow:
//	mov [execCtx + callerModuleContextPtr], modCtx
//	push rax
//	mov rax, execCtx
//	mov qword [rax + stackGrowRequiredSize], yieldIndex
//	call [rax + fuelYieldTrampolineAddress]
//	pop rax
//	mov dword [modCtx + off], refill
//	jmp cont
//
// The trampoline (CompileSaveAllExitSequence(ExitCodeFuelYield)) saves and
// restores every allocatable register but RAX, which the slow path saves,
// so that the register allocator sees an instruction that uses two
// registers and clobbers none: values live across a check stay in their
// registers, where an inline call made it spill them.

// fuelCheckStackSize is what the slow path needs below the frame: RAX, the
// return address and the trampoline's RBP, rounded up.
const fuelCheckStackSize = 32

// fuelSlowPath is a fuel check whose slow path is still to be emitted.
type fuelSlowPath struct {
	instr      *instruction
	jzImm32    int64 // offset of the jz's rel32
	contOffset int64 // offset of the instruction after the jz
}

// encodeFuelCheck emits the fast path of a fuelCheck instruction.
func (m *machine) encodeFuelCheck(i *instruction) {
	c := m.c
	mod := regEncodings[i.op1.reg().RealReg()]
	// sub dword [mod + off], 1
	emitMemOp(c.EmitByte, 0, mod, 0x83, 5, int32(uint32(i.u1)))
	c.EmitByte(1)
	// jz rel32 (resolved by encodeFuelSlowPaths)
	c.EmitByte(0x0f)
	c.EmitByte(0x84)
	c.Emit4Bytes(0)
	n := int64(len(*c.BufPtr()))
	m.fuelSlowPaths = append(m.fuelSlowPaths, fuelSlowPath{instr: i, jzImm32: n - 4, contOffset: n})
}

// encodeFuelSlowPaths emits the slow path of every fuel check encoded by
// encodeFuelCheck, and resolves their jumps.
func (m *machine) encodeFuelSlowPaths() {
	c := m.c
	for _, p := range m.fuelSlowPaths {
		i := p.instr
		mod := regEncodings[i.op1.reg().RealReg()]
		exec := regEncodings[i.op2.reg().RealReg()]
		off := int32(uint32(i.u1))
		yield, refill := uint32(i.u2), uint32(i.u2>>32)

		start := int64(len(*c.BufPtr()))
		binary.LittleEndian.PutUint32((*c.BufPtr())[p.jzImm32:], uint32(int32(start-(p.jzImm32+4))))

		// mov qword [exec + callerModuleContextPtr], mod
		emitMemOp(c.EmitByte, rexW|mod.rexBit()<<2, exec, 0x89, mod.encoding(),
			int32(wazevoapi.ExecutionContextOffsetCallerModuleContextPtr.U32()))
		// push rax
		c.EmitByte(0x50)
		rax := regEncodings[rax]
		if exec != rax {
			// mov rax, exec
			c.EmitByte(rexW | exec.rexBit()<<2)
			c.EmitByte(0x89)
			c.EmitByte(0xc0 | exec.encoding()<<3 | rax.encoding())
		}
		// mov qword [rax + stackGrowRequiredSize], yield
		emitMemOp(c.EmitByte, rexW, rax, 0xc7, 0, int32(wazevoapi.ExecutionContextOffsetStackGrowRequiredSize.U32()))
		c.Emit4Bytes(yield)
		// call [rax + fuelYieldTrampolineAddress]
		emitMemOp(c.EmitByte, 0, rax, 0xff, 2, int32(wazevoapi.ExecutionContextOffsetFuelYieldTrampolineAddress.U32()))
		// pop rax
		c.EmitByte(0x58)
		// mov dword [mod + off], refill
		emitMemOp(c.EmitByte, 0, mod, 0xc7, 0, off)
		c.Emit4Bytes(refill)
		// jmp cont
		c.EmitByte(0xe9)
		c.Emit4Bytes(uint32(int32(p.contOffset - (int64(len(*c.BufPtr())) + 4))))
	}
}

const rexW = 0x48

// emitMemOp emits an instruction with a memory operand [base + disp32]:
// an optional REX prefix (rex, to which base's REX.B is added; 0 and no
// REX.B needed means none), the opcode byte and a ModRM with reg (the
// register or the opcode extension) and mod 10, with a SIB byte when base
// is RSP or R12.
func emitMemOp(emit func(byte), rex byte, base regEnc, opcode byte, reg byte, disp int32) {
	if b := base.rexBit(); b != 0 || rex != 0 {
		emit(0x40 | rex | b)
	}
	emit(opcode)
	if base.encoding() == 0b100 {
		emit(0x80 | (reg&7)<<3 | 0b100)
		emit(0x24)
	} else {
		emit(0x80 | (reg&7)<<3 | base.encoding())
	}
	for k := 0; k < 4; k++ {
		emit(byte(uint32(disp) >> (8 * k)))
	}
}
