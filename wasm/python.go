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
	//go:embed python/sqlite3.wasm
	sqlite3Wasm []byte
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

// SQLite3Module is the module name of SQLite's shell, the sqlite3 command
// (wasm/python/sqlite3.wasm: shell.c and the amalgamation python.wasm
// links, built with the same flags by `make python`, see
// build/python/sqlite/shell.sh). It is a WASI command (_start), not a
// reactor. Like the interpreter it is not in commands.txt: SQLite3Commands
// names it, and only when the artifact is present.
const SQLite3Module = "sqlite3"

// SQLite3 returns SQLite's shell (a wasip1 command module that also
// imports wasmbox.chmod, see runtime.MetaABI), or ok false when it was not
// built into this binary. The slice is shared: callers must not modify it.
//
// Databases are files of the sandbox's filesystem. The shell uses SQLite's
// "unix-none" VFS (WASI has no byte-range locks): rollback journals work,
// WAL is compiled out, and two commands writing one database at the same
// moment are not serialized. It has no processes (.system, .shell and
// pipes in .output, .once and .import say so) and no line editor; the
// standard streams are never terminals (-interactive asks for the prompt).
func SQLite3() ([]byte, bool) {
	if len(sqlite3Wasm) == 0 {
		return nil, false
	}
	return sqlite3Wasm, true
}

// SQLite3Commands returns the command names of SQLite's shell ("sqlite3"),
// or nil when it is not built in. Module(SQLite3Module) returns it.
func SQLite3Commands() []string {
	if _, ok := SQLite3(); !ok {
		return nil
	}
	return []string{"sqlite3"}
}
