package runtime_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/wasi"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// The review of patch 25 (a helper session) found these doors; each test
// crashed the host with SIGSEGV, or hung, before the fix.

// poker's export poke stores once, with no loop (and so no termination
// check) before the store.
func poker() []byte {
	body := runtimetest.Cat(runtimetest.I32Const(0), runtimetest.I32Const(1), []byte{0x36, 0x02, 0x00})
	return runtimetest.Module{
		MemoryMin: 2, Globals: []int32{65536}, GlobalExports: []string{"__stack_pointer"},
		Funcs: []runtimetest.Func{{Type: runtimetest.FuncType{}, Export: "poke", Body: body}},
	}.Encode()
}

func imageInstance(t *testing.T, rt *runtime.Runtime, m *runtime.Module, img *runtime.MemoryImage, cfg preview1.Config) *runtime.Instance {
	t.Helper()
	st, err := preview1.NewState(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	in, err := rt.InstantiateImage(context.Background(), m, img, runtime.InstanceOptions{WASI: st})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func pokerImage(t *testing.T) (*runtime.Runtime, *runtime.Module, *runtime.MemoryImage) {
	t.Helper()
	rt := newRuntime(t, runtime.Config{DisableCache: true})
	m := compile(t, rt, "poker", poker())
	img, err := rt.FreshImage(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	return rt, m, img
}

// An instance idle when its runtime is closed is dead: its memory, its
// image and its calls are refused, never run on the released memory.
func TestIdleInstanceAfterRuntimeClose(t *testing.T) {
	ctx := context.Background()
	rt, m, img := pokerImage(t)
	in := imageInstance(t, rt, m, img, preview1.Config{})
	if _, err := in.Call(ctx, "poke"); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := in.MemoryImageSince(0, nil); !errors.Is(err, runtime.ErrInstanceDead) {
		t.Errorf("MemoryImageSince: %v, want ErrInstanceDead", err)
	}
	if mem := in.Memory(); mem != nil {
		t.Errorf("Memory is not nil")
	}
	if _, err := in.Call(ctx, "poke"); !errors.Is(err, runtime.ErrInstanceDead) {
		t.Errorf("Call: %v, want ErrInstanceDead", err)
	}
	if n := rt.LiveMemories(); n != 0 {
		t.Errorf("%d live memories", n)
	}
}

// Close racing the entry of a call, and an image being taken.
func TestCloseRacesCallAndImage(t *testing.T) {
	ctx := context.Background()
	rt, m, img := pokerImage(t)
	for i := 0; i < 500; i++ {
		in := imageInstance(t, rt, m, img, preview1.Config{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for {
				if _, err := in.Call(ctx, "poke"); err != nil {
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for {
				if _, err := in.MemoryImageSince(0, nil); err != nil {
					return
				}
			}
		}()
		if i%2 == 1 {
			time.Sleep(50 * time.Microsecond)
		}
		in.Close(ctx)
		wg.Wait()
	}
	if n := rt.LiveMemories(); n != 0 {
		t.Errorf("%d live memories", n)
	}
}

// A call blocked in a host function (a read of a pipe nobody writes)
// ends when its instance is closed, and its memory is released.
func TestCloseEndsBlockedCall(t *testing.T) {
	i32 := byte(0x7f)
	body := runtimetest.Cat(
		runtimetest.I32Const(0), runtimetest.I32Const(16), []byte{0x36, 0x02, 0x00}, // iov.buf = 16
		runtimetest.I32Const(4), runtimetest.I32Const(1), []byte{0x36, 0x02, 0x00}, // iov.len = 1
		runtimetest.I32Const(0), runtimetest.I32Const(0), runtimetest.I32Const(1), runtimetest.I32Const(32),
		runtimetest.Call(0), []byte{runtimetest.OpDrop})
	mod := runtimetest.Module{
		Imports: []runtimetest.Import{{Module: "wasi_snapshot_preview1", Name: "fd_read",
			Type: runtimetest.FuncType{Params: []byte{i32, i32, i32, i32}, Results: []byte{i32}}}},
		MemoryMin: 2, Globals: []int32{65536}, GlobalExports: []string{"__stack_pointer"},
		Funcs: []runtimetest.Func{{Type: runtimetest.FuncType{}, Export: "read", Body: body}},
	}.Encode()
	ctx := context.Background()
	rt := newRuntime(t, runtime.Config{DisableCache: true})
	m := compile(t, rt, "reader", mod)
	img, err := rt.FreshImage(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := wasi.NewPipe(ctx)
	defer pw.Close()
	in := imageInstance(t, rt, m, img, preview1.Config{Stdin: pr})
	done := make(chan error, 1)
	go func() { _, err := in.Call(ctx, "read"); done <- err }()
	time.Sleep(50 * time.Millisecond)
	in.Close(ctx)
	select {
	case err := <-done:
		if !errors.Is(err, runtime.ErrInstanceDead) {
			t.Errorf("the call ended with %v, want ErrInstanceDead", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the call blocked in fd_read did not end after Close")
	}
	if n := rt.LiveMemories(); n != 0 {
		t.Errorf("%d live memories", n)
	}
}
