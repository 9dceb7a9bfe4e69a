package shell

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/wasmbox/wasmbox/internal/sh/expand"
	"github.com/wasmbox/wasmbox/internal/sh/interp"

	"github.com/spf13/afero"
	"github.com/wasmbox/wasmbox/internal/fserr"
)

// execHandler is the end of the interpreter's exec chain. It never calls
// the interpreter's default handler (which runs host binaries): it runs
// the shell's own builtins, bash/sh and shell scripts as child shells, and
// hands everything else to the Executor.
func (s *Shell) execHandler(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	rs := s.curRun()
	if args[0] == sentinel {
		if len(args) < 2 {
			return nil
		}
		return s.builtin(ctx, hc, rs, args[1], args[2:])
	}
	return s.external(ctx, hc, rs, args)
}

// status turns an exit code into the error the interpreter expects.
func status(code int) error {
	if code == 0 {
		return nil
	}
	return interp.ExitStatus(uint8(code))
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOENT:
			return "No such file or directory"
		case syscall.EACCES:
			return "Permission denied"
		case syscall.EISDIR:
			return "Is a directory"
		case syscall.ENOTDIR:
			return "Not a directory"
		}
	}
	msg := err.Error()
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	return msg
}

func randomToken() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Shell) readFileLimited(p string, max int64) (string, error) {
	f, err := s.cfg.FS.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return "", &os.PathError{Op: "read", Path: p, Err: syscall.EISDIR}
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return "", err
	}
	if int64(len(b)) > max {
		return "", &LimitError{Limit: "script size", Max: max}
	}
	return string(b), nil
}

// exportedEnv is the environment of an external command: the exported
// string variables visible to it, sorted by name.
func exportedEnv(env expand.Environ) []string {
	vals := map[string]string{}
	env.Each(func(name string, vr expand.Variable) bool {
		if vr.IsSet() && vr.Exported && vr.Kind == expand.String {
			vals[name] = vr.Str
		} else {
			delete(vals, name)
		}
		return true
	})
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n + "=" + vals[n]
	}
	return out
}

func isShellName(name string) bool {
	switch path.Base(name) {
	case "bash", "sh", "dash":
		return true
	}
	return false
}

func (s *Shell) external(ctx context.Context, hc interp.HandlerContext, rs *runState, args []string) error {
	name := args[0]
	if name == "" {
		// bash looks the empty name up like any other, and finds nothing.
		fmt.Fprintf(hc.Stderr, "%s: command not found\n", bashPrefix(hc))
		return status(127)
	}
	if isShellName(name) {
		return s.runShellCommand(ctx, hc, rs, args)
	}
	var file string
	if strings.Contains(name, "/") {
		file = resolve(hc.Dir, name)
		fi, err := s.cfg.FS.Stat(file)
		if err != nil {
			fmt.Fprintf(hc.Stderr, "%s%s: %s\n", bashPrefix(hc), name, errText(err))
			return status(127)
		}
		if fi.IsDir() {
			fmt.Fprintf(hc.Stderr, "%s%s: Is a directory\n", bashPrefix(hc), name)
			return status(126)
		}
		if !s.allowed(fi, interp.AccessExec) {
			fmt.Fprintf(hc.Stderr, "%s%s: Permission denied\n", bashPrefix(hc), name)
			return status(126)
		}
	} else if p, ok := s.lookPathVFS(hc.Dir, hc.Env.Get("PATH").String(), name); ok {
		file = p
	}
	if file != "" {
		head := s.readHead(file)
		if bytes.HasPrefix(head, []byte("#!wasmbox ")) {
			// A command entry of the executor (executor.EntryPrefix).
			return s.runExecutor(ctx, hc, rs, args)
		}
		if interpArgs, ok := shebang(head); ok {
			if isShellName(interpArgs[0]) {
				return s.runShellScript(ctx, hc, rs, file, name, args[1:])
			}
			script := name
			if !strings.Contains(name, "/") {
				script = file // found on PATH: the interpreter needs the path
			}
			argv := append(append(interpArgs, script), args[1:]...)
			return s.runExecutor(ctx, hc, rs, argv)
		}
		if len(head) > 0 && !bytes.HasPrefix(head, []byte("\x00asm")) && !bytes.Contains(head, []byte{0}) {
			// A text file without #!: run it as a shell script (ENOEXEC).
			return s.runShellScript(ctx, hc, rs, file, name, args[1:])
		}
	}
	return s.runExecutor(ctx, hc, rs, args)
}

