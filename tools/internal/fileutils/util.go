package fileutils

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// version is what every command prints for --version.
const version = "(wasmbox coreutils) 9.1"

// opt is one parsed option: its canonical name (the long name when it has
// one, else the short letter) and its argument.
type opt struct {
	name string
	val  string
	has  bool // an argument was given
}

// optDef describes one option accepted by a command.
type optDef struct {
	short byte
	long  string
	arg   int // argNone, argRequired, argOptional
}

const (
	argNone = iota
	argRequired
	argOptional
)

// parseSpec turns a compact option spec into definitions. Entries are
// separated by spaces; each entry is "S,long", "S" or ",long", with a
// trailing ':' when the option needs an argument and '?' when the argument
// is optional (attached only: -xARG, --long=ARG).
func parseSpec(spec string) []optDef {
	var defs []optDef
	for _, ent := range strings.Fields(spec) {
		d := optDef{}
		switch {
		case strings.HasSuffix(ent, ":"):
			d.arg = argRequired
			ent = ent[:len(ent)-1]
		case strings.HasSuffix(ent, "?"):
			d.arg = argOptional
			ent = ent[:len(ent)-1]
		}
		s, l, _ := strings.Cut(ent, ",")
		if len(s) == 1 {
			d.short = s[0]
		}
		d.long = l
		defs = append(defs, d)
	}
	return defs
}

func (d optDef) name() string {
	if d.long != "" {
		return d.long
	}
	return string(d.short)
}

// usage describes a command for --help and for the usage errors.
type usage struct {
	synopsis string // "Usage: cat [OPTION]... [FILE]..." without "Usage: NAME"
	text     string // the rest of the --help text
	bad      int    // exit status on a usage error (1 for most, 2 for ls, diff...)
	tryName  bool   // prefix the "Try ... --help" line with the name (diff)
}

// getopt parses GNU style options: bundled short options, "--long[=arg]"
// with unique-prefix abbreviations, options anywhere among the operands
// (permutation), and "--" ending the options. It handles --help and
// --version itself. When done is true the command must return status at once.
func getopt(e *cmd.Env, spec string, u usage) (opts []opt, operands []string, status int, done bool) {
	defs := parseSpec(spec + " ,help ,version")
	args := e.Args[1:]
	fail := func(format string, a ...any) ([]opt, []string, int, bool) {
		return nil, nil, usageErr(e, u, format, a...), true
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			var match []optDef
			for _, d := range defs {
				if d.long == name {
					match = []optDef{d}
					break
				}
				if d.long != "" && strings.HasPrefix(d.long, name) {
					match = append(match, d)
				}
			}
			if len(match) == 0 {
				return fail("unrecognized option '%s'", a)
			}
			if len(match) > 1 {
				var b strings.Builder
				for _, m := range match {
					fmt.Fprintf(&b, " '--%s'", m.long)
				}
				return fail("option '--%s' is ambiguous; possibilities:%s", name, b.String())
			}
			d := match[0]
			switch d.arg {
			case argNone:
				if hasVal {
					return fail("option '--%s' doesn't allow an argument", d.long)
				}
			case argRequired:
				if !hasVal {
					if i+1 >= len(args) {
						return fail("option '--%s' requires an argument", d.long)
					}
					i++
					val, hasVal = args[i], true
				}
			}
			switch d.long {
			case "help":
				fmt.Fprintf(e.Stdout, "Usage: %s %s\n%s", e.Name(), u.synopsis, u.text)
				return nil, nil, 0, true
			case "version":
				fmt.Fprintf(e.Stdout, "%s %s\n", e.Name(), version)
				return nil, nil, 0, true
			}
			opts = append(opts, opt{d.name(), val, hasVal})
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				c := a[j]
				var d *optDef
				for k := range defs {
					if defs[k].short == c {
						d = &defs[k]
						break
					}
				}
				if d == nil {
					return fail("invalid option -- '%c'", c)
				}
				if d.arg == argNone {
					opts = append(opts, opt{name: d.name()})
					continue
				}
				val, has := a[j+1:], j+1 < len(a)
				if !has && d.arg == argRequired {
					if i+1 >= len(args) {
						return fail("option requires an argument -- '%c'", c)
					}
					i++
					val, has = args[i], true
				}
				opts = append(opts, opt{d.name(), val, has})
				break
			}
		default:
			operands = append(operands, a)
		}
	}
	return opts, operands, 0, false
}

// usageErr prints a usage error the GNU way and returns the status.
func usageErr(e *cmd.Env, u usage, format string, a ...any) int {
	e.Errorf(format, a...)
	if u.tryName {
		e.Errorf("Try '%s --help' for more information.", e.Name())
	} else {
		fmt.Fprintf(e.Stderr, "Try '%s --help' for more information.\n", e.Name())
	}
	return u.bad
}

// needsQuote reports whether a byte makes shell-escape quoting necessary.
func needsQuote(c byte, first bool) bool {
	switch c {
	case ' ', '!', '"', '$', '&', '\'', '(', ')', '*', ';', '<', '=', '>', '?',
		'[', '\\', '^', '`', '|', ':':
		return true
	case '~', '#':
		return first
	}
	return c < 0x20 || c >= 0x7f
}

