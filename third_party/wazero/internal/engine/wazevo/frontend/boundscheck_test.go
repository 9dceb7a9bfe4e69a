package frontend

import (
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/ssa"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/wazevoapi"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/leb128"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

// lowerLoad lowers `i32.const addr; i32.load offset=off` in a module whose
// memory has min pages (imported when imported is set) and returns the
// SSA text.
func lowerLoad(t *testing.T, min uint32, imported bool, addr int32, off uint32) string {
	t.Helper()
	body := append([]byte{wasm.OpcodeI32Const}, leb128.EncodeInt32(addr)...)
	body = append(body, wasm.OpcodeI32Load, 2)
	body = append(body, leb128.EncodeUint32(off)...)
	body = append(body, wasm.OpcodeEnd)
	m := &wasm.Module{
		TypeSection:     []wasm.FunctionType{{Results: []wasm.ValueType{wasm.ValueTypeI32}}},
		FunctionSection: []wasm.Index{0},
		CodeSection:     []wasm.Code{{Body: body}},
	}
	if imported {
		m.ImportSection = []wasm.Import{{Type: wasm.ExternTypeMemory, Module: "env", Name: "memory", DescMem: &wasm.Memory{Min: min, Max: 10}}}
		m.ImportMemoryCount = 1
	} else {
		m.MemorySection = &wasm.Memory{Min: min, Max: 10}
	}
	b := ssa.NewBuilder()
	offset := wazevoapi.NewModuleContextOffsetData(m, false)
	c := NewFrontendCompiler(m, b, &offset, false, false, false)
	c.Init(0, 0, &m.TypeSection[0], nil, body, false, 0)
	c.LowerToSSA()
	return b.Format()
}

// A load at a constant address that ends within the memory's minimum size
// has no bounds check; every other load keeps it (wasmbox patch 13).
func TestConstantAddressBoundsCheck(t *testing.T) {
	const page = 65536
	for _, tc := range []struct {
		name     string
		min      uint32
		imported bool
		addr     int32
		off      uint32
		checked  bool
	}{
		{"static data", 1, false, 1024, 0, false},
		{"last word of the minimum", 1, false, page - 4, 0, false},
		{"offset within the minimum", 1, false, 0, page - 4, false},
		{"one byte past the minimum", 1, false, page - 3, 0, true},
		{"offset past the minimum", 1, false, 0, page, true},
		{"address and offset past the minimum", 2, false, page, page, true},
		{"negative constant is a high address", 1, false, -4, 0, true},
		{"imported memory", 1, true, 1024, 0, true},
		{"no minimum", 0, false, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := lowerLoad(t, tc.min, tc.imported, tc.addr, tc.off)
			if got := strings.Contains(s, "ExitIfTrue "); got != tc.checked {
				t.Errorf("bounds check present %v, want %v:\n%s", got, tc.checked, s)
			}
		})
	}
}
