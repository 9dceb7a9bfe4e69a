// Command awk is the tool module of wasmbox's awk command and its aliases
// gawk, mawk and nawk, built for wasip1 into wasm/awk.wasm. It is a
// multi-call program like tools/coreutils (the command is the base name of
// argv[0], see cmd.Multicall) that registers only awk, so that GoAWK's
// code and initialisation stay out of the coreutils module.
package main

import (
	"os"

	_ "github.com/wasmbox/wasmbox/tools/internal/awkcmd"
	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.SetProgram("awk") }

func main() {
	os.Exit(cmd.Multicall("awk", cmd.OSEnv()))
}
