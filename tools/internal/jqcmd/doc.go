// Package jqcmd is the jq command of wasmbox, built into its own tool
// module (tools/jq, wasm/jq.wasm) rather than the multi-call coreutils
// module: gojq is most of a module's size and its package initialisation
// costs about two thousand allocations, which every command of a module
// pays on every start.
//
// jq is gojq with jq 1.6 output. gojq keeps objects as Go maps; the key
// order of the input and of the program's object constructors is recorded
// and used on output, and to_entries, with_entries, paths and
// keys_unsorted follow it, but .[] over an object iterates in sorted key
// order.
//
// The command registers itself with package cmd in init; tools/jq is the
// program that imports it.
package jqcmd
