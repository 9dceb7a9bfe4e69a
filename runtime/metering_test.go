package runtime_test

import (
	"context"
	"errors"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"

	"github.com/wasmbox/wasmbox/internal/wasmbin"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi/preview1"
	"github.com/wasmbox/wasmbox/wasm"
)

// These tests check what the fuel metering of the runtime (see
// wasmbin.InstrumentLoops and Config.WazeroKillCheck) is for: compiled
// guest code is not preemptible by the Go scheduler, so a guest that
// computes without ever calling the host would hold its goroutine outside
// any preemption point, and a garbage collection of the host, which stops
// the world, would wait for it. Metered guests call sched_yield every
// wasmbin.Fuel loop iterations, where Go can preempt them and where the
// host ends them when their context is done. A failure of the GC checks
// is as likely to show as a hang (the test binary's -timeout) as a slow
// GC: a stop-the-world that cannot preempt the guest waits for it.

// gcWatchdog bounds one goruntime.GC() while a guest runs. It is not a
// speed bound (the pause is measured by the bench's responsiveness rows;
// a 200 ms bound here failed at 248 ms on a loaded machine): a collection
// that cannot preempt the guest never returns, and the watchdog turns that
// hang into a failure.
const gcWatchdog = 30 * time.Second

// countWriter discards what it is given and counts the bytes.
type countWriter struct{ n atomic.Int64 }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// TestMeterGC runs commands that compute forever (a tight awk loop that
// never calls the host, yes, sha256sum of /dev/zero) and collects garbage
// five times while they run: every collection returns (gcWatchdog),
// the guest goes on running meanwhile, a cancel ends it within a second,
// and nothing of the run is left. With the fuel metering (the default)
// and with wazero's own check, for comparison.
func TestMeterGC(t *testing.T) {
	for _, mode := range []struct {
		name string
		cfg  runtime.Config
	}{
		{"fuel", runtime.Config{}},
		{"wazero-check", runtime.Config{WazeroKillCheck: true}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			rt := newRuntime(t, mode.cfg)
			ctx := context.Background()
			coreutils, _ := wasm.Module(wasm.CoreutilsModule)
			awk, _ := wasm.Module(wasm.AWKModule)
			requireMeterable(t, coreutils, awk)
			mods := map[string]*runtime.Module{
				wasm.CoreutilsModule: compile(t, rt, wasm.CoreutilsModule, coreutils),
				wasm.AWKModule:       compile(t, rt, wasm.AWKModule, awk),
			}
			// A first run takes the module's snapshot, before the baselines.
			for name, m := range mods {
				args := []string{"true"}
				if name == wasm.AWKModule {
					args = []string{"awk", "BEGIN{}"}
				}
				if err := runArgs(ctx, t, rt, m, args, &countWriter{}); err != nil {
					t.Fatalf("%q: %v", args, err)
				}
			}
			defer runtimetest.CheckGoroutines(t)()
			for _, tc := range []struct {
				name   string
				mod    string
				args   []string
				output bool // the command writes while it runs
			}{
				{"awk-loop", wasm.AWKModule, []string{"awk", "BEGIN { for (;;) x++ }"}, false},
				{"yes", wasm.CoreutilsModule, []string{"yes"}, true},
				{"sha256sum", wasm.CoreutilsModule, []string{"sha256sum", "/dev/zero"}, false},
			} {
				t.Run(tc.name, func(t *testing.T) {
					out := &countWriter{}
					gcWhileRunning(t, func(ctx context.Context) error {
						return runArgs(ctx, t, rt, mods[tc.mod], tc.args, out)
					}, func() int64 { return out.n.Load() }, tc.output)
				})
			}
			if !settle(func() bool { return rt.LiveInstances() == 0 && rt.LiveMemories() == 0 }) {
				t.Errorf("live instances %d, memories %d", rt.LiveInstances(), rt.LiveMemories())
			}
		})
	}
}

