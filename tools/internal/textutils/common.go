package textutils

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/wasmbox/wasmbox/tools/internal/textio"
	"io"
	"strconv"
	"strings"
	"syscall"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// version is what every command prints for --version.
const version = "(wasmbox textutils) 1.0"

// argKind says whether an option takes an argument.
type argKind int

const (
	noArg argKind = iota
	reqArg
	optArg // long options only: --opt or --opt=VALUE
)

// optDef describes one option: a short letter (0 for none), a long name
// ("" for none) and whether it takes an argument.
type optDef struct {
	short byte
	long  string
	arg   argKind
}

// opt is one parsed option. Name is the long name when the option has
// one, else the short letter.
type opt struct {
	name   string
	val    string
	hasVal bool
}

// usageError is an option-parsing error; commands print it followed by a
// "Try 'CMD --help'" line and exit with their usage status.
type usageError struct{ msg string }

func (u *usageError) Error() string { return u.msg }

// errHelp and errVersion are returned by parseOpts for --help/--version.
var (
	errHelp    = errors.New("help requested")
	errVersion = errors.New("version requested")
)

// parseOpts parses args (without argv[0]) GNU getopt_long style: options
// and operands may be interleaved, "--" ends the options, short options
// cluster ("-nv"), an argument may be attached ("-n5", "--lines=5") or be
// the next word, and long options may be abbreviated to a unique prefix.
// --help and --version are always recognised.
func parseOpts(args []string, defs []optDef) (opts []opt, operands []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			operands = append(operands, args[i+1:]...)
			return opts, operands, nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			d, err := findLong(defs, name)
			if err != nil {
				return nil, nil, err
			}
			if d == nil {
				return nil, nil, &usageError{fmt.Sprintf("unrecognized option '%s'", a)}
			}
			switch d.arg {
			case noArg:
				if hasVal {
					return nil, nil, &usageError{fmt.Sprintf("option '--%s' doesn't allow an argument", d.long)}
				}
			case reqArg:
				if !hasVal {
					if i+1 >= len(args) {
						return nil, nil, &usageError{fmt.Sprintf("option '--%s' requires an argument", d.long)}
					}
					i++
					val, hasVal = args[i], true
				}
			}
			if d.long == "help" {
				return nil, nil, errHelp
			}
			if d.long == "version" {
				return nil, nil, errVersion
			}
			opts = append(opts, opt{name: d.long, val: val, hasVal: hasVal})
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				c := a[j]
				d := findShort(defs, c)
				if d == nil {
					return nil, nil, &usageError{fmt.Sprintf("invalid option -- '%c'", c)}
				}
				name := d.long
				if name == "" {
					name = string(c)
				}
				if d.arg == reqArg {
					var val string
					if j+1 < len(a) {
						val = a[j+1:]
					} else {
						if i+1 >= len(args) {
							return nil, nil, &usageError{fmt.Sprintf("option requires an argument -- '%c'", c)}
						}
						i++
						val = args[i]
					}
					opts = append(opts, opt{name: name, val: val, hasVal: true})
					break
				}
				opts = append(opts, opt{name: name})
			}
		default:
			operands = append(operands, a)
		}
	}
	return opts, operands, nil
}

func findShort(defs []optDef, c byte) *optDef {
	for i := range defs {
		if defs[i].short == c {
			return &defs[i]
		}
	}
	return nil
}

var helpVersion = []optDef{{0, "help", noArg}, {0, "version", noArg}}

func findLong(defs []optDef, name string) (*optDef, error) {
	all := append(defs[:len(defs):len(defs)], helpVersion...)
	var match []*optDef
	for i := range all {
		if all[i].long == "" {
			continue
		}
		if all[i].long == name {
			return &all[i], nil
		}
		if strings.HasPrefix(all[i].long, name) {
			match = append(match, &all[i])
		}
	}
	switch len(match) {
	case 0:
		return nil, nil
	case 1:
		return match[0], nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "option '--%s' is ambiguous; possibilities:", name)
	for _, m := range match {
		fmt.Fprintf(&b, " '--%s'", m.long)
	}
	return nil, &usageError{b.String()}
}

// tool bundles what most commands share: the environment, a buffered
// stdout and the exit status bookkeeping.
type tool struct {
	e   *cmd.Env
	out *bufio.Writer
	// openErr, when set, formats open errors for forEachInput.
	openErr func(name string, err error) string
}

func newTool(e *cmd.Env) *tool {
	return &tool{e: e, out: bufio.NewWriterSize(e.Stdout, 64<<10)}
}

// flush writes buffered output; it reports a write error GNU style and
// turns it into a failing status.
func (t *tool) flush(status int) int {
	if err := t.out.Flush(); err != nil {
		if errors.Is(err, syscall.EPIPE) {
			return status
		}
		t.e.Errorf("write error: %s", strerror(err))
		if status == 0 {
			status = 1
		}
	}
	return status
}

