// Package shell runs bash scripts from untrusted agents against a virtual
// filesystem, with every command handed to an Executor.
//
// The interpreter is mvdan.cc/sh/v3 (syntax, and a copy of expand and
// interp with small patches in internal/sh). A Shell wires every door the
// interpreter has to the outside world into the sandbox:
//
//   - files (redirections, globbing, `test -f`, `cd`, `source`) go to an FS;
//   - every command that is not a builtin or a function goes to an Executor;
//   - the environment is exactly Config.Env plus a few sandbox defaults
//     (HOME, UID/EUID/GID, $$, $PPID); nothing is read from the host;
//   - `~user` reads /etc/passwd from the FS, `pwd -P` resolves symlinks in
//     the FS, `type`/`command -v`/`source` search PATH in the FS.
//
// State persists across Run calls like in an interactive session: the
// current directory, variables, exports, functions, aliases and options.
// Snapshot/Restore and Clone copy it, for sandbox fork and persistence.
//
// # Where it runs
//
// The product runs this package inside WebAssembly: tools/shell builds it
// for wasip1 into wasm/shell.wasm, where its FS is the sandbox's VFS
// through WASI (GuestFS), its Executor the host's process ABI
// (GuestExecutor) and its pipes the host's (Config.Pipe); shell/session
// runs one instance per sandbox session, under the run's deadline and its
// own memory limit. CONTAINMENT.md says what that boundary contains and
// what is left outside. The package also builds natively, where its tests
// drive the same code with a test executor and the VFS.
//
// # Limits
//
// A Run is bounded by its context (a deadline kills loops that never call
// a command) and by Limits: script size, number of commands, total size of
// variables, bytes of output, nesting depth of functions/subshells/child
// shells, and concurrent background jobs. Crossing a limit stops the Run
// with a *LimitError (errors.Is(err, ErrLimitExceeded)). A panic of the
// interpreter in the goroutine that runs the script is recovered and
// returned as a *PanicError; so is one in the goroutines the interpreter
// starts for pipelines and background jobs (see guardCmd).
//
// A Shell is not safe for concurrent use: Run calls are serialized.
package shell

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmbox/wasmbox/internal/sh/interp"
	"github.com/wasmbox/wasmbox/internal/sh/syntax"

	"github.com/spf13/afero"
)

// FS is what the shell needs of a filesystem: vfs.FS has it. Files whose
// FileInfo.Sys() implements interp.FileSys (a *vfs.Stat does) have an
// owner; others belong to root.
type FS interface {
	Open(name string) (afero.File, error)
	OpenFile(name string, flag int, perm os.FileMode) (afero.File, error)
	Stat(name string) (os.FileInfo, error)
	LstatIfPossible(name string) (os.FileInfo, bool, error)
	ReadlinkIfPossible(name string) (string, error)
	Remove(name string) error
}