// TestMeterGCSpin is TestMeterGC with the hand-built spin loops of
// runtimetest: SpinMetered (imports sched_yield, so the runtime meters
// it) and Spin (imports nothing: it runs under wazero's check).
func TestMeterGCSpin(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	requireMeterable(t, runtimetest.SpinMetered())
	metered := compile(t, rt, "spin-metered", runtimetest.SpinMetered())
	plain := compile(t, rt, "spin", runtimetest.Spin())
	defer runtimetest.CheckGoroutines(t)()
	for _, tc := range []struct {
		name string
		mod  *runtime.Module
	}{{"metered", metered}, {"unmetered", plain}} {
		t.Run(tc.name, func(t *testing.T) {
			gcWhileRunning(t, func(ctx context.Context) error {
				return rt.Run(ctx, tc.mod, wazero.NewModuleConfig(), runtime.RunOptions{})
			}, nil, false)
		})
	}
	if !settle(func() bool { return rt.LiveInstances() == 0 && rt.LiveMemories() == 0 }) {
		t.Errorf("live instances %d, memories %d", rt.LiveInstances(), rt.LiveMemories())
	}
}

// TestMeterDeadline: a module that loops forever without a host call is
// ended by a context deadline, without the sched_yield import (the runtime
// adds it, see wasmbin.AddYieldImport; InstrumentLoops alone does not
// apply) and with it, under fuel and under wazero's check.
func TestMeterDeadline(t *testing.T) {
	if _, ok, err := wasmbin.InstrumentLoops(runtimetest.Spin()); ok || err != nil {
		t.Fatalf("InstrumentLoops(runtimetest.Spin()) = %v, %v: it would be metered", ok, err)
	}
	endsByDeadline(t, map[string][]byte{"spin": runtimetest.Spin(), "spin-metered": runtimetest.SpinMetered()})
}

// TestKillRecursion: a guest that recurses without loops or host calls
// (2^63 calls, 63 frames deep) is ended by its deadline, with and without
// the sched_yield import, under fuel and under wazero's check. Before the
// entry checks (wasmbin.InstrumentLoops at function entries, wazero patch
// 7), neither mode ever saw it: both checked at loop headers only, and the
// run went on after its deadline until the process died.
func TestKillRecursion(t *testing.T) {
	endsByDeadline(t, map[string][]byte{"recurse": runtimetest.Recurse(), "recurse-metered": runtimetest.RecurseMetered()})
}

// TestKillCallShapes: guests that run for 2^62 calls without a loop, each
// in a shape that the entry checks of InstrumentLoops must see: a
// non-recursive call tree (f(i) calls f(i+1) twice), mutual recursion, and recursion through call_indirect. Each is ended by
// its deadline within the watchdog, with and without the sched_yield
// import, under fuel and under wazero's check. A too broad exemption (no
// entry check where a callee makes calls, or behind a table) leaves them
// running: the watchdog fails the test.
func TestKillCallShapes(t *testing.T) {
	mods := map[string][]byte{}
	for _, metered := range []bool{false, true} {
		suffix := ""
		if metered {
			suffix = "-metered"
		}
		mods["tree"+suffix] = runtimetest.CallTree(62, metered)
		mods["mutual"+suffix] = runtimetest.MutualRecursion(metered)
		mods["indirect"+suffix] = runtimetest.IndirectRecursion(metered)
	}
	if _, ok, err := wasmbin.InstrumentLoops(mods["tree-metered"]); !ok || err != nil {
		t.Fatalf("InstrumentLoops(tree) = %v, %v", ok, err)
	}
	endsByDeadline(t, mods)
}

