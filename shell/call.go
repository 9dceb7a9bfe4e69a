package shell

import (
	"context"
	"strings"

	"github.com/wasmbox/wasmbox/internal/sh/expand"
	"github.com/wasmbox/wasmbox/internal/sh/interp"
	"github.com/wasmbox/wasmbox/internal/sh/syntax"
)

// sentinel is the command name the call handler rewrites a builtin to when
// the shell implements it itself: no function or builtin can have that
// name (the parser rejects NUL bytes), so the interpreter hands the call to
// execHandler, which dispatches on the next argument.
const sentinel = "\x00wasmbox"

// overridden are the builtins this package implements instead of the
// interpreter: to fill gaps (printf precision, %X, %q; read -n -d -t;
// echo -ne; umask, kill, jobs) or because the interpreter's version
// touches the host (pwd -P resolves host symlinks; type and command -v
// search the host PATH).
var overridden = map[string]bool{
	"echo": true, "printf": true, "read": true, "pwd": true, "type": true,
	"umask": true, "kill": true, "jobs": true, "bg": true, "fg": true,
	"disown": true, "ulimit": true, "suspend": true, "logout": true,
}

// callHandler runs before every simple command: it counts commands,
// checks the size of variables, and rewrites the calls that must not
// reach the interpreter's own builtins unchanged.
func (s *Shell) callHandler(ctx context.Context, args []string) ([]string, error) {
	hc := interp.HandlerCtx(ctx)
	rs := s.curRun()
	if args[0] == sentinel {
		return args, nil // the shell's own calls (Snapshot)
	}
	if n := rs.commands.Add(1); n > rs.lim.MaxCommands {
		return nil, rs.fail(&LimitError{Limit: "commands", Max: rs.lim.MaxCommands})
	}
	if err := s.checkVars(rs, hc); err != nil {
		return nil, err
	}
	switch args[0] {
	case checkCmd:
		return []string{sentinel, "true"}, nil
	case guardCmd, procSubstCmd, procSubstOutCmd, statusCmd:
		// Never a user function of the same name.
		return append([]string{sentinel}, args...), nil
	}
	switch args[0] {
	case "command", "builtin":
		return s.callWrapped(hc, args)
	case "exec":
		if len(args) > 1 && overridden[args[1]] {
			return append([]string{"exec", sentinel}, args[1:]...), nil
		}
		return args, nil
	}
	if hasFunc(hc, args[0]) {
		return args, nil // functions come before builtins
	}
	return s.rewrite(hc, nil, args), nil
}

// callWrapped handles `command [-pvV] name ...` and `builtin name ...`,
// which skip functions.
func (s *Shell) callWrapped(hc interp.HandlerContext, args []string) ([]string, error) {
	wrapper := args[0]
	rest := args[1:]
	if wrapper == "command" {
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") && rest[0] != "-" {
			flags := rest[0]
			if flags == "--" {
				rest = rest[1:]
				break
			}
			if strings.ContainsAny(flags, "vV") {
				return append([]string{sentinel, "command"}, args[1:]...), nil
			}
			if strings.Trim(flags[1:], "p") != "" {
				return []string{sentinel, "wasmbox-fail", "2", "command: " + flags + ": invalid option"}, nil
			}
			rest = rest[1:]
		}
	}
	if len(rest) == 0 {
		return []string{sentinel, "true"}, nil
	}
	if wrapper == "builtin" && !interp.IsBuiltin(rest[0]) {
		return []string{sentinel, "wasmbox-fail", "1", "builtin: " + rest[0] + ": not a shell builtin"}, nil
	}
	return s.rewrite(hc, []string{wrapper}, rest), nil
}

// rewrite returns the arguments the interpreter should run for the call
// args, prefixed by wrapper (nil, or "command"/"builtin").
func (s *Shell) rewrite(hc interp.HandlerContext, wrapper, args []string) []string {
	name := args[0]
	if overridden[name] {
		return append([]string{sentinel}, args...)
	}
	fail := func(code, msg string) []string {
		return []string{sentinel, "wasmbox-fail", code, msg}
	}
	keep := func(newArgs ...string) []string { return append(append([]string(nil), wrapper...), newArgs...) }
	switch name {
	case "source", ".":
		if len(args) < 2 {
			return fail("2", name+": filename argument required")
		}
		pathVar := hc.Env.Get("PATH").String()
		file := s.findSource(hc.Dir, pathVar, args[1])
		src, err := s.readFileLimited(file, int64(s.lim.MaxScriptBytes)*16)
		if err != nil {
			return fail("1", name+": "+args[1]+": "+errText(err))
		}
		text, err := s.sanitizeSource(src, args[1], true)
		if err != nil {
			return fail("2", name+": "+args[1]+": "+errText(err))
		}
		magic := sourcePrefix + randomToken()
		s.sources.Store(magic, text)
		return keep(append([]string{name, magic}, args[2:]...)...)
	case "eval":
		src := strings.Join(args[1:], " ")
		if strings.TrimSpace(src) == "" {
			return args
		}
		if max := int64(s.lim.MaxScriptBytes) * 16; int64(len(src)) > max {
			s.curRun().fail(&LimitError{Limit: "script size", Max: max})
			return fail("2", "eval: script too large")
		}
		text, err := s.sanitizeSource(src, "", true)
		if err != nil {
			if _, ok := err.(syntax.ParseError); ok {
				return keep(args...) // let eval report its syntax error
			}
			return fail("2", "eval: "+errText(err))
		}
		return keep("eval", text)
	case "trap":
		return s.rewriteTrap(wrapper, args)
	case "alias":
		for _, a := range args[1:] {
			_, val, ok := strings.Cut(a, "=")
			if ok && unsafeAlias(val) {
				return fail("1", "alias: "+a+": process substitution is not allowed in aliases")
			}
		}
		return keep(args...)
	case "set":
		return keep(filterSetArgs(args)...)
	case "shopt":
		return keep(filterShoptArgs(args)...)
	}
	return keep(args...)
}

