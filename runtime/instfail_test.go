package runtime_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

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

// TestStartEndedInHostCallFreesMemory: a start function ended by its
// deadline while it waits in a host call (poll_oneoff) leaves no memory
// live, in a run and in a forked child (whose memory is mapped from the
// parent's image). With wazero's check, its context watcher closed the
// instance first and left the memory to FailIfClosed, which nothing
// called on an instance that was never handed back: 4 of 50 runs, and 3
// of 30 forked children, leaked their memory (a review of patch 26).
func TestStartEndedInHostCallFreesMemory(t *testing.T) {
	i32 := runtimetest.I32
	c := runtimetest.I32Const
	// A poll_oneoff subscription at 0: the monotonic clock, an hour.
	sub := make([]byte, 48)
	binary.LittleEndian.PutUint32(sub[16:], 1)
	binary.LittleEndian.PutUint64(sub[24:], 3600*1e9)
	pollOneoff := runtimetest.Import{Module: "wasi_snapshot_preview1", Name: "poll_oneoff",
		Type: runtimetest.FuncType{Params: []byte{i32, i32, i32, i32}, Results: []byte{i32}}}
	sleep := runtimetest.Cat(c(0), c(64), c(1), c(128))
	startFn := uint32(1)
	sleeper := runtimetest.Module{MemoryMin: 512, Data: sub, Start: &startFn, Imports: []runtimetest.Import{pollOneoff},
		Funcs: []runtimetest.Func{{Type: runtimetest.FuncType{}, Body: runtimetest.Cat(sleep, runtimetest.Call(0), []byte{runtimetest.OpDrop})}}}.Encode()
	// A parent that forks: the child's start function (the parent's
	// memory, so the flag at 1000 set) sleeps.
	forkStart := uint32(2)
	forker := runtimetest.Module{MemoryMin: 16, Data: sub, Start: &forkStart,
		Globals: []int32{65536}, GlobalExports: []string{"__stack_pointer"},
		Imports: []runtimetest.Import{
			{Module: "wasmbox", Name: "fork", Type: runtimetest.FuncType{Params: []byte{i32}, Results: []byte{i32}}},
			pollOneoff},
		Funcs: []runtimetest.Func{
			{Type: runtimetest.FuncType{}, Body: runtimetest.Cat(c(1000), []byte{0x28, 2, 0, runtimetest.OpIf, runtimetest.OpBlockVoid},
				sleep, runtimetest.Call(1), []byte{runtimetest.OpDrop, runtimetest.OpEnd})},
			{Type: runtimetest.FuncType{}, Export: "_start", Body: runtimetest.Cat(c(1000), c(1), []byte{0x36, 2, 0},
				c(200), runtimetest.Call(0), []byte{runtimetest.OpIf, runtimetest.OpBlockVoid, runtimetest.OpUnreachable, runtimetest.OpEnd})},
			{Type: runtimetest.FuncType{}, Export: "wasmbox_fork_child"}}}.Encode()
	for name, tc := range map[string]struct {
		bin      []byte
		runs     int
		deadline time.Duration
	}{"start": {sleeper, 50, 5 * time.Millisecond}, "forked child's start": {forker, 30, 40 * time.Millisecond}} {
		t.Run(name, func(t *testing.T) {
			for _, cfg := range []runtime.Config{{DisableCache: true}, {DisableCache: true, WazeroKillCheck: true}} {
				rt := newRuntime(t, cfg)
				m := compile(t, rt, name, tc.bin)
				for range tc.runs {
					ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
					if err := rt.Run(ctx, m, wazero.NewModuleConfig(), runtime.RunOptions{}); err == nil {
						t.Error("the run succeeded")
					}
					cancel()
				}
				if !settle(func() bool { return rt.LiveMemories() == 0 }) {
					t.Errorf("%d memories live after %d runs ended at their deadline (WazeroKillCheck %t)", rt.LiveMemories(), tc.runs, cfg.WazeroKillCheck)
				}
			}
		})
	}
}
