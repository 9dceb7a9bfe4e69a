package wasm

import _ "embed"

// GNU bash 5.2.15 for wasm32-wasi (wasm/bash.wasm, built by `make bash`
// from Debian's bash source package, see build/bash). Like the Python
// interpreter it is not a multi-call tool module and not in commands.txt:
// BashCommands names it, and only when the artifact is present; it then
// takes the command names bash, sh and dash (the executor gives a name to
// the module registered last). As sh it runs in POSIX mode, which bash
// chooses itself from the base name of its argv[0]; as dash it is given
// --posix (BashLeadingArgs), since bash does not know that name.
//
// It is a WASI command (_start) that imports build/posix's host calls
// (wasmbox.fork, proc_self, fd_dup, fd_dup2, spawn, proc_kill) and the
// metadata calls (wasmbox.stat, wasmbox.chmod): pipelines, subshells and
// $(...) are forked instances, external commands go through the executor.

//go:embed bash.wasm
var bashWasm []byte

// BashModule is the module name of GNU bash.
const BashModule = "bash"

// Bash returns GNU bash's module, or ok false when it was not built into
// this binary. The slice is shared: callers must not modify it.
func Bash() ([]byte, bool) {
	if len(bashWasm) == 0 {
		return nil, false
	}
	return bashWasm, true
}

// BashCommands returns the command names of GNU bash (bash, sh and dash),
// or nil when it is not built in. Module(BashModule) returns it.
func BashCommands() []string {
	if _, ok := Bash(); !ok {
		return nil
	}
	return []string{"bash", "sh", "dash"}
}

// BashLeadingArgs returns the arguments GNU bash is given before the
// command's own when it runs as the command name: --posix for dash (bash
// turns POSIX mode on by itself only for the name sh), else none.
func BashLeadingArgs(name string) []string {
	if name == "dash" {
		return []string{"--posix"}
	}
	return nil
}