// Command is one external command the shell asks the Executor to run.
type Command struct {
	// Argv is the command line; Argv[0] is the name as the script wrote it
	// (a bare name like "ls", or a path like "./tool").
	Argv []string
	// Env is the exported environment, "NAME=value" pairs.
	Env []string
	// Dir is the absolute VFS working directory.
	Dir string
	// Stdin may be nil (closed standard input).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Executor runs external commands. Exec returns the exit status of the
// command. A non-nil error means the command could not run: return (or
// wrap) ErrNotFound when there is no such command; errors of the context
// are passed through; any other error is printed as "NAME: error" with
// status 126.
//
// Exec is called from several goroutines at once when a script runs a
// pipeline or background jobs.
type Executor interface {
	Exec(ctx context.Context, c Command) (exitCode int, err error)
}

// ExecutorFunc adapts a function to the Executor interface.
type ExecutorFunc func(ctx context.Context, c Command) (int, error)

// Exec calls f.
func (f ExecutorFunc) Exec(ctx context.Context, c Command) (int, error) { return f(ctx, c) }

// Resolver is an optional interface of an Executor: when the VFS PATH has
// no file for a command name, `type`, `command -v` and `hash` ask
// Resolve, so commands that exist only in the executor's registry are
// reported with the path it returns.
type Resolver interface {
	Resolve(name string) (path string, ok bool)
}

// Limits bounds what one Run may consume. A zero field takes the default
// shown; a negative value disables that limit.
type Limits struct {
	// MaxScriptBytes bounds the script text given to Run (default 64 KiB).
	// Sourced files may be 16 times larger.
	MaxScriptBytes int
	// MaxVarBytes bounds the total size of all variables visible to a
	// command, and of a command substitution's captured output
	// (default 16 MiB). It is checked before every simple command and at
	// the top of every loop iteration.
	MaxVarBytes int64
	// MaxOutputBytes caps what a Run writes to Stdout and to Stderr, each
	// (default 8 MiB). Writes past the cap fail with an error and are
	// counted as truncated; the script is not stopped for it.
	MaxOutputBytes int64
	// MaxCommands bounds simple commands (builtins, functions and external
	// commands) run by one Run (default 10,000,000).
	MaxCommands int64
	// MaxDepth bounds the frames alive at once: function calls, command
	// substitutions and child shells, summed over all goroutines
	// (default 1000). It stops runaway recursion and fork bombs.
	MaxDepth int64
	// MaxJobs bounds background jobs running at once (default 64).
	MaxJobs int64
	// MaxBraceElems bounds the words of one brace expansion (0: the
	// interpreter's 16Ki; negative: none, for a shell whose memory is
	// bounded otherwise, as in shell.wasm).
	MaxBraceElems int
}

// Default limits.
const (
	DefaultMaxScriptBytes = 64 << 10
	DefaultMaxVarBytes    = 16 << 20
	DefaultMaxOutputBytes = 8 << 20
	DefaultMaxCommands    = 10_000_000
	DefaultMaxDepth       = 1000
	DefaultMaxJobs        = 64
)

// unlimited is what a negative limit becomes.
const unlimited = 1<<62 - 1

func (l Limits) withDefaults() Limits {
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		} else if *v < 0 {
			*v = unlimited
		}
	}
	if l.MaxScriptBytes == 0 {
		l.MaxScriptBytes = DefaultMaxScriptBytes
	} else if l.MaxScriptBytes < 0 {
		l.MaxScriptBytes = 1<<31 - 1
	}
	def(&l.MaxVarBytes, DefaultMaxVarBytes)
	def(&l.MaxOutputBytes, DefaultMaxOutputBytes)
	def(&l.MaxCommands, DefaultMaxCommands)
	def(&l.MaxDepth, DefaultMaxDepth)
	def(&l.MaxJobs, DefaultMaxJobs)
	return l
}

// Config describes a Shell. Only FS is required.
type Config struct {
	// FS is the filesystem every file access goes to (a vfs.FS, or the
	// guest's own view of the sandbox's filesystem inside shell.wasm).
	FS FS
	// Executor runs external commands. If nil, every external command is
	// "command not found" (127).
	Executor Executor
	// Env is the exact initial environment, "NAME=value" pairs, all
	// exported. Nothing is taken from the host. HOME (/home/user), PATH,
	// and the read-only UID, EUID and GID are added when absent.
	Env []string
	// Dir is the initial working directory, an absolute VFS path
	// (default "/"). It must exist in FS.
	Dir string
	// Stdin, Stdout and Stderr are the streams of every Run until
	// SetStdio changes them. Nil means no input and discarded output.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Limits bounds every Run.
	Limits Limits
	// Seed, when non-nil, seeds $RANDOM so that runs are reproducible.
	// (Subshells and pipelines draw from an unseeded generator.)
	Seed *uint64
	// UID and GID of the sandbox user (default 1000 each); they answer
	// $UID, $EUID, $GID, `test -O/-G` and the -r/-w/-x permission checks.
	UID, GID *uint32
	// PID and PPID are what $$ and $PPID expand to (default 2 and 1).
	PID, PPID int
	// Pipe, when set, makes the pipes of pipelines, here-documents and
	// stdin copies (default os.Pipe; shell.wasm uses the host's pipes).
	Pipe func() (r, w *os.File, err error)
	// Disposable says that whoever runs the shell discards it after a Run
	// that crossed a limit or failed internally, and restores the state
	// it had before that Run (shell.wasm's host does): the shell then
	// does not repair itself (see rebuild).
	Disposable bool
}