func (s *Shell) lookPathVFS(dir, pathVar, name string) (string, bool) {
	for _, elem := range strings.Split(pathVar, ":") {
		if elem == "" {
			elem = "."
		}
		p := resolve(dir, elem+"/"+name)
		if s.isExecutable(p) {
			return p, true
		}
	}
	return "", false
}

func (s *Shell) readHead(p string) []byte {
	f, err := s.cfg.FS.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := io.ReadFull(f, buf)
	return buf[:n]
}

// shebang parses "#!/path/interp [arg]" ("#!/usr/bin/env NAME" gives NAME).
func shebang(head []byte) ([]string, bool) {
	if !bytes.HasPrefix(head, []byte("#!")) {
		return nil, false
	}
	line, _, _ := bytes.Cut(head[2:], []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return nil, false
	}
	if path.Base(fields[0]) == "env" && len(fields) > 1 {
		fields = fields[1:]
		if fields[0] == "-S" && len(fields) > 1 {
			fields = fields[1:]
		}
	}
	if len(fields) > 2 {
		fields = []string{fields[0], strings.Join(fields[1:], " ")}
	}
	return fields, true
}

func (s *Shell) runExecutor(ctx context.Context, hc interp.HandlerContext, rs *runState, argv []string) error {
	if s.cfg.Executor == nil {
		fmt.Fprintf(hc.Stderr, "%s%s: command not found\n", bashPrefix(hc), argv[0])
		return status(127)
	}
	c := Command{
		Argv:   argv,
		Env:    exportedEnv(hc.Env),
		Dir:    hc.Dir,
		Stdin:  hc.Stdin,
		Stdout: rs.guardWriter(hc.Stdout),
		Stderr: rs.guardWriter(hc.Stderr),
	}
	// Whatever the executor does with stdin, a cancel unblocks it.
	defer cancelReads(ctx, hc.Stdin)()
	code, err := s.cfg.Executor.Exec(ctx, c)
	switch {
	case err == nil:
		if code < 0 || code > 255 {
			code = 255
		}
		return status(code)
	case errors.Is(err, ErrNotFound):
		fmt.Fprintf(hc.Stderr, "%s%s: command not found%s\n", bashPrefix(hc), argv[0], notFoundHint(argv[0]))
		return status(127)
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, ErrLimitExceeded):
		return rs.fail(err)
	}
	fmt.Fprintf(hc.Stderr, "%s%s: %v\n", bashPrefix(hc), argv[0], err)
	if code <= 0 || code > 255 {
		code = 126
	}
	return status(code)
}

// child returns a new Shell for `bash ...` and scripts: same FS, Executor
// and limits, a fresh state with the exported environment, sharing the
// current Run's limits and cancellation.
func (s *Shell) child(hc interp.HandlerContext, rs *runState) (*Shell, *interp.Runner, error) {
	c := &Shell{cfg: s.cfg, lim: s.lim, uid: s.uid, gid: s.gid, pid: s.pid + 1, ppid: s.pid, tempDir: s.tempDir}
	c.umask.Store(s.umask.Load())
	env, err := newBaseEnv(c, exportedEnv(hc.Env))
	if err != nil {
		return nil, nil, err
	}
	c.env = env
	r, err := c.newRunner(hc.Dir)
	if err != nil {
		return nil, nil, err
	}
	c.rs.Store(rs)
	return c, r, nil
}