// unsafeAlias reports alias text that would bypass sanitize when expanded.
func unsafeAlias(val string) bool {
	bad := false
	for w, err := range syntax.NewParser().WordsSeq(strings.NewReader(val)) {
		if err != nil {
			return strings.Contains(val, "<(") || strings.Contains(val, ">(")
		}
		syntax.Walk(w, func(n syntax.Node) bool {
			if _, ok := n.(*syntax.ProcSubst); ok {
				bad = true
			}
			return !bad
		})
	}
	return bad
}

// ignoredSignals are trap targets that never fire in the sandbox; bash
// accepts them, so traps on them are accepted and ignored.
func isSignalSpec(s string) bool {
	u := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	switch u {
	case "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2",
		"PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG",
		"XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS", "DEBUG", "RETURN":
		return true
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != "" && s != "0"
}

func (s *Shell) rewriteTrap(wrapper, args []string) []string {
	keep := func(newArgs ...string) []string { return append(append([]string(nil), wrapper...), newArgs...) }
	rest := args[1:]
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	if len(rest) > 0 && (rest[0] == "-l" || rest[0] == "-p") {
		if rest[0] == "-l" {
			return []string{sentinel, "kill", "-l"}
		}
		return keep("trap")
	}
	if len(rest) < 2 {
		if len(rest) == 1 && isSignalSpec(rest[0]) {
			return []string{sentinel, "true"}
		}
		return keep(args...)
	}
	callback := rest[0]
	var sigs []string
	for _, sig := range rest[1:] {
		switch u := strings.TrimPrefix(strings.ToUpper(sig), "SIG"); {
		case u == "EXIT" || sig == "0":
			sigs = append(sigs, "EXIT")
		case u == "ERR":
			sigs = append(sigs, "ERR")
		case isSignalSpec(sig):
			// never delivered in the sandbox
		default:
			return []string{sentinel, "wasmbox-fail", "1", "trap: " + sig + ": invalid signal specification"}
		}
	}
	if len(sigs) == 0 {
		return []string{sentinel, "true"}
	}
	if max := s.lim.MaxScriptBytes * 16; len(callback) > max {
		return []string{sentinel, "wasmbox-fail", "2", "trap: command too large"}
	}
	if callback != "" && callback != "-" {
		text, err := s.sanitizeSource(callback, "trap", false)
		if err != nil {
			return []string{sentinel, "wasmbox-fail", "2", "trap: " + errText(err)}
		}
		callback = text
	}
	return keep(append([]string{"trap", callback}, sigs...)...)
}

// filterSetArgs drops the options of `set` that the interpreter rejects
// but that change nothing in the sandbox (so `set -Eeuo pipefail` keeps
// -e, -u and pipefail instead of failing as a whole): -E (errtrace),
// -T (functrace), -h (hashall), -B (braceexpand, always on), -H
// (histexpand), -m (monitor), -b (notify), -p (privileged), -k, -P, -C
// (noclobber is not enforced; see README), and their -o names.
func filterSetArgs(args []string) []string {
	const ignoredFlags = "ETBhHmbpkPt"
	ignoredNames := map[string]bool{
		"errtrace": true, "functrace": true, "hashall": true, "braceexpand": true, "histexpand": true,
		"monitor": true, "notify": true, "privileged": true, "keyword": true, "physical": true,
		"history": true, "ignoreeof": true, "interactive-comments": true,
		"emacs": true, "vi": true, "posix": true, "onecmd": true,
	}
	out := []string{args[0]}
	rest := args[1:]
	changed := false
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" || a == "-" || len(a) < 2 || (a[0] != '-' && a[0] != '+') {
			out = append(out, rest[i:]...)
			break
		}
		if a[1:] == "o" {
			if i+1 < len(rest) && ignoredNames[rest[i+1]] {
				i++
				changed = true
				continue
			}
			out = append(out, a)
			continue
		}
		kept := strings.Map(func(r rune) rune {
			if strings.ContainsRune(ignoredFlags, r) {
				return -1
			}
			return r
		}, a[1:])
		if len(kept) != len(a)-1 {
			changed = true
		}
		if kept == "" {
			continue
		}
		out = append(out, a[:1]+kept)
	}
	if changed && len(out) == 1 {
		// Only ignored options: a no-op, not a bare `set` (which prints).
		return []string{sentinel, "true"}
	}
	return out
}

