package awkcmd

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/benhoyt/goawk/interp"
	"github.com/benhoyt/goawk/lexer"
	"github.com/benhoyt/goawk/parser"
	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("awk", awkMain, "gawk", "mawk", "nawk") }

const awkUsage = "Usage: awk [-F fs] [-v var=value] [-f progfile | 'prog'] [file ...]\n"

const awkHelp = awkUsage + `
The AWK language (POSIX, with the common gawk extensions of GoAWK).

  -F fs          set the field separator FS
  -v var=value   assign a variable before the program runs (escapes are
                 interpreted)
  -f progfile    read the program from progfile (may be repeated)
  --             end of options

system(CMD) runs CMD with "sh -c" through the sandbox; the pipes
"cmd | getline" and print | "cmd" are not available and fail with an error.
`

// awkMain runs GoAWK with its I/O on the command's streams. Files named
// in the program or as operands are opened through the os package (the
// sandbox filesystem under wasip1).
func awkMain(e *cmd.Env) int {
	t := newTool(e)
	args := e.Args[1:]
	var progFiles, vars []string
	fieldSep := " "
	i := 0
loop:
	for ; i < len(args); i++ {
		a := args[i]
		need := func() (string, bool) {
			if i+1 >= len(args) {
				fmt.Fprintf(e.Stderr, "awk: option requires an argument -- %s\n%s", a[1:], awkUsage)
				return "", false
			}
			i++
			return args[i], true
		}
		switch {
		case a == "--":
			i++
			break loop
		case a == "--help" || a == "-h":
			fmt.Fprint(e.Stdout, awkHelp)
			return 0
		case a == "--version" || a == "-version":
			fmt.Fprintf(e.Stdout, "awk %s (GoAWK v1.31.0)\n", version)
			return 0
		case a == "-F":
			v, ok := need()
			if !ok {
				return 2
			}
			fieldSep = v
		case a == "-v":
			v, ok := need()
			if !ok {
				return 2
			}
			vars = append(vars, v)
		case a == "-f":
			v, ok := need()
			if !ok {
				return 2
			}
			progFiles = append(progFiles, v)
		case strings.HasPrefix(a, "-F"):
			fieldSep = a[2:]
		case strings.HasPrefix(a, "-v"):
			vars = append(vars, a[2:])
		case strings.HasPrefix(a, "-f"):
			progFiles = append(progFiles, a[2:])
		case len(a) > 1 && a[0] == '-':
			fmt.Fprintf(e.Stderr, "awk: unknown option %s\n%s", a, awkUsage)
			return 2
		default:
			break loop
		}
	}
	args = args[i:]
	var src strings.Builder
	if len(progFiles) > 0 {
		for _, f := range progFiles {
			data, err := readAllInput(e, f)
			if err != nil {
				fmt.Fprintf(e.Stderr, "awk: fatal: cannot open source file %s for reading: %s\n", quoteAwk(f), strerror(err))
				return 2
			}
			src.Write(data)
			src.WriteByte('\n')
		}
	} else {
		if len(args) == 0 {
			fmt.Fprint(e.Stderr, awkUsage)
			return 2
		}
		src.WriteString(args[0])
		args = args[1:]
	}
	funcs := map[string]any{
		awkSystemFunc: func(cmdline string) int {
			// Like awk's system(): flush what was printed, run the command
			// through the sandbox shell, return its exit status.
			t.out.Flush()
			status, err := e.Spawn(cmd.SpawnRequest{Argv: []string{"sh", "-c", cmdline}})
			switch {
			case errors.Is(err, cmd.ErrNotFound):
				fmt.Fprintf(e.Stderr, "awk: system: sh: command not found\n")
				return 127
			case errors.Is(err, cmd.ErrDenied):
				fmt.Fprintf(e.Stderr, "awk: system: sh: permission denied\n")
				return 126
			case err != nil:
				fmt.Fprintf(e.Stderr, "awk: system: %s\n", err)
				return -1
			}
			return status
		},
	}
	prog, err := parser.ParseProgram([]byte(rewriteAwkSystem(src.String())), &parser.ParserConfig{Funcs: funcs})
	if err != nil {
		var pe *parser.ParseError
		if errors.As(err, &pe) {
			// gawk's layout: the source line, then a caret under the
			// column with the message.
			where := fmt.Sprintf("cmd. line:%d", pe.Position.Line)
			if len(progFiles) == 1 {
				where = fmt.Sprintf("%s:%d", progFiles[0], pe.Position.Line)
			}
			lines := strings.Split(src.String(), "\n")
			line := ""
			if pe.Position.Line-1 < len(lines) {
				line = lines[pe.Position.Line-1]
			}
			fmt.Fprintf(e.Stderr, "awk: %s: %s\nawk: %s: %s^ %s\n", where, line, where,
				strings.Repeat(" ", max(0, pe.Position.Column-1)), pe.Message)
			return 1
		}
		fmt.Fprintf(e.Stderr, "awk: %s\n", err)
		return 2
	}
	config := &interp.Config{
		Stdin:  e.Stdin,
		Output: t.out,
		Error:  e.Stderr,
		Argv0:  "awk",
		Args:   args,
		Vars:   []string{"FS", fieldSep},
		NoExec: true,
		Funcs:  funcs,
	}
	for _, v := range vars {
		name, value, ok := strings.Cut(v, "=")
		if !ok {
			fmt.Fprintf(e.Stderr, "awk: fatal: `%s' argument to `-v' not in `var=value' form\n", v)
			return 2
		}
		if u, err := lexer.Unescape(value); err == nil {
			value = u
		}
		config.Vars = append(config.Vars, name, value)
	}
	status, err := interp.ExecProgram(prog, config)
	if err != nil {
		t.out.Flush()
		fmt.Fprintf(e.Stderr, "awk: %s\n", awkErrorText(err))
		return t.flush(2)
	}
	return t.flush(status)
}

