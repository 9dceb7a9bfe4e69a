package sysutils

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("xargs", xargsMain)
}

// xargsMaxChars bounds one command line (GNU's default is about 128 KiB).
const xargsMaxChars = 128 * 1024

type xargsOpts struct {
	maxArgs, maxLines int
	replace           string
	hasReplace        bool
	delim             int // -1: blanks and quotes; else the byte
	eof               string
	noRunEmpty        bool
	trace             bool
	maxChars          int
	exitOnSize        bool
	argFile           string
}

func xargsMain(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(
		cmd.Option{Short: '0', Long: "null"}, cmd.Option{Short: 'a', Long: "arg-file", Arg: cmd.RequiredArg},
		cmd.Option{Short: 'd', Long: "delimiter", Arg: cmd.RequiredArg}, cmd.Option{Short: 'E', Arg: cmd.RequiredArg},
		cmd.Option{Short: 'e', Long: "eof", Arg: cmd.OptionalArg}, cmd.Option{Short: 'I', Arg: cmd.RequiredArg},
		cmd.Option{Short: 'i', Long: "replace", Arg: cmd.OptionalArg}, cmd.Option{Short: 'L', Arg: cmd.RequiredArg},
		cmd.Option{Short: 'l', Long: "max-lines", Arg: cmd.OptionalArg}, cmd.Option{Short: 'n', Long: "max-args", Arg: cmd.RequiredArg},
		cmd.Option{Short: 'P', Long: "max-procs", Arg: cmd.RequiredArg}, cmd.Option{Short: 'p', Long: "interactive"},
		cmd.Option{Short: 'r', Long: "no-run-if-empty"}, cmd.Option{Short: 's', Long: "max-chars", Arg: cmd.RequiredArg},
		cmd.Option{Short: 't', Long: "verbose"}, cmd.Option{Short: 'x', Long: "exit"},
		cmd.Option{Short: 'o', Long: "open-tty"}, cmd.Option{Long: "process-slot-var", Arg: cmd.RequiredArg},
		cmd.Option{Long: "show-limits"}), true)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "[OPTION]... COMMAND [INITIAL-ARGS]...\nRun COMMAND with arguments INITIAL-ARGS and more arguments read from input.\n  -0, --null             items are separated by a null, not whitespace\n  -a, --arg-file=FILE    read arguments from FILE, not standard input\n  -d, --delimiter=CHAR   items in input stream are separated by CHAR\n  -E END                 set logical EOF string\n  -I R                   replace R in INITIAL-ARGS with names read from input\n  -L, --max-lines=MAX-LINES  use at most MAX-LINES non-blank input lines per command\n  -n, --max-args=MAX-ARGS    use at most MAX-ARGS arguments per command line\n  -P, --max-procs=MAX-PROCS  (accepted; commands run one at a time)\n  -r, --no-run-if-empty  if there are no arguments, then do not run COMMAND\n  -s, --max-chars=MAX-CHARS  limit length of command line to MAX-CHARS\n  -t, --verbose          print commands before executing them\n  -x, --exit             exit if the size (see -s) is exceeded\n") {
		return 0
	}
	o := xargsOpts{delim: -1, maxChars: xargsMaxChars}
	positive := func(name, v string) (int, bool) {
		n, err := strconv.Atoi(v)
		if err != nil {
			e.Errorf("invalid number \"%s\" for -%s option", v, name)
			return 0, false
		}
		if n < 1 {
			e.Errorf("value %s for -%s option should be >= 1", v, name)
			return 0, false
		}
		return n, true
	}
	for _, x := range opts {
		var ok = true
		switch x.Name {
		case "null":
			o.delim = 0
		case "arg-file":
			o.argFile = x.Value
		case "delimiter":
			d, err := parseDelim(x.Value)
			if err != nil {
				e.Errorf("%s", err.Error())
				return 1
			}
			o.delim = int(d)
		case "E":
			o.eof = x.Value
		case "eof":
			o.eof = x.Value
		case "I":
			o.replace, o.hasReplace, o.maxLines, o.maxArgs = x.Value, true, 1, 0
		case "replace":
			o.replace, o.hasReplace, o.maxLines, o.maxArgs = "{}", true, 1, 0
			if x.HasValue {
				o.replace = x.Value
			}
		case "L":
			o.maxLines, ok = positive("L", x.Value)
			o.maxArgs, o.hasReplace = 0, false
		case "max-lines":
			o.maxLines, o.maxArgs, o.hasReplace = 1, 0, false
			if x.HasValue {
				o.maxLines, ok = positive("l", x.Value)
			}
		case "max-args":
			o.maxArgs, ok = positive("n", x.Value)
			if o.maxLines > 0 && !o.hasReplace {
				o.maxLines = 0
			}
		case "max-procs":
			if n, err := strconv.Atoi(x.Value); err != nil || n < 0 {
				e.Errorf("invalid number \"%s\" for -P option", x.Value)
				ok = false
			}
		case "no-run-if-empty":
			o.noRunEmpty = true
		case "max-chars":
			o.maxChars, ok = positive("s", x.Value)
		case "verbose", "interactive":
			o.trace = true
		case "exit":
			o.exitOnSize = true
		case "show-limits":
			fmt.Fprintf(e.Stderr, "Maximum length of command we could actually use: %d\nSize of command buffer we are actually using: %d\n", xargsMaxChars, xargsMaxChars)
		}
		if !ok {
			return e.Usage(1, nil)
		}
	}
	if len(ops) == 0 {
		ops = []string{"echo"}
	}
	in := e.Stdin
	stdinNull := true
	if o.argFile != "" {
		r, done, err := openInput(e, o.argFile)
		if err != nil {
			e.Errorf("Cannot open input file '%s': %s", o.argFile, errText(err))
			return 1
		}
		defer done()
		in, stdinNull = r, o.argFile == "-"
	}
	x := &xargsRun{e: e, o: o, cmd: ops, stdinNull: stdinNull}
	return x.run(bufio.NewReaderSize(in, 64*1024))
}

