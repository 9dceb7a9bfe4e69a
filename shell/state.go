package shell

import (
	"context"
	"fmt"
	"github.com/wasmbox/wasmbox/shell/wire"
	"maps"
	"slices"
	"strings"

	"github.com/wasmbox/wasmbox/internal/sh/expand"
	"mvdan.cc/sh/v3/syntax"
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
	pidName: true, ppidName: true, "RANDOM": true, "SRANDOM": true,
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

func (s *Shell) applyState(st State) error {
	var b strings.Builder
	// Variables of the base environment the snapshot does not have were
	// unset in the original shell.
	have := map[string]bool{}
	for _, v := range st.Vars {
		have[v.Name] = true
	}
	for _, name := range s.env.names {
		if !have[name] && !stateSkip[name] && !s.env.vars[name].ReadOnly {
			fmt.Fprintf(&b, "unset %s\n", name)
		}
	}
	for _, v := range st.Vars {
		if !syntax.ValidName(v.Name) || stateSkip[v.Name] {
			continue
		}
		flags := ""
		switch v.Kind {
		case "indexed":
			flags += "a"
		case "associative":
			flags += "A"
		case "nameref":
			flags += "n"
		}
		if v.Exported {
			flags += "x"
		}
		if v.ReadOnly {
			flags += "r"
		}
		if flags != "" {
			flags = " -" + flags
		}
		switch v.Kind {
		case "indexed":
			fmt.Fprintf(&b, "declare -g%s %s=(", flags, v.Name)
			for i, e := range v.List {
				idx := i
				if v.Indexes != nil && i < len(v.Indexes) {
					idx = v.Indexes[i]
				}
				fmt.Fprintf(&b, "[%d]=%s ", idx, quote(e))
			}
			b.WriteString(")\n")
		case "associative":
			fmt.Fprintf(&b, "declare -g%s %s=(", flags, v.Name)
			for _, k := range slices.Sorted(maps.Keys(v.Map)) {
				fmt.Fprintf(&b, "[%s]=%s ", quote(k), quote(v.Map[k]))
			}
			b.WriteString(")\n")
		default:
			fmt.Fprintf(&b, "declare -g%s %s=%s\n", flags, v.Name, quote(v.Str))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(st.Aliases)) {
		fmt.Fprintf(&b, "alias %s=%s\n", name, quote(st.Aliases[name]))
	}
	known := map[string]bool{"allexport": true, "errexit": true, "noexec": true, "noglob": true, "nounset": true, "xtrace": true, "pipefail": true}
	on := map[string]bool{}
	for _, o := range st.Options {
		on[o] = true
	}
	for _, o := range slices.Sorted(maps.Keys(known)) {
		if o == "noexec" {
			continue // would stop the restore script itself
		}
		sign := "+"
		if on[o] {
			sign = "-"
		}
		fmt.Fprintf(&b, "set %so %s\n", sign, o)
	}
	for _, o := range []string{"dotglob", "expand_aliases", "extglob", "globstar", "nocaseglob", "nullglob"} {
		mode := "-u"
		if slices.Contains(st.ShellOptions, o) {
			mode = "-s"
		}
		fmt.Fprintf(&b, "shopt %s %s\n", mode, o)
	}
	if st.ErrTrap != "" {
		fmt.Fprintf(&b, "trap -- %s ERR\n", quote(st.ErrTrap))
	}
	for _, name := range slices.Sorted(maps.Keys(st.Funcs)) {
		b.WriteString(st.Funcs[name])
		b.WriteByte('\n')
	}
	if err := s.runInternal(context.Background(), b.String()); err != nil {
		return fmt.Errorf("shell: restore: %w", err)
	}
	if st.Umask != 0 || len(st.Vars) > 0 {
		s.umask.Store(st.Umask & 0o777)
	}
	return nil
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
