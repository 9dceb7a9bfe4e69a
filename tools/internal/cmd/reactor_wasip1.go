//go:build wasip1

package cmd

import (
	"os"
	"path"
	"strings"
	"syscall"
	_ "unsafe" // go:linkname

	"github.com/wasmbox/wasmbox/internal/guest"
)

// The reactor entry point.
//
// `make wasm` links the tool programs with -buildmode=c-shared: the module
// exports _initialize, which runs the Go runtime's and every package's
// initialisation and then returns to the host with the runtime paused, and
// wasmbox_run, which runs one command. The host runs _initialize once,
// keeps the linear memory and globals that result as a snapshot, and
// starts every command from a copy-on-write copy of that snapshot: a
// command pays neither the runtime's start nor the packages' init.
//
// What the initialisation captured of the process is therefore the
// snapshot's, not the command's: arguments, environment and the working
// directory. wasmbox_run reads them again from WASI before it runs the
// command, which is all a command sees of them (os.Args, os.Getenv,
// os.Getwd, relative paths). What else the runtime keeps from its start —
// hash seeds and the runtime's own random state — is the same in every
// command; commands that need randomness read it from crypto/rand, which
// asks WASI each time.

// The working directory of package syscall, which it sets from $PWD in its
// init. syscall.Chdir sets it too, but only to a directory that exists,
// where a command started in a directory removed since must see that
// directory as its own, as it does when it starts without the snapshot.
//
//go:linkname syscallCwd syscall.cwd
var syscallCwd string

//go:wasmexport wasmbox_run
func wasmboxRun() int32 {
	os.Args = guest.Args()
	os.Clearenv()
	pwd := ""
	for _, kv := range guest.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if k == "PWD" {
			pwd = v
		}
		os.Setenv(k, v)
	}
	// The directory the host gives (its getcwd call), else as syscall's
	// init: $PWD made absolute, or else the first preopen, which is what
	// the snapshot holds already.
	if dir, ok := guest.Getwd(); ok {
		pwd = dir
	}
	if pwd != "" {
		if err := syscall.Chdir(pwd); err != nil {
			syscallCwd = path.Join("/", pwd)
		}
	}
	return int32(Multicall(program, OSEnv()))
}
