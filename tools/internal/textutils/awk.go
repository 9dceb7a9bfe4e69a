package textutils

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

system(), "cmd | getline" and print | "cmd" are not available in the
sandbox: they fail with an error.
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
				fmt.Fprintf(e.Stderr, "awk: fatal: can't open source file %s for reading: %s\n", quoteAwk(f), strerror(err))
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
	prog, err := parser.ParseProgram([]byte(src.String()), nil)
	if err != nil {
		var pe *parser.ParseError
		if errors.As(err, &pe) {
			fmt.Fprintf(e.Stderr, "awk: syntax error at line %d, column %d: %s\n", pe.Position.Line, pe.Position.Column, pe.Message)
			lines := strings.Split(src.String(), "\n")
			if pe.Position.Line-1 < len(lines) {
				line := lines[pe.Position.Line-1]
				fmt.Fprintf(e.Stderr, "awk: %s\nawk: %s^\n", line, strings.Repeat(" ", max(0, pe.Position.Column-1)))
			}
			return 2
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
	if strings.Contains(s, "due to NoExec") {
		return "fatal: running commands (system(), pipes) is not supported in the sandbox"
	}
	if strings.HasPrefix(s, "file ") && strings.HasSuffix(s, " not found") {
		name := strings.TrimSuffix(strings.TrimPrefix(s, "file "), " not found")
		name = strings.Trim(name, `"`)
		return fmt.Sprintf("fatal: cannot open file %s for reading: No such file or directory", quoteAwk(name))
	}
	return s
}

func quoteAwk(s string) string { return "`" + s + "'" }
