package runtime_test

import (
	"context"
	"testing"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/third_party/wazero"
)

// TestFailedInstantiationFreesMemory: a module whose instantiation fails
// after its memory is made (a start function that traps; a data segment
// past the memory's end) leaves no memory live. wazero returned the error
// and dropped the instance, with its memory, which the runtime's allocator
// never freed: each run leaked the module's memory, 32 MiB here, for the
// life of the host.
func TestFailedInstantiationFreesMemory(t *testing.T) {
	start := uint32(0)
	trap := runtimetest.Module{MemoryMin: 512, Start: &start,
		Funcs: []runtimetest.Func{{Type: runtimetest.FuncType{}, Body: []byte{runtimetest.OpUnreachable}}}}.Encode()
	// A data segment of 1 byte, moved from 0 (where the encoder writes
	// it) to the end of the 32 MiB memory, so that it ends past it.
	past := runtimetest.Module{MemoryMin: 512, MemoryMax: 512, Data: []byte{1},
		Funcs: []runtimetest.Func{{Type: runtimetest.FuncType{}, Export: "_start"}}}.Encode()
	past = dataAt(t, past, 512*65536)
	for name, bin := range map[string][]byte{"start trap": trap, "data past the end": past} {
		t.Run(name, func(t *testing.T) {
			for _, cfg := range []runtime.Config{{DisableCache: true}, {DisableCache: true, WazeroKillCheck: true}} {
				rt := newRuntime(t, cfg)
				m := compile(t, rt, name, bin)
				for range 3 {
					if err := rt.Run(context.Background(), m, wazero.NewModuleConfig(), runtime.RunOptions{}); err == nil {
						t.Fatal("the run succeeded")
					} else {
						t.Log(err)
					}
				}
				if n := rt.LiveMemories(); n != 0 {
					t.Errorf("%d memories live after three failed runs (WazeroKillCheck %t)", n, cfg.WazeroKillCheck)
				}
			}
		})
	}
}

// dataAt rewrites the offset of bin's one data segment (written by
// runtimetest at i32.const 0) to off.
func dataAt(t *testing.T, bin []byte, off int32) []byte {
	t.Helper()
	// The data section is the last: id 11, size, count 1, flags 0,
	// i32.const 0, end, then the bytes.
	i := len(bin) - 1 - 1 - 4 // the byte, its length, end, 0, i32.const
	for ; i >= 0; i-- {
		if bin[i] == 11 && i+5 < len(bin) && bin[i+2] == 1 && bin[i+3] == 0 && bin[i+4] == runtimetest.OpI32Const && bin[i+5] == 0 {
			break
		}
	}
	if i < 0 {
		t.Fatal("no data section")
	}
	seg := runtimetest.Cat([]byte{1, 0}, runtimetest.I32Const(off), []byte{runtimetest.OpEnd}, bin[i+7:])
	out := append(append([]byte(nil), bin[:i]...), 11)
	out = runtimetest.ULEB(out, uint64(len(seg)))
	return append(out, seg...)
}
