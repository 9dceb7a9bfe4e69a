package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/wasmbox/wasmbox/internal/sh/interp"
	"github.com/wasmbox/wasmbox/internal/sh/syntax"
)

// builtin runs one of the builtins this package implements (see
// overridden) and the internal helpers the call handler rewrites to.
func (s *Shell) builtin(ctx context.Context, hc interp.HandlerContext, rs *runState, name string, args []string) error {
	switch name {
	case "true", "disown":
		return nil
	case "wasmbox-fail":
		// args: status, message
		if len(args) == 2 {
			fmt.Fprintf(hc.Stderr, "%s%s\n", bashPrefix(hc), args[1])
			code, _ := strconv.Atoi(args[0])
			return status(code)
		}
		return status(1)
	case guardCmd:
		if len(args) != 1 {
			return status(2)
		}
		return s.guard(ctx, hc, args[0])
	case procSubstCmd:
		return s.procSubst(ctx, hc, s.curRun())
	case procSubstOutCmd:
		return s.procSubstFile(hc, s.curRun())
	case statusCmd:
		if len(args) != 1 {
			return status(2)
		}
		code, _ := strconv.Atoi(args[0])
		return status(code)
	case "echo":
		return s.echo(hc, args)
	case "printf":
		return s.printf(ctx, hc, args)
	case "read":
		return s.read(ctx, hc, args)
	case "pwd":
		return s.pwd(hc, args)
	case "type":
		return s.typeCmd(hc, args, "type")
	case "command":
		return s.typeCmd(hc, args, "command")
	case "umask":
		return s.umaskCmd(hc, args)
	case "kill":
		return s.kill(hc, args)
	case "jobs":
		// Background jobs of the sandbox are not listed (they are not
		// processes); nothing to report is what bash says without jobs.
		return nil
	case "bg", "fg":
		fmt.Fprintf(hc.Stderr, "%s%s: no job control\n", bashPrefix(hc), name)
		return status(1)
	case "suspend", "logout":
		fmt.Fprintf(hc.Stderr, "%s%s: not available in the sandbox\n", bashPrefix(hc), name)
		return status(1)
	case "ulimit":
		return s.ulimit(hc, args)
	}
	fmt.Fprintf(hc.Stderr, "%s%s: unsupported builtin\n", bashPrefix(hc), name)
	return status(2)
}

// guard runs src (a statement the sanitizer took out of a pipeline or a
// background job) on the calling runner, recovering a panic of the
// interpreter: it stops the Run with a *PanicError instead of the process.
// The pipelines and jobs inside src are guarded now, one level at a time.
func (s *Shell) guard(ctx context.Context, hc interp.HandlerContext, src string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = s.curRun().fail(&PanicError{Value: v, Stack: debug.Stack()})
		}
	}()
	src = lineOffset(int(hc.Pos.Line())) + src
	file, err := parse(src, "")
	if err == nil {
		err = guardGoroutines(file)
	}
	if err != nil {
		fmt.Fprintf(hc.Stderr, "%s%v\n", bashPrefix(hc), err)
		return status(2)
	}
	var sb strings.Builder
	if err := syntax.NewPrinter().Print(&sb, file); err != nil {
		fmt.Fprintf(hc.Stderr, "%s%v\n", bashPrefix(hc), err)
		return status(2)
	}
	return hc.Builtin(ctx, []string{"eval", lineOffset(int(hc.Pos.Line())) + sb.String()})
}

// setVars assigns variables in the caller's scope by running assignments
// through the interpreter's eval builtin (handlers have no other way to
// write variables). values are quoted, so nothing in them is expanded.
func setVars(ctx context.Context, hc interp.HandlerContext, assigns []string) error {
	if len(assigns) == 0 {
		return nil
	}
	return hc.Builtin(ctx, []string{"eval", strings.Join(assigns, "; ")})
}

// quote quotes v for bash source, dropping NUL bytes (bash cannot hold them).
func quote(v string) string {
	v = strings.ReplaceAll(v, "\x00", "")
	q, err := syntax.Quote(v, syntax.LangBash)
	if err != nil {
		return "''"
	}
	return q
}

func assign(name, value string) string { return name + "=" + quote(value) }

