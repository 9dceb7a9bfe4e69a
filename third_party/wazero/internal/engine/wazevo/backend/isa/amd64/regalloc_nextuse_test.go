package amd64

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/backend"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/frontend"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/ssa"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/wazevoapi"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

// compileOne compiles function idx of m with the frontend (fuel checks on,
// as wasmbox runs metered modules) and this backend, and returns the
// machine after encoding.
func compileOne(t *testing.T, m *wasm.Module, idx wasm.Index) *machine {
	t.Helper()
	ctx := context.Background()
	mach := NewBackend().(*machine)
	b := ssa.NewBuilder()
	be := backend.NewCompiler(ctx, mach, b)
	offset := wazevoapi.NewModuleContextOffsetData(m, false)
	fe := frontend.NewFrontendCompiler(m, b, &offset, false, false, false).EnableFuelCheck(true)
	ti := m.FunctionSection[idx]
	fe.Init(idx, ti, &m.TypeSection[ti], m.CodeSection[idx].LocalTypes, m.CodeSection[idx].Body, false, 0)
	be.Init()
	fe.LowerToSSA()
	b.RunPasses()
	if _, _, err := be.Compile(ctx); err != nil {
		t.Fatal(err)
	}
	return mach
}

var spillSlotRe = regexp.MustCompile(`^\s*mov\.[lq] %\w+, (\d+\(%rsp\))$`)

// storedThenReloaded returns the instructions of the listing (machine.Format)
// that reload a spill slot that the same block stored to earlier with no
// call in between: a value that was put on the stack while it was about to
// be used again.
func storedThenReloaded(listing string) (bad []string) {
	stored := map[string]bool{}
	for _, line := range strings.Split(listing, "\n") {
		if strings.HasPrefix(line, "L") || strings.Contains(line, "call") {
			stored = map[string]bool{}
			continue
		}
		if m := spillSlotRe.FindStringSubmatch(line); m != nil {
			stored[m[1]] = true
			continue
		}
		for slot := range stored {
			if strings.HasSuffix(strings.TrimSpace(strings.SplitN(line, ",", 2)[0]), slot) {
				bad = append(bad, strings.TrimSpace(line))
			}
		}
	}
	return bad
}

// wasmbox patch 18: when every register is taken, the allocator takes the
// one whose value is used last, or not at all, in the rest of the block
// (upstream took the first register in its order among the values live out
// of the block, also when the value was used by the next instruction: a
// value was stored to the stack and reloaded at once). pressure(p0..p11)
// loads t from p0, stores it through p1, p2 and p3 (in a block of its own),
// and returns the sum of the twelve parameters and t: the parameters, t,
// the two contexts and the memory's base and length are live out of the
// first block, more values than registers.
func TestEvictionByNextUse(t *testing.T) {
	params := make([]wasm.ValueType, 12)
	for i := range params {
		params[i] = wasm.ValueTypeI32
	}
	body := []byte{
		wasm.OpcodeLocalGet, 0, wasm.OpcodeI32Load, 2, 0, wasm.OpcodeLocalSet, 12,
		wasm.OpcodeLocalGet, 1, wasm.OpcodeLocalGet, 12, wasm.OpcodeI32Store, 2, 0,
		wasm.OpcodeLocalGet, 2, wasm.OpcodeLocalGet, 12, wasm.OpcodeI32Store, 2, 4,
		wasm.OpcodeLocalGet, 12, wasm.OpcodeIf, 0x40,
		wasm.OpcodeLocalGet, 3, wasm.OpcodeLocalGet, 12, wasm.OpcodeI32Store, 2, 8,
		wasm.OpcodeEnd,
		wasm.OpcodeLocalGet, 12,
	}
	for i := byte(0); i < 12; i++ {
		body = append(body, wasm.OpcodeLocalGet, i, wasm.OpcodeI32Add)
	}
	body = append(body, wasm.OpcodeEnd)
	m := &wasm.Module{
		TypeSection:     []wasm.FunctionType{{Params: params, Results: []wasm.ValueType{wasm.ValueTypeI32}}},
		MemorySection:   &wasm.Memory{Min: 1, Cap: 1, Max: 1},
		FunctionSection: []wasm.Index{0},
		CodeSection:     []wasm.Code{{Body: body, LocalTypes: []wasm.ValueType{wasm.ValueTypeI32}}},
	}
	listing := compileOne(t, m, 0).Format()
	if bad := storedThenReloaded(listing); len(bad) > 0 {
		t.Errorf("values stored to the stack and reloaded in the same block: %q\n%s", bad, listing)
	}
}