// runShellCommand implements bash/sh: `bash [-euxo opt] -c SCRIPT [NAME
// [ARGS]]`, `bash FILE [ARGS]`, and `bash` reading the script from stdin.
func (s *Shell) runShellCommand(ctx context.Context, hc interp.HandlerContext, rs *runState, args []string) error {
	var opts []string
	cmdMode, stdinMode := false, false
	rest := args[1:]
loop:
	for len(rest) > 0 {
		a := rest[0]
		switch {
		case a == "--" || a == "-":
			rest = rest[1:]
			break loop
		case a == "--login" || a == "--norc" || a == "--noprofile" || a == "--posix" || a == "--noediting":
			rest = rest[1:]
		case a == "--rcfile" || a == "--init-file":
			rest = rest[min(2, len(rest)):]
		case len(a) > 1 && (a[0] == '-' || a[0] == '+') && a[1] != '-':
			rest = rest[1:]
			for _, c := range a[1:] {
				switch c {
				case 'c':
					cmdMode = true
				case 's':
					stdinMode = true
				case 'l', 'i', 'r', 'E', 'T', 'h', 'B', 'H', 'm', 'b', 'p', 'P', 'k', 'C', 't':
				case 'o', 'O':
					if len(rest) == 0 {
						fmt.Fprintf(hc.Stderr, "bash: -%c: option requires an argument\n", c)
						return status(2)
					}
					if c == 'o' {
						opts = append(opts, a[:1]+"o", rest[0])
					}
					rest = rest[1:]
				case 'e', 'u', 'x', 'f', 'a', 'n', 'v':
					if c != 'v' {
						opts = append(opts, a[:1]+string(c))
					}
				default:
					fmt.Fprintf(hc.Stderr, "bash: -%c: invalid option\n", c)
					return status(2)
				}
			}
		default:
			break loop
		}
	}
	name := path.Base(args[0])
	var script string
	switch {
	case cmdMode:
		if len(rest) == 0 {
			fmt.Fprintf(hc.Stderr, "bash: -c: option requires an argument\n")
			return status(2)
		}
		script = rest[0]
		rest = rest[1:]
		if len(rest) > 0 {
			name = rest[0]
			rest = rest[1:]
		}
	case len(rest) > 0 && !stdinMode:
		return s.runShellScriptOpts(ctx, hc, rs, resolve(hc.Dir, rest[0]), rest[0], rest[1:], opts)
	default:
		if hc.Stdin == nil {
			return nil
		}
		b, err := readAllCtx(ctx, hc.Stdin, int64(s.lim.MaxScriptBytes)*16)
		if err != nil {
			if errors.Is(err, ErrLimitExceeded) {
				return rs.fail(err)
			}
			return ctx.Err()
		}
		script = string(b)
	}
	return s.runChild(ctx, hc, rs, script, name, rest, opts)
}

func (s *Shell) runShellScript(ctx context.Context, hc interp.HandlerContext, rs *runState, file, name string, params []string) error {
	return s.runShellScriptOpts(ctx, hc, rs, file, name, params, nil)
}

func (s *Shell) runShellScriptOpts(ctx context.Context, hc interp.HandlerContext, rs *runState, file, name string, params, opts []string) error {
	src, err := s.readFileLimited(file, int64(s.lim.MaxScriptBytes)*16)
	if err != nil {
		if errors.Is(err, ErrLimitExceeded) {
			return rs.fail(err)
		}
		fmt.Fprintf(hc.Stderr, "bash: %s: %s\n", name, errText(err))
		return status(127)
	}
	return s.runChild(ctx, hc, rs, src, name, params, opts)
}

