package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/wasmbox/wasmbox/sandbox"
)

// A script runs against the sandbox's own filesystem; its state persists
// from one Run to the next.
func Example() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx)
	if err != nil {
		panic(err)
	}
	defer sb.Close()

	sb.WriteFile("fruit.txt", []byte("pear\napple\nfig\napple\n"), 0o644)
	res, _ := sb.Run(ctx, `sort fruit.txt | uniq -c | sort -rn | head -n 2; cd /tmp; count=3`)
	fmt.Print(res.Stdout)
	res, _ = sb.Run(ctx, `echo "$count files in $(pwd)"`)
	fmt.Print(res.Stdout)
	// Output:
	//       2 apple
	//       1 pear
	// 3 files in /tmp
}

// A deadline kills whatever runs, even a loop that never calls anything.
func ExampleSandbox_Run_timeout() {
	ctx := context.Background()
	sb, _ := sandbox.New(ctx, sandbox.WithTimeout(100*time.Millisecond))
	defer sb.Close()
	res, _ := sb.Run(ctx, `while :; do :; done`)
	fmt.Println(res.ExitCode, res.ErrorClass)
	// Output: 124 TIMEOUT
}

// Only allowlisted commands run, wherever they are started from.
func ExampleWithAllow() {
	ctx := context.Background()
	sb, _ := sandbox.New(ctx, sandbox.WithAllow("echo", "cat"))
	defer sb.Close()
	res, _ := sb.Run(ctx, `echo ok | cat; rm -rf /home/user`)
	fmt.Print(res.Stdout, res.Stderr)
	fmt.Println(res.ExitCode, res.ErrorClass)
	// Output:
	// ok
	// rm: not allowed in this sandbox
	// 126 DENIED
}

// Fork gives an independent copy; Snapshot and Restore save and load the
// whole state.
func ExampleSandbox_Fork() {
	ctx := context.Background()
	sb, _ := sandbox.New(ctx)
	defer sb.Close()
	sb.Run(ctx, `echo v1 > state.txt; export STAGE=one`)

	child, _ := sb.Fork()
	defer child.Close()
	child.Run(ctx, `echo v2 > state.txt; export STAGE=two`)

	var snap bytes.Buffer
	child.Snapshot(&snap)
	restored, _ := sandbox.New(ctx)
	defer restored.Close()
	restored.Restore(&snap)

	for _, s := range []*sandbox.Sandbox{sb, child, restored} {
		res, _ := s.Run(ctx, `echo "$(cat state.txt) $STAGE"`)
		fmt.Print(res.Stdout)
	}
	// Output:
	// v1 one
	// v2 two
	// v2 two
}

// Deterministic sandboxes give byte-identical results: what tests of agent
// code need. (The first $RANDOM of a seed also depends on the build of
// bash.wasm: bash mixes the address of its seedrand function, a table index
// in wasm, into the seed; a rebuild that moves it changes the value.)
func ExampleWithDeterministic() {
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		sb, _ := sandbox.New(ctx, sandbox.WithDeterministic(7))
		res, _ := sb.Run(ctx, `echo $RANDOM; date -u +%Y-%m-%dT%H:%M:%S; touch f; ls -l --time-style=+%F f | cut -d' ' -f5-`)
		fmt.Print(res.Stdout)
		sb.Close()
	}
	// Output:
	// 2532
	// 2000-01-01T00:00:00
	// 0 2000-01-01 f
	// 2532
	// 2000-01-01T00:00:00
	// 0 2000-01-01 f
}