func assignArray(name string, values []string) string {
	var sb strings.Builder
	sb.WriteString(name + "=(")
	for i, v := range values {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(quote(v))
	}
	sb.WriteByte(')')
	return sb.String()
}

// validAssignTarget accepts NAME and NAME[subscript] (for printf -v).
func validAssignTarget(t string) bool {
	if name, sub, ok := strings.Cut(t, "["); ok {
		return syntax.ValidName(name) && strings.HasSuffix(sub, "]") && !strings.ContainsAny(sub, "`$;&|<>(){}\n")
	}
	return syntax.ValidName(t)
}

// echo implements bash's echo: -n, -e, -E, combined as in -ne; an
// argument is an option only if it is made of those letters alone.
func (s *Shell) echo(hc interp.HandlerContext, args []string) error {
	newline, escapes := true, false
	for len(args) > 0 {
		a := args[0]
		if len(a) < 2 || a[0] != '-' || strings.Trim(a[1:], "neE") != "" {
			break
		}
		for _, c := range a[1:] {
			switch c {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
		args = args[1:]
	}
	var sb strings.Builder
	for i, a := range args {
		if i > 0 {
			sb.WriteByte(' ')
		}
		if escapes {
			out, stop := expandEscapes(a, true)
			sb.WriteString(out)
			if stop {
				return writeOut(hc, "echo", sb.String(), 0)
			}
			continue
		}
		sb.WriteString(a)
	}
	if newline {
		sb.WriteByte('\n')
	}
	return writeOut(hc, "echo", sb.String(), 0)
}

// writeOut writes a builtin's output. A failed write is the builtin's
// failure, as in bash: a closed pipe ends it with 141 (SIGPIPE) and no
// message, any other error ("No space left on device") prints
// "NAME: write error: ..." and gives 1. code is the status otherwise.
func writeOut(hc interp.HandlerContext, name, out string, code int) error {
	if _, err := io.WriteString(hc.Stdout, out); err != nil {
		if errors.Is(err, syscall.EPIPE) {
			return status(141)
		}
		fmt.Fprintf(hc.Stderr, "%s%s: write error: %s\n", bashPrefix(hc), name, errText(err))
		return status(1)
	}
	return status(code)
}

// expandEscapes expands backslash escapes as echo -e and printf %b do.
// echoStyle selects \0NNN octal (echo, %b) rather than \NNN (printf
// format). It reports \c, which ends all output.
func expandEscapes(s string, echoStyle bool) (string, bool) {
	if !strings.Contains(s, `\`) {
		return s, false
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 'a':
			sb.WriteByte('\a')
		case 'b':
			sb.WriteByte('\b')
		case 'c':
			return sb.String(), true
		case 'e', 'E':
			sb.WriteByte(0x1b)
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'v':
			sb.WriteByte('\v')
		case '\\':
			sb.WriteByte('\\')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			start, maxDigits := i, 3
			if echoStyle {
				if c != '0' {
					sb.WriteByte('\\')
					sb.WriteByte(c)
					continue
				}
				start = i + 1
			}
			j := start
			for j < len(s) && j < start+maxDigits && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[start:j], 8, 16)
			sb.WriteByte(byte(n))
			i = j - 1
		case 'x', 'u', 'U':
			maxDigits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			j := i + 1
			for j < len(s) && j < i+1+maxDigits && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				sb.WriteByte('\\')
				sb.WriteByte(c)
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if c == 'x' {
				sb.WriteByte(byte(n))
			} else {
				sb.WriteRune(rune(n))
			}
			i = j - 1
		default:
			if !echoStyle && (c == '"' || c == '\'' || c == '?') {
				sb.WriteByte(c)
				continue
			}
			sb.WriteByte('\\')
			sb.WriteByte(c)
		}
	}
	return sb.String(), false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (s *Shell) printf(ctx context.Context, hc interp.HandlerContext, args []string) error {
	target := ""
	if len(args) > 0 && args[0] == "-v" {
		if len(args) < 2 {
			fmt.Fprintf(hc.Stderr, "%sprintf: -v: option requires an argument\n", bashPrefix(hc))
			return status(2)
		}
		target = args[1]
		args = args[2:]
		if !validAssignTarget(target) {
			fmt.Fprintf(hc.Stderr, "%sprintf: `%s': not a valid identifier\n", bashPrefix(hc), target)
			return status(2)
		}
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintf(hc.Stderr, "printf: usage: printf [-v var] format [arguments]\n")
		return status(2)
	}
	out, errs := formatPrintf(args[0], args[1:])
	for _, e := range errs {
		fmt.Fprintf(hc.Stderr, "%sprintf: %s\n", bashPrefix(hc), e)
	}
	code := 0
	if len(errs) > 0 {
		code = 1
	}
	if target != "" {
		if err := setVars(ctx, hc, []string{assign(target, out)}); err != nil {
			return err
		}
		return status(code)
	}
	return writeOut(hc, "printf", out, code)
}

// pwd prints $PWD (-L, the default) or the current directory with every
// symlink resolved in the VFS (-P).
func (s *Shell) pwd(hc interp.HandlerContext, args []string) error {
	physical := false
	for _, a := range args {
		switch a {
		case "-L":
			physical = false
		case "-P":
			physical = true
		default:
			fmt.Fprintf(hc.Stderr, "%spwd: %s: invalid option\n", bashPrefix(hc), a)
			return status(2)
		}
	}
	dir := hc.Env.Get("PWD").String()
	if dir == "" || physical {
		real, err := s.realpath(hc.Dir)
		if err != nil {
			fmt.Fprintf(hc.Stderr, "%spwd: %s\n", bashPrefix(hc), errText(err))
			return status(1)
		}
		dir = real
	}
	fmt.Fprintln(hc.Stdout, dir)
	return nil
}

// realpath resolves every symlink of an absolute path in the VFS.
func (s *Shell) realpath(p string) (string, error) {
	resolved := "/"
	rest := strings.Split(strings.Trim(path.Clean(p), "/"), "/")
	hops := 0
	for len(rest) > 0 {
		comp := rest[0]
		rest = rest[1:]
		if comp == "" || comp == "." {
			continue
		}
		if comp == ".." {
			resolved = path.Dir(resolved)
			continue
		}
		next := path.Join(resolved, comp)
		fi, _, err := s.cfg.FS.LstatIfPossible(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if hops++; hops > 40 {
			return "", &os.PathError{Op: "realpath", Path: p, Err: syscall.ELOOP}
		}
		target, err := s.cfg.FS.ReadlinkIfPossible(next)
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			resolved = "/"
		}
		rest = append(strings.Split(strings.Trim(target, "/"), "/"), rest...)
	}
	return resolved, nil
}

// typeCmd implements type [-afptP] and command -v/-V.
func (s *Shell) typeCmd(hc interp.HandlerContext, args []string, who string) error {
	mode := ""
	all := false
	names := args
	for len(names) > 0 && strings.HasPrefix(names[0], "-") && len(names[0]) > 1 {
		if names[0] == "--" {
			names = names[1:]
			break
		}
		for _, c := range names[0][1:] {
			switch c {
			case 'v':
				mode = "v"
			case 'V':
				mode = "V"
			case 't', 'p', 'P':
				mode = string(c)
			case 'a':
				all = true
			case 'f':
			default:
				fmt.Fprintf(hc.Stderr, "%s%s: -%c: invalid option\n", bashPrefix(hc), who, c)
				return status(2)
			}
		}
		names = names[1:]
	}
	pathVar := hc.Env.Get("PATH").String()
	code := 0
	for _, n := range names {
		found := false
		report := func(kind, desc string) {
			found = true
			switch mode {
			case "t":
				fmt.Fprintln(hc.Stdout, kind)
			case "v":
				if kind == "file" {
					fmt.Fprintln(hc.Stdout, desc)
				} else {
					fmt.Fprintln(hc.Stdout, n)
				}
			case "p", "P":
				if kind == "file" {
					fmt.Fprintln(hc.Stdout, desc)
				}
			default:
				switch kind {
				case "keyword":
					fmt.Fprintf(hc.Stdout, "%s is a shell keyword\n", n)
				case "function":
					fmt.Fprintf(hc.Stdout, "%s is a function\n", n)
				case "builtin":
					fmt.Fprintf(hc.Stdout, "%s is a shell builtin\n", n)
				case "file":
					fmt.Fprintf(hc.Stdout, "%s is %s\n", n, desc)
				}
			}
		}
		if mode != "P" {
			if syntax.IsKeyword(n) {
				report("keyword", "")
			}
			if (!found || all) && hasFunc(hc, n) {
				report("function", "")
			}
			if (!found || all) && (interp.IsBuiltin(n) || overridden[n]) {
				report("builtin", "")
			}
		}
		if !found || all || mode == "P" {
			if p, ok := s.lookPath(hc.Dir, pathVar, n); ok {
				report("file", p)
			}
		}
		if !found {
			code = 1
			if mode == "" || mode == "V" {
				fmt.Fprintf(hc.Stderr, "%s%s: %s: not found\n", bashPrefix(hc), who, n)
			}
		}
	}
	return status(code)
}

func (s *Shell) umaskCmd(hc interp.HandlerContext, args []string) error {
	symbolic := false
	if len(args) > 0 && args[0] == "-S" {
		symbolic = true
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "-p" {
		args = args[1:]
	}
	if len(args) == 0 {
		m := s.umask.Load()
		if symbolic {
			perm := func(shift uint) string {
				bits := (^m >> shift) & 7
				out := ""
				for i, c := range "rwx" {
					if bits&(4>>i) != 0 {
						out += string(c)
					}
				}
				return out
			}
			fmt.Fprintf(hc.Stdout, "u=%s,g=%s,o=%s\n", perm(6), perm(3), perm(0))
		} else {
			fmt.Fprintf(hc.Stdout, "%04o\n", m)
		}
		return nil
	}
	n, err := strconv.ParseUint(args[0], 8, 32)
	if err != nil || n > 0o777 {
		fmt.Fprintf(hc.Stderr, "%sumask: %s: octal number out of range\n", bashPrefix(hc), args[0])
		return status(1)
	}
	s.umask.Store(uint32(n))
	return nil
}

var signalNames = []string{"HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1",
	"SEGV", "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN",
	"TTOU", "URG", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS"}

// kill answers what a sandbox can: signal lists, and `kill -0` on the
// shell itself. Background jobs are goroutines, not processes: they end
// with the Run, and cannot be signalled.
func (s *Shell) kill(hc interp.HandlerContext, args []string) error {
	if len(args) > 0 && (args[0] == "-l" || args[0] == "-L") {
		if len(args) > 1 {
			for _, a := range args[1:] {
				if n, err := strconv.Atoi(a); err == nil {
					if n > 128 {
						n -= 128
					}
					if n >= 1 && n <= len(signalNames) {
						fmt.Fprintln(hc.Stdout, signalNames[n-1])
						continue
					}
				}
				fmt.Fprintf(hc.Stderr, "%skill: %s: invalid signal specification\n", bashPrefix(hc), a)
				return status(1)
			}
			return nil
		}
		for i, n := range signalNames {
			fmt.Fprintf(hc.Stdout, "%2d) SIG%s\n", i+1, n)
		}
		return nil
	}
	sig := "TERM"
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		if args[0] == "--" {
			args = args[1:]
			break
		}
		if args[0] == "-s" || args[0] == "-n" {
			if len(args) < 2 {
				fmt.Fprintf(hc.Stderr, "%skill: %s: option requires an argument\n", bashPrefix(hc), args[0])
				return status(2)
			}
			sig = args[1]
			args = args[2:]
			continue
		}
		sig = args[0][1:]
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintf(hc.Stderr, "kill: usage: kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]\n")
		return status(2)
	}
	code := 0
	for _, a := range args {
		switch {
		case a == strconv.Itoa(s.pid) && sig == "0":
		case strings.HasPrefix(a, "%") || strings.HasPrefix(a, "g"):
			fmt.Fprintf(hc.Stderr, "%skill: %s: background jobs cannot be signalled in the sandbox\n", bashPrefix(hc), a)
			code = 1
		default:
			if _, err := strconv.Atoi(a); err != nil {
				fmt.Fprintf(hc.Stderr, "%skill: %s: arguments must be process or job IDs\n", bashPrefix(hc), a)
			} else {
				fmt.Fprintf(hc.Stderr, "%skill: (%s) - No such process\n", bashPrefix(hc), a)
			}
			code = 1
		}
	}
	return status(code)
}

// ulimit reports the sandbox's bounds; lowering a limit is accepted and
// has no effect (the sandbox's own limits apply).
func (s *Shell) ulimit(hc interp.HandlerContext, args []string) error {
	show := "f"
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			show = strings.TrimLeft(a, "-HS")
			continue
		}
		return nil // setting a value
	}
	switch show {
	case "a":
		fmt.Fprintf(hc.Stdout, "file size               (blocks, -f) unlimited\nopen files                      (-n) 1024\nmax user processes              (-u) %d\nstack size              (kbytes, -s) 8192\n", s.lim.MaxJobs)
	case "n":
		fmt.Fprintln(hc.Stdout, "1024")
	case "u":
		fmt.Fprintln(hc.Stdout, s.lim.MaxJobs)
	case "s":
		fmt.Fprintln(hc.Stdout, "8192")
	default:
		fmt.Fprintln(hc.Stdout, "unlimited")
	}
	return nil
}

