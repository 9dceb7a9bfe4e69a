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
	os.Exit(doMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