// filterShoptArgs drops the shopt names the interpreter does not support
// when the request asks for the state they already have (bash's default),
// such as `shopt -s inherit_errexit` or `shopt -u histappend`.
func filterShoptArgs(args []string) []string {
	defaultOn := map[string]bool{
		"checkwinsize": true, "cmdhist": true, "complete_fullquote": true, "extquote": true,
		"force_fignore": true, "hostcomplete": true,
		"interactive_comments": true, "progcomp": true, "promptvars": true, "sourcepath": true,
	}
	defaultOff := map[string]bool{
		"autocd": true, "cdable_vars": true, "cdspell": true, "checkhash": true, "checkjobs": true,
		"dirspell": true, "execfail": true, "extdebug": true, "gnu_errfmt": true,
		"histappend": true, "histreedit": true, "histverify": true, "huponexit": true,
		"lithist": true, "localvar_inherit": true, "localvar_unset": true, "login_shell": true,
		"mailwarn": true, "no_empty_cmd_completion": true, "shift_verbose": true,
		"globasciiranges": true, "assoc_expand_once": true, "direxpand": true, "progcomp_alias": true,
	}
	mode := ""
	out := []string{args[0]}
	var names []string
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			if a == "-s" || a == "-u" {
				mode = a
			}
			out = append(out, a)
			continue
		}
		names = append(names, a)
	}
	if mode == "" {
		return args
	}
	kept := 0
	for _, n := range names {
		if (mode == "-s" && defaultOn[n]) || (mode == "-u" && defaultOff[n]) {
			continue
		}
		out = append(out, n)
		kept++
	}
	if kept == 0 && len(names) > 0 {
		return []string{sentinel, "true"}
	}
	return out
}

// hasFunc reports whether the runner making the call has a function
// called name. interp does not expose this to handlers; it is read (never
// written) through reflection from the pinned mvdan.cc/sh/v3 v3.14.1, and
// TestFunctionShadowsOverride fails if that ever stops working.
func hasFunc(hc interp.HandlerContext, name string) bool { return hc.HasFunc(name) }

// checkVars enforces Limits.MaxVarBytes on the variables visible to a
// command and on the command substitution it may be writing into.
func (s *Shell) checkVars(rs *runState, hc interp.HandlerContext) error {
	max := rs.lim.MaxVarBytes
	if max >= unlimited {
		return nil
	}
	if l, ok := unwrapWriter(hc.Stdout).(interface{ Len() int }); ok && int64(l.Len()) > max {
		return rs.fail(&LimitError{Limit: "variable size", Max: max})
	}
	// The walk over every variable is skipped while the runner of the last
	// passing check has stored less than varsSlack bytes since: the total
	// cannot have grown by more (the shell's memory limit bounds the rest).
	id, _, assigned := hc.VarsVersion()
	rs.mu.Lock()
	skip := id != 0 && rs.varsChecked[0] == uint64(id) && assigned-rs.varsChecked[1] < varsSlack &&
		rs.varsTotal+int64(assigned-rs.varsChecked[1]) <= max
	rs.mu.Unlock()
	if skip {
		return nil
	}
	var total int64
	hc.Env.Each(func(name string, vr expand.Variable) bool {
		total += int64(len(name) + len(vr.Str))
		for _, v := range vr.List {
			total += int64(len(v)) + 8
		}
		for k, v := range vr.Map {
			total += int64(len(k) + len(v) + 16)
		}
		return total <= max
	})
	if total > max {
		return rs.fail(&LimitError{Limit: "variable size", Max: max})
	}
	rs.mu.Lock()
	rs.varsChecked = [2]uint64{uint64(id), assigned}
	rs.varsTotal = total
	rs.mu.Unlock()
	return nil
}

// varsSlack is how many bytes of assignments the variable size check lets
// pass before it counts every variable again.
const varsSlack = 64 << 10

// loopHook runs at the top of every loop iteration (interp.LoopHook): an
// iteration counts as a command, and the variables' size is checked, so
// that a loop that runs no command is bounded like one that does.
func (s *Shell) loopHook(ctx context.Context) error {
	hc := interp.HandlerCtx(ctx)
	rs := s.curRun()
	if n := rs.commands.Add(1); n > rs.lim.MaxCommands {
		return rs.fail(&LimitError{Limit: "commands", Max: rs.lim.MaxCommands})
	}
	return s.checkVars(rs, hc)
}
