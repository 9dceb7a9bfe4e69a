package executor_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/vfs"
)

// Run a tool of the embedded coreutils against the default sandbox
// layout; a missing command is exit 127, class NOT_FOUND.
func Example() {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{CacheDir: cacheDir})
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)

	ex := executor.New(rt)
	if err := ex.RegisterTools(); err != nil {
		panic(err)
	}
	fsys, err := vfs.NewDefault()
	if err != nil {
		panic(err)
	}
	if err := ex.Install(fsys, "/bin", "/usr/bin"); err != nil {
		panic(err)
	}

	res := ex.Run(ctx, executor.Job{
		Argv:    []string{"head", "-n", "1", "/etc/passwd"},
		Env:     []string{"PATH=/bin:/usr/bin", "HOME=/home/user"},
		Dir:     "/home/user",
		FS:      fsys,
		Stdout:  os.Stdout,
		Timeout: 10 * time.Second,
	})
	fmt.Println("exit", res.ExitCode)

	res = ex.Run(ctx, executor.Job{Argv: []string{"frobnicate"}, FS: fsys})
	fmt.Println("exit", res.ExitCode, res.Class, res.Err)
	// Output:
	// root:x:0:0:root:/root:/bin/sh
	// exit 0
	// exit 127 NOT_FOUND frobnicate: command not found
}