// Stats describes the last Run.
type Stats struct {
	Commands        int64 // simple commands run
	StdoutBytes     int64 // bytes accepted on stdout (at most the cap)
	StderrBytes     int64
	StdoutTruncated bool // output was lost to MaxOutputBytes
	StderrTruncated bool
	// Exited reports that the script ended with the exit builtin (an
	// interactive front end then ends the session).
	Exited bool
}

// Shell is a bash interpreter bound to a VFS and an Executor.
type Shell struct {
	mu      sync.Mutex // serializes Run and state access
	cfg     Config
	lim     Limits
	uid     uint32
	gid     uint32
	pid     int
	ppid    int
	env     *baseEnv
	runner  *interp.Runner
	tempDir string // host TMPDIR the interpreter sees: unreachable on purpose

	stdin          io.Reader
	stdout, stderr io.Writer

	umask atomic.Uint32
	rs    atomic.Pointer[runState] // the Run in progress, shared with child shells

	sources  sync.Map // magic path -> sanitized source text (see source)
	last     Stats
	funcText map[*syntax.Stmt]string // printed functions, by body (see snapshot)
}

// New returns a Shell for cfg. It fails if cfg.FS is nil or cfg.Dir is not
// a directory of cfg.FS.
func New(cfg Config) (*Shell, error) {
	if cfg.FS == nil {
		return nil, errors.New("shell: Config.FS is nil")
	}
	s := &Shell{cfg: cfg, lim: cfg.Limits.withDefaults(), uid: 1000, gid: 1000, pid: cfg.PID, ppid: cfg.PPID}
	if cfg.UID != nil {
		s.uid = *cfg.UID
	}
	if cfg.GID != nil {
		s.gid = *cfg.GID
	}
	if s.pid <= 0 {
		s.pid = 2
	}
	if s.ppid <= 0 {
		s.ppid = 1
	}
	s.umask.Store(0o022)
	s.stdin, s.stdout, s.stderr = cfg.Stdin, cfg.Stdout, cfg.Stderr
	var secret [16]byte
	rand.Read(secret[:])
	// The interpreter creates named pipes in, and lets redirections bypass
	// the open handler for, "$TMPDIR/sh-interp-*". A NUL byte makes this
	// directory impossible for the OS (every syscall fails with EINVAL
	// before reaching the kernel) and the random part impossible to guess.
	s.tempDir = "/\x00wasmbox-" + hex.EncodeToString(secret[:])
	env, err := newBaseEnv(s, cfg.Env)
	if err != nil {
		return nil, err
	}
	s.env = env
	dir := cfg.Dir
	if dir == "" {
		dir = "/"
	}
	if !path.IsAbs(dir) {
		return nil, fmt.Errorf("shell: Config.Dir %q is not absolute", dir)
	}
	dir = path.Clean(dir)
	fi, err := cfg.FS.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("shell: Config.Dir: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("shell: Config.Dir %q is not a directory", dir)
	}
	r, err := s.newRunner(dir)
	if err != nil {
		return nil, err
	}
	s.runner = r
	if cfg.Seed != nil {
		if err := s.runInternal(context.Background(), "RANDOM="+strconv.FormatUint(*cfg.Seed, 10)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newRunner builds an interp.Runner whose every handler is ours.
func (s *Shell) newRunner(dir string) (*interp.Runner, error) {
	r, err := interp.New(
		interp.Env(s.env),
		func(r *interp.Runner) error { r.Dir = dir; return nil }, // interp.Dir would stat the host
		interp.StdIO(nil, io.Discard, io.Discard),
		interp.OpenHandler(s.openHandler),
		interp.ReadDirHandler2(s.readDirHandler),
		interp.StatHandler(s.statHandler),
		interp.AccessHandler(s.accessHandler),
		interp.CallHandler(s.callHandler),
		// Our handler never calls next: the default handler runs host binaries.
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return s.execHandler }),
		interp.Interactive(true), // aliases persist across Runs like in a session
		interp.UserIDs(s.uid, s.gid),
		interp.ProcessIDs(s.pid, s.ppid),
		interp.PipeHandler(s.cfg.Pipe),
		interp.MaxBraceElems(s.lim.MaxBraceElems),
		interp.LoopHook(s.loopHook),
	)
	if err != nil {
		return nil, err
	}
	// Reset reads TMPDIR, HOME, UID, EUID and GID once; answer them from
	// the sandbox (see baseEnv.Get).
	s.env.bootstrap.Store(true)
	r.Reset()
	s.env.bootstrap.Store(false)
	return r, nil
}

// SetStdio replaces the streams used by the following Runs. Nil means no
// input and discarded output.
func (s *Shell) SetStdio(stdin io.Reader, stdout, stderr io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stdin, s.stdout, s.stderr = stdin, stdout, stderr
}

// Stats returns statistics of the last Run.
func (s *Shell) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Dir returns the current working directory.
func (s *Shell) Dir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runner.Dir
}

