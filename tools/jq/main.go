// Command jq is the tool module of wasmbox's jq command, built for wasip1
// into wasm/jq.wasm. It is a multi-call program like tools/coreutils (the
// command is the base name of argv[0], see cmd.Multicall) that registers
// only jq, so that gojq's code and initialisation stay out of the
// coreutils module.
package main

import (
	"os"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
	_ "github.com/wasmbox/wasmbox/tools/internal/jqcmd"
)

func init() { cmd.SetProgram("jq") }

func main() {
	os.Exit(cmd.Multicall("jq", cmd.OSEnv()))
}
