// Command coreutils is the multi-call tool program of wasmbox, built for
// wasip1 into wasm/coreutils.wasm. The command to run is the base name of
// argv[0]; called as "coreutils CMD ARGS..." it runs CMD, "coreutils
// --list" prints the registered names and "coreutils --index" the command
// index (see cmd.Multicall).
//
// The heavy commands live in modules of their own, so that the commands
// here neither carry their code nor pay their initialisation on every
// start: jq (tools/jq) and awk (tools/awk).
package main

import (
	"os"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"

	// The command packages register their commands in init.
	_ "github.com/wasmbox/wasmbox/tools/internal/fileutils"
	_ "github.com/wasmbox/wasmbox/tools/internal/morecmds"
	_ "github.com/wasmbox/wasmbox/tools/internal/sysutils"
	_ "github.com/wasmbox/wasmbox/tools/internal/textutils"
)

func init() { cmd.SetProgram("coreutils") }

func main() {
	os.Exit(cmd.Multicall("coreutils", cmd.OSEnv()))
}
