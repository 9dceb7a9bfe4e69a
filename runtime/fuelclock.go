package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/wasmbox/wasmbox/internal/wasmbin"
	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental"
)

// The fuel clock. The fuel of a metered guest (wasmbin.InstrumentLoops)
// counts instructions, not time: one period of it can be 65 M loads that
// miss the caches and the TLB, seconds. A
// guest that spends it slowly ran seconds past its deadline, and every
// garbage collection of the host waited for it as long (compiled guest
// code is not preemptible). So while a metered guest's function runs, the
// host stores 1 in its fuel every fuelTick, and at once when the call's
// context is done: the guest's next check, within wasmbin.StraightLine
// instructions, calls sched_yield, which ends it when its context is
// done and lets the Go scheduler preempt it. The kill latency and the GC
// stall a guest can cause are so bounded by time, whatever its
// instructions cost.
//
// The guest's own decrement of the fuel is a read-modify-write that can
// overwrite a store made between its read and its write, so the clock
// repeats the store, every fuelKillTick once the context is done, until
// the call returns. One goroutine ticks for every running call (clock);
// a call whose context ends gets its own until it returns. A large bulk
// instruction checks the fuel every 1 MiB (wazero patch 27).
//
// The clock needs a processor to run on: a guest holds its goroutine's
// processor until it calls the host, so with as many guests running as
// GOMAXPROCS the clock waits for one of them to yield on its own fuel.
const (
	fuelTick     = 10 * time.Millisecond
	fuelKillTick = time.Millisecond
)

// instantiate instantiates m's compiled module, with a start function (the
// start section) under the fuel clock: it runs inside InstantiateModule,
// before the host has the instance to call anything of it.
func (m *Module) instantiate(ctx context.Context, mc wazero.ModuleConfig) (api.Module, error) {
	return m.rt.InstantiateModule(experimental.WithStartHook(ctx, startFuelClock), m.compiled, mc)
}

// callGuest calls f, a function of mod, with mod's fuel clock running when
// mod is metered.
func callGuest(ctx context.Context, mod api.Module, f api.Function, params ...uint64) ([]uint64, error) {
	stop := startFuelClock(ctx, mod)
	defer stop()
	return f.Call(ctx, params...)
}

// startFuelClock starts mod's fuel clock, if mod is metered, until stop is
// called; stop returns once the clock has stopped, so no store follows it.
func startFuelClock(ctx context.Context, mod api.Module) (stop func()) {
	fuel, ok := mod.ExportedGlobal(wasmbin.ExportFuel).(api.MutableGlobal)
	if !ok {
		return func() {}
	}
	c := &fuelCall{fuel: fuel, killed: make(chan struct{})}
	clock.add(c)
	// At the context's end, a store at once, and the clock stores every
	// fuelKillTick from then on until the call returns (the guest's
	// decrement can overwrite a store). A goroutine and a ticker of its
	// own per ended call made every kill 15 µs slower.
	stopKill := context.AfterFunc(ctx, func() {
		defer close(c.killed)
		c.spend()
		clock.kill(c)
	})
	return func() {
		clock.remove(c)
		if !stopKill() {
			// The store at the end started (or ran): wait for it.
			<-c.killed
		}
	}
}

// clock is the process's fuel clock: one goroutine, running while any
// metered call runs, stores 1 in the fuel of every running call every
// fuelTick, and every fuelKillTick while a call whose context ended runs.
// One store per call per tick, not a goroutine and a timer per call: a
// guest blocked in a host call (a shell waiting for its command) costs a
// store every 10 ms.
var clock fuelClock

type fuelClock struct {
	mu      sync.Mutex
	calls   map[*fuelCall]bool // true: the call's context ended
	killed  int                // calls whose context ended
	running bool
	kick    chan struct{} // a call's context ended: tick at fuelKillTick
}

// fuelCall is one metered call that the clock serves.
type fuelCall struct {
	mu   sync.Mutex // the clock's and the context's stores, one at a time
	fuel api.MutableGlobal
	// killed is closed once the store at the context's end is done.
	killed chan struct{}
}

// spend stores 1 in the call's fuel, so that its next check yields.
func (c *fuelCall) spend() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fuel.Set(1)
}

func (fc *fuelClock) add(c *fuelCall) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.calls == nil {
		fc.calls = map[*fuelCall]bool{}
		fc.kick = make(chan struct{}, 1)
	}
	fc.calls[c] = false
	if !fc.running {
		fc.running = true
		go fc.run()
	}
}

// kill marks c as a call whose context ended, if it still runs.
func (fc *fuelClock) kill(c *fuelCall) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if killed, ok := fc.calls[c]; ok && !killed {
		fc.calls[c] = true
		fc.killed++
		select {
		case fc.kick <- struct{}{}:
		default:
		}
	}
}

// remove takes c out of the clock; no store of the clock follows it.
func (fc *fuelClock) remove(c *fuelCall) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.calls[c] {
		fc.killed--
	}
	delete(fc.calls, c)
}

// run ticks until no call is left.
func (fc *fuelClock) run() {
	period := fuelTick
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-fc.kick:
		}
		fc.mu.Lock()
		if len(fc.calls) == 0 {
			fc.running = false
			fc.mu.Unlock()
			return
		}
		for c := range fc.calls {
			c.spend()
		}
		want := fuelTick
		if fc.killed > 0 {
			want = fuelKillTick
		}
		fc.mu.Unlock()
		if want != period {
			period = want
			t.Reset(period)
		}
	}
}
