// Package wasm holds the built tool modules of wasmbox, embedded in the Go
// binary, and the index of the commands they provide.
//
// The modules are built from tools/ by `make wasm` and committed, so that
// `go build` and `go test` need nothing but Go. Each module is a multi-call
// program that picks the command by the base name of argv[0]; the index
// (Commands) says which module provides each name. A runtime compiles each
// module once, registers it under every name of its commands (typically as
// /bin/NAME and /usr/bin/NAME) and runs it with argv[0] set to that name.
//
//	for _, c := range wasm.Commands() {
//		bin, _ := wasm.Module(c.Module)
//		registry.Add(c.Name, bin) // compile each module once, share it
//	}
//
// The modules are Modules(): "coreutils" provides almost every command;
// "jq" (gojq, the yq command; jq is jq 1.6, JQ16Module) and "awk" (GoAWK,
// the gawk command) are separate because
// those engines are most of a module's size and their package
// initialisation would otherwise run on every start of every command;
// "net" is curl and wget, which alone link net/http; "grep", "sed",
// "mawk", "sort", "uniq", "wc", "cut" and "sha256sum" are the C tools
// (CModules, see ctools.go).
//
// # Build
//
// A module is a GOOS=wasip1 GOARCH=wasm build of tools/NAME with -trimpath
// and no build id, post-processed by tools/wasmopt (which merges the Go
// linker's tens of thousands of data segments into a few, making
// instantiation several times cheaper). The build is reproducible: `make
// wasm-check` rebuilds every module and the index and fails if the
// committed bytes differ.
//
// # Spawning
//
// Commands that run other commands (xargs, find -exec, env, timeout, nice,
// nohup) import the host function wasmbox.spawn:
//
//	(import "wasmbox" "spawn" (func (param $req_ptr i32) (param $req_len i32) (param $status_ptr i32) (result i32)))
//
// The request is JSON: {"argv": [...], "env": ["K=V",...] (absent: inherit),
// "dir": "/abs" (absent: the caller's), "stdin": "inherit"|"null",
// "timeout_ms": N (0 or absent: none)}. The result is a WASI errno: 0 when
// the child ran, with its exit status stored as a little-endian u32 at
// status_ptr (124 when timeout_ms expired); 44 (ENOENT) when the command is
// not found; 2 (EACCES) when policy denies it; 28 (EINVAL) for a bad
// request; 21 (EFAULT) for a pointer outside memory. The child shares the
// caller's stdout and stderr (and stdin unless "null"), its filesystem,
// deadline, allowlist and limits. A host that instantiates the module must
// provide this function (it may always return 52, ENOSYS, to forbid
// spawning).
package wasm

import (
	_ "embed"
	"slices"
	"strings"
	"sync"
)

var (
	//go:embed coreutils.wasm
	coreutils []byte
	//go:embed jq.wasm
	jq []byte
	//go:embed awk.wasm
	awk []byte
	//go:embed net.wasm
	netWasm []byte
)

//go:embed commands.txt
var commandsIndex string

// The names of the tool modules (see Module).
const (
	// CoreutilsModule is the multi-call module of most commands.
	CoreutilsModule = "coreutils"
	// JQModule is gojq: it provides yq (jq is JQ16Module, jq 1.6 in C;
	// the module keeps its jq for its own tests).
	JQModule = "jq"
	// AWKModule is GoAWK: the gawk command (awk, mawk and nawk are
	// MawkModule's).
	AWKModule = "awk"
	// NetModule provides curl and wget, which reach the network through
	// the host (runtime.NetABI).
	NetModule = "net"
)

// Coreutils returns the multi-call tool module (a wasip1 binary). The slice
// is shared: callers must not modify it.
func Coreutils() []byte { return coreutils }

// Modules returns the names of the embedded modules, sorted.
func Modules() []string {
	return []string{AWKModule, CatModule, CoreutilsModule, CutModule, GrepModule, HeadModule, JQModule, JQ16Module, MawkModule, NetModule, SedModule, Sha256sumModule, SortModule, TailModule, TeeModule, TrModule, UniqModule, WcModule}
}

// GoModules returns the names of the Go tool modules (`make wasm`
// builds tools/NAME for each), sorted.
func GoModules() []string {
	return []string{AWKModule, CoreutilsModule, JQModule, NetModule}
}

// Module returns the bytes of the named module (see Command.Module). The
// slice is shared: callers must not modify it.
func Module(name string) ([]byte, bool) {
	switch name {
	case CoreutilsModule:
		return coreutils, true
	case JQModule:
		return jq, true
	case AWKModule:
		return awk, true
	case NetModule:
		return netWasm, true
	case GrepModule:
		return grepWasm, true
	case SedModule:
		return sedWasm, true
	case MawkModule:
		return mawkWasm, true
	case SortModule:
		return sortWasm, true
	case UniqModule:
		return uniqWasm, true
	case WcModule:
		return wcWasm, true
	case CutModule:
		return cutWasm, true
	case Sha256sumModule:
		return sha256sumWasm, true
	case CatModule:
		return catWasm, true
	case TrModule:
		return trWasm, true
	case HeadModule:
		return headWasm, true
	case TailModule:
		return tailWasm, true
	case TeeModule:
		return teeWasm, true
	case JQ16Module:
		return jq16Wasm, true
	case PythonModule:
		m, _, ok := Python()
		return m, ok
	case SQLite3Module:
		return SQLite3()
	case BashModule:
		return Bash()
	}
	return nil, false
}

// Command is one entry of the command index.
type Command struct {
	// Name is what the command is called by (argv[0]).
	Name string
	// Module names the module that implements it (see Module).
	Module string
	// AliasOf is the command Name stands for ("[" for "test", ...), or ""
	// when Name is a command itself.
	AliasOf string
}

var commands = sync.OnceValue(func() []Command { return parseIndex(commandsIndex) })

// parseIndex parses the index `make wasm` writes (the modules' "--index"
// output, see cmd.Multicall): "NAME MODULE" or "NAME MODULE ALIAS_OF" a
// line.
func parseIndex(index string) []Command {
	var cs []Command
	for _, line := range strings.Split(index, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		c := Command{Name: f[0], Module: f[1]}
		if len(f) > 2 {
			c.AliasOf = f[2]
		}
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b Command) int { return strings.Compare(a.Name, b.Name) })
	return cs
}

// Commands returns every command and alias, sorted by name. The slice is
// a copy.
func Commands() []Command { return slices.Clone(commands()) }

// Lookup returns the index entry for name (a base name such as "grep").
func Lookup(name string) (Command, bool) {
	cs := commands()
	i, ok := slices.BinarySearchFunc(cs, name, func(c Command, n string) int { return strings.Compare(c.Name, n) })
	if !ok {
		return Command{}, false
	}
	return cs[i], true
}
