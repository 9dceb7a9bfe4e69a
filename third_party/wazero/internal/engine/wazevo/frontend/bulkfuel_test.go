package frontend

import (
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/ssa"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/wazevoapi"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

// bulkModule is fuelModule with a memory and, when export, global 1
// exported as the fuel (initial value 65536).
func bulkModule(body []byte, export bool) *wasm.Module {
	m := fuelModule(body)
	m.MemorySection = &wasm.Memory{Min: 1, Max: 65536}
	m.GlobalSection[0].Init = wasm.ConstantExpression{Data: []byte{wasm.OpcodeI32Const, 0x80, 0x80, 0x04, wasm.OpcodeEnd}}
	if export {
		m.ExportSection = []wasm.Export{{Type: wasm.ExternTypeGlobal, Name: fuelExport, Index: 1}}
	}
	return m
}

func lowerBulk(t *testing.T, m *wasm.Module, enabled bool) string {
	t.Helper()
	b := ssa.NewBuilder()
	offset := wazevoapi.NewModuleContextOffsetData(m, false)
	c := NewFrontendCompiler(m, b, &offset, false, false, false).EnableFuelCheck(enabled)
	c.Init(0, 2, &m.TypeSection[2], nil, m.CodeSection[0].Body, false, 0)
	c.LowerToSSA()
	return b.Format()
}

// wasmbox patch 27: in a module metered by wasmbin.InstrumentLoops, a
// memory.copy and a memory.fill run in chunks with a fuel check after
// each (the copy's forward and backward loops: two; the fill's rest: one),
// of the exported fuel global, refilled with its initial value. Without
// the export, or with the fuel check off, they are one memmove as before.
func TestBulkChunksCheckFuel(t *testing.T) {
	args := []byte{wasm.OpcodeI32Const, 0, wasm.OpcodeI32Const, 16, wasm.OpcodeI32Const, 50}
	cp := append(append([]byte{}, args...), wasm.OpcodeMiscPrefix, wasm.OpcodeMiscMemoryCopy, 0, 0, wasm.OpcodeEnd)
	fill := append(append([]byte{}, args...), wasm.OpcodeMiscPrefix, wasm.OpcodeMiscMemoryFill, 0, wasm.OpcodeEnd)
	for _, tc := range []struct {
		name            string
		body            []byte
		export, enabled bool
		fuel            int
	}{
		{"copy", cp, true, true, 2},
		{"fill", fill, true, true, 1},
		{"copy, no export", cp, false, true, 0},
		{"fill, no export", fill, false, true, 0},
		{"copy, disabled", cp, true, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := lowerBulk(t, bulkModule(tc.body, tc.export), tc.enabled)
			if testing.Verbose() {
				t.Log(s)
			}
			if got := strings.Count(s, "FuelCheck "); got != tc.fuel {
				t.Errorf("%d FuelChecks, want %d:\n%s", got, tc.fuel, s)
			}
			if tc.fuel > 0 && !strings.Contains(s, "yield=0, refill=65536") {
				t.Errorf("the check is not of import 0 refilling 65536:\n%s", s)
			}
		})
	}
}
