package shell_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/wasmbox/wasmbox/shell"
	"github.com/wasmbox/wasmbox/vfs"
)

func Example() {
	fs, err := vfs.NewDefault()
	if err != nil {
		panic(err)
	}
	// An Executor runs every command that is not a builtin or a function;
	// here, a single "upper" command.
	exec := shell.ExecutorFunc(func(ctx context.Context, c shell.Command) (int, error) {
		if c.Argv[0] != "upper" {
			return 127, shell.ErrNotFound
		}
		for _, a := range c.Argv[1:] {
			fmt.Fprintln(c.Stdout, strings.ToUpper(a))
		}
		return 0, nil
	})
	sh, err := shell.New(shell.Config{FS: fs, Executor: exec, Dir: "/home/user", Stdout: os.Stdout, Stderr: os.Stdout})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	// State persists across Runs, like in an interactive session.
	sh.Run(ctx, `greeting=hello; cd /tmp; echo "$greeting" > note.txt`)
	sh.Run(ctx, `read -r word < note.txt; printf '%s from %s, pi=%.2f\n' "$word" "$PWD" 3.14159; upper a b`)
	code, _ := sh.Run(ctx, `nosuch`)
	fmt.Println("status:", code)
	// Output:
	// hello from /tmp, pi=3.14
	// A
	// B
	// bash: line 1: nosuch: command not found
	// status: 127
}

func ExampleLimitError() {
	fs, _ := vfs.NewDefault()
	sh, _ := shell.New(shell.Config{FS: fs, Limits: shell.Limits{MaxVarBytes: 1 << 20}})
	code, err := sh.Run(context.Background(), `x=1; while true; do x=$x$x; done`)
	var le *shell.LimitError
	fmt.Println(code, errors.Is(err, shell.ErrLimitExceeded), errors.As(err, &le) && le.Limit == "variable size")
	// Output:
	// 1 true true
}
