package amd64

import (
	"regexp"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

// wasmbox patch 20: the zero extension of a 32-bit value to 64 bits is its
// register (every 32-bit result of this backend has a zero upper half,
// patch 19), so a memory access's address is not copied by a movl before
// its bounds check. f(p) = load(p) + load8_u(p+1), the second address a
// sum: upstream extended each address into a register of its own
// (`movzx.lq %a, %b`, then `lea 4(%b)` for the check and `(%base,%b)`
// for the access).
func TestZeroExtensionIsTheRegister(t *testing.T) {
	m := &wasm.Module{
		TypeSection:     []wasm.FunctionType{{Params: []wasm.ValueType{wasm.ValueTypeI32}, Results: []wasm.ValueType{wasm.ValueTypeI32}}},
		MemorySection:   &wasm.Memory{Min: 1, Cap: 1, Max: 1},
		FunctionSection: []wasm.Index{0},
		CodeSection: []wasm.Code{{Body: []byte{
			wasm.OpcodeLocalGet, 0, wasm.OpcodeI32Load, 2, 0,
			wasm.OpcodeLocalGet, 0, wasm.OpcodeI32Const, 1, wasm.OpcodeI32Add, wasm.OpcodeI32Load8U, 0, 0,
			wasm.OpcodeI32Add, wasm.OpcodeEnd,
		}}},
	}
	listing := compileOne(t, m, 0).Format()
	if zx := regexp.MustCompile(`movzx\.lq %\w+, %\w+`).FindAllString(listing, -1); len(zx) > 0 {
		t.Errorf("addresses extended into registers of their own: %q\n%s", zx, listing)
	}
	// Each access still has its check: the end of the access (lea), a
	// compare with the length, a trap.
	if n := len(regexp.MustCompile(`lea \d+\(%\w+\), %\w+\n\s*cmpq %\w+, %\w+\n\s*trap_if b`).FindAllString(listing, -1)); n != 2 {
		t.Errorf("%d bounds checks, want 2:\n%s", n, listing)
	}
}
