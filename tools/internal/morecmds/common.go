package morecmds

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
	"github.com/wasmbox/wasmbox/tools/internal/textio"
)

// version is what every command here prints for --version.
const version = "(wasmbox morecmds) 1.0"

// helpOpts are appended to every command's option spec.
var helpOpts = []cmd.Option{{Long: "help"}, {Long: "version"}}

// parse runs cmd.Getopt over e's arguments with spec plus --help and
// --version. ok is false when the command is done: status is then its
// exit status (a usage error printed with usageStatus, help or version
// printed with 0).
func parse(e *cmd.Env, spec []cmd.Option, usage string, usageStatus int) (opts []cmd.Opt, operands []string, status int, ok bool) {
	opts, operands, err := cmd.Getopt(e.Args[1:], append(spec[:len(spec):len(spec)], helpOpts...), false)
	if err != nil {
		return nil, nil, e.Usage(usageStatus, err), false
	}
	for _, o := range opts {
		switch o.Name {
		case "help":
			fmt.Fprintf(e.Stdout, "Usage: %s\n", usage)
			return nil, nil, 0, false
		case "version":
			fmt.Fprintf(e.Stdout, "%s %s\n", e.Name(), version)
			return nil, nil, 0, false
		}
	}
	return opts, operands, 0, true
}

// quote quotes s the way GNU's quote() does in the C locale: 'x', or
// "x" when s holds a single quote.
func quote(s string) string {
	if !strings.Contains(s, "'") {
		return "'" + s + "'"
	}
	return "\"" + strings.ReplaceAll(s, "\"", "\\\"") + "\""
}

// quotef quotes a file name for a message only when it needs it, as GNU's
// quotef does (shell-special characters, spaces).
func quotef(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n\\\"'$`*?[]{}()<>|&;~#!^") {
		return s
	}
	return quote(s)
}

// strerror renders err as C's strerror does.
func strerror(err error) string { return textio.Strerror(err) }

// flush flushes out, reporting a write error GNU-style.
func flush(e *cmd.Env, out *bufio.Writer, status int) int { return textio.Flush(e, out, status) }

// openIn opens an input operand ("-" is standard input).
func openIn(e *cmd.Env, name string) (io.Reader, func(), error) { return textio.OpenInput(e, name) }

// readAll reads a whole input operand ("-" is standard input).
func readAll(e *cmd.Env, name string) ([]byte, error) { return textio.ReadAllInput(e, name) }

// inputs is operands, or "-" when there are none.
func inputs(operands []string) []string { return textio.Inputs(operands) }
