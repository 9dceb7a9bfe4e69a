package expctxkeys

// CompileGate is a context.Context Value key (wasmbox). Its associated
// value should be a func(context.Context) (context.Context, func(), error).
type CompileGate struct{}
