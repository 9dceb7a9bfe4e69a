// Command net is the tool module of wasmbox's network commands, curl and
// wget, built for wasip1 into wasm/net.wasm (see tools/internal/netcmd).
// They reach the network only through the host (runtime.NetABI).
package main

import (
	"os"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
	_ "github.com/wasmbox/wasmbox/tools/internal/netcmd"
)

func init() { cmd.SetProgram("net") }

func main() {
	os.Exit(cmd.Multicall("net", cmd.OSEnv()))
}