// Run parses and runs script, and returns its exit status.
//
// A syntax error prints a bash-like message to stderr and returns (2, nil),
// after running the command lines before it, as bash does.
// The error is non-nil only when the Run was stopped from outside the
// script: a *LimitError, the context's error (exit status 124 for a
// deadline, 125 for a cancel), or a *PanicError. Background jobs that are
// still running when the script ends are killed.
func (s *Shell) Run(ctx context.Context, script string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.newRunState(ctx)
	defer rs.cancel(nil)
	s.rs.Store(rs)
	defer s.rs.Store(nil)
	code, err := s.runTop(rs, script)
	s.finishRun(rs)
	if s.cfg.Disposable {
		// The host throws this shell away after a limit or an internal
		// error and restores the state it had before the Run.
	} else if le, ok := errors.AsType[*LimitError](err); ok && le.Limit == "variable size" {
		s.rebuild(rs.stderr, s.lim.MaxVarBytes/2)
	} else if errors.Is(err, ErrInternal) {
		// The interpreter may have stopped half-way through a function
		// call: rebuild it from its state so it is consistent again.
		s.rebuild(rs.stderr, -1)
	}
	s.last = Stats{
		Commands:        rs.commands.Load(),
		StdoutBytes:     rs.stdout.n,
		StderrBytes:     rs.stderr.n,
		StdoutTruncated: rs.stdout.truncated,
		StderrTruncated: rs.stderr.truncated,
		Exited:          rs.exited,
	}
	return code, err
}

func (s *Shell) runTop(rs *runState, script string) (int, error) {
	if len(script) > s.lim.MaxScriptBytes {
		err := &LimitError{Limit: "script size", Max: int64(s.lim.MaxScriptBytes)}
		fmt.Fprintf(rs.stderr, "wasmbox: %v\n", err)
		return 2, err
	}
	file, err := parse(script, "")
	if err != nil {
		// bash reads and runs one complete command line at a time, so the
		// lines before the one with the syntax error run first.
		if before := linesBefore(script, err); before != nil {
			code, rerr := s.runFile(rs, before)
			if rerr != nil || rs.exited {
				return code, rerr
			}
		}
		fmt.Fprintf(rs.stderr, "bash: %s\n", syntaxMessage(err))
		return 2, nil
	}
	return s.runFile(rs, file)
}

// runFile sanitizes and runs a parsed script as runTop does.
func (s *Shell) runFile(rs *runState, file *syntax.File) (int, error) {
	if err := s.sanitize(file); err != nil {
		if le, ok := errors.AsType[*LimitError](err); ok {
			fmt.Fprintf(rs.stderr, "wasmbox: %v\n", le)
			return 2, le
		}
		fmt.Fprintf(rs.stderr, "bash: %v\n", err)
		return 2, nil
	}
	stdin, closeStdin := rs.stdinFile(s.stdin, s.pipe)
	defer closeStdin()
	interp.StdIO(stdin, rs.stdout, rs.stderr)(s.runner)
	err := s.runNode(rs.ctx, s.runner, file)
	rs.exited = s.runner.Exited()
	// Descriptors that exec opened end with the Run, like its streams.
	s.runner.CloseFDs()
	interp.StdIO(nil, io.Discard, io.Discard)(s.runner)
	code, err := s.exitOf(rs, err)
	// The EXIT trap fires at the end of every Run (each Run is a script);
	// clear it so that it does not fire again at the end of the next one.
	if s.runner.ExitTrap() != "" {
		s.runNode(context.Background(), s.runner, resetTrap)
	}
	return code, err
}