// endsByDeadline runs each module, which never ends by itself, with a
// 100ms deadline in both kill modes: each run must end with the deadline
// (within hangWatchdog, not a speed bound: a guest the checks miss never
// ends), and leave no instance or memory behind.
func endsByDeadline(t *testing.T, mods map[string][]byte) {
	t.Helper()
	for _, mode := range []struct {
		name string
		cfg  runtime.Config
	}{
		{"fuel", runtime.Config{}},
		{"wazero-check", runtime.Config{WazeroKillCheck: true}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			rt := newRuntime(t, mode.cfg)
			for name, bin := range mods {
				m := compile(t, rt, name, bin)
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				done := make(chan error, 1)
				go func() { done <- rt.Run(ctx, m, wazero.NewModuleConfig(), runtime.RunOptions{}) }()
				select {
				case err := <-done:
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("%s: err = %v, want the deadline", name, err)
					}
				case <-time.After(hangWatchdog):
					t.Fatalf("%s: still running %v after its 100ms deadline", name, hangWatchdog)
				}
				cancel()
			}
			if !settle(func() bool { return rt.LiveInstances() == 0 && rt.LiveMemories() == 0 }) {
				t.Errorf("live instances %d, memories %d", rt.LiveInstances(), rt.LiveMemories())
			}
		})
	}
}

// hangWatchdog turns a run that its deadline does not end into a failure.
const hangWatchdog = 30 * time.Second

// requireMeterable fails t unless the runtime's default mode meters the
// modules' loops: without that, the "fuel" cases would only test wazero's
// check again.
func requireMeterable(t *testing.T, mods ...[]byte) {
	t.Helper()
	for i, b := range mods {
		if _, ok, err := wasmbin.InstrumentLoops(b); !ok || err != nil {
			t.Fatalf("module %d: InstrumentLoops = %v, %v", i, ok, err)
		}
	}
}

// runArgs runs args with m on a default filesystem (it has /dev/zero),
// stdout to out.
func runArgs(ctx context.Context, t *testing.T, rt *runtime.Runtime, m *runtime.Module, args []string, out *countWriter) error {
	fsys, err := vfs.NewDefault()
	if err != nil {
		t.Error(err)
		return err
	}
	var stderr strings.Builder
	st, err := preview1.NewState(preview1.Config{FS: fsys, Args: args, Stdout: out, Stderr: &stderr})
	if err != nil {
		t.Error(err)
		return err
	}
	defer st.Close()
	return rt.Run(ctx, m, wazero.NewModuleConfig(), runtime.RunOptions{WASI: st, FS: fsys})
}

// gcWhileRunning starts run, lets it compute for 100ms, collects garbage
// five times, checking each collection's time and that run goes on, then
// cancels it: it must end within a second with a canceled error. With
// progress set and growing, the guest must also make progress during the
// collections.
func gcWhileRunning(t *testing.T, run func(context.Context) error, progress func() int64, growing bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the guest ended before the collections: %v", err)
	default:
	}
	var before int64
	if progress != nil {
		before = progress()
	}
	var worst time.Duration
	for i := 0; i < 5; i++ {
		start := time.Now()
		gcDone := make(chan struct{})
		go func() { goruntime.GC(); close(gcDone) }()
		select {
		case <-gcDone:
		case <-time.After(gcWatchdog):
			t.Fatalf("GC %d did not return in %v while the guest runs: the guest cannot be preempted", i, gcWatchdog)
		}
		worst = max(worst, time.Since(start))
	}
	select {
	case err := <-done:
		t.Fatalf("the guest ended during the collections: %v", err)
	default:
	}
	if growing {
		time.Sleep(20 * time.Millisecond)
		if after := progress(); after <= before {
			t.Errorf("the guest made no progress during the collections: %d bytes before, %d after", before, after)
		}
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if !isCanceled(err) {
			t.Errorf("err = %v, want context canceled", err)
		}
		t.Logf("slowest GC %v; the guest ended %v after the cancel", worst, time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("the guest still runs a second after the cancel")
	}
}

