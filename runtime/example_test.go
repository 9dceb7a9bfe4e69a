package runtime_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// A module is compiled once and run in a fresh instance per command; a
// non-zero exit status comes back as a *sys.ExitError, a module importing
// what wasmbox does not provide is refused before it runs.
func ExampleRuntime_Run() {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{DisableCache: true})
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)

	mod, err := rt.Compile(ctx, "exit3", runtimetest.Exit(3))
	if err != nil {
		panic(err)
	}
	err = rt.Run(ctx, mod, wazero.NewModuleConfig(), runtime.RunOptions{})
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		fmt.Println("exit status", ee.ExitCode())
	}

	_, err = rt.Compile(ctx, "needs-env", runtimetest.MissingImport())
	fmt.Println(err)
	fmt.Println(errors.Is(err, runtime.ErrUnresolvedImport))
	// Output:
	// exit status 3
	// needs-env: imports not provided by wasmbox: env.foo, wasi_snapshot_preview1.no_such_call
	// true
}
