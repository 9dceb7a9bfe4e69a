package shell

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wasmbox/wasmbox/internal/sh/syntax"

	"github.com/wasmbox/wasmbox/internal/sh/expand"
	"github.com/wasmbox/wasmbox/shell/wire"
)

// State is the part of a Shell that persists across Runs, in a form that
// can be serialized (it has only plain fields) and loaded into another
// Shell with Restore. It is the wire form the host keeps (see shell/wire).
type State = wire.State

// Var is one shell variable with its attributes. Kind is "string",
// "indexed", "associative" or "nameref" (whose Str is the target name).
type Var = wire.Var

// Variables the shell owns; Snapshot leaves them out.
var stateSkip = map[string]bool{
	"UID": true, "EUID": true, "GID": true, "PWD": true, "OPTIND": true,
	"RANDOM": true, "SRANDOM": true,
}

// Snapshot returns a copy of the shell's persistent state.
func (s *Shell) Snapshot() (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshot()
}

func (s *Shell) snapshot() (State, error) {
	r := s.runner
	st := State{Dir: r.Dir, Umask: s.umask.Load(), Funcs: make(map[string]string, len(r.Funcs)), Aliases: r.Aliases()}
	seen := map[string]Var{}
	r.Environ().Each(func(name string, vr expand.Variable) bool {
		if !vr.IsSet() || vr.Local {
			// Unset, or local to a function the interpreter was in when it
			// panicked (see Shell.rebuild).
			delete(seen, name)
			return true
		}
		seen[name] = toVar(name, vr)
		return true
	})
	for _, name := range slices.Sorted(maps.Keys(seen)) {
		if !stateSkip[name] {
			st.Vars = append(st.Vars, seen[name])
		}
	}
	st.Options, st.ShellOptions = r.OptionsOn()
	st.ErrTrap = r.ErrTrap()
	// A function's text is printed once per definition: the cache is
	// keyed by its body, which a redefinition replaces.
	cache := make(map[*syntax.Stmt]string, len(r.Funcs))
	printer := syntax.NewPrinter()
	for name, body := range r.Funcs {
		if text, ok := s.funcText[body]; ok && strings.HasPrefix(text, name+"()") {
			st.Funcs[name] = text
			cache[body] = text
			continue
		}
		var sb strings.Builder
		if err := printer.Print(&sb, &syntax.FuncDecl{Parens: true, Name: &syntax.Lit{Value: name}, Body: body}); err != nil {
			return State{}, fmt.Errorf("shell: snapshot: function %s: %w", name, err)
		}
		st.Funcs[name] = sb.String()
		cache[body] = sb.String()
	}
	s.funcText = cache
	return st, nil
}

func toVar(name string, vr expand.Variable) Var {
	v := Var{Name: name, Exported: vr.Exported, ReadOnly: vr.ReadOnly}
	switch vr.Kind {
	case expand.Indexed:
		v.Kind, v.List, v.Indexes = "indexed", slices.Clone(vr.List), slices.Clone(vr.Indexes)
	case expand.Associative:
		v.Kind, v.Map = "associative", maps.Clone(vr.Map)
	case expand.NameRef:
		v.Kind, v.Str = "nameref", vr.Str
	default:
		v.Kind, v.Str = "string", vr.Str
	}
	return v
}

// Restore replaces the shell's persistent state with st (typically from
// Snapshot, of this Shell or another one): it starts from a fresh
// interpreter over Config.Env, then sets the variables, functions, aliases,
// options, traps, umask and directory of st. Function bodies are sanitized
// again. On error the shell keeps its previous state.
func (s *Shell) Restore(st State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restore(st)
}

func (s *Shell) restore(st State) error {
	dir := st.Dir
	if dir == "" {
		dir = s.runner.Dir
	}
	if fi, err := s.cfg.FS.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("shell: restore: directory %q does not exist", dir)
	}
	old, oldUmask := s.runner, s.umask.Load()
	r, err := s.newRunner(dir)
	if err != nil {
		return err
	}
	s.runner = r
	if err := s.applyState(st); err != nil {
		s.runner = old
		s.umask.Store(oldUmask)
		return err
	}
	return nil
}

// restoredOptions are the options a state restores (the others stay at
// their defaults): `set -o` ones, then `shopt` ones. noexec would stop the
// shell itself.
var restoredOptions = []string{"allexport", "errexit", "noglob", "nounset", "pipefail", "xtrace",
	"dotglob", "expand_aliases", "extglob", "globstar", "lastpipe", "nocaseglob", "nullglob"}

