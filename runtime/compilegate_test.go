package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// heavy is a module near the block-parameter cap as compiled (190 nested
// loops, each changing 1000 locals: 570,000 block parameters once every
// loop is metered, which adds a branch to each), allowed, and seconds of
// compile.
func heavy() []byte { return runtimetest.NestedLoops(190, 1000, true) }

// waitNoCompiles waits, under a watchdog, until no compile of the process
// is in flight.
func waitNoCompiles(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for runtime.CompilesInFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d compiles still in flight after 3 minutes", runtime.CompilesInFlight())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCompileTimeout: a compile belongs to its caller's context. Compile
// returns the context's error when it ends (a run's timeout) instead of
// finishing a compile of seconds first, and the compile stops: the
// module is never stored. Before, Compile returned the module seconds
// after the deadline, with either number of compilation workers.
func TestCompileTimeout(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprint(workers, " workers"), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{DisableCache: true, CompilationWorkers: workers})
			bin := heavy()
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			m, err := rt.Compile(ctx, "heavy", bin)
			if m != nil || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Compile past its deadline: %v, %v; want context.DeadlineExceeded", m, err)
			}
			waitNoCompiles(t)
			if rt.Cached(bin) {
				t.Fatal("the compile went on to its end after its deadline")
			}
		})
	}
}

// TestCompileCancel: a compile whose context is cancelled once it was
// admitted (by the reservation of WithCompileReserve, so without a race)
// stops before it compiles a function, returns context.Canceled, and
// releases its reservation; the module compiles later under a live
// context.
func TestCompileCancel(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprint(workers, " workers"), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{DisableCache: true, CompilationWorkers: workers})
			bin := runtimetest.NestedLoops(50, 100, true)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var reserved, released int
			ctx = runtime.WithCompileReserve(ctx, func(n uint64) (func(), error) {
				if want, err := rt.CompileCost(bin); err != nil || n != want {
					t.Errorf("reserved %d, CompileCost %d, %v", n, want, err)
				}
				reserved++
				cancel()
				return func() { released++ }, nil
			})
			if _, err := rt.Compile(ctx, "m", bin); !errors.Is(err, context.Canceled) {
				t.Fatalf("Compile cancelled when admitted: %v", err)
			}
			waitNoCompiles(t)
			if reserved != 1 || released != 1 {
				t.Fatalf("reserved %d times, released %d", reserved, released)
			}
			if rt.Cached(bin) {
				t.Fatal("the cancelled compile was stored")
			}
			if _, err := rt.Compile(context.Background(), "m", bin); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCompileQueue: compiles of the process are bounded by
// runtime.CompileMemory. A compile that does not fit waits in line only
// while its context lasts, and leaves with the context's error without
// ever being admitted; a module found in the disk cache is not compiled,
// so it waits for nothing.
func TestCompileQueue(t *testing.T) {
	dir := t.TempDir()
	rt := newRuntime(t, runtime.Config{CacheDir: dir, CompilationWorkers: 2})
	small := runtimetest.Exit(7)
	if _, err := rt.Compile(context.Background(), "small", small); err != nil {
		t.Fatal(err)
	}
	// Heavy compiles (different bytes) hold their admission until the
	// test lets them go, until the next one cannot fit.
	hold := make(chan struct{})
	var held []chan error
	var admittedBytes uint64
	var cancels []context.CancelFunc
	for k := 0; ; k++ {
		big := runtimetest.NestedLoops(190, 1000-k, true)
		cost, err := rt.CompileCost(big)
		if err != nil {
			t.Fatal(err)
		}
		if admittedBytes+cost > runtime.CompileMemory {
			break
		}
		admittedBytes += cost
		admitted := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cancels = append(cancels, cancel)
		ctx = runtime.WithCompileReserve(ctx, func(uint64) (func(), error) {
			close(admitted)
			<-hold
			return func() {}, nil
		})
		done := make(chan error, 1)
		go func() {
			_, err := rt.Compile(ctx, "held", big)
			done <- err
		}()
		held = append(held, done)
		<-admitted
	}
	// Another heavy module cannot fit beside them.
	other := runtimetest.NestedLoops(190, 900, true)
	ctx2, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	ctx2 = runtime.WithCompileReserve(ctx2, func(uint64) (func(), error) {
		t.Error("the second compile was admitted beside the first")
		return func() {}, nil
	})
	if _, err := rt.Compile(ctx2, "second", other); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a compile waiting in line past its deadline: %v", err)
	}
	// A module of the disk cache loads while the heavy compile runs.
	rt2 := newRuntime(t, runtime.Config{CacheDir: dir})
	ctx3 := runtime.WithCompileReserve(context.Background(), func(uint64) (func(), error) {
		t.Error("a module of the disk cache was gated as a compile")
		return func() {}, nil
	})
	if _, err := rt2.Compile(ctx3, "small", small); err != nil {
		t.Error(err)
	}
	for _, cancel := range cancels {
		cancel()
	}
	close(hold)
	for _, done := range held {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("a held compile, cancelled: %v", err)
		}
	}
	waitNoCompiles(t)
}

// atCaps is gen(l) for the largest l, from l down by 3% steps, whose
// metered shape the runtime admits: the caps hold for the metered module,
// whose checks add branches.
func atCaps(rt *runtime.Runtime, l int, gen func(l int) []byte) []byte {
	for {
		b := gen(l)
		if _, err := rt.CompileCost(b); err == nil || l < 2 {
			return b
		}
		l = l * 97 / 100
	}
}

