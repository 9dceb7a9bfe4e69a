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

// liveInstance instantiates m with a WASI state of cfg, both closed when
// the test ends (a test may close them before).
func liveInstance(t *testing.T, rt *runtime.Runtime, m *runtime.Module, cfg preview1.Config) *runtime.Instance {
	t.Helper()
	st, err := preview1.NewState(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	in, err := rt.Instantiate(context.Background(), m, runtime.InstanceOptions{WASI: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(context.Background()) })
	return in
}

// imageOf compiles bin in a runtime of its own and makes its fresh image,
// and an instance of it once, so that the image's mapped form (kept with
// the runtime) exists before a test counts descriptors and mappings.
func imageOf(t *testing.T, name string, bin []byte) (*runtime.Runtime, *runtime.Module, *runtime.MemoryImage) {
	t.Helper()
	rt := newRuntime(t, runtime.Config{DisableCache: true})
	m := compile(t, rt, name, bin)
	img, err := rt.FreshImage(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	imageInstance(t, rt, m, img, preview1.Config{}).Close(context.Background())
	return rt, m, img
}

// waitClosedCall waits for the result of a call whose instance was
// closed under it: an error wrapping ErrInstanceDead.
func waitClosedCall(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, runtime.ErrInstanceDead) {
			t.Fatalf("the call ended with %v after its instance was closed, want ErrInstanceDead", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the call did not end after its instance was closed")
	}
}

// TestCloseDuringCall: closing an instance, or the whole runtime, while a
// call of it is writing its memory stops the call and only then releases
// the memory. The memory of an instance started from an image is a
// mapping: released under the running guest, the guest's next store would
// fault the host process, or write into whatever the host mapped there
// next.
func TestCloseDuringCall(t *testing.T) {
	for _, whole := range []bool{false, true} {
		name := "instance"
		if whole {
			name = "runtime"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			fds, _ := openFDs(t)
			maps := snapshotMappings(t)
			rt, m, img := imageOf(t, "scribbler", runtimetest.Scribbler())
			if !whole {
				fds, _ = openFDs(t)
				maps = snapshotMappings(t)
			}
			for i := 0; i < 20; i++ {
				in := imageInstance(t, rt, m, img, preview1.Config{})
				done := make(chan error, 1)
				go func() {
					_, err := in.Call(ctx, "scribble")
					done <- err
				}()
				time.Sleep(time.Duration(1+i%5) * time.Millisecond)
				closeIt := in.Close
				if whole {
					closeIt = rt.Close
				}
				if err := closeIt(ctx); err != nil {
					t.Fatalf("close: %v", err)
				}
				waitClosedCall(t, done)
				if _, err := in.Call(ctx, "scribble"); !errors.Is(err, runtime.ErrInstanceDead) {
					t.Fatalf("a call after Close: %v, want ErrInstanceDead", err)
				}
				if whole {
					break
				}
			}
			checkReleased(t, rt, fds, maps)
		})
	}
}

// The review of patch 25 (a helper session) found the doors below; each
// test crashed the host with SIGSEGV, or hung, before the fix.

// An instance idle when its runtime is closed is dead: its memory, its
// image and its calls are refused, never run on the released memory.
func TestIdleInstanceAfterRuntimeClose(t *testing.T) {
	ctx := context.Background()
	fds, _ := openFDs(t)
	maps := snapshotMappings(t)
	rt, m, img := imageOf(t, "poker", poker())
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
	checkReleased(t, rt, fds, maps)
}

// Close racing the entry of a call, and an image being taken.
func TestCloseRacesCallAndImage(t *testing.T) {
	ctx := context.Background()
	rt, m, img := imageOf(t, "poker", poker())
	fds, _ := openFDs(t)
	maps := snapshotMappings(t)
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
	checkReleased(t, rt, fds, maps)
}

// ReadMemory and WriteMemory racing the instance's Close, and the
// runtime's: each either works on mapped memory or says the instance is
// dead. Reads through Memory had no such guard: a session reading its
// guest's answer while the runtime closed read unmapped memory (SIGSEGV)
// or called a nil Memory.
func TestCloseRacesMemoryAccess(t *testing.T) {
	ctx := context.Background()
	access := func(in *runtime.Instance, wg *sync.WaitGroup) {
		defer wg.Done()
		for {
			b, err := in.ReadMemory(0, 65536)
			if err == nil {
				err = in.WriteMemory(65536, b)
			}
			if err != nil {
				if !errors.Is(err, runtime.ErrInstanceDead) {
					t.Errorf("err = %v, want ErrInstanceDead", err)
				}
				return
			}
		}
	}
	// race runs access against closeIt, after a pause every other time.
	race := func(i int, in *runtime.Instance, closeIt func(context.Context) error) {
		var wg sync.WaitGroup
		wg.Add(1)
		go access(in, &wg)
		if i%2 == 1 {
			time.Sleep(50 * time.Microsecond)
		}
		closeIt(ctx)
		wg.Wait()
	}
	// The instance's Close.
	rt, m, img := imageOf(t, "poker", poker())
	fds, _ := openFDs(t)
	maps := snapshotMappings(t)
	for i := 0; i < 200; i++ {
		in := imageInstance(t, rt, m, img, preview1.Config{})
		race(i, in, in.Close)
	}
	checkReleased(t, rt, fds, maps)
	// The runtime's.
	for i := 0; i < 20; i++ {
		rt, m, img := imageOf(t, "poker", poker())
		race(i, imageInstance(t, rt, m, img, preview1.Config{}), rt.Close)
		if !settle(func() bool { return rt.LiveInstances() == 0 && rt.LiveMemories() == 0 }) {
			t.Errorf("live instances %d, memories %d", rt.LiveInstances(), rt.LiveMemories())
		}
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
	rt, m, img := imageOf(t, "reader", mod)
	fds, _ := openFDs(t)
	maps := snapshotMappings(t)
	pr, pw := wasi.NewPipe(ctx)
	defer pw.Close()
	in := imageInstance(t, rt, m, img, preview1.Config{Stdin: pr})
	done := make(chan error, 1)
	go func() { _, err := in.Call(ctx, "read"); done <- err }()
	time.Sleep(50 * time.Millisecond)
	in.Close(ctx)
	waitClosedCall(t, done)
	checkReleased(t, rt, fds, maps)
}

// An instance closed during a call holds its memory until the call
// returns (patch 25), and holds its budget as long: the budget is given
// back with the memory, not at Close, or other instances would be
// admitted against memory still in use. The guest fills 32 MiB at a
// time (one memory.fill, which no termination check interrupts), so the
// call outlives the Close for a while.
func TestClosedInstanceHoldsBudgetWithMemory(t *testing.T) {
	const pages = 512 // 32 MiB
	ctx := context.Background()
	rt := newRuntime(t, runtime.Config{DisableCache: true})
	m := compile(t, rt, "filler", bulkLoop(pages, false))
	b := runtime.NewBudget(64 << 20)
	held := 0
	for i := 0; i < 10; i++ {
		st, err := preview1.NewState(preview1.Config{})
		if err != nil {
			t.Fatal(err)
		}
		in, err := rt.Instantiate(ctx, m, runtime.InstanceOptions{WASI: st, Budget: b})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := in.Call(ctx, "run"); done <- err }()
		time.Sleep(5 * time.Millisecond)
		in.Close(ctx)
		// Read the budget first: a memory seen live after it was read
		// was live when it was read.
		used := b.Used()
		if rt.LiveMemories() > 0 {
			held++
			if used < pages*65536 {
				t.Errorf("round %d: the closed instance's memory is still live, but the budget holds %d bytes, want %d", i, used, pages*65536)
			}
		}
		waitClosedCall(t, done)
		st.Close()
		if n := b.Used(); n != 0 {
			t.Errorf("round %d: the budget holds %d bytes after the call ended", i, n)
		}
	}
	if held == 0 {
		t.Log("no Close came during a fill; nothing was checked")
	}
}

// bulkLoop's export run loops forever over one bulk instruction on all of
// its memory of pages pages: memory.fill, or memory.copy of its lower half
// to its upper half.
func bulkLoop(pages int32, copying bool) []byte {
	op := runtimetest.Cat(runtimetest.I32Const(0), runtimetest.I32Const(7), runtimetest.I32Const(pages*65536),
		[]byte{0xfc, 0x0b, 0x00}) // memory.fill
	if copying {
		op = runtimetest.Cat(runtimetest.I32Const(pages*32768), runtimetest.I32Const(0), runtimetest.I32Const(pages*32768),
			[]byte{0xfc, 0x0a, 0x00, 0x00}) // memory.copy
	}
	body := runtimetest.Cat([]byte{runtimetest.OpLoop, runtimetest.OpBlockVoid}, op,
		[]byte{runtimetest.OpBr, 0x00, runtimetest.OpEnd})
	return runtimetest.Module{
		MemoryMin: uint32(pages), Globals: []int32{65536}, GlobalExports: []string{"__stack_pointer"},
		Funcs: []runtimetest.Func{{Type: runtimetest.FuncType{}, Export: "run", Body: body}},
	}.Encode()
}

// A loop whose every iteration is one bulk instruction of 32 MiB (a few
// milliseconds) ends at its deadline, as any loop does: the fuel counted
// loop iterations alone, so Fuel of them (65536, minutes) ran before the
// host could end the guest, and a garbage collection of the host waited
// as long (wasmbin.InstrumentLoops now charges a bulk instruction for its
// size). The minute's watchdog is not a measure: the guest ends within
// milliseconds of its deadline.
func TestBulkLoopEndsAtDeadline(t *testing.T) {
	rt := newRuntime(t, runtime.Config{DisableCache: true})
	for _, copying := range []bool{false, true} {
		name := "memory.fill"
		if copying {
			name = "memory.copy"
		}
		t.Run(name, func(t *testing.T) {
			m := compile(t, rt, name, bulkLoop(512, copying))
			in := liveInstance(t, rt, m, preview1.Config{})
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := in.Call(ctx, "run"); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("the call ended with %v, want its deadline", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the call did not end a minute after its deadline")
			}
		})
	}
}