// quote quotes a file name the way GNU tools do in diagnostics with the
// shell-escape-always style: 'name', "it's", or 'a'$'\n' for a newline.
func quote(s string) string { return shellQuote(s, true) }

// quoteIf quotes a file name only when it needs it (GNU quotef): used by
// the "cat: NAME: error" style of messages.
func quoteIf(s string) string { return shellQuote(s, false) }

func shellQuote(s string, always bool) string {
	if s == "" {
		return "''"
	}
	plain, hasSingle, unprintable, dqBad := true, false, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsQuote(c, i == 0) {
			plain = false
		}
		switch {
		case c == '\'':
			hasSingle = true
		case c < 0x20 || c >= 0x7f:
			unprintable = true
		case c == '$' || c == '`' || c == '"' || c == '\\':
			dqBad = true
		}
	}
	if plain && !always {
		return s
	}
	if hasSingle && !unprintable && !dqBad {
		return `"` + s + `"`
	}
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x20 || c >= 0x7f {
			b.WriteString("'$'")
			for ; i < len(s) && (s[i] < 0x20 || s[i] >= 0x7f); i++ {
				b.WriteString(cEscape(s[i]))
			}
			b.WriteString("'")
			if i == len(s) {
				return b.String()
			}
			b.WriteByte('\'')
			continue
		}
		if c == '\'' {
			b.WriteString(`'\''`)
		} else {
			b.WriteByte(c)
		}
		i++
	}
	b.WriteByte('\'')
	return b.String()
}

func cEscape(c byte) string {
	switch c {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\v':
		return `\v`
	}
	return fmt.Sprintf(`\%03o`, c)
}

// errno returns the system error number in err, if any.
func errno(err error) (syscall.Errno, bool) {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en, true
	}
	return 0, false
}

// strerror renders an error as the C library would ("No such file or
// directory"), without the path that *PathError adds.
func strerror(err error) string {
	if en, ok := errno(err); ok {
		switch en {
		case syscall.ENOENT:
			return "No such file or directory"
		case syscall.EACCES:
			return "Permission denied"
		case syscall.EPERM:
			return "Operation not permitted"
		case syscall.EEXIST:
			return "File exists"
		case syscall.ENOTDIR:
			return "Not a directory"
		case syscall.EISDIR:
			return "Is a directory"
		case syscall.ENOTEMPTY:
			return "Directory not empty"
		case syscall.ENOSPC:
			return "No space left on device"
		case syscall.EROFS:
			return "Read-only file system"
		case syscall.ELOOP:
			return "Too many levels of symbolic links"
		case syscall.EINVAL:
			return "Invalid argument"
		case syscall.EXDEV:
			return "Invalid cross-device link"
		case syscall.ENAMETOOLONG:
			return "File name too long"
		case syscall.EBUSY:
			return "Device or resource busy"
		case syscall.EBADF:
			return "Bad file descriptor"
		case syscall.ENOSYS:
			return "Function not implemented"
		case syscall.ENOTSUP:
			return "Operation not supported"
		case syscall.EIO:
			return "Input/output error"
		case syscall.EFBIG:
			return "File too large"
		case syscall.EMFILE:
			return "Too many open files"
		case syscall.EPIPE:
			return "Broken pipe"
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "No such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "Permission denied"
	case errors.Is(err, fs.ErrExist):
		return "File exists"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	s := err.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// isErrno reports whether err carries the given errno.
func isErrno(err error, en syscall.Errno) bool {
	got, ok := errno(err)
	return ok && got == en
}

// newOut returns a buffered writer over the command's stdout. Callers must
// Flush it before returning.
func newOut(e *cmd.Env) *bufio.Writer { return bufio.NewWriterSize(e.Stdout, 64<<10) }

// openIn opens name for reading, "-" meaning stdin. The returned closer is
// never nil.
func openIn(e *cmd.Env, name string) (io.Reader, func(), error) {
	if name == "-" {
		return e.Stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// has reports whether any of the names was given.
func has(opts []opt, names ...string) bool {
	for _, o := range opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

// last returns the argument of the last occurrence of an option.
func last(opts []opt, names ...string) (string, bool) {
	v, ok := "", false
	for _, o := range opts {
		for _, n := range names {
			if o.name == n {
				v, ok = o.val, true
			}
		}
	}
	return v, ok
}

// copyStream copies r to w, telling a read error apart from a write error.
func copyStream(w io.Writer, r io.Reader) (readErr, writeErr error) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil, werr
			}
		}
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return err, nil
		}
	}
}

// badArg reports an invalid argument of a long option with the list of
// valid ones ("a|b" for synonyms), as GNU argmatch does, and returns
// status 1.
func badArg(e *cmd.Env, val, option string, valid ...string) int {
	e.Errorf("invalid argument %s for '%s'", quote(val), option)
	fmt.Fprintln(e.Stderr, "Valid arguments are:")
	for _, v := range valid {
		// "a|b" lists synonyms on one line.
		fmt.Fprintf(e.Stderr, "  - '%s'\n", strings.ReplaceAll(v, "|", "', '"))
	}
	fmt.Fprintf(e.Stderr, "Try '%s --help' for more information.\n", e.Name())
	return 1
}