// read implements bash's read: -r -s -a NAME -d DELIM -n N -N N -p PROMPT
// -t TIMEOUT -u 0, with IFS splitting, reading one byte at a time so that
// what follows stays for the next reader.
func (s *Shell) read(ctx context.Context, hc interp.HandlerContext, args []string) error {
	raw := false
	arrayName := ""
	delim := byte('\n')
	nchars, exact := -1, false
	var timeout time.Duration
	hasTimeout := false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		a := args[0]
		args = args[1:]
		if a == "--" {
			break
		}
		for i := 1; i < len(a); i++ {
			c := a[i]
			takesValue := strings.IndexByte("adnNptui", c) >= 0
			val := ""
			if takesValue {
				if i+1 < len(a) {
					val = a[i+1:]
				} else if len(args) > 0 {
					val, args = args[0], args[1:]
				} else {
					fmt.Fprintf(hc.Stderr, "%sread: -%c: option requires an argument\n", bashPrefix(hc), c)
					return status(2)
				}
				i = len(a)
			}
			switch c {
			case 'r':
				raw = true
			case 's', 'e':
			case 'a':
				arrayName = val
			case 'd':
				if val == "" {
					delim = 0
				} else {
					delim = val[0]
				}
			case 'n', 'N':
				n, err := strconv.Atoi(val)
				if err != nil || n < 0 {
					fmt.Fprintf(hc.Stderr, "%sread: %s: invalid number\n", bashPrefix(hc), val)
					return status(2)
				}
				nchars, exact = n, c == 'N'
			case 'p', 'i':
				// The prompt is only shown when input is a terminal,
				// which it never is in the sandbox.
			case 't':
				f, err := strconv.ParseFloat(val, 64)
				if err != nil || f < 0 {
					fmt.Fprintf(hc.Stderr, "%sread: %s: invalid timeout specification\n", bashPrefix(hc), val)
					return status(2)
				}
				timeout, hasTimeout = time.Duration(f*float64(time.Second)), true
			case 'u':
				fd, err := strconv.Atoi(val)
				in, _, ok := hc.FD(fd)
				if err != nil || fd < 0 || !ok || in == nil {
					fmt.Fprintf(hc.Stderr, "%sread: %s: invalid file descriptor: Bad file descriptor\n", bashPrefix(hc), val)
					return status(1)
				}
				hc.Stdin = in
			default:
				fmt.Fprintf(hc.Stderr, "%sread: -%c: invalid option\n", bashPrefix(hc), c)
				return status(2)
			}
		}
	}
	names := args
	if arrayName != "" {
		names = []string{arrayName}
	}
	for _, n := range names {
		if !syntax.ValidName(n) {
			fmt.Fprintf(hc.Stderr, "%sread: `%s': not a valid identifier\n", bashPrefix(hc), n)
			return status(1)
		}
	}
	if hasTimeout && timeout == 0 {
		// -t 0: is input available? A sandbox pipe cannot be polled
		// without consuming it; report that none is.
		return status(1)
	}
	if hc.Stdin == nil {
		return status(1)
	}
	rctx := ctx
	if hasTimeout {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	data, escaped, eof, err := readInput(rctx, hc.Stdin, raw, delim, nchars, exact, s.lim.MaxVarBytes)
	code := 0
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, ErrLimitExceeded):
		return s.curRun().fail(err)
	case err != nil && rctx.Err() != nil:
		code = 142 // timed out, like bash (128+SIGALRM)
	case err != nil || eof:
		code = 1
	}
	var assigns []string
	ifs := " \t\n"
	if v := hc.Env.Get("IFS"); v.IsSet() {
		ifs = v.String()
	}
	switch {
	case arrayName != "":
		fields := splitFields(data, escaped, ifs, -1)
		assigns = append(assigns, assignArray(arrayName, fields))
	case len(names) == 0:
		assigns = append(assigns, assign("REPLY", string(data)))
	case exact:
		assigns = append(assigns, assign(names[0], string(data)))
		for _, n := range names[1:] {
			assigns = append(assigns, assign(n, ""))
		}
	default:
		fields := splitFields(data, escaped, ifs, len(names))
		for i, n := range names {
			v := ""
			if i < len(fields) {
				v = fields[i]
			}
			assigns = append(assigns, assign(n, v))
		}
	}
	if err := setVars(ctx, hc, assigns); err != nil {
		return err
	}
	return status(code)
}