var resetTrap = mustParse("trap - EXIT").Stmts[0]

// rebuild replaces the interpreter by a fresh one holding the current
// state. With maxVars >= 0 it first drops the largest variables until the
// rest use at most maxVars bytes: that is how the shell recovers from a
// variable size limit (a read-only variable could not be unset otherwise).
func (s *Shell) rebuild(stderr io.Writer, maxVars int64) {
	dir := s.runner.Dir
	st, err := s.snapshot()
	if err != nil {
		st = State{Dir: dir, Umask: s.umask.Load()}
	}
	size := func(v Var) int64 {
		n := int64(len(v.Name) + len(v.Str))
		for _, e := range v.List {
			n += int64(len(e)) + 8
		}
		for k, e := range v.Map {
			n += int64(len(k)+len(e)) + 16
		}
		return n
	}
	var total int64
	for _, v := range st.Vars {
		total += size(v)
	}
	slices.SortStableFunc(st.Vars, func(a, b Var) int { return cmp.Compare(size(b), size(a)) })
	for maxVars >= 0 && total > maxVars && len(st.Vars) > 0 {
		v := st.Vars[0]
		st.Vars = st.Vars[1:]
		total -= size(v)
		fmt.Fprintf(stderr, "wasmbox: variable %s (%d bytes) dropped to get under the variable size limit\n", v.Name, size(v))
	}
	if err := s.restore(st); err != nil {
		// Keep going with a fresh interpreter rather than a broken one.
		fmt.Fprintf(stderr, "wasmbox: shell state lost: %v\n", err)
		if r, err := s.newRunner("/"); err == nil {
			s.runner = r
		}
	}
}

// runInternal runs trusted shell source on the main runner, outside any
// Run (used to seed and to restore state).
func (s *Shell) runInternal(ctx context.Context, src string) error {
	file, err := parse(src, "")
	if err != nil {
		return err
	}
	if err := s.sanitize(file); err != nil {
		return err
	}
	rs := s.newRunState(ctx)
	defer rs.cancel(nil)
	s.rs.Store(rs)
	defer s.rs.Store(nil)
	var stderr bytes.Buffer
	interp.StdIO(nil, io.Discard, &stderr)(s.runner)
	defer interp.StdIO(nil, io.Discard, io.Discard)(s.runner)
	for _, st := range file.Stmts {
		if err := s.runNode(ctx, s.runner, st); err != nil {
			return fmt.Errorf("shell: %v: %s", err, strings.TrimSpace(stderr.String()))
		}
	}
	s.finishRun(rs)
	return nil
}

// runNode runs node on r and turns a panic of the interpreter into an error.
func (s *Shell) runNode(ctx context.Context, r *interp.Runner, node syntax.Node) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return r.Run(ctx, node)
}

// exitOf maps the error of interp.Runner.Run to an exit status and the
// error Run returns.
func (s *Shell) exitOf(rs *runState, err error) (int, error) {
	if err == nil && rs.ctx.Err() == nil {
		return 0, nil
	}
	if err == nil {
		// The script ended, but only because the context cut it short
		// (say, wait returned when its jobs were killed).
		err = rs.ctx.Err()
	}
	if st, ok := errors.AsType[interp.ExitStatus](err); ok && rs.ctx.Err() == nil {
		return int(st), nil
	}
	if cause := context.Cause(rs.ctx); cause != nil {
		err = cause
	}
	var le *LimitError
	var pe *PanicError
	switch {
	case errors.As(err, &le):
		fmt.Fprintf(rs.stderr, "wasmbox: %v\n", le)
		return 1, le
	case errors.As(err, &pe):
		fmt.Fprintf(rs.stderr, "wasmbox: internal interpreter error\n")
		return 1, pe
	case errors.Is(err, context.DeadlineExceeded):
		return 124, err
	case errors.Is(err, context.Canceled):
		return 125, err
	}
	if st, ok := errors.AsType[interp.ExitStatus](err); ok {
		return int(st), nil
	}
	fmt.Fprintf(rs.stderr, "bash: %v\n", err)
	return 1, nil
}

