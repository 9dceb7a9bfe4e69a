package amd64

import (
	"context"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/backend"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/backend/regalloc"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/frontend"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/ssa"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/wazevoapi"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

// wasmbox patch 16: the register allocator picks a callee-saved register
// first for a value that lives across a call, and a caller-saved one first
// for any other value. Two functions compiled by the frontend and this
// backend:
//
//   - tail(x) = call_indirect (i32.load 16) with (i32.load 12, x), the shape of CPython's
//     PyObject_Free and _Py_Dealloc: nothing lives across the call, so the
//     function saves and restores no callee-saved register (the old order,
//     rax, rcx, rdx, ..., gave a temporary rdx and a push and pop of it);
//     and x, which arrives in rcx and leaves in rdi while the value
//     loaded from 12 goes to rcx, moves to a free register rather than being
//     spilled to the stack and reloaded (the allocator evicted it);
//   - across(x) = callee(x) + x + i32.load x: x, the execution context
//     (the load's bounds check) and the module context (the memory's base
//     and length after the call) live across the call, so they stay in
//     callee-saved registers and nothing is spilled to the stack (with the
//     old order they were stored before the call and reloaded after it).
func TestCalleeSavedAcrossCalls(t *testing.T) {
	m := &wasm.Module{
		TypeSection: []wasm.FunctionType{
			{Params: []wasm.ValueType{wasm.ValueTypeI32}, Results: []wasm.ValueType{wasm.ValueTypeI32}},
			{Params: []wasm.ValueType{wasm.ValueTypeI32, wasm.ValueTypeI32}, Results: []wasm.ValueType{wasm.ValueTypeI32}},
		},
		TableSection:    []wasm.Table{{Min: 4, Type: wasm.RefTypeFuncref}},
		MemorySection:   &wasm.Memory{Min: 1, Cap: 1, Max: 1},
		FunctionSection: []wasm.Index{0, 0, 0},
		CodeSection: []wasm.Code{
			{Body: []byte{wasm.OpcodeLocalGet, 0, wasm.OpcodeEnd}}, // callee
			{Body: []byte{ // tail
				wasm.OpcodeI32Const, 12, wasm.OpcodeI32Load, 2, 0,
				wasm.OpcodeLocalGet, 0,
				wasm.OpcodeI32Const, 16, wasm.OpcodeI32Load, 2, 0,
				wasm.OpcodeCallIndirect, 1, 0,
				wasm.OpcodeEnd,
			}},
			{Body: []byte{ // across
				wasm.OpcodeLocalGet, 0, wasm.OpcodeCall, 0,
				wasm.OpcodeLocalGet, 0, wasm.OpcodeI32Add,
				wasm.OpcodeLocalGet, 0, wasm.OpcodeI32Load, 2, 0, wasm.OpcodeI32Add,
				wasm.OpcodeEnd,
			}},
		},
	}
	compile := func(idx wasm.Index) *machine {
		ctx := context.Background()
		mach := NewBackend().(*machine)
		b := ssa.NewBuilder()
		be := backend.NewCompiler(ctx, mach, b)
		offset := wazevoapi.NewModuleContextOffsetData(m, false)
		fe := frontend.NewFrontendCompiler(m, b, &offset, false, false, false)
		fe.Init(idx, 0, &m.TypeSection[0], nil, m.CodeSection[idx].Body, false, 0)
		be.Init()
		fe.LowerToSSA()
		b.RunPasses()
		if _, _, err := be.Compile(ctx); err != nil {
			t.Fatal(err)
		}
		return mach
	}

	tail := compile(1)
	if len(tail.clobberedRegs) != 0 {
		t.Errorf("tail saves and restores %v, want no callee-saved register", tail.clobberedRegs)
	}
	if tail.spillSlotSize != 0 {
		t.Errorf("tail spills %d bytes, want none (x moves from rcx, where the call wants the value loaded from 12, to a free register)", tail.spillSlotSize)
	}

	across := compile(2)
	if across.spillSlotSize != 0 {
		t.Errorf("across spills %d bytes, want none", across.spillSlotSize)
	}
	if len(across.clobberedRegs) < 3 {
		t.Errorf("across keeps %v, want the three values across the call in callee-saved registers", across.clobberedRegs)
	}
	callee := map[regalloc.RealReg]bool{}
	regInfo.CalleeSavedRegisters.Range(func(r regalloc.RealReg) { callee[r] = true })
	for _, r := range across.clobberedRegs {
		if !callee[r.RealReg()] {
			t.Errorf("%v is not callee-saved", r)
		}
	}
}