// parseDelim parses -d's argument: one character or an escape.
func parseDelim(s string) (byte, error) {
	if len(s) == 1 {
		return s[0], nil
	}
	if len(s) >= 2 && s[0] == '\\' {
		if u, stop := unescape(s, escFormat); !stop && len(u) == 1 {
			return u[0], nil
		}
	}
	return 0, fmt.Errorf("invalid input delimiter specification %s: the delimiter must be either a single character or an escape sequence starting with \\.", s)
}

type xargsRun struct {
	e         *cmd.Env
	o         xargsOpts
	cmd       []string
	stdinNull bool
	status    int
	ran       bool
}

// errStop ends xargs early (a child exited 255, or could not be run).
var errStop = errors.New("stop")

func (x *xargsRun) run(r *bufio.Reader) int {
	var items []string
	lines := 0
	size := 0
	for _, a := range x.cmd {
		size += len(a) + 1
	}
	base := size
	flush := func() error {
		if len(items) == 0 && (x.ran || x.o.noRunEmpty) {
			return nil
		}
		err := x.exec(items)
		items, lines, size = items[:0], 0, base
		return err
	}
	for {
		item, lineEnd, err := x.next(r)
		if err == io.EOF {
			break
		}
		if err != nil {
			x.e.Errorf("%s", err.Error())
			return 1
		}
		if x.o.eof != "" && item == x.o.eof && x.o.delim < 0 {
			break
		}
		if x.o.hasReplace {
			if err := x.exec([]string{item}); err != nil {
				return x.status
			}
			continue
		}
		if item != "" || x.o.delim >= 0 {
			if size+len(item)+1 > x.o.maxChars && len(items) > 0 {
				if x.o.exitOnSize {
					x.e.Errorf("argument list too long")
					return 1
				}
				if flush() != nil {
					return x.status
				}
			}
			if base+len(item)+1 > x.o.maxChars {
				x.e.Errorf("argument line too long")
				return 1
			}
			items = append(items, item)
			size += len(item) + 1
		}
		if lineEnd {
			lines++
		}
		if x.o.maxArgs > 0 && len(items) >= x.o.maxArgs || x.o.maxLines > 0 && lineEnd && lines >= x.o.maxLines {
			if flush() != nil {
				return x.status
			}
		}
	}
	if len(items) > 0 || !x.ran && !x.o.noRunEmpty && !x.o.hasReplace {
		flush()
	}
	return x.status
}

