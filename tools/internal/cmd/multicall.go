package cmd

import (
	"fmt"
	"io"
)

// program is the module's name, set by the main package (SetProgram).
var program string

// SetProgram names the module ("coreutils", "jq", "awk") for the reactor
// entry point wasmbox_run, which runs Multicall(program, ...).
func SetProgram(name string) { program = name }

// Multicall is the main of a multi-call tool program named program (the
// module's name: "coreutils", "jq", "awk"): it runs the registered command
// named by the base name of argv[0] and returns its exit status.
//
// Called under the program's own name when that is not also a command's
// name ("coreutils", not "jq"), the first argument names the command
// ("coreutils cat FILE"), and two more forms exist:
//
//	PROGRAM --list    the registered names, one a line
//	PROGRAM --index   the command index (see WriteIndex)
//
// A program built with the build tag wasmbox_index (natively, by `make
// wasm`) does nothing but write the index, whatever its arguments, which
// is how the index of a module named after its command (jq, awk) is made
// without giving that command an option it does not have.
//
// An unknown command prints "PROGRAM: NAME: command not found" and
// returns 127, as a shell does.
func Multicall(program string, e *Env) int {
	if indexBuild {
		WriteIndex(program, e.Stdout)
		return 0
	}
	if _, isCommand := Lookup(program); e.Name() == program && !isCommand {
		if len(e.Args) < 2 {
			fmt.Fprintf(e.Stderr, "usage: %s COMMAND [ARG]...\n", program)
			return 2
		}
		switch e.Args[1] {
		case "--list":
			for _, n := range Names() {
				fmt.Fprintln(e.Stdout, n)
			}
			return 0
		case "--index":
			WriteIndex(program, e.Stdout)
			return 0
		}
		e.Args = e.Args[1:]
	}
	fn, ok := Lookup(e.Name())
	if !ok {
		fmt.Fprintf(e.Stderr, "%s: %s: command not found\n", program, e.Name())
		return 127
	}
	return fn(e)
}

// WriteIndex writes the command index of program, which `make wasm`
// gathers from every module into wasm/commands.txt: one line per
// registered name, sorted, "NAME PROGRAM" for a command and "NAME PROGRAM
// TARGET" for an alias of TARGET.
func WriteIndex(program string, w io.Writer) {
	for _, n := range Names() {
		if a := AliasOf(n); a != "" {
			fmt.Fprintln(w, n, program, a)
		} else {
			fmt.Fprintln(w, n, program)
		}
	}
}