// TestKillStraightLine: guests whose every loop iteration is a great deal
// of code without a loop of its own, each ended by its deadline within the
// watchdog. The fuel counted loop iterations and calls of functions that
// make calls: a loop of 1,000 calls of a leaf of 9,000 instructions, or a
// loop around 15,000 memory.grow (each a call into the host, which does
// not look at the context), ran Fuel (65536) iterations, minutes, before a
// yield (found by a review of the bulk-instruction charge). Now every
// function entry spends fuel, and so does every StraightLine instructions
// of code without a loop (wasmbin.InstrumentLoops).
func TestKillStraightLine(t *testing.T) {
	i32 := runtimetest.I32
	// leaf: x = x*x + 1, 1,500 times (9,000 instructions).
	var leaf []byte
	for range 1500 {
		leaf = append(leaf, runtimetest.OpLocalGet, 0, runtimetest.OpLocalGet, 0, 0x6c /* i32.mul */)
		leaf = append(leaf, runtimetest.I32Const(1)...)
		leaf = append(leaf, runtimetest.OpI32Add, runtimetest.OpLocalSet, 0)
	}
	calls := []byte{runtimetest.OpLoop, runtimetest.OpBlockVoid}
	for range 1000 {
		calls = append(calls, runtimetest.Call(0)...)
	}
	calls = append(calls, runtimetest.OpBr, 0, runtimetest.OpEnd)
	leafCalls := runtimetest.Module{Funcs: []runtimetest.Func{
		{Type: runtimetest.FuncType{}, Locals: []byte{i32}, Body: leaf},
		{Type: runtimetest.FuncType{}, Export: "_start", Body: calls},
	}}.Encode()
	grows := []byte{runtimetest.OpLoop, runtimetest.OpBlockVoid}
	for range 15_000 {
		grows = append(grows, runtimetest.OpI32Const, 0, runtimetest.OpMemoryGrow, 0, runtimetest.OpDrop)
	}
	grows = append(grows, runtimetest.OpBr, 0, runtimetest.OpEnd)
	growLoop := runtimetest.Module{MemoryMin: 1, Funcs: []runtimetest.Func{
		{Type: runtimetest.FuncType{}, Export: "_start", Body: grows},
	}}.Encode()
	requireMeterable(t)
	endsByDeadline(t, map[string][]byte{"leaf-calls": leafCalls, "memory-grows": growLoop})
}

// TestFuelGlobalOutOfReach: a module that names a global it does not have,
// at the index the fuel global takes after the rewrite, is refused. It was
// invalid as given, but the rewrite made it valid: it compiled, set its
// own fuel at every iteration and never yielded (found by a review of the
// bulk-instruction charge).
func TestFuelGlobalOutOfReach(t *testing.T) {
	body := runtimetest.Cat([]byte{runtimetest.OpLoop, runtimetest.OpBlockVoid}, runtimetest.I32Const(1000),
		[]byte{runtimetest.OpGlobalSet, 0, runtimetest.OpBr, 0, runtimetest.OpEnd})
	bin := runtimetest.Module{Funcs: []runtimetest.Func{{Type: runtimetest.FuncType{}, Export: "_start", Body: body}}}.Encode()
	rt := newRuntime(t, runtime.Config{DisableCache: true})
	if _, err := rt.Compile(context.Background(), "fuel-setter", bin); err == nil {
		t.Fatal("compiled a module that sets global 0, which it does not have")
	} else {
		t.Log(err)
	}
}

// TestMeteringPastTheCaps: a module within the caps that the metering
// takes past them (each charge of a bulk instruction adds a call, and a
// function may make 16,384) is refused with the cap it breaks, not run
// unmetered: under wazero's check, which looks at loop headers and
// function entries only, a guest that chose that path ran 200 fills of
// 256 MiB, 6.7 s, past its deadline (a review of the metering).
func TestMeteringPastTheCaps(t *testing.T) {
	body := []byte{runtimetest.OpLoop, runtimetest.OpBlockVoid}
	for i := range 9000 {
		body = append(body, runtimetest.I32Const(int32(i%16)*64)...)
		body = append(body, runtimetest.I32Const(7)...)
		body = append(body, runtimetest.I32Const(64)...)
		body = append(body, 0xfc, 0x0b, 0x00) // memory.fill
	}
	body = append(body, runtimetest.OpBr, 0, runtimetest.OpEnd)
	bin := runtimetest.Module{MemoryMin: 1, Funcs: []runtimetest.Func{{Type: runtimetest.FuncType{}, Export: "_start", Body: body}}}.Encode()
	rt := newRuntime(t, runtime.Config{DisableCache: true})
	_, err := rt.Compile(context.Background(), "fills", bin)
	if !errors.Is(err, runtime.ErrModuleRefused) || !strings.Contains(err.Error(), "calls") || !strings.Contains(err.Error(), "after loop metering") {
		t.Fatalf("Compile = %v, want ErrModuleRefused naming the calls cap, after loop metering", err)
	}
}

