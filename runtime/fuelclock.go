package runtime

import (
	"context"
	"time"

	"github.com/wasmbox/wasmbox/internal/wasmbin"
	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental"
)

// The fuel clock. The fuel of a metered guest (wasmbin.InstrumentLoops)
// counts instructions, not time: one period of it can be 65 M cache
// misses, seconds, or a few thousand host calls that each take long. A
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
// the call returns.
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
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(fuelTick)
		defer t.Stop()
		ctxDone := ctx.Done()
		for {
			select {
			case <-done:
				return
			case <-ctxDone:
				ctxDone = nil
				fuel.Set(1)
				t.Reset(fuelKillTick)
			case <-t.C:
				fuel.Set(1)
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
