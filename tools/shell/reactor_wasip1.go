//go:build wasip1 && !wasmbox_index

package main

import (
	"os"
	"strings"

	"github.com/wasmbox/wasmbox/internal/guest"
	"github.com/wasmbox/wasmbox/shell"
)

func run() { os.Exit(shell.CommandMain(os.Args, os.Environ(), os.Getenv("PWD"))) }

//go:wasmexport wasmbox_session
func wasmboxSession(op, inLen uint32) uint32 { return shell.SessionCall(op, inLen) }

//go:wasmexport wasmbox_run
func wasmboxRun() int32 {
	env := guest.Environ()
	pwd := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PWD="); ok {
			pwd = v
		}
	}
	if dir, ok := guest.Getwd(); ok {
		pwd = dir // the host's (runtime.CwdABI), whatever $PWD says
	}
	return int32(shell.CommandMain(guest.Args(), env, pwd))
}
