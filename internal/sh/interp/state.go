// Copyright (c) 2026, wasmbox authors. See LICENSE for licensing information.

package interp

import (
	"bytes"
	"maps"
	"slices"

	"mvdan.cc/sh/v3/syntax"

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