// TestCompileAtCaps generates functions of random shapes at the caps
// that grow the compiler's work (block parameters of nested loops, of
// if chains and of br_table trampolines) and compiles each with a heap
// watchdog: the heap grows by no more than CompileCost estimates, and
// never past 1 GiB (the watchdog cancels at 1 GiB of RSS). The seed is
// logged.
func TestCompileAtCaps(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles of seconds each")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, seed))
	const phis = 600_000 // wasmbin.DefaultCaps.Func.Phis
	rt := newRuntime(t, runtime.Config{DisableCache: true, CompilationWorkers: 1})
	shapes := []struct {
		name string
		bin  func() []byte
	}{
		{"nested loops, real phis", func() []byte {
			d := 50 + rnd.IntN(400)
			// Metering adds a branch per loop, and one per check of the
			// straight-line code (every 1,000 instructions on any path):
			// the most locals whose metered shape is within the caps.
			return atCaps(rt, phis/(3*d), func(l int) []byte { return runtimetest.NestedLoops(d, l, true) })
		}},
		{"nested loops, read-only locals", func() []byte {
			d := 100 + rnd.IntN(3000)
			return atCaps(rt, phis/(2*d), func(l int) []byte { return runtimetest.NestedLoops(d, l, false) })
		}},
		{"if chain", func() []byte {
			n := 1000 + rnd.IntN(4000)
			return atCaps(rt, phis/(2*n), func(l int) []byte { return runtimetest.IfChain(n, l) })
		}},
		{"if chain at the branch cap", func() []byte {
			// wasmbin.DefaultCaps.Func.Branches is 28,000, and the
			// exit after the chain counts one more: n = 27,999 is the
			// cap itself. (28,000 - IntN(1000) was one over it once in
			// 1000 seeds: CI's seed 1795817077929707067.) The checks
			// the metering adds after every 1,000 instructions on any
			// path count too: about 650 for a chain of 27,400 ifs (7
			// instructions each), so the chain stays 1,100 under.
			n := 26_900 - rnd.IntN(1000)
			return atCaps(rt, phis/n, func(l int) []byte { return runtimetest.IfChain(n, l) })
		}},
		{"br_table", func() []byte {
			n := 1000 + rnd.IntN(40_000)
			return atCaps(rt, phis/(n+9), func(l int) []byte { return runtimetest.BrTable(n, 8, l) })
		}},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			bin := sh.bin()
			cost, err := rt.CompileCost(bin)
			if err != nil {
				t.Fatalf("a shape at the caps refused: %v", err)
			}
			var cerr error
			start := time.Now()
			growth := memWatch(t, context.Background(), func(ctx context.Context) {
				// A watchdog for hangs, not a timing: a compile at the
				// caps takes seconds of CPU.
				ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
				defer cancel()
				_, cerr = rt.Compile(ctx, sh.name, bin)
			})
			t.Logf("%d bytes: heap growth %d MiB, estimated %d MiB, %v", len(bin), growth>>20, cost>>20, time.Since(start))
			if cerr != nil {
				t.Fatal(cerr)
			}
			if growth > cost || growth > 1<<30 {
				t.Errorf("compiling took %d MiB of heap, over its estimate of %d MiB or 1 GiB", growth>>20, cost>>20)
			}
		})
	}
}

// TestCompileCostFits: a module of several functions at the caps would
// need more than CompileMemory with all the workers compiling at once; it
// compiles with fewer, and its estimate (what it admits) fits.
func TestCompileCostFits(t *testing.T) {
	one := runtimetest.NestedLoops(190, 1000, true)
	rt1 := newRuntime(t, runtime.Config{DisableCache: true, CompilationWorkers: 1})
	perFunc, err := rt1.CompileCost(one)
	if err != nil {
		t.Fatal(err)
	}
	// The same heavy body four times: a module of four functions.
	body, locals := nestedLoopsBody(190, 1000)
	fs := make([]runtimetest.Func, 4)
	for i := range fs {
		fs[i] = runtimetest.Func{Locals: locals, Body: body}
	}
	fs[0].Export = "_start"
	four := runtimetest.Module{Funcs: fs}.Encode()
	rt4 := newRuntime(t, runtime.Config{DisableCache: true, CompilationWorkers: 4})
	cost, err := rt4.CompileCost(four)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one heavy function: %d MiB; four with 4 workers: %d MiB", perFunc>>20, cost>>20)
	if 4*perFunc <= runtime.CompileMemory {
		t.Fatalf("four functions of %d MiB fit in CompileMemory: the test needs heavier ones", perFunc>>20)
	}
	if cost > runtime.CompileMemory {
		t.Fatalf("estimate %d MiB over CompileMemory", cost>>20)
	}
}

// nestedLoopsBody is the body of NestedLoops(depth, locals, true) without
// its exit: the loops, and its i64 locals.
func nestedLoopsBody(depth, locals int) (body, types []byte) {
	for range depth {
		body = append(body, runtimetest.OpLoop, runtimetest.OpBlockVoid)
	}
	for i := range locals {
		body = runtimetest.ULEB(append(body, runtimetest.OpLocalGet), uint64(i))
		body = append(body, 0x42, 1, 0x7c) // i64.const 1; i64.add
		body = runtimetest.ULEB(append(body, 0x21), uint64(i))
	}
	for range depth {
		body = append(body, runtimetest.I32Const(0)...)
		body = append(body, runtimetest.OpBrIf, 0, runtimetest.OpEnd)
	}
	return body, bytes.Repeat([]byte{runtimetest.I64}, locals)
}