// runChild runs script in a child shell; it counts as one frame.
func (s *Shell) runChild(ctx context.Context, hc interp.HandlerContext, rs *runState, script, name string, params, opts []string) error {
	if n := rs.frames.Add(1); n > rs.lim.MaxDepth {
		rs.frames.Add(-1)
		return rs.fail(&LimitError{Limit: "nesting depth", Max: rs.lim.MaxDepth})
	}
	defer rs.frames.Add(-1)
	if max := int64(s.lim.MaxScriptBytes) * 16; int64(len(script)) > max {
		return rs.fail(&LimitError{Limit: "script size", Max: max})
	}
	file, err := parse(script, name)
	if err != nil {
		fmt.Fprintf(hc.Stderr, "%s: %s\n", name, syntaxMessage(err))
		return status(2)
	}
	if err := s.sanitize(file); err != nil {
		fmt.Fprintf(hc.Stderr, "%s: %v\n", name, err)
		return status(2)
	}
	_, r, err := s.child(hc, rs)
	if err != nil {
		return err
	}
	if err := interp.Params(append(append(opts, "--"), params...)...)(r); err != nil {
		fmt.Fprintf(hc.Stderr, "bash: %v\n", err)
		return status(2)
	}
	interp.StdIO(hc.Stdin, hc.Stdout, hc.Stderr)(r)
	interp.InheritFDs(hc)(r)
	err = s.runNode(ctx, r, file)
	if err == nil {
		return nil
	}
	if st, ok := errors.AsType[interp.ExitStatus](err); ok {
		return status(int(st))
	}
	var pe *PanicError
	if errors.As(err, &pe) {
		return rs.fail(pe)
	}
	return err
}

// readAllCtx reads r to EOF, at most max bytes, stopping when ctx is done.
func readAllCtx(ctx context.Context, r io.Reader, max int64) ([]byte, error) {
	defer cancelReads(ctx, r)()
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if int64(len(b)) > max {
		return nil, &LimitError{Limit: "script size", Max: max}
	}
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return b, nil
}

// procSubstFile creates an empty VFS temporary file for `>(cmds)` and
// prints its path; the file is removed at the end of the Run.
func (s *Shell) procSubstFile(hc interp.HandlerContext, rs *runState) error {
	p, f, err := s.procSubstTemp(hc, rs)
	if err != nil {
		return err
	}
	f.Close()
	io.WriteString(hc.Stdout, p)
	return nil
}

// procSubstTemp creates and registers a VFS temporary file.
func (s *Shell) procSubstTemp(hc interp.HandlerContext, rs *runState) (string, afero.File, error) {
	dir := hc.Env.Get("TMPDIR").String()
	if dir == "" || !path.IsAbs(dir) {
		dir = "/tmp"
	}
	if fi, err := s.cfg.FS.Stat(dir); err != nil || !fi.IsDir() {
		dir = "/"
	}
	p := path.Join(dir, ".wasmbox-procsubst-"+randomToken())
	f, err := s.cfg.FS.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		fmt.Fprintf(hc.Stderr, "%sprocess substitution: %s\n", bashPrefix(hc), errText(err))
		return "", nil, status(1)
	}
	rs.mu.Lock()
	rs.tmpFiles = append(rs.tmpFiles, p)
	rs.mu.Unlock()
	return p, f, nil
}

// procSubst implements `<(cmds)`: the output of cmds, read from stdin, is
// stored in a VFS temporary file whose path is printed; the file is
// removed at the end of the Run.
func (s *Shell) procSubst(ctx context.Context, hc interp.HandlerContext, rs *runState) error {
	p, f, err := s.procSubstTemp(hc, rs)
	if err != nil {
		return err
	}
	if hc.Stdin != nil {
		in := hc.Stdin
		defer cancelReads(ctx, in)()
		_, err = io.Copy(f, in)
	}
	f.Close()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil && fserr.Errno(err) == syscall.ENOSPC {
		fmt.Fprintf(hc.Stderr, "%sprocess substitution: %s\n", bashPrefix(hc), errText(err))
	}
	io.WriteString(hc.Stdout, p)
	return nil
}

// notFoundHint says how to get a command that only the native lane runs
// (a sandbox without it finds no such command): " (...)", or "".
func notFoundHint(name string) string {
	switch name {
	case "git", "/usr/bin/git":
		return " (git runs in the native lane: wasmbox run --native git)"
	}
	return ""
}