// TestSnapshotWaitEndsAtDeadline: a run that waits for the snapshot that
// another run of the module is taking gives up at its own deadline. The
// snapshot's _initialize runs under the first run's context, and the
// second waited on a mutex, past its deadline, for as long as the first
// one's (a review of the metering).
func TestSnapshotWaitEndsAtDeadline(t *testing.T) {
	bin := runtimetest.Module{HasMemory: true, MemoryMin: 1, Funcs: []runtimetest.Func{
		{Type: runtimetest.FuncType{}, Export: "_initialize", Body: []byte{runtimetest.OpLoop, runtimetest.OpBlockVoid, runtimetest.OpBr, 0, runtimetest.OpEnd}},
		{Type: runtimetest.FuncType{Results: []byte{runtimetest.I32}}, Export: "wasmbox_run", Body: runtimetest.I32Const(0)},
	}}.Encode()
	rt := newRuntime(t, runtime.Config{DisableCache: true})
	m := compile(t, rt, "spinning-init", bin)
	ctxA, cancelA := context.WithTimeout(context.Background(), time.Minute)
	defer cancelA()
	doneA := make(chan error, 1)
	go func() { doneA <- rt.Run(ctxA, m, wazero.NewModuleConfig(), runtime.RunOptions{}) }()
	time.Sleep(50 * time.Millisecond) // the first run is in _initialize (not a measure: either order passes)
	ctxB, cancelB := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelB()
	doneB := make(chan error, 1)
	go func() { doneB <- rt.Run(ctxB, m, wazero.NewModuleConfig(), runtime.RunOptions{}) }()
	select {
	case err := <-doneB:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the second run: %v, want its deadline", err)
		}
	case <-time.After(hangWatchdog):
		t.Errorf("the second run still waits %v after its 200ms deadline", hangWatchdog)
	}
	cancelA()
	select {
	case <-doneA:
	case <-time.After(hangWatchdog):
		t.Fatal("the first run did not end after its cancel")
	}
}

// TestKillSlowFuel: guests that spend their fuel slowly end soon after
// their context does. The fuel counts instructions: a chain of dependent
// loads that miss the caches and the TLB (a pointer chase over 128 MiB,
// ~100 ns a load) spends one unit per StraightLine loads, and one period
// of fuel took seconds, during which the guest could not be ended and
// every garbage collection of the host waited for it. Through _start, a
// start function (the start section, which runs inside instantiation)
// and a call of a live instance. Now the host stores 1 in the guest's
// fuel every few milliseconds and when the context is done (the fuel
// clock, fuelclock.go), so the next check yields.
func TestKillSlowFuel(t *testing.T) {
	requireMeterable(t)
	body := pointerChase()
	fdWrite := runtimetest.Import{Module: "wasi_snapshot_preview1", Name: "fd_write",
		Type: runtimetest.FuncType{Params: []byte{runtimetest.I32, runtimetest.I32, runtimetest.I32, runtimetest.I32}, Results: []byte{runtimetest.I32}}}
	mod := func(export string, start *uint32) []byte {
		return runtimetest.Module{Imports: []runtimetest.Import{fdWrite}, MemoryMin: chaseWords*4/65536 + 1,
			Start: start, Funcs: []runtimetest.Func{{Type: runtimetest.FuncType{}, Locals: []byte{runtimetest.I32}, Export: export, Body: body}}}.Encode()
	}
	startFn := uint32(1)
	rt := newRuntime(t, runtime.Config{DisableCache: true})
	for name, bin := range map[string][]byte{"_start": mod("_start", nil), "start section": mod("", &startFn)} {
		m := compile(t, rt, name, bin)
		endsSoonAfterCancel(t, name, func(ctx context.Context, out *countWriter) error {
			return runArgs(ctx, t, rt, m, []string{name}, out)
		})
	}
	m := compile(t, rt, "instance", mod("spin", nil))
	endsSoonAfterCancel(t, "instance call", func(ctx context.Context, out *countWriter) error {
		st, err := preview1.NewState(preview1.Config{Stdout: out})
		if err != nil {
			return err
		}
		defer st.Close()
		in, err := rt.Instantiate(context.Background(), m, runtime.InstanceOptions{WASI: st})
		if err != nil {
			return err
		}
		defer in.Close(context.Background())
		_, err = in.Call(ctx, "spin")
		return err
	})
	if !settle(func() bool { return rt.LiveInstances() == 0 && rt.LiveMemories() == 0 }) {
		t.Errorf("live instances %d, memories %d", rt.LiveInstances(), rt.LiveMemories())
	}
}

