package amd64

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/backend"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/frontend"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/ssa"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/wazevoapi"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

// The prologue's stack bound check (wasmbox patch 17): after `push rbp;
// mov rbp, rsp`, a function that needs at most StackCheckMargin bytes of
// stack compares RSP with the stack's bottom and branches forward with
// jbe, one needing more subtracts the excess first and adds it back with
// lea; the jbe jumps after the function's body to a grow path that stores
// the function's required size, calls the grow trampoline and jumps back
// to the instruction after the jbe. No inline grow call, no ja.
func TestStackCheckPrologue(t *testing.T) {
	const (
		opLocalSet = 0x21
		opCall     = 0x10
		opI32Add   = 0x6a
		bigLocals  = 1200 // live across a call: spilled, more than 4096 bytes of frame
	)
	i32 := wasm.ValueTypeI32
	// small(a) = a + 1
	small := []byte{wasm.OpcodeLocalGet, 0, wasm.OpcodeI32Const, 1, opI32Add, wasm.OpcodeEnd}
	// big(a): l_k = a + k for each k, a call of big(a), then the sum of the
	// call's result and every l_k.
	var big []byte
	uleb := func(v uint32) (out []byte) {
		for {
			b := byte(v & 0x7f)
			v >>= 7
			if v == 0 {
				return append(out, b)
			}
			out = append(out, b|0x80)
		}
	}
	for k := uint32(1); k <= bigLocals; k++ {
		big = append(big, wasm.OpcodeLocalGet, 0, wasm.OpcodeI32Const)
		big = append(big, uleb(k)...) // k < 2^13: a positive sleb128 too
		big = append(big, opI32Add, opLocalSet)
		big = append(big, uleb(k)...)
	}
	big = append(big, wasm.OpcodeLocalGet, 0, opCall, 1)
	for k := uint32(1); k <= bigLocals; k++ {
		big = append(big, wasm.OpcodeLocalGet)
		big = append(big, uleb(k)...)
		big = append(big, opI32Add)
	}
	big = append(big, wasm.OpcodeEnd)

	m := &wasm.Module{
		TypeSection:     []wasm.FunctionType{{Params: []wasm.ValueType{i32}, Results: []wasm.ValueType{i32}}},
		FunctionSection: []wasm.Index{0, 0},
		CodeSection: []wasm.Code{
			{Body: small},
			{Body: big, LocalTypes: slices.Repeat([]wasm.ValueType{i32}, bigLocals)},
		},
	}
	for fidx, excess := range []bool{false, true} {
		ctx := context.Background()
		mach := NewBackend().(*machine)
		b := ssa.NewBuilder()
		be := backend.NewCompiler(ctx, mach, b)
		offset := wazevoapi.NewModuleContextOffsetData(m, false)
		fe := frontend.NewFrontendCompiler(m, b, &offset, false, false, false)
		fe.Init(wasm.Index(fidx), 0, &m.TypeSection[0], m.CodeSection[fidx].LocalTypes, m.CodeSection[fidx].Body, false, 0)
		be.Init()
		fe.LowerToSSA()
		b.RunPasses()
		code, _, err := be.Compile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		required := mach.requiredStackSize()
		if excess != (required > wazevoapi.StackCheckMargin) {
			t.Fatalf("function %d needs %d bytes of stack: the test wants it %s the margin %d",
				fidx, required, map[bool]string{false: "within", true: "beyond"}[excess], wazevoapi.StackCheckMargin)
		}

		for cur := mach.rootInstr; cur != nil; cur = cur.next {
			if cur.kind == callIndirect || cur.kind == jmpIf && cond(cur.u1) == condNBE {
				t.Errorf("function %d: %s (an inline grow path?)", fidx, cur)
			}
		}

		// push rbp; mov rbp, rsp
		want := []byte{0x55, 0x48, 0x89, 0xe5}
		k := uint32(required - wazevoapi.StackCheckMargin)
		if excess {
			want = append(want, 0x48, 0x81, 0xec) // sub rsp, K
			want = binary.LittleEndian.AppendUint32(want, k)
		}
		want = append(want, 0x48, 0x3b, 0x60, 0x28) // cmp rsp, [rax + 0x28]
		if excess {
			want = append(want, 0x48, 0x8d, 0xa4, 0x24) // lea rsp, [rsp + K]
			want = binary.LittleEndian.AppendUint32(want, k)
		}
		want = append(want, 0x0f, 0x86) // jbe rel32
		if len(code) < len(want)+4 || !bytes.Equal(code[:len(want)], want) {
			t.Errorf("function %d: the prologue is\n% x\nwant\n% x", fidx, code[:min(len(code), len(want)+4)], want)
			continue
		}
		cont := int64(len(want) + 4)
		grow := cont + int64(int32(binary.LittleEndian.Uint32(code[len(want):])))
		if len(mach.stackGrowPaths) != 1 || mach.stackGrowPaths[0].contOffset != cont {
			t.Fatalf("function %d: grow paths %+v, want one at %d", fidx, mach.stackGrowPaths, cont)
		}
		// The grow path is after every block of the body: after the last ret.
		lastRet := bytes.LastIndexByte(code[:grow], 0xc3)
		if lastRet < 0 || grow <= cont || bytes.Contains(code[lastRet+1:grow], []byte{0xc3}) {
			t.Errorf("function %d: the jbe jumps to %d (code of %d bytes)", fidx, grow, len(code))
		}
		// mov qword [rax + 0x40], N; call [rax + 0x50]; jmp cont
		path := []byte{0x48, 0xc7, 0x40, 0x40}
		path = binary.LittleEndian.AppendUint32(path, uint32(required))
		path = append(path, 0xff, 0x50, 0x50, 0xe9)
		if int(grow)+len(path)+4 > len(code) || !bytes.Equal(code[grow:grow+int64(len(path))], path) {
			t.Errorf("function %d: the grow path is\n% x\nwant\n% x", fidx, code[grow:min(int64(len(code)), grow+int64(len(path)))], path)
			continue
		}
		end := grow + int64(len(path)) + 4
		if back := end + int64(int32(binary.LittleEndian.Uint32(code[end-4:]))); back != cont {
			t.Errorf("function %d: the grow path jumps back to %d, want %d", fidx, back, cont)
		}
	}
}
