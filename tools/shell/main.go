// Command shell is wasmbox's shell module, built for wasip1 into
// wasm/shell.wasm: the bash interpreter of package shell (mvdan.cc/sh with
// wasmbox's handlers, builtins, sanitizer and limits) as a WASI reactor.
//
// It has two entry points (besides _initialize):
//
//   - wasmbox_session(op, input_len) -> errno: the live shell of a sandbox
//     session, whose state stays in the instance between calls (see
//     shell/wire for the operations and shell/session for the host side);
//   - wasmbox_run() -> status: `sh`, `bash` and `dash` as commands of the
//     executor (what xargs sh -c and find -exec bash start), reading their
//     arguments, environment and $PWD from WASI like every tool.
//
// Built natively with the tag wasmbox_index it prints its part of
// wasm/commands.txt.
package main

func main() { run() }