// parse runs parseOpts and handles --help, --version and usage errors.
// ok is false when the command must return status.
func (t *tool) parse(defs []optDef, usage, help string, usageStatus int) (opts []opt, operands []string, status int, ok bool) {
	opts, operands, err := parseOpts(t.e.Args[1:], defs)
	switch {
	case err == nil:
		return opts, operands, 0, true
	case errors.Is(err, errHelp):
		fmt.Fprintf(t.e.Stdout, "Usage: %s\n%s", usage, help)
		return nil, nil, 0, false
	case errors.Is(err, errVersion):
		fmt.Fprintf(t.e.Stdout, "%s %s\n", t.e.Name(), version)
		return nil, nil, 0, false
	}
	t.e.Errorf("%s", err)
	t.usageHint()
	return nil, nil, usageStatus, false
}

// usageHint prints GNU's "Try 'CMD --help'" line.
func (t *tool) usageHint() {
	fmt.Fprintf(t.e.Stderr, "Try '%s --help' for more information.\n", t.e.Name())
}

// strerror, openInput and readAllInput are textio's (shared with the jq
// and awk modules).
func strerror(err error) string { return textio.Strerror(err) }

func openInput(e *cmd.Env, name string) (io.Reader, func(), error) { return textio.OpenInput(e, name) }

func readAllInput(e *cmd.Env, name string) ([]byte, error) { return textio.ReadAllInput(e, name) }

// quote renders a file name the way GNU quotes it in diagnostics ('name').
func quote(s string) string {
	if !strings.ContainsAny(s, "' \t\n\\\"$`*?[]{}()<>|&;~#!") {
		return "'" + s + "'"
	}
	if !strings.Contains(s, "'") {
		return "'" + s + "'"
	}
	return "\"" + strings.ReplaceAll(s, "\"", "\\\"") + "\""
}

// parseSize parses a count with an optional GNU multiplier suffix
// (b=512, K/k=1024, KB=1000, M, MB, G, GB, T, P, E, and the iB forms).
func parseSize(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		// Counts up to 2^64-1 are valid for GNU (uintmax_t): saturate.
		// Beyond that, see sizeOverflow.
		if _, uerr := strconv.ParseUint(s[:i], 10, 64); uerr != nil {
			return 0, false
		}
		n = 1<<63 - 1
	}
	suf := s[i:]
	if suf == "" {
		return n, true
	}
	mult := int64(1)
	switch suf {
	case "b":
		mult = 512
	case "KB", "kB":
		mult = 1000
	case "K", "k", "KiB", "kiB":
		mult = 1024
	case "MB":
		mult = 1000 * 1000
	case "M", "MiB":
		mult = 1 << 20
	case "GB":
		mult = 1000 * 1000 * 1000
	case "G", "GiB":
		mult = 1 << 30
	case "TB":
		mult = 1e12
	case "T", "TiB":
		mult = 1 << 40
	case "PB":
		mult = 1e15
	case "P", "PiB":
		mult = 1 << 50
	case "EB":
		mult = 1e18
	case "E", "EiB":
		mult = 1 << 60
	default:
		return 0, false
	}
	if n > (1<<63-1)/mult {
		return 1<<63 - 1, true
	}
	return n * mult, true
}

// sizeOverflow reports a count too large even for GNU's uintmax_t; GNU
// then adds ": Value too large for defined data type".
func sizeOverflow(s string) bool {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return false
	}
	_, err := strconv.ParseUint(s[:i], 10, 64)
	return err != nil
}

// unescapeC interprets the backslash escapes of printf-like arguments
// (\n \t \\ \a \b \f \r \v \0NNN octal).
func unescapeC(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '\\':
			b.WriteByte('\\')
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'f':
			b.WriteByte(12)
		case 'r':
			b.WriteByte('\r')
		case 'v':
			b.WriteByte(11)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := 0
			j := i
			for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
				v = v*8 + int(s[j]-'0')
			}
			b.WriteByte(byte(v))
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// lineReader yields delimiter-terminated records (the delimiter kept)
// from r without a per-line allocation limit.
type lineReader struct {
	r     *bufio.Reader
	delim byte
}

func newLineReader(r io.Reader, delim byte) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), delim: delim}
}

// next returns the next record including its delimiter (the last record
// may lack it). err is io.EOF at the end.
func (l *lineReader) next() ([]byte, error) {
	line, err := l.r.ReadSlice(l.delim)
	if err == bufio.ErrBufferFull {
		buf := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = l.r.ReadSlice(l.delim)
			buf = append(buf, line...)
		}
		line = buf
	}
	if err == io.EOF {
		if len(line) > 0 {
			return line, nil
		}
		return nil, io.EOF
	}
	return line, err
}

// splitRecords splits data into records terminated by delim; the final
// record may lack the terminator. The records alias data.
func splitRecords(data []byte, delim byte) [][]byte {
	recs := make([][]byte, 0, textio.CountByte(data, delim)+1)
	for len(data) > 0 {
		i := bytes.IndexByte(data, delim)
		if i < 0 {
			recs = append(recs, data)
			break
		}
		recs = append(recs, data[:i:i])
		data = data[i+1:]
	}
	return recs
}

// inputs returns the operands or "-" when there are none.
func inputs(operands []string) []string {
	if len(operands) == 0 {
		return []string{"-"}
	}
	return operands
}