// next reads one item. lineEnd reports that the item ended an input line
// (for -L); with -d or -0 every item ends a "line".
func (x *xargsRun) next(r *bufio.Reader) (item string, lineEnd bool, err error) {
	if x.o.delim >= 0 {
		s, err := r.ReadString(byte(x.o.delim))
		if err == io.EOF && s == "" {
			return "", false, io.EOF
		}
		if err != nil && err != io.EOF {
			return "", false, err
		}
		return strings.TrimSuffix(s, string(rune(x.o.delim))), true, nil
	}
	if x.o.hasReplace {
		// -I: one item per line, leading blanks removed, quotes still apply.
		for {
			line, err := r.ReadString('\n')
			if line == "" && err != nil {
				return "", false, io.EOF
			}
			line = strings.TrimLeft(strings.TrimSuffix(line, "\n"), " \t")
			if line == "" {
				continue
			}
			words, err2 := xargsWords(line)
			if err2 != nil {
				return "", false, err2
			}
			return strings.Join(words, " "), true, nil
		}
	}
	var b strings.Builder
	inItem := false
	for {
		c, err := r.ReadByte()
		if err != nil {
			if inItem {
				return b.String(), true, nil
			}
			return "", false, io.EOF
		}
		switch c {
		case ' ', '\t', '\n':
			if inItem {
				if c == '\n' {
					return b.String(), true, nil
				}
				// A line ends at a newline not preceded by a blank.
				return b.String(), false, nil
			}
			if c == '\n' && x.o.maxLines > 0 {
				continue
			}
		case '\'', '"':
			inItem = true
			s, err := r.ReadString(c)
			if err != nil {
				kind := "single"
				if c == '"' {
					kind = "double"
				}
				return "", false, fmt.Errorf("unmatched %s quote; by default quotes are special to xargs unless you use the -0 option", kind)
			}
			if strings.Contains(s, "\n") {
				kind := "single"
				if c == '"' {
					kind = "double"
				}
				return "", false, fmt.Errorf("unmatched %s quote; by default quotes are special to xargs unless you use the -0 option", kind)
			}
			b.WriteString(s[:len(s)-1])
		case '\\':
			inItem = true
			if n, err := r.ReadByte(); err == nil {
				b.WriteByte(n)
			}
		default:
			inItem = true
			b.WriteByte(c)
		}
	}
}

// xargsWords splits a line with xargs quoting (for -I lines).
func xargsWords(line string) ([]string, error) {
	x := &xargsRun{o: xargsOpts{delim: -1}}
	r := bufio.NewReader(strings.NewReader(line))
	var words []string
	for {
		w, _, err := x.next(r)
		if err == io.EOF {
			return words, nil
		}
		if err != nil {
			return nil, err
		}
		words = append(words, w)
	}
}

func (x *xargsRun) exec(items []string) error {
	x.ran = true
	argv := append([]string(nil), x.cmd...)
	if x.o.hasReplace {
		for i, a := range argv {
			argv[i] = strings.ReplaceAll(a, x.o.replace, items[0])
		}
	} else {
		argv = append(argv, items...)
	}
	if x.o.trace {
		fmt.Fprintln(x.e.Stderr, strings.Join(argv, " "))
	}
	status, err := x.e.Spawn(cmd.SpawnRequest{Argv: argv, StdinNull: x.stdinNull})
	switch {
	case errors.Is(err, cmd.ErrNotFound):
		x.e.Errorf("%s: No such file or directory", argv[0])
		x.status = 127
		return errStop
	case err != nil:
		x.e.Errorf("%s: %s", argv[0], errText(err))
		x.status = 126
		return errStop
	case status == 255:
		x.e.Errorf("%s: exited with status 255; aborting", argv[0])
		x.status = 124
		return errStop
	case status > 128 && status != cmd.StatusTimedOut:
		x.e.Errorf("%s: terminated by signal %d", argv[0], status-128)
		x.status = 125
		return errStop
	case status != 0:
		x.status = 123
	}
	return nil
}
