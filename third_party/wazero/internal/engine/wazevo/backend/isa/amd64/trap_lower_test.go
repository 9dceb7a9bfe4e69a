package amd64

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/backend"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/frontend"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/ssa"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/wazevoapi"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

// A function with a call_indirect, a load and a signed division, compiled
// by the frontend and this backend (wasmbox patch): its six checks (the
// table's bounds, the null entry, the type, the memory's bounds, the
// divisor 0, MinInt32 / -1) are six trapIf, and the
// code has no inline exit sequence; each jcc of the body jumps to a stub
// after the body, the stub of its own check (its site), which jumps to an
// exit with its exit code.
func TestTrapIfLowering(t *testing.T) {
	m := &wasm.Module{
		TypeSection: []wasm.FunctionType{
			{Params: []wasm.ValueType{wasm.ValueTypeI32}, Results: []wasm.ValueType{wasm.ValueTypeI32}},
			{Params: []wasm.ValueType{wasm.ValueTypeI32, wasm.ValueTypeI32}, Results: []wasm.ValueType{wasm.ValueTypeI32}},
		},
		TableSection:    []wasm.Table{{Min: 4, Type: wasm.RefTypeFuncref}},
		MemorySection:   &wasm.Memory{Min: 1, Cap: 1, Max: 1},
		FunctionSection: []wasm.Index{1},
		CodeSection: []wasm.Code{{Body: []byte{
			wasm.OpcodeLocalGet, 1, wasm.OpcodeLocalGet, 0,
			wasm.OpcodeCallIndirect, 0, 0,
			wasm.OpcodeI32Load, 2, 0,
			wasm.OpcodeLocalGet, 0, wasm.OpcodeI32DivS,
			wasm.OpcodeEnd,
		}}},
	}
	ctx := context.Background()
	mach := NewBackend().(*machine)
	b := ssa.NewBuilder()
	be := backend.NewCompiler(ctx, mach, b)
	offset := wazevoapi.NewModuleContextOffsetData(m, false)
	fe := frontend.NewFrontendCompiler(m, b, &offset, false, false, false)
	fe.Init(0, 1, &m.TypeSection[1], nil, m.CodeSection[0].Body, false, 0)
	be.Init()
	fe.LowerToSSA()
	b.RunPasses()
	code, _, err := be.Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}

	codes := map[wazevoapi.ExitCode]int{}
	for cur := mach.rootInstr; cur != nil; cur = cur.next {
		switch cur.kind {
		case trapIf:
			codes[wazevoapi.ExitCode(cur.u2)]++
		case exitSequence:
			t.Errorf("an inline exit sequence: %s", cur)
		}
	}
	for _, c := range []wazevoapi.ExitCode{
		wazevoapi.ExitCodeTableOutOfBounds, wazevoapi.ExitCodeIndirectCallNullPointer,
		wazevoapi.ExitCodeIndirectCallTypeMismatch, wazevoapi.ExitCodeMemoryOutOfBounds,
		wazevoapi.ExitCodeIntegerDivisionByZero, wazevoapi.ExitCodeIntegerOverflow,
	} {
		if codes[c] != 1 {
			t.Errorf("%d trapIf with the exit code %d, want 1", codes[c], c)
		}
	}

	if len(mach.trapStubs) != 6 {
		t.Fatalf("%d stubs, want 6", len(mach.trapStubs))
	}
	var lastSite int64
	for _, p := range mach.trapStubs {
		lastSite = max(lastSite, p.site)
	}
	for _, p := range mach.trapStubs {
		if code[p.jccImm32-2] != 0x0f || code[p.jccImm32-1] != 0x80|cond(p.instr.u1).encoding() {
			t.Errorf("no jcc before %d: % x", p.jccImm32, code[p.jccImm32-2:p.jccImm32])
		}
		target := p.site + int64(int32(binary.LittleEndian.Uint32(code[p.jccImm32:])))
		if target <= lastSite {
			t.Errorf("the jcc at %d jumps to %d, inside the body", p.jccImm32, target)
			continue
		}
		exec := regEncodings[p.instr.op1.reg().RealReg()]
		stub := appendTrapStub(nil, exec, 0)
		if int(target)+len(stub) > len(code) || string(code[target:target+3]) != string(stub[:3]) || code[target+7] != 0xe9 {
			t.Errorf("the jcc at %d does not jump to a stub: % x", p.jccImm32, code[target:])
			continue
		}
		if lea := target + 7 + int64(int32(binary.LittleEndian.Uint32(code[target+3:]))); lea != p.site {
			t.Errorf("the stub of the jcc at %d saves %d, want its site %d", p.jccImm32, lea, p.site)
		}
		exit := target + 12 + int64(int32(binary.LittleEndian.Uint32(code[target+8:])))
		want := appendTrapExit(nil, exec, uint32(p.instr.u2))
		if exit < target || int(exit)+len(want) > len(code) || string(code[exit:int(exit)+len(want)]) != string(want) {
			t.Errorf("the stub of the jcc at %d does not jump to the exit of its code %d", p.jccImm32, p.instr.u2)
		}
	}
}
