package wasm

import _ "embed"

// Python: CPython 3.11 for wasm32-wasi (wasm/python, built by `make
// python` from Debian's python3.11 source package, see build/python). It is
// not a multi-call tool module: its commands (python3, python, python3.11)
// are not in commands.txt but come from PythonCommands, and only when the
// artifacts are present. Module(PythonModule) returns it.

// The artifacts are committed (`make python` rebuilds them); embedding
// them as byte slices, not as an embed.FS, keeps Python from copying 16 MB
// on every call: ReadFile of an embed.FS returns a fresh copy, and a warm
// process start paid for three of them.
var (
	//go:embed python/python.wasm
	pythonWasm []byte
	//go:embed python/python-stdlib.zip
	pythonStdlib []byte
)

// PythonModule is the module name of the Python interpreter.
const PythonModule = "python"

// PythonStdlibDir is where the standard library lives in the guest.
const PythonStdlibDir = "/usr/lib/python3.11"

// Python returns the interpreter (a wasmbox reactor, see runtime.SnapshotABI:
// build/python/wasmbox_main.c) and its standard
// library (a zip of the tree under PythonStdlibDir, modules as .pyc), or
// ok false when they were not built into this binary. The slices are
// shared: callers must not modify them.
func Python() (module, stdlib []byte, ok bool) {
	if len(pythonWasm) == 0 || len(pythonStdlib) == 0 {
		return nil, nil, false
	}
	return pythonWasm, pythonStdlib, true
}

// PythonCommands returns the command names of the interpreter, or nil
// when it is not built in. They are not part of Commands (the index of the
// tool modules that `make wasm` builds); Module(PythonModule) returns the
// interpreter.
func PythonCommands() []string {
	if _, _, ok := Python(); !ok {
		return nil
	}
	return []string{"python", "python3", "python3.11"}
}
