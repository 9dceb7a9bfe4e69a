package wasm

import _ "embed"

// The C tools: GNU grep, GNU sed, mawk and GNU coreutils' sort, uniq, wc,
// cut, sha256sum, cat, tr, head, tail and tee for wasm32-wasi (wasm/ctools,
// built by `make ctools` from Debian's source packages, see
// build/ctools). They are plain WASI commands (_start), not multi-call Go
// reactors: each module is one program, started afresh for every run
// (a few milliseconds of C start-up, no snapshot). Their lines of the
// command index (wasm/ctools/commands.txt, which `make wasm` merges into
// commands.txt in place of the Go tools' lines for the same names) give
// them grep, egrep, fgrep, sed, awk, mawk, nawk, sort, uniq, wc, cut,
// sha256sum, cat, tr, head, tail, tee and jq (jq 1.6); the Go tools of those
// names stay in the coreutils module for its native tests, unreachable by
// name, and GoAWK stays reachable as gawk (its gawk extensions). mawk's
// system() and pipes run sandbox commands through the runtime's process
// ABI (build/ctools/mawk_wasi.c).
var (
	//go:embed ctools/grep.wasm
	grepWasm []byte
	//go:embed ctools/sed.wasm
	sedWasm []byte
	//go:embed ctools/mawk.wasm
	mawkWasm []byte
	//go:embed ctools/sort.wasm
	sortWasm []byte
	//go:embed ctools/uniq.wasm
	uniqWasm []byte
	//go:embed ctools/wc.wasm
	wcWasm []byte
	//go:embed ctools/cut.wasm
	cutWasm []byte
	//go:embed ctools/sha256sum.wasm
	sha256sumWasm []byte
	// The pipeline stages (issue 22).
	//go:embed ctools/cat.wasm
	catWasm []byte
	//go:embed ctools/tr.wasm
	trWasm []byte
	//go:embed ctools/head.wasm
	headWasm []byte
	//go:embed ctools/tail.wasm
	tailWasm []byte
	//go:embed ctools/tee.wasm
	teeWasm []byte
	// jq 1.6 with oniguruma (issue 25).
	//go:embed ctools/jq16.wasm
	jq16Wasm []byte
	// ctoolsIndex is their part of commands.txt (make wasm merges it).
	//go:embed ctools/commands.txt
	ctoolsIndex []byte
)

// The module names of the C tools (see Module).
const (
	// GrepModule is GNU grep (grep; egrep and fgrep run it as grep -E
	// and grep -F, as Debian's scripts of those names do).
	GrepModule = "grep"
	// SedModule is GNU sed.
	SedModule = "sed"
	// MawkModule is mawk: awk, mawk and nawk.
	MawkModule = "mawk"
	// SortModule, UniqModule, WcModule, CutModule and Sha256sumModule
	// are GNU coreutils' sort, uniq, wc, cut and sha256sum.
	SortModule      = "sort"
	UniqModule      = "uniq"
	WcModule        = "wc"
	CutModule       = "cut"
	Sha256sumModule = "sha256sum"
	// CatModule, TrModule, HeadModule, TailModule and TeeModule are GNU
	// coreutils' cat, tr, head, tail and tee: the common pipeline stages,
	// whose Go versions paid for the 11 MB coreutils module (and Go's
	// speed in wasm) in every stage.
	CatModule  = "cat"
	TrModule   = "tr"
	HeadModule = "head"
	TailModule = "tail"
	TeeModule  = "tee"
	// JQ16Module is jq 1.6 (Debian's source, with oniguruma for its
	// regular expressions): the jq command. JQModule (gojq) stays for
	// yq.
	JQ16Module = "jq16"
)

// CModules returns the names of the C tool modules, sorted. They are
// among Modules, but are built by `make ctools`, not by `make wasm`.
func CModules() []string {
	return []string{CatModule, CutModule, GrepModule, HeadModule, JQ16Module, MawkModule, SedModule, Sha256sumModule, SortModule, TailModule, TeeModule, TrModule, UniqModule, WcModule}
}

// IsCModule reports whether name is one of CModules.
func IsCModule(name string) bool {
	switch name {
	case CatModule, CutModule, GrepModule, HeadModule, JQ16Module, MawkModule, SedModule, Sha256sumModule, SortModule, TailModule, TeeModule, TrModule, UniqModule, WcModule:
		return true
	}
	return false
}
