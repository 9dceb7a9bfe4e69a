package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/internal/sh/syntax"
	"github.com/wasmbox/wasmbox/shell/bashsession"
	"github.com/wasmbox/wasmbox/shell/wire"
)

// A snapshot of the interpreter (format version 1, no 'B' record) holds
// the shell's state as data (wire.State): variables, functions, aliases,
// options, umask and the ERR trap. Restored into GNU bash, it becomes a
// script of declarations the new bash runs once (interpStateScript).
// Nothing in it runs a command: values and alias texts are quoted, option
// names are checked against a pattern, and each function is parsed on the
// host and must be exactly one function definition of its name (printed
// again from the parse), so a hostile snapshot cannot slip code in.

// interpFrameDevice is where the interpreter's function definitions
// redirected (see funcSource).
const interpFrameDevice = "/dev/wasmbox/frame"

var optionName = regexp.MustCompile(`^[a-z_]{1,32}$`)

// bashSpecialVars are variables of bash's own that a restore must not set
// (assigning them changes what they do, or bash keeps them read-only).
var bashSpecialVars = map[string]bool{
	"PWD": true, "OLDPWD": true, "RANDOM": true, "SRANDOM": true, "SECONDS": true,
	"LINENO": true, "EPOCHSECONDS": true, "EPOCHREALTIME": true, "GROUPS": true,
	"FUNCNAME": true, "HISTCMD": true, "PIPESTATUS": true, "_": true, "PPID": true,
	"UID": true, "EUID": true, "SHELLOPTS": true, "BASHOPTS": true, "SHLVL": true,
	"DIRSTACK": true, "COMP_WORDBREAKS": true,
}

// interpStateScript is the bash script that declares st's state.
func interpStateScript(st wire.State) (string, error) {
	var b strings.Builder
	q := shellQuote
	for _, o := range st.ShellOptions {
		if !optionName.MatchString(o) {
			return "", fmt.Errorf("shell option %q", o)
		}
		fmt.Fprintf(&b, "shopt -s %s 2>/dev/null\n", o)
	}
	if len(st.Aliases) > 0 {
		// The interpreter expanded aliases in scripts; bash does once
		// expand_aliases is on.
		b.WriteString("shopt -s expand_aliases\n")
	}
	for _, name := range sortedKeys(st.Funcs) {
		src, err := funcSource(name, st.Funcs[name])
		if err != nil {
			return "", err
		}
		b.WriteString(src + "\n")
	}
	for _, name := range sortedKeys(st.Aliases) {
		if !syntax.ValidName(name) {
			return "", fmt.Errorf("alias name %q", name)
		}
		fmt.Fprintf(&b, "alias %s=%s\n", name, q(st.Aliases[name]))
	}
	for _, v := range st.Vars {
		if !syntax.ValidName(v.Name) {
			return "", fmt.Errorf("variable name %q", v.Name)
		}
		if bashSpecialVars[v.Name] || strings.HasPrefix(v.Name, "BASH") {
			continue
		}
		flags := ""
		switch v.Kind {
		case "string":
		case "indexed":
			flags = "a"
		case "associative":
			flags = "A"
		case "nameref":
			if !syntax.ValidName(v.Str) {
				return "", fmt.Errorf("nameref %s to %q", v.Name, v.Str)
			}
			flags = "n"
		default:
			return "", fmt.Errorf("variable %s of kind %q", v.Name, v.Kind)
		}
		if v.Exported {
			flags += "x"
		}
		if v.ReadOnly {
			flags += "r"
		}
		decl := "declare -g"
		if flags != "" {
			decl += " -" + flags
		}
		var val string
		switch v.Kind {
		case "string", "nameref":
			val = q(v.Str)
		case "indexed":
			var w strings.Builder
			for i, s := range v.List {
				idx := i
				if len(v.Indexes) == len(v.List) {
					idx = v.Indexes[i]
				}
				fmt.Fprintf(&w, "[%d]=%s ", idx, q(s))
			}
			val = "(" + strings.TrimSpace(w.String()) + ")"
		case "associative":
			var w strings.Builder
			for _, k := range sortedKeys(v.Map) {
				fmt.Fprintf(&w, "[%s]=%s ", q(k), q(v.Map[k]))
			}
			val = "(" + strings.TrimSpace(w.String()) + ")"
		}
		fmt.Fprintf(&b, "%s %s=%s 2>/dev/null\n", decl, v.Name, val)
	}
	fmt.Fprintf(&b, "umask %s\n", strconv.FormatUint(uint64(st.Umask&0o777), 8))
	if st.ErrTrap != "" {
		fmt.Fprintf(&b, "trap -- %s ERR\n", q(st.ErrTrap))
	}
	// Options last: errexit and the like are for the runs to come.
	for _, o := range st.Options {
		if !optionName.MatchString(o) {
			return "", fmt.Errorf("option %q", o)
		}
		fmt.Fprintf(&b, "set -o %s 2>/dev/null\n", o)
	}
	return b.String(), nil
}

// funcSource checks that src is exactly the definition of function name
// and returns it as printed from its parse.
func funcSource(name, src string) (string, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return "", fmt.Errorf("function %s: %v", name, err)
	}
	if len(f.Stmts) != 1 {
		return "", fmt.Errorf("function %s: not one definition", name)
	}
	st := f.Stmts[0]
	fd, ok := st.Cmd.(*syntax.FuncDecl)
	if !ok || fd.Name.Value != name || st.Negated || st.Background || st.Coprocess || len(st.Redirs) > 0 {
		return "", fmt.Errorf("function %s: not its definition", name)
	}
	// The interpreter marked its function frames with a redirection to
	// its own device (shell's frameDevice); bash has none.
	body := fd.Body
	kept := body.Redirs[:0]
	for _, r := range body.Redirs {
		if r.Word == nil || r.Word.Lit() != interpFrameDevice {
			kept = append(kept, r)
		}
	}
	body.Redirs = kept
	var buf bytes.Buffer
	if err := syntax.NewPrinter().Print(&buf, f); err != nil {
		return "", fmt.Errorf("function %s: %v", name, err)
	}
	return strings.TrimRight(buf.String(), "\n"), nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// restoreInterpState gives the new bash b the state of an interpreter's
// snapshot.
func restoreInterpState(ctx context.Context, b *bashsession.Session, st wire.State) error {
	script, err := interpStateScript(st)
	if err != nil {
		return fmt.Errorf("%w: interpreter state: %v", ErrCorruptSnapshot, err)
	}
	var stderr bytes.Buffer
	r, err := b.Run(ctx, script, nil, io.Discard, &stderr)
	if err != nil {
		return err
	}
	if r.Err != nil || r.Exited {
		return fmt.Errorf("%w: interpreter state: %s", ErrCorruptSnapshot, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// shellQuote quotes s for bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