// awkErrorText rewords GoAWK's runtime errors the way users of awk
// expect them.
func awkErrorText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("fatal: cannot open file %s for reading: %s", quoteAwk(pe.Path), strerror(pe.Err))
	}
	s := err.Error()
	if rest, ok := strings.CutPrefix(s, "output redirection error: open "); ok {
		if i := strings.LastIndex(rest, ": "); i >= 0 {
			msg := rest[i+2:]
			if msg != "" {
				msg = strings.ToUpper(msg[:1]) + msg[1:]
			}
			return fmt.Sprintf("fatal: cannot redirect to %s: %s", quoteAwk(rest[:i]), msg)
		}
	}
	if strings.Contains(s, "due to NoExec") {
		return "fatal: pipes to and from commands are not supported in the sandbox (use system())"
	}
	if strings.HasPrefix(s, "file ") && strings.HasSuffix(s, " not found") {
		name := strings.TrimSuffix(strings.TrimPrefix(s, "file "), " not found")
		name = strings.Trim(name, `"`)
		return fmt.Sprintf("fatal: cannot open file %s for reading: No such file or directory", quoteAwk(name))
	}
	return s
}

func quoteAwk(s string) string { return "`" + s + "'" }

// awkSystemFunc is the Go function that stands in for system(): GoAWK
// runs commands with os/exec, which WASI lacks, so calls to system are
// renamed to it before parsing.
const awkSystemFunc = "__wasmbox_system"

// rewriteAwkSystem renames calls "system(" to the sandbox's function,
// leaving string literals and comments alone.
func rewriteAwkSystem(src string) string {
	if !strings.Contains(src, "system") {
		return src
	}
	var b strings.Builder
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			end := min(j+1, len(src))
			b.WriteString(src[i:end])
			i = end - 1
			continue
		case c == '#':
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				j = len(src) - i
			}
			b.WriteString(src[i : i+j])
			i += j - 1
			continue
		case strings.HasPrefix(src[i:], "system") && (i == 0 || !isAwkIdent(src[i-1])):
			j := i + len("system")
			if j < len(src) && isAwkIdent(src[j]) {
				break
			}
			k := j
			for k < len(src) && (src[k] == ' ' || src[k] == '\t') {
				k++
			}
			if k < len(src) && src[k] == '(' {
				b.WriteString(awkSystemFunc)
				i = j - 1
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isAwkIdent(c byte) bool { return c == '_' || isAlnum(c) }
