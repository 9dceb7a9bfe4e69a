// Package awkcmd is the awk command of wasmbox (also called gawk, mawk and
// nawk), built into its own tool module (tools/awk, wasm/awk.wasm) rather
// than the multi-call coreutils module, so that the other commands neither
// carry GoAWK's code nor pay its package initialisation on every start.
//
// awk is GoAWK. system() runs "sh -c CMD" through cmd.Spawn (the sandbox's
// spawn host function); the pipes print | "cmd" and "cmd" | getline fail
// with a clear error, since a WASI program cannot start processes itself.
//
// The command registers itself with package cmd in init; tools/awk is the
// program that imports it.
package awkcmd