// readInput reads up to delim (or nchars characters) one byte at a time.
// Without raw, a backslash escapes the next byte (marked in escaped) and
// backslash-newline is a line continuation.
func readInput(ctx context.Context, in io.Reader, raw bool, delim byte, nchars int, exact bool, maxLine int64) (data []byte, escaped []bool, eof bool, err error) {
	defer cancelReads(ctx, in)()
	chars := 0
	esc := false
	var buf [1]byte
	for nchars < 0 || chars < nchars {
		if int64(len(data)) > maxLine {
			return data, escaped, false, &LimitError{Limit: "variable size", Max: maxLine}
		}
		n, rerr := in.Read(buf[:])
		if n == 0 {
			if rerr == io.EOF {
				return data, escaped, true, nil
			}
			if rerr != nil {
				return data, escaped, false, rerr
			}
			continue
		}
		b := buf[0]
		if esc {
			esc = false
			if b == '\n' {
				continue // line continuation
			}
			data = append(data, b)
			escaped = append(escaped, true)
			if utf8.RuneStart(b) {
				chars++
			}
			continue
		}
		if !raw && b == '\\' {
			esc = true
			continue
		}
		if b == delim && !exact {
			return data, escaped, false, nil
		}
		data = append(data, b)
		escaped = append(escaped, false)
		if utf8.RuneStart(b) {
			chars++
		}
	}
	return data, escaped, false, nil
}

