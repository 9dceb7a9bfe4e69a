package frontend

import (
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/ssa"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/wazevoapi"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/leb128"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

// fuelMeter is the sequence wasmbin.InstrumentLoops inserts, for the fuel
// global g, the yield import y and the refill k.
func fuelMeter(g, y uint32, k int32) []byte {
	b := append([]byte{wasm.OpcodeGlobalGet}, leb128.EncodeUint32(g)...)
	b = append(b, wasm.OpcodeI32Const, 1, wasm.OpcodeI32Sub, wasm.OpcodeGlobalSet)
	b = append(b, leb128.EncodeUint32(g)...)
	b = append(b, wasm.OpcodeGlobalGet)
	b = append(b, leb128.EncodeUint32(g)...)
	b = append(b, wasm.OpcodeI32Eqz, wasm.OpcodeIf, 0x40, wasm.OpcodeCall)
	b = append(b, leb128.EncodeUint32(y)...)
	b = append(b, wasm.OpcodeDrop, wasm.OpcodeI32Const)
	b = append(b, leb128.EncodeInt32(k)...)
	b = append(b, wasm.OpcodeGlobalSet)
	b = append(b, leb128.EncodeUint32(g)...)
	return append(b, wasm.OpcodeEnd)
}

// fuelModule has an imported global (index 0), the imports 0 (() -> i32)
// and 1 (() -> i64), two mutable i32 globals (1 and 2) and one local
// function (index 2) whose body is given.
func fuelModule(body []byte) *wasm.Module {
	return &wasm.Module{
		TypeSection: []wasm.FunctionType{
			{Results: []wasm.ValueType{wasm.ValueTypeI32}},
			{Results: []wasm.ValueType{wasm.ValueTypeI64}},
			{},
		},
		ImportSection: []wasm.Import{
			{Type: wasm.ExternTypeGlobal, Module: "env", Name: "g", DescGlobal: wasm.GlobalType{ValType: wasm.ValueTypeI32, Mutable: true}},
			{Type: wasm.ExternTypeFunc, Module: "wasi_snapshot_preview1", Name: "sched_yield", DescFunc: 0},
			{Type: wasm.ExternTypeFunc, Module: "env", Name: "y64", DescFunc: 1},
		},
		ImportFunctionCount: 2,
		ImportGlobalCount:   1,
		GlobalSection: []wasm.Global{
			{Type: wasm.GlobalType{ValType: wasm.ValueTypeI32, Mutable: true}},
			{Type: wasm.GlobalType{ValType: wasm.ValueTypeI32, Mutable: true}},
		},
		FunctionSection: []wasm.Index{2},
		CodeSection:     []wasm.Code{{Body: body}},
	}
}

func lowerFuel(t *testing.T, body []byte, enabled bool) string {
	t.Helper()
	m := fuelModule(body)
	b := ssa.NewBuilder()
	offset := wazevoapi.NewModuleContextOffsetData(m, false)
	c := NewFrontendCompiler(m, b, &offset, false, false, false).EnableFuelCheck(enabled)
	c.Init(0, 2, &m.TypeSection[2], nil, body, false, 0)
	c.LowerToSSA()
	return b.Format()
}

// The metering of wasmbin.InstrumentLoops lowers to one FuelCheck (wasmbox
// patch 14) when enabled, and only in its exact shape: anything else is
// lowered instruction by instruction, with the inline call.
func TestFuelCheckLowering(t *testing.T) {
	meter := fuelMeter(1, 0, 65536)
	for _, tc := range []struct {
		name    string
		body    []byte
		enabled bool
		fuel    int // FuelChecks expected
	}{
		{"meter", append(append([]byte{}, meter...), wasm.OpcodeEnd), true, 1},
		{"two meters in a loop", append(append(append([]byte{wasm.OpcodeLoop, 0x40}, meter...), meter...), wasm.OpcodeEnd, wasm.OpcodeEnd), true, 2},
		{"disabled", append(append([]byte{}, meter...), wasm.OpcodeEnd), false, 0},
		{"imported global", append(fuelMeter(0, 0, 65536), wasm.OpcodeEnd), true, 0},
		{"yield returns i64", append(fuelMeter(1, 1, 65536), wasm.OpcodeEnd), true, 0},
		{"decrement by 2", append(replaceAt(meter, 3, 2), wasm.OpcodeEnd), true, 0},
		{"other global re-read", append(replaceAt(meter, 8, 2), wasm.OpcodeEnd), true, 0},
		{"other global refilled", append(replaceAt(meter, len(meter)-2, 2), wasm.OpcodeEnd), true, 0},
		{"unreachable", append(append([]byte{wasm.OpcodeUnreachable}, meter...), wasm.OpcodeEnd), true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := lowerFuel(t, tc.body, tc.enabled)
			if got := strings.Count(s, "FuelCheck "); got != tc.fuel {
				t.Errorf("%d FuelChecks, want %d:\n%s", got, tc.fuel, s)
			}
			if tc.fuel > 0 {
				if strings.Contains(s, "CallIndirect") || !strings.Contains(s, "yield=0, refill=65536") {
					t.Errorf("the meter was not lowered to a FuelCheck of import 0 refilling 65536:\n%s", s)
				}
			} else if tc.name != "unreachable" && !strings.Contains(s, "CallIndirect") {
				t.Errorf("no call of the yield:\n%s", s)
			}
		})
	}
}