// chaseWords is the size of pointerChase's cycle, in 32-bit words.
const chaseWords = 1 << 25

// pointerChase is the body of a function (one i32 local) that fills
// chaseWords words from address 0 with a cycle that jumps ~4 MiB at each
// step (so that no load hits a cache, the TLB or a prefetch), writes one
// byte to stdout (fd_write, function 0) once the cycle is filled, and then
// follows the cycle forever, 10,000 dependent loads per loop iteration.
func pointerChase() []byte {
	const stride = 1<<20 + 7 // odd, so the cycle visits every word
	const (
		i32Store = 0x36
		i32Load  = 0x28
		i32Ne    = 0x47
	)
	c := runtimetest.I32Const
	iov := int32(chaseWords * 4) // past the cycle: the iovec, then the byte
	b := runtimetest.Cat(
		// for i := 0; i != chaseWords; i++ { mem[4i] = 4((i+stride) mod chaseWords) }
		[]byte{runtimetest.OpLoop, runtimetest.OpBlockVoid},
		[]byte{runtimetest.OpLocalGet, 0}, c(2), []byte{runtimetest.OpI32Shl},
		[]byte{runtimetest.OpLocalGet, 0}, c(stride), []byte{runtimetest.OpI32Add}, c(chaseWords-1), []byte{runtimetest.OpI32And},
		c(2), []byte{runtimetest.OpI32Shl, i32Store, 2, 0},
		[]byte{runtimetest.OpLocalGet, 0}, c(1), []byte{runtimetest.OpI32Add, runtimetest.OpLocalTee, 0},
		c(chaseWords), []byte{i32Ne, runtimetest.OpBrIf, 0, runtimetest.OpEnd},
		// fd_write(1, iov, 1, iov+8) of the byte at iov+12.
		c(iov), c(iov+12), []byte{i32Store, 2, 0},
		c(iov), c(1), []byte{i32Store, 2, 4},
		c(1), c(iov), c(1), c(iov+8), runtimetest.Call(0), []byte{runtimetest.OpDrop},
		// The chase, from address 0.
		c(0), []byte{runtimetest.OpLocalSet, 0},
		[]byte{runtimetest.OpLoop, runtimetest.OpBlockVoid, runtimetest.OpLocalGet, 0},
	)
	for range 10_000 {
		b = append(b, i32Load, 2, 0)
	}
	return append(b, runtimetest.OpLocalSet, 0, runtimetest.OpBr, 0, runtimetest.OpEnd)
}

// slowKill is how long after its cancel a guest of TestKillSlowFuel may
// run: without the fuel clock one period of its fuel takes ~65 M loads of
// ~100 ns (seconds); with it, the guest yields within a few milliseconds.
const slowKill = time.Second

