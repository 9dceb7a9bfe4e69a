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
	c := &fuelCall{fuel: fuel, stop: make(chan struct{}), killed: make(chan struct{})}
	clock.add(c)
	// At the context's end, a store every fuelKillTick until the call
	// returns: the guest's decrement can overwrite one.
	stopKill := context.AfterFunc(ctx, func() {
		defer close(c.killed)
		t := time.NewTicker(fuelKillTick)
		defer t.Stop()
		for {
			c.spend()
			select {
			case <-c.stop:
				return
			case <-t.C:
			}
		}
	})
	return func() {
		clock.remove(c)
		close(c.stop)
		if !stopKill() {
			// The kill loop started (or ran): wait for its last store.
			<-c.killed
		}
	}
}

// clock is the process's fuel clock: one goroutine, running while any
// metered call runs, stores 1 in the fuel of every running call every
// fuelTick. One store per call per tick, not a goroutine and a timer per
// call: a guest blocked in a host call (a shell waiting for its command)
// costs a store every 10 ms.
var clock fuelClock

type fuelClock struct {
	mu      sync.Mutex
	calls   map[*fuelCall]struct{}
	running bool
}

// fuelCall is one metered call that the clock serves.
type fuelCall struct {
	mu   sync.Mutex // the clock's and the kill loop's stores, one at a time
	fuel api.MutableGlobal
	// stop is closed when the call returns; killed when its kill loop
	// (after its context's end) has ended.
	stop, killed chan struct{}
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
		fc.calls = map[*fuelCall]struct{}{}
	}
	fc.calls[c] = struct{}{}
	if !fc.running {
		fc.running = true
		go fc.run()
	}
}

// remove takes c out of the clock; no store of the clock follows it.
func (fc *fuelClock) remove(c *fuelCall) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	delete(fc.calls, c)
}

// run ticks until no call is left.
func (fc *fuelClock) run() {
	t := time.NewTicker(fuelTick)
	defer t.Stop()
	for range t.C {
		fc.mu.Lock()
		if len(fc.calls) == 0 {
			fc.running = false
			fc.mu.Unlock()
			return
		}
		for c := range fc.calls {
			c.spend()
		}
		fc.mu.Unlock()
	}
}