func replaceAt(b []byte, i int, v byte) []byte {
	out := append([]byte{}, b...)
	out[i] = v
	return out
}

// wasmbox patch 18: after a fuel check the memory's base and length and the
// mutable globals are forgotten, not reloaded: the next use on the path
// loads them. Here the meter is followed by an if whose two arms load from
// memory (a word copied): the base is loaded in each arm, not in the meter's block (where
// it would live from the check into both arms; at CPython's dispatch it
// was stored to the stack at every opcode). The block of the FuelCheck
// loads only global 2, the if's condition.
func TestFuelCheckForgetsMemory(t *testing.T) {
	body := append([]byte{}, fuelMeter(1, 0, 65536)...)
	body = append(body,
		wasm.OpcodeGlobalGet, 2, wasm.OpcodeIf, 0x40,
		wasm.OpcodeI32Const, 8, wasm.OpcodeI32Const, 0, wasm.OpcodeI32Load, 2, 0, wasm.OpcodeI32Store, 2, 0,
		wasm.OpcodeElse,
		wasm.OpcodeI32Const, 8, wasm.OpcodeI32Const, 4, wasm.OpcodeI32Load, 2, 0, wasm.OpcodeI32Store, 2, 0,
		wasm.OpcodeEnd, wasm.OpcodeEnd)
	m := fuelModule(body)
	m.MemorySection = &wasm.Memory{Min: 1, Cap: 1, Max: 1}
	b := ssa.NewBuilder()
	offset := wazevoapi.NewModuleContextOffsetData(m, false)
	c := NewFrontendCompiler(m, b, &offset, false, false, false).EnableFuelCheck(true)
	c.Init(0, 2, &m.TypeSection[2], nil, body, false, 0)
	c.LowerToSSA()
	b.RunPasses()
	s := b.Format()
	i := strings.Index(s, "FuelCheck ")
	if i < 0 {
		t.Fatalf("no FuelCheck:\n%s", s)
	}
	blk := s[i:]
	if j := strings.Index(blk, "\nblk"); j >= 0 {
		blk = blk[:j]
	}
	if n := strings.Count(blk, "= Load "); n != 1 {
		t.Errorf("%d loads after the FuelCheck in its block, want 1 (global 2):\n%s", n, s)
	}
	if n := strings.Count(s, "= Load module_ctx, 0x8\n"); n != 2 {
		t.Errorf("%d loads of the base, want 2 (one in each arm):\n%s", n, s)
	}
}
