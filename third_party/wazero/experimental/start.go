package experimental

import (
	"context"

	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/expctxkeys"
)

// StartHook (wasmbox patch) is called when a module that has a start
// function (the start section, not a WASI _start export) is instantiated,
// after its exports are in place and before the start function runs;
// the function it returns is called once the start function returns. A
// host uses it to watch the start function as it watches the calls it
// makes itself: the start function runs inside Runtime.InstantiateModule,
// before the host has the module.
type StartHook func(ctx context.Context, mod api.Module) (done func())

// WithStartHook registers the given StartHook into the given
// context.Context.
func WithStartHook(ctx context.Context, hook StartHook) context.Context {
	if hook != nil {
		return context.WithValue(ctx, expctxkeys.StartHookKey{}, hook)
	}
	return ctx
}
