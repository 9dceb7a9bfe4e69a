package amd64

import (
	"encoding/binary"
	"regexp"
	"strconv"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

// wasmbox patch 22: a jump to a block that is nothing but a jump goes to
// that jump's target. f(a, b) = a || b ? b : b + 1, two br_ifs out of a
// block over an add: one branch crosses a critical edge whose trampoline
// needs no move, a block `Lt: jmp Lj`; upstream's branch went to Lt.
func TestJumpToJumpGoesThrough(t *testing.T) {
	i32 := wasm.ValueTypeI32
	m := &wasm.Module{
		TypeSection:     []wasm.FunctionType{{Params: []wasm.ValueType{i32, i32}, Results: []wasm.ValueType{i32}}},
		FunctionSection: []wasm.Index{0},
		CodeSection: []wasm.Code{{Body: []byte{
			wasm.OpcodeBlock, 0x40,
			wasm.OpcodeLocalGet, 0, wasm.OpcodeBrIf, 0,
			wasm.OpcodeLocalGet, 1, wasm.OpcodeBrIf, 0,
			wasm.OpcodeLocalGet, 1, wasm.OpcodeI32Const, 1, wasm.OpcodeI32Add, wasm.OpcodeLocalSet, 1,
			wasm.OpcodeEnd,
			wasm.OpcodeLocalGet, 1,
			wasm.OpcodeEnd,
		}}},
	}
	mach := compileOne(t, m, 0)
	listing := mach.Format()
	empty := regexp.MustCompile(`(?m)^L(\d+) \(SSA Block: blk\d+\):\n\tjmp L(\d+)$`).FindAllStringSubmatch(listing, -1)
	if len(empty) == 0 {
		t.Fatalf("no block that is only a jmp:\n%s", listing)
	}
	code := *mach.c.BufPtr()
	checked := 0
	for _, e := range empty {
		via, _ := strconv.Atoi(e[1])
		to, _ := strconv.Atoi(e[2])
		for _, p := range mach.labelResolutionPends {
			if (p.instr.kind != jmp && p.instr.kind != jmpIf) || int(p.instr.jmpLabel()) != via {
				continue
			}
			rel := int32(binary.LittleEndian.Uint32(code[p.imm32Offset:]))
			got := p.imm32Offset + 4 + int64(rel)
			if want := mach.labelPositionPool.Get(to).binaryOffset; got != want {
				t.Errorf("the jump at %#x to L%d lands at %#x, want L%d's %#x", p.instrOffset, via, got, to, want)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatalf("no jump to a block that is only a jmp:\n%s", listing)
	}
}
