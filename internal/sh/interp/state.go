// Copyright (c) 2026, wasmbox authors. See LICENSE for licensing information.

package interp

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"unsafe"

	"github.com/wasmbox/wasmbox/internal/sh/syntax"

	"github.com/wasmbox/wasmbox/internal/sh/expand"
)

// OptionsOn returns the names of the options that are on: those of `set
// -o` (errexit, pipefail, ...) and the supported ones of `shopt` (extglob,
// ...), in the order the two builtins print them; what they would print as
// "on", without printing it.
func (r *Runner) OptionsOn() (set, shopt []string) {
	for i, opt := range &posixOptsTable {
		if r.opts[i] {
			set = append(set, opt.name)
		}
	}
	for i, opt := range bashOptsTable {
		if opt.supported && r.opts[len(posixOptsTable)+i] {
			shopt = append(shopt, opt.name)
		}
	}
	return set, shopt
}

// Aliases returns every alias with its text, as `alias` prints it.
func (r *Runner) Aliases() map[string]string {
	out := make(map[string]string, len(r.alias))
	printer := syntax.NewPrinter()
	for _, name := range slices.Sorted(maps.Keys(r.alias)) {
		als := r.alias[name]
		if als.src != "" {
			out[name] = als.src
			continue
		}
		var buf bytes.Buffer
		if len(als.args) > 0 {
			printer.Print(&buf, &syntax.CallExpr{Args: als.args})
		}
		if als.blank {
			buf.WriteByte(' ')
		}
		out[name] = buf.String()
	}
	return out
}

// ErrTrap returns the command of the ERR trap, "" when none is set.
func (r *Runner) ErrTrap() string { return r.callbackErr }

// Environ returns the runner's variables (its environment with what the
// shell set over it), as handlers see them in HandlerContext.Env.
func (r *Runner) Environ() expand.Environ {
	if r.writeEnv == nil {
		return r.Env
	}
	return r.writeEnv
}

// HasFunc reports whether name is a function of the shell the handler
// runs in (functions come before builtins and commands).
func (hc HandlerContext) HasFunc(name string) bool {
	if hc.runner == nil {
		return false
	}
	_, ok := hc.runner.Funcs[name]
	return ok
}

// VarsGeneration counts the changes this runner made to variables (an
// assignment of a value a variable already had is none): a caller that
// saves the shell's state after a run can tell whether the variables
// changed without reading them.
func (r *Runner) VarsGeneration() uint64 { return r.varsGen }

// StateKey is a cheap summary of the state that persists between runs
// besides the variables' values: options, the directory, traps, and the
// identity of every function body and alias. Two equal keys (and equal
// VarsGeneration) mean an unchanged state.
type StateKey struct {
	opts     runnerOpts
	dir      string
	errTrap  string
	exitTrap string
	funcs    string
	aliases  string
}

// StateKey returns the runner's StateKey.
func (r *Runner) StateKey() StateKey {
	k := StateKey{opts: r.opts, dir: r.Dir, errTrap: r.callbackErr, exitTrap: r.callbackExit}
	var b []byte
	for _, name := range slices.Sorted(maps.Keys(r.Funcs)) {
		b = fmt.Appendf(b, "%s=%p;", name, r.Funcs[name])
	}
	k.funcs = string(b)
	b = b[:0]
	for _, name := range slices.Sorted(maps.Keys(r.alias)) {
		als := r.alias[name]
		b = fmt.Appendf(b, "%s=%p/%d/%t;", name, unsafe.SliceData(als.args), len(als.args), als.blank)
	}
	k.aliases = string(b)
	return k
}

// ExitTrap returns the command of the EXIT trap, "" when none is set.
func (r *Runner) ExitTrap() string { return r.callbackExit }

// SetVar sets a variable of the runner's current scope, as an assignment
// would (a read-only variable is an error), without running a statement:
// for restoring a saved state.
func (r *Runner) SetVar(name string, vr expand.Variable) error {
	if !r.didReset {
		r.Reset()
	}
	return r.setVarErr(name, vr)
}

// UnsetVar unsets a variable, as the unset builtin does.
func (r *Runner) UnsetVar(name string) error {
	if !r.didReset {
		r.Reset()
	}
	if vr := r.lookupVar(name); vr.ReadOnly {
		return fmt.Errorf("%s: %w", name, errReadOnly)
	}
	r.delVar(name)
	return nil
}

// SetOption turns an option of `set -o` (errexit, pipefail, ...) or of
// `shopt` (extglob, ...) on or off.
func (r *Runner) SetOption(name string, on bool) error {
	if p := r.posixOptByName(name); p != nil {
		*p = on
		return nil
	}
	if p, supported := r.bashOptByName(name); p != nil && supported {
		*p = on
		return nil
	}
	return fmt.Errorf("%s: invalid option name", name)
}

// SetAlias defines an alias, as `alias name=text` does.
func (r *Runner) SetAlias(name, text string) error {
	if r.alias == nil {
		r.alias = make(map[string]alias)
	}
	r.alias[name] = newAlias(text)
	return nil
}

// SetErrTrap sets the command of the ERR trap ("" for none).
func (r *Runner) SetErrTrap(cmd string) { r.callbackErr = cmd }

// SetFunc defines a function, as running its declaration would.
func (r *Runner) SetFunc(name string, body *syntax.Stmt) { r.setFunc(name, body) }

// VarsVersion identifies the variables a handler sees: the runner they
// belong to, its VarsGeneration, and how many bytes of values its
// assignments have stored so far. An equal version means unchanged
// variables; a small growth of assigned bytes means they cannot have grown
// by more (for a check that is costly to repeat).
func (hc HandlerContext) VarsVersion() (runner uintptr, gen, assigned uint64) {
	if hc.runner == nil {
		return 0, 0, 0
	}
	return uintptr(unsafe.Pointer(hc.runner)), hc.runner.varsGen, hc.runner.varsBytes
}