// endsSoonAfterCancel starts run, waits for its guest to write to out (it
// has filled its memory and is chasing pointers), cancels it and checks
// that it ends, canceled, within slowKill.
func endsSoonAfterCancel(t *testing.T, name string, run func(context.Context, *countWriter) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &countWriter{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, out) }()
	wait := time.After(hangWatchdog)
	for out.n.Load() == 0 {
		select {
		case err := <-done:
			t.Fatalf("%s: ended before its chase: %v", name, err)
		case <-wait:
			t.Fatalf("%s: did not fill its memory in %v", name, hangWatchdog)
		case <-time.After(time.Millisecond):
		}
	}
	time.Sleep(50 * time.Millisecond) // into the chase
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if took := time.Since(start); took > slowKill {
			t.Errorf("%s: ended %v after its cancel, want within %v", name, took, slowKill)
		} else {
			t.Logf("%s: ended %v after its cancel", name, took)
		}
		if !isCanceled(err) {
			t.Errorf("%s: err = %v, want context canceled", name, err)
		}
	case <-time.After(hangWatchdog):
		t.Fatalf("%s: still running %v after its cancel", name, hangWatchdog)
	}
}

// TestFuelExportNameRefused: a module that exports a name the fuel
// global's export takes is refused, not run unmetered under wazero's
// check (which a guest could choose to run bulk instructions without a
// bound), nor metered with the host storing into the guest's export.
//
// With wazero's check too, where nothing is metered: the host stored 1 in
// the guest's own global every 10 ms (a review of the fuel clock).
func TestFuelExportNameRefused(t *testing.T) {
	bin := runtimetest.Module{Globals: []int32{0}, GlobalExports: []string{wasmbin.ExportFuel},
		Funcs: []runtimetest.Func{{Type: runtimetest.FuncType{}, Export: "_start"}}}.Encode()
	for _, cfg := range []runtime.Config{{DisableCache: true}, {DisableCache: true, WazeroKillCheck: true}} {
		rt := newRuntime(t, cfg)
		_, err := rt.Compile(context.Background(), "fuel-name", bin)
		if !errors.Is(err, runtime.ErrModuleRefused) || !strings.Contains(err.Error(), wasmbin.ExportFuel) {
			t.Fatalf("Compile (WazeroKillCheck %t) = %v, want ErrModuleRefused naming %q", cfg.WazeroKillCheck, err, wasmbin.ExportFuel)
		}
		t.Log(err)
	}
}

// TestFuelClockRace: calls of a spinning metered guest ended by their
// deadlines and by Instance.Close from another goroutine, each soon (for
// go test -race: the clock's and the kill loop's stores into the fuel).
func TestFuelClockRace(t *testing.T) {
	spin := []byte{runtimetest.OpLoop, runtimetest.OpBlockVoid, runtimetest.OpBr, 0, runtimetest.OpEnd}
	bin := runtimetest.Module{MemoryMin: 1,
		Funcs: []runtimetest.Func{{Type: runtimetest.FuncType{}, Body: spin, Export: "spin"}}}.Encode()
	rt := newRuntime(t, runtime.Config{DisableCache: true})
	m := compile(t, rt, "spin", bin)
	for i := range 20 {
		in := liveInstance(t, rt, m, preview1.Config{})
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Millisecond)
		if i%2 == 1 {
			go func() { time.Sleep(15 * time.Millisecond); in.Close(context.Background()) }()
			ctx = context.Background()
		}
		done := make(chan error, 1)
		go func() { _, err := in.Call(ctx, "spin"); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("spin returned")
			}
		case <-time.After(hangWatchdog):
			t.Fatalf("call %d still running %v after its end", i, hangWatchdog)
		}
		cancel()
		in.Close(context.Background())
	}
	if !settle(func() bool { return rt.LiveInstances() == 0 && rt.LiveMemories() == 0 }) {
		t.Errorf("live instances %d, memories %d", rt.LiveInstances(), rt.LiveMemories())
	}
}
