// Command coreutils is the multi-call tool program of wasmbox, built for
// wasip1 into wasm/. The command to run is the base name of argv[0]; called
// as "coreutils CMD ARGS..." it runs CMD, and "coreutils --list" prints the
// registered names. "coreutils --index" prints the command index that
// `make wasm` embeds into package wasm: one line per name, "NAME" for a
// command and "NAME TARGET" for an alias of TARGET.
package main

import (
	"fmt"
	"os"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"

	// The command packages register their commands in init.
	_ "github.com/wasmbox/wasmbox/tools/internal/fileutils"
	_ "github.com/wasmbox/wasmbox/tools/internal/sysutils"
	_ "github.com/wasmbox/wasmbox/tools/internal/textutils"
)

func main() {
	os.Exit(run(cmd.OSEnv()))
}

func run(e *cmd.Env) int {
	if e.Name() == "coreutils" {
		if len(e.Args) < 2 {
			fmt.Fprintln(e.Stderr, "usage: coreutils COMMAND [ARG]...")
			return 2
		}
		if e.Args[1] == "--list" {
			for _, n := range cmd.Names() {
				fmt.Fprintln(e.Stdout, n)
			}
			return 0
		}
		if e.Args[1] == "--index" {
			for _, n := range cmd.Names() {
				if a := cmd.AliasOf(n); a != "" {
					fmt.Fprintln(e.Stdout, n, a)
				} else {
					fmt.Fprintln(e.Stdout, n)
				}
			}
			return 0
		}
		e.Args = e.Args[1:]
	}
	fn, ok := cmd.Lookup(e.Name())
	if !ok {
		fmt.Fprintf(e.Stderr, "coreutils: %s: command not found\n", e.Name())
		return 127
	}
	return fn(e)
}
