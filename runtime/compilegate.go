package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/wasmbox/wasmbox/internal/wasmbin"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental"
)

// CompileMemory is the compiler heap that the compiles of a process may
// admit at once, as estimated by [CompileCost]: every Runtime of the
// process shares it. A compile uses fewer compilation workers when its
// estimate with all of them would be larger, so that every estimate fits
// (one worker on a function at every cap, in a code section at its cap,
// is about 1.7 GB). A compile that must wait for others to end waits in
// line (first come, first served) until its context ends, and then fails
// with the context's error (a run's timeout). Modules found in the
// compilation cache are not compiled and wait for nothing.
const CompileMemory = 2 << 30

// minCompileAdmit is the least a compile admits, so that small modules
// are counted too.
const minCompileAdmit = 16 << 20

var (
	compileSem       = semaphore.NewWeighted(CompileMemory)
	compilesInFlight atomic.Int64
	compileAdmitted  atomic.Int64
)

// CompilesInFlight is the number of compiles of the process admitted and
// not ended, including those whose caller has left (a compile whose
// context is done stops at wazero's next poll of it).
func CompilesInFlight() int { return int(compilesInFlight.Load()) }

// CompileAdmitted is the estimated compiler heap, in bytes, of the
// compiles in flight (see CompilesInFlight and CompileCost).
func CompileAdmitted() uint64 { return uint64(compileAdmitted.Load()) }

// CompileCost is the estimated Go heap, in bytes, that compiling wasm
// takes with the runtime's compilation workers: what a compile of it
// admits against CompileMemory and against the reservation of
// WithCompileReserve. It is the cost of what is compiled, the module as
// Compile prepares it (loop metering adds a branch to every loop). A
// module over a cap is an error wrapping ErrModuleRefused.
func (r *Runtime) CompileCost(wasm []byte) (uint64, error) {
	pm, err := prepare("", wasm, r.wazeroCheck)
	if err != nil {
		if u := errors.Unwrap(err); u != nil {
			err = u // without prepare's empty module name
		}
		return 0, err
	}
	s, err := wasmbin.ModuleShape(pm.binary)
	if err == nil {
		err = wasmbin.DefaultCaps.Check(s)
	}
	if err != nil {
		return 0, refused(err)
	}
	_, cost := r.compilePlan(s)
	return cost, nil
}

// compilePlan is the compilation workers and the estimated heap of a
// compile of a module of shape s: the runtime's workers, fewer when that
// many compiling the module's largest function at once would not fit in
// CompileMemory, so that every compile's estimate fits in it.
func (r *Runtime) compilePlan(s wasmbin.Shape) (workers int, cost uint64) {
	workers = max(r.workers, 1)
	cost = wasmbin.CompileBytes(s, workers)
	for workers > 1 && cost > CompileMemory {
		workers--
		cost = wasmbin.CompileBytes(s, workers)
	}
	return workers, cost
}

type compileReserveKey struct{}

// WithCompileReserve returns ctx with a reservation that a compile under
// it (Runtime.Compile of a module no cache holds) makes before it starts:
// reserve is called with the compile's estimated heap in bytes (see
// CompileCost); an error fails the compile with it, and release is called
// when the compile ends, which may be after Compile returned to a caller
// whose context ended. This is how a memory budget of a run or a process
// counts the run's compiles.
func WithCompileReserve(ctx context.Context, reserve func(bytes uint64) (release func(), err error)) context.Context {
	return context.WithValue(ctx, compileReserveKey{}, reserve)
}

// admitCompile is the compile gate of Compile (wazero calls it only when
// it compiles): it waits for the module's estimated heap under
// CompileMemory, or until ctx ends.
func (r *Runtime) admitCompile(ctx context.Context, binary []byte) (context.Context, func(), error) {
	s, err := wasmbin.ModuleShape(binary)
	if err != nil {
		return nil, nil, refused(err)
	}
	workers, cost := r.compilePlan(s)
	n := int64(min(max(cost, minCompileAdmit), CompileMemory))
	if err := compileSem.Acquire(ctx, n); err != nil {
		return nil, nil, fmt.Errorf("waiting to compile: %w", context.Cause(ctx))
	}
	release := func() { compileSem.Release(n) }
	if reserve, ok := ctx.Value(compileReserveKey{}).(func(uint64) (func(), error)); ok && reserve != nil {
		rel, err := reserve(cost)
		if err != nil {
			release()
			return nil, nil, err
		}
		release = func() { rel(); compileSem.Release(n) }
	}
	compilesInFlight.Add(1)
	compileAdmitted.Add(n)
	return experimental.WithCompilationWorkers(ctx, workers), func() {
		compileAdmitted.Add(-n)
		compilesInFlight.Add(-1)
		release()
	}, nil
}