// splitFields splits data by IFS like read does: at most n fields (n < 0:
// all), the last one keeping the rest of the line minus trailing IFS
// whitespace. Escaped bytes never split.
func splitFields(data []byte, escaped []bool, ifs string, n int) []string {
	isWS := func(b byte) bool { return (b == ' ' || b == '\t' || b == '\n') && strings.IndexByte(ifs, b) >= 0 }
	isSep := func(i int) bool { return !escaped[i] && strings.IndexByte(ifs, data[i]) >= 0 }
	var fields []string
	i := 0
	for i < len(data) && isSep(i) && isWS(data[i]) {
		i++
	}
	for i < len(data) {
		if n > 0 && len(fields) == n-1 {
			end := len(data)
			for end > i && isSep(end-1) && isWS(data[end-1]) {
				end--
			}
			fields = append(fields, string(data[i:end]))
			return fields
		}
		start := i
		for i < len(data) && !isSep(i) {
			i++
		}
		fields = append(fields, string(data[start:i]))
		// Skip one separator: IFS whitespace around it, and at most one
		// non-whitespace IFS character.
		for i < len(data) && isSep(i) && isWS(data[i]) {
			i++
		}
		if i < len(data) && isSep(i) && !isWS(data[i]) {
			i++
			for i < len(data) && isSep(i) && isWS(data[i]) {
				i++
			}
		}
	}
	return fields
}
