package expctxkeys

// StartHookKey is a context.Context Value key (wasmbox patch). Its
// associated value should be an experimental.StartHook.
type StartHookKey struct{}
