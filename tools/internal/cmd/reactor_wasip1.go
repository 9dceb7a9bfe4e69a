//go:build wasip1

package cmd

import (
	"os"
	"path"
	"strings"
	"syscall"
	"unsafe"
	_ "unsafe" // go:linkname
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

//go:wasmimport wasi_snapshot_preview1 args_sizes_get
func argsSizesGet(argc, bufLen unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 args_get
func argsGet(argv, buf unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 environ_sizes_get
func environSizesGet(count, bufLen unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 environ_get
func environGet(envv, buf unsafe.Pointer) uint32

// The working directory of package syscall, which it sets from $PWD in its
// init. syscall.Chdir sets it too, but only to a directory that exists,
// where a command started in a directory removed since must see that
// directory as its own, as it does when it starts without the snapshot.
//
//go:linkname syscallCwd syscall.cwd
var syscallCwd string

// readStrings reads WASI's argument or environment vector.
func readStrings(sizes, get func(unsafe.Pointer, unsafe.Pointer) uint32) []string {
	var n, size uint32
	if sizes(unsafe.Pointer(&n), unsafe.Pointer(&size)) != 0 || n == 0 {
		return nil
	}
	ptrs := make([]uint32, n)
	buf := make([]byte, size)
	if get(unsafe.Pointer(&ptrs[0]), unsafe.Pointer(unsafe.SliceData(buf))) != 0 {
		return nil
	}
	// The vector holds 32-bit addresses into buf, each of a NUL-ended
	// string; the strings follow one another in order.
	out := make([]string, 0, n)
	for _, s := range strings.SplitAfter(string(buf), "\x00") {
		if len(out) == int(n) {
			break
		}
		out = append(out, strings.TrimSuffix(s, "\x00"))
	}
	return out
}

//go:wasmexport wasmbox_run
func wasmboxRun() int32 {
	os.Args = readStrings(argsSizesGet, argsGet)
	os.Clearenv()
	pwd := ""
	for _, kv := range readStrings(environSizesGet, environGet) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if k == "PWD" {
			pwd = v
		}
		os.Setenv(k, v)
	}
	// As syscall's init: $PWD made absolute, or else the first preopen,
	// which is what the snapshot holds already.
	if pwd != "" {
		if err := syscall.Chdir(pwd); err != nil {
			syscallCwd = path.Join("/", pwd)
		}
	}
	return int32(Multicall(program, OSEnv()))
}