// applyState loads st into the fresh runner: variables, aliases, options,
// the ERR trap, functions and the umask, directly (no statement runs).
func (s *Shell) applyState(st State) error {
	r := s.runner
	// Variables of the base environment the state does not have were
	// unset in the original shell.
	have := map[string]bool{}
	for _, v := range st.Vars {
		have[v.Name] = true
	}
	for _, name := range s.env.names {
		if !have[name] && !stateSkip[name] && !s.env.vars[name].ReadOnly {
			if err := r.UnsetVar(name); err != nil {
				return fmt.Errorf("shell: restore: %w", err)
			}
		}
	}
	for _, v := range st.Vars {
		if !syntax.ValidName(v.Name) || stateSkip[v.Name] {
			continue
		}
		vr := expand.Variable{Set: true, Exported: v.Exported, ReadOnly: v.ReadOnly}
		switch v.Kind {
		case "indexed":
			vr.Kind, vr.List = expand.Indexed, slices.Clone(v.List)
			if v.Indexes != nil {
				if len(v.Indexes) != len(v.List) {
					return fmt.Errorf("shell: restore: array %s: %d indexes for %d elements", v.Name, len(v.Indexes), len(v.List))
				}
				vr.Indexes = slices.Clone(v.Indexes)
			}
		case "associative":
			vr.Kind, vr.Map = expand.Associative, maps.Clone(v.Map)
			if vr.Map == nil {
				vr.Map = map[string]string{}
			}
		case "nameref":
			if !syntax.ValidName(v.Str) {
				return fmt.Errorf("shell: restore: nameref %s to %q", v.Name, v.Str)
			}
			vr.Kind, vr.Str = expand.NameRef, v.Str
		default:
			vr.Kind, vr.Str = expand.String, strings.ReplaceAll(v.Str, "\x00", "")
		}
		if err := r.SetVar(v.Name, vr); err != nil {
			return fmt.Errorf("shell: restore: %w", err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(st.Aliases)) {
		if !validAliasName(name) {
			return fmt.Errorf("shell: restore: alias name %q", name)
		}
		if err := r.SetAlias(name, st.Aliases[name]); err != nil {
			return fmt.Errorf("shell: restore: %w", err)
		}
	}
	on := map[string]bool{}
	for _, o := range st.Options {
		on[o] = true
	}
	for _, o := range st.ShellOptions {
		on[o] = true
	}
	for _, o := range restoredOptions {
		if err := r.SetOption(o, on[o]); err != nil {
			return fmt.Errorf("shell: restore: %w", err)
		}
	}
	r.SetErrTrap(st.ErrTrap)
	for _, name := range slices.Sorted(maps.Keys(st.Funcs)) {
		body, err := s.parseFunc(name, st.Funcs[name])
		if err != nil {
			return fmt.Errorf("shell: restore: %w", err)
		}
		r.SetFunc(name, body)
	}
	if st.Umask != 0 || len(st.Vars) > 0 {
		s.umask.Store(st.Umask & 0o777)
	}
	return nil
}

// parseFunc parses the saved text of function name: exactly one
// declaration of that function, nothing else, sanitized like any script.
func (s *Shell) parseFunc(name, src string) (*syntax.Stmt, error) {
	file, err := parse(src, "")
	if err != nil {
		return nil, fmt.Errorf("function %s: %v", name, err)
	}
	if len(file.Stmts) != 1 {
		return nil, fmt.Errorf("function %s: %d statements in its text", name, len(file.Stmts))
	}
	decl, ok := file.Stmts[0].Cmd.(*syntax.FuncDecl)
	if !ok || decl.Name == nil || decl.Name.Value != name || decl.Body == nil {
		return nil, fmt.Errorf("function %s: its text is not its declaration", name)
	}
	if err := s.sanitize(file); err != nil {
		return nil, fmt.Errorf("function %s: %v", name, err)
	}
	return decl.Body, nil
}

// validAliasName reports a name the alias builtin would take.
func validAliasName(name string) bool {
	return name != "" && !strings.ContainsAny(name, " \t\n=$`'\"\\/|&;()<>\x00")
}

// Clone returns a new Shell with the same Config and a copy of this
// shell's state. To fork onto another filesystem, call New with the new
// Config and Restore the Snapshot of this shell.
func (s *Shell) Clone() (*Shell, error) {
	st, err := s.Snapshot()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	cfg := s.cfg
	cfg.Stdin, cfg.Stdout, cfg.Stderr = s.stdin, s.stdout, s.stderr
	s.mu.Unlock()
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.Restore(st); err != nil {
		return nil, err
	}
	return c, nil
}
