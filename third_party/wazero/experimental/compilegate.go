package experimental

import (
	"context"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/expctxkeys"
)

// WithCompileGate (wasmbox) returns ctx with a gate that the optimizing
// compiler calls before it compiles a module that no cache holds: gate
// blocks until the compile may start (or fails, and the compile fails
// with its error) and returns the context to compile under (the gate may
// lower its WithCompilationWorkers), and the compile calls release when
// it ends. A module found in a cache is not gated.
//
// The compiler also stops at ctx's cancel (it polls ctx between
// functions, between the phases of a function, while lowering it and
// while allocating its registers), and returns context.Cause(ctx).
func WithCompileGate(ctx context.Context, gate func(context.Context) (compileCtx context.Context, release func(), err error)) context.Context {
	return context.WithValue(ctx, expctxkeys.CompileGate{}, gate)
}
