// Command wasmbox runs untrusted commands and WebAssembly programs inside a
// sandbox: every program is a WASI module run by wazero against a
// filesystem the host owns, under a deadline that kills it wherever it is.
//
//	wasmbox exec [flags] FILE.wasm [-- args...]   run one module (a superset of `wazero run`)
//
// Run `wasmbox help` for every subcommand.
package main

import "os"

func main() {
	os.Exit(cliMain(os.Args[1:]))
}

// cliMain is the process's whole command line: `wasmbox run` goes to the
// resident engine where it can (internal/engine; engine_linux.go), everything else runs
// here.
func cliMain(args []string) int {
	if code, ok := viaEngine(args, os.Stdin, os.Stdout, os.Stderr); ok {
		return code
	}
	return doMain(args, os.Stdin, os.Stdout, os.Stderr)
}