// finishRun stops what is left of a Run: it cancels background jobs, waits
// (bounded) for every goroutine the shell started, and removes temporary
// files of process substitutions.
func (s *Shell) finishRun(rs *runState) {
	rs.cancel(nil)
	select {
	case <-rs.wg.Idle():
	case <-time.After(2 * time.Second):
	}
	rs.mu.Lock()
	tmp := rs.tmpFiles
	rs.tmpFiles = nil
	rs.mu.Unlock()
	for _, p := range tmp {
		s.cfg.FS.Remove(p)
	}
}

func parse(src, name string) (*syntax.File, error) {
	if strings.IndexByte(src, 0) >= 0 {
		return nil, errors.New("line 1: syntax error: NUL byte in script")
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), name)
	if err == nil {
		return f, nil
	}
	// bash reads a "$((" that does not parse as arithmetic as "$( (", a
	// subshell in a command substitution: $((cd d; ls) 2>/dev/null). The
	// parser does not backtrack, so retry from the "$((" before the error.
	orig, fixed := err, src
	for range 8 {
		var pe syntax.ParseError
		if !errors.As(err, &pe) {
			break
		}
		off := min(int(pe.Pos.Offset()), len(fixed))
		i := strings.LastIndex(fixed[:off], "$((")
		if i < 0 {
			break
		}
		fixed = fixed[:i] + "$( (" + fixed[i+3:]
		f2, err2 := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(fixed), name)
		if err2 == nil {
			return f2, nil
		}
		err = err2
	}
	return nil, orig
}

// linesBefore returns the statements of src that bash runs before it
// meets the syntax error err: the complete command lines that end before
// the line where the failing command starts (nil when there are none).
func linesBefore(src string, err error) *syntax.File {
	var pe syntax.ParseError
	if !errors.As(err, &pe) || strings.IndexByte(src, 0) >= 0 {
		return nil
	}
	var stmts []*syntax.Stmt
	for st, err := range syntax.NewParser(syntax.Variant(syntax.LangBash)).StmtsSeq(strings.NewReader(src)) {
		if err != nil {
			break
		}
		stmts = append(stmts, st)
	}
	if len(stmts) == 0 {
		return nil
	}
	// The failing command starts at the first token after the last
	// statement that parsed (past blanks, separators and comments).
	end := stmts[len(stmts)-1].End()
	off, line := int(end.Offset()), int(end.Line())
	for off < len(src) {
		c := src[off]
		if c == '#' {
			for off < len(src) && src[off] != '\n' {
				off++
			}
			continue
		}
		if c != ' ' && c != '\t' && c != '\n' && c != ';' && c != '&' {
			break
		}
		if c == '\n' {
			line++
		}
		off++
	}
	n := 0
	for n < len(stmts) && int(stmts[n].End().Line()) < line {
		n++
	}
	if n == 0 {
		return nil
	}
	return &syntax.File{Stmts: stmts[:n]}
}

func mustParse(src string) *syntax.File {
	f, err := parse(src, "")
	if err != nil {
		panic(err)
	}
	return f
}

// syntaxMessage turns a parse error into bash's wording: "line N: msg".
func syntaxMessage(err error) string {
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("line %d: syntax error: %s", pe.Pos.Line(), pe.Text)
	}
	var le syntax.LangError
	if errors.As(err, &le) {
		return fmt.Sprintf("line %d: syntax error: %v", le.Pos.Line(), err)
	}
	return err.Error()
}

// StateKey summarizes the shell's persistent state cheaply: two equal
// keys of the same Shell mean that Snapshot would return the same state.
type StateKey struct {
	runner *interp.Runner
	interp interp.StateKey
	vars   uint64
	umask  uint32
}

// StateKey returns the shell's StateKey.
func (s *Shell) StateKey() StateKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return StateKey{runner: s.runner, interp: s.runner.StateKey(), vars: s.runner.VarsGeneration(), umask: s.umask.Load()}
}

// pipe makes a pipe with Config.Pipe, or os.Pipe.
func (s *Shell) pipe() (*os.File, *os.File, error) {
	if s.cfg.Pipe != nil {
		return s.cfg.Pipe()
	}
	return os.Pipe()
}

// resolve makes p absolute against dir, slash-separated and clean.
func resolve(dir, p string) string {
	if !path.IsAbs(p) {
		p = path.Join(dir, p)
	}
	return path.Clean(p)
}
