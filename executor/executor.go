// Package executor runs one WASI job: a command resolved in the job's
// virtual filesystem, executed by the wasmbox runtime in its own goroutine,
// under a deadline that kills it wherever it is, with a result whose exit
// code and class say how it ended.
//
//	ex := executor.New(rt)
//	if err := ex.RegisterTools(); err != nil { ... }       // the embedded coreutils
//	if err := ex.Install(fsys, "/bin", "/usr/bin"); err != nil { ... }
//	res := ex.Run(ctx, executor.Job{
//		Argv: []string{"ls", "-l"}, Env: []string{"PATH=/bin:/usr/bin"}, Dir: "/home/user",
//		FS: fsys, Stdout: &out, Stderr: &errOut, Timeout: 5 * time.Second,
//	})
//
// # Command resolution
//
// argv[0] containing a slash is a path (relative to Job.Dir); otherwise it
// is looked up in the directories of $PATH from Job.Env (default
// "/usr/local/bin:/usr/bin:/bin"), in the VFS, like execvp. The file found
// is either an entry written by Install or vfs.InstallCommand (a one-line
// marker "#!wasmbox COMMAND" naming a registered command) or any WebAssembly
// module (checked by its \0asm magic), compiled on first use and cached by
// content. Anything else is "exec format error" (126). A command removed
// from the VFS is not found, as on a real system.
//
// # Results
//
//	exit  class            cause
//	0..255 ""              the guest's exit status (proc_exit code & 0xff)
//	124   TIMEOUT          Job.Timeout or the ctx deadline passed; errors.Is(Err, context.DeadlineExceeded)
//	125   CANCELLED        ctx was cancelled; errors.Is(Err, context.Canceled)
//	126   DENIED           Job.Allow refused the command; errors.Is(Err, ErrDenied)
//	126   ""               not executable: not wasm, a module with imports wasmbox lacks, a bad job
//	127   NOT_FOUND        no such command; errors.Is(Err, ErrNotFound)
//	141   ""               the guest wrote to a pipe whose reader is closed (EPIPE; 128+SIGPIPE)
//	134   ""               the guest trapped (unreachable, out-of-bounds access, stack overflow, ...); Err has the trap
//	137   LIMIT_EXCEEDED   the guest failed after hitting its memory limit; errors.Is(Err, runtime.ErrMemoryLimit)
//	137   LIMIT_EXCEEDED   its forks met their memory limit or budget (ErrMemoryLimit), or MaxProcesses (runtime.ErrProcessLimit)
//
// 134 and 137 follow the shell convention 128+signal for SIGABRT and
// SIGKILL (the kernel's OOM killer).
//
// # Spawning
//
// Guests can run other commands through the host call wasmbox.spawn (see
// runtime.SpawnABI). The child is resolved and run like a Job with the
// parent's filesystem, streams, limits, allow hook and context; nesting is
// refused past MaxDepth (status 126, errno EAGAIN).
package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi"
	"github.com/wasmbox/wasmbox/wasi/preview1"
	"github.com/wasmbox/wasmbox/wasm"
)

// Class says how a job ended abnormally; "" for a normal exit.
type Class string

// Result classes, as reported by the sandbox and the server API.
const (
	ClassNone          Class = ""
	ClassTimeout       Class = "TIMEOUT"
	ClassCancelled     Class = "CANCELLED"
	ClassLimitExceeded Class = "LIMIT_EXCEEDED"
	ClassDenied        Class = "DENIED"
	ClassNotFound      Class = "NOT_FOUND"
)

// Exit codes of abnormal ends.
const (
	ExitTimeout       = 124
	ExitCancelled     = 125
	ExitCannotExecute = 126
	ExitDenied        = 126
	ExitNotFound      = 127
	ExitTrap          = 134
	ExitLimitExceeded = 137
)

// DefaultPath is the search path when the job's environment has no PATH.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// DefaultMaxDepth is how deeply spawned commands may nest.
const DefaultMaxDepth = 16

// EntryPrefix starts the marker files that Install (and
// vfs.InstallCommand) write: the line "#!wasmbox COMMAND".
const EntryPrefix = "#!wasmbox "

// Sentinel errors of Result.Err.
var (
	ErrNotFound      = errors.New("command not found")
	ErrDenied        = errors.New("denied by policy")
	ErrNotExecutable = errors.New("exec format error")
	ErrBadJob        = errors.New("invalid job")
)

// Job is one command to run.
type Job struct {
	// Argv is the command and its arguments; Argv[0] is resolved as
	// described in the package documentation.
	Argv []string
	// Arg0, when set and of the same base name as Argv[0], is the argv[0]
	// the program sees (runtime.SpawnRequest.Arg0: sed for /bin/sed).
	// Another name is ignored: a multi-call module keeps the name it
	// dispatches on.
	Arg0 string
	// Env is the exact environment ("K=V" entries), nothing is inherited
	// from the host. PWD is set to Dir.
	Env []string
	// Dir is the working directory, an absolute guest path ("/" if empty).
	Dir string
	// Stdin, Stdout, Stderr are the standard streams; nil means empty
	// input and discarded output. Streams that can block (pipes) must
	// return when the run's context is done: make them with wasi.NewPipe
	// from the same ctx. When a job is killed (deadline, Timeout or
	// cancel), a Stdin with a CloseWithError method (wasi.PipeReader,
	// io.PipeReader) is closed with the context's error, as a dying
	// process closes its end of a pipe: this also frees a guest blocked
	// reading a pipe made from a longer-lived context.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Inherited are descriptors above the standard streams that the job
	// starts with (a spawn child's inheritance from a build/posix parent,
	// runtime.SpawnABI's "inherit_fds"); the wasm lane only.
	Inherited []preview1.Inherited
	// Timeout > 0 bounds the run (exit 124 TIMEOUT).
	Timeout time.Duration
	// MemoryLimit is the guest's linear memory limit in bytes; 0 means
	// the runtime's default. The commands it spawns share it: together
	// they stay within it, as in a cgroup.
	MemoryLimit uint64
	// Budget, when set, is the budget the command's memory (MemoryLimit,
	// shared with what it spawns) is taken from as it grows: a run's, so
	// that the commands of a run together stay within it. Nil means the
	// runtime's process budget. A refusal ends the command as its limit
	// does (137, LIMIT_EXCEEDED), with an error that names the budget.
	Budget *runtime.Budget
	// Module, when set, is what runs: Argv[0] is not looked up (it is
	// passed to the guest as is and to Allow as the name). Used to run a
	// module that is not in the VFS, such as a host file (wasmbox exec).
	Module *runtime.Module
	// FS is the filesystem the guest sees at "/" and where the command
	// is looked up. Required, except with Module: then nil gives the
	// guest no preopened directory at all (as `wazero run` without
	// mounts), and the commands it spawns fail (exit 126).
	FS vfs.FS
	// Plain runs Module as a plain WASI program, the way `wazero run`
	// does: the environment is exactly Env (PWD is not added) and
	// symlinks with an absolute target are refused (EPERM), as WASI
	// requires. The commands it spawns are not plain.
	Plain bool
	// Deterministic, when set, gives the guest fixed clocks and seeded
	// randomness.
	Deterministic *wasi.Deterministic
	// Allow, when set, is asked before every command runs, spawned
	// children included. name is the command name for registered tools
	// (e.g. "ls") and the absolute guest path for other modules. A
	// non-nil error denies the command (exit 126, DENIED).
	Allow func(name string) error
	// Delegate, when set, is offered every child this job spawns
	// (xargs, find -exec, env CMD, awk's system()...) before the
	// executor looks it up: it returns handled=false to let the
	// executor run the child as usual. A sandbox uses it to run native
	// binaries in the native lane, so that a spawned command goes through
	// the same path as one the script runs (`sh -c` is the shell module's
	// command, run like any other).
	// The child's Timeout is already applied to ctx. Children of a
	// delegated child are the delegate's business.
	Delegate func(ctx context.Context, child Job) (res Result, handled bool)
}

// Result is how a job ended.
type Result struct {
	ExitCode int
	Class    Class
	// Err explains an abnormal end (nil for a normal exit, whatever its
	// status).
	Err      error
	Duration time.Duration
}

// Executor runs jobs against a runtime. It is safe for concurrent use.
type Executor struct {
	rt       *runtime.Runtime
	maxDepth int

	mu      sync.RWMutex
	modules map[string]*registered
}

type registered struct {
	name     string
	wasm     []byte
	commands []string
	// leading holds, per command name, the arguments the module is
	// given before the command's own (see SetLeadingArgs).
	leading map[string][]string
	snapFS  vfs.FS // see SetSnapshotFS
	once    sync.Once
	done    chan struct{} // closed when mod and err are set
	mod     *runtime.Module
	err     error
}

// New returns an executor that runs jobs on rt.
func New(rt *runtime.Runtime) *Executor {
	return &Executor{rt: rt, maxDepth: DefaultMaxDepth, modules: map[string]*registered{}}
}

// SetMaxDepth sets how deeply spawned commands may nest (default 16).
func (e *Executor) SetMaxDepth(n int) { e.maxDepth = max(n, 0) }

// Runtime returns the runtime jobs run on.
func (e *Executor) Runtime() *runtime.Runtime { return e.rt }

// Register makes the module wasm available under the given command names.
// It is compiled (and pinned in memory) on first use. Registering a module
// name again replaces it; a command name belongs to the module registered
// last.
func (e *Executor) Register(module string, wasm []byte, commands ...string) error {
	if module == "" || strings.ContainsAny(module, " \n/") {
		return fmt.Errorf("executor: bad module name %q", module)
	}
	if !runtime.IsWasm(wasm) {
		return fmt.Errorf("executor: module %s: %w", module, runtime.ErrNotWasm)
	}
	for _, c := range commands {
		if c == "" || strings.ContainsAny(c, " \n/") {
			return fmt.Errorf("executor: module %s: bad command name %q", module, c)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// A command name belongs to the module registered last.
	for _, r := range e.modules {
		r.commands = slices.DeleteFunc(r.commands, func(c string) bool { return slices.Contains(commands, c) })
		for _, c := range commands {
			delete(r.leading, c)
		}
	}
	e.modules[module] = &registered{name: module, wasm: wasm, commands: append([]string(nil), commands...)}
	return nil
}

// SetSnapshotFS sets the filesystem the registered module's snapshot is
// taken with (see runtime.Module.SetSnapshotFS), before its first use.
func (e *Executor) SetSnapshotFS(module string, fsys vfs.FS) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.modules[module]
	if r == nil {
		return fmt.Errorf("executor: no module %s", module)
	}
	r.snapFS = fsys
	return nil
}

// SetLeadingArgs makes the registered command run with args inserted
// after its argv[0], before the arguments it was called with (GNU bash as
// dash is given --posix). Registering the command again drops them.
func (e *Executor) SetLeadingArgs(command string, args ...string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.modules {
		if slices.Contains(r.commands, command) {
			if r.leading == nil {
				r.leading = map[string][]string{}
			}
			r.leading[command] = append([]string(nil), args...)
			return nil
		}
	}
	return fmt.Errorf("executor: no command %s", command)
}

// RegisterTools registers the embedded tool modules of package wasm under
// every command name of their index, and the Python interpreter and
// SQLite's shell and GNU bash under their names when they are built in
// (wasm.PythonCommands, wasm.SQLite3Commands, wasm.BashCommands).
func (e *Executor) RegisterTools() error {
	byModule := map[string][]string{}
	for _, c := range wasm.Commands() {
		byModule[c.Module] = append(byModule[c.Module], c.Name)
	}
	for name, cmds := range byModule {
		bin, ok := wasm.Module(name)
		if !ok {
			return fmt.Errorf("executor: tool module %s is not embedded", name)
		}
		if err := e.Register(name, bin, cmds...); err != nil {
			return err
		}
	}
	if names := wasm.PythonCommands(); names != nil {
		bin, _, _ := wasm.Python()
		if err := e.Register(wasm.PythonModule, bin, names...); err != nil {
			return err
		}
	}
	if names := wasm.SQLite3Commands(); names != nil {
		bin, _ := wasm.SQLite3()
		if err := e.Register(wasm.SQLite3Module, bin, names...); err != nil {
			return err
		}
	}
	// GNU bash, registered last: the commands bash, sh and dash are its,
	// not the shell module's.
	if names := wasm.BashCommands(); names != nil {
		bin, _ := wasm.Bash()
		if err := e.Register(wasm.BashModule, bin, names...); err != nil {
			return err
		}
		for _, n := range names {
			if args := wasm.BashLeadingArgs(n); args != nil {
				if err := e.SetLeadingArgs(n, args...); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Precompile compiles every registered module now instead of on first use.
func (e *Executor) Precompile(ctx context.Context) error {
	return e.PrecompileModules(ctx)
}

// PrecompileModules compiles the named registered modules now (every one
// when no name is given); the others are compiled on first use.
func (e *Executor) PrecompileModules(ctx context.Context, names ...string) error {
	e.mu.RLock()
	regs := make([]*registered, 0, len(e.modules))
	for name, r := range e.modules {
		if len(names) == 0 || slices.Contains(names, name) {
			regs = append(regs, r)
		}
	}
	e.mu.RUnlock()
	// Concurrently: decoding, validating and loading a module are CPU
	// work on one goroutine each, and a warm process start waits for them.
	errs := make([]error, len(regs))
	var wg sync.WaitGroup
	for i, r := range regs {
		wg.Go(func() { _, errs[i] = e.compiled(ctx, r) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (e *Executor) compiled(ctx context.Context, r *registered) (*runtime.Module, error) {
	r.once.Do(func() {
		// The result is kept for every later job: the first job's
		// context must not decide it, so the compile runs without its
		// deadline (a guest's own module, in resolve, is compiled under
		// the job's context and stops with it). It runs on its own
		// goroutine so that a job waits for it only until its own
		// deadline or cancel (a cold compile of a tool module takes
		// seconds); the runtime's Close waits for it. These background
		// compiles are bounded: one per registered module, each admitted
		// under runtime.CompileMemory like every other compile.
		r.done = make(chan struct{})
		// Nor does its budget: a refusal would be kept for good. A tool
		// module's compile is bounded by the compile gate, not by the
		// budget of the run that happened to ask first.
		cctx := runtime.WithCompileReserve(context.WithoutCancel(ctx), nil)
		go func() {
			defer close(r.done)
			r.mod, r.err = e.rt.Compile(cctx, r.name, r.wasm)
			if r.err == nil {
				e.rt.Pin(r.mod)
				if r.snapFS != nil {
					r.mod.SetSnapshotFS(r.snapFS)
				}
			}
		}()
	})
	select {
	case <-r.done:
		return r.mod, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("compiling %s: %w", r.name, context.Cause(ctx))
	}
}

// Module returns the compiled module registered as name, compiling it on
// first use.
func (e *Executor) Module(ctx context.Context, name string) (*runtime.Module, error) {
	e.mu.RLock()
	r := e.modules[name]
	e.mu.RUnlock()
	if r == nil {
		return nil, fmt.Errorf("executor: no module %s", name)
	}
	return e.compiled(ctx, r)
}

// Commands returns the registered command names, sorted.
func (e *Executor) Commands() []string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var names []string
	for _, r := range e.modules {
		names = append(names, r.commands...)
	}
	slices.Sort(names)
	return names
}

// Install writes an entry file for every registered command into each of
// dirs of fsys (created if missing): DIR/NAME, mode 0755, holding the
// marker line "#!wasmbox NAME\n" of vfs.InstallCommand, which resolution
// recognises. Existing files of the same name are replaced.
func (e *Executor) Install(fsys vfs.FS, dirs ...string) error {
	for _, dir := range dirs {
		for _, c := range e.Commands() {
			p := path.Join(dir, c)
			if err := vfs.WriteExecutable(fsys, p, []byte(EntryPrefix+c+"\n")); err != nil {
				return fmt.Errorf("executor: install: %w", err)
			}
			// Commands belong to root, as on a real system: the
			// sandbox user cannot chmod or chown them (the tools
			// check ownership).
			if err := fsys.Chown(p, 0, 0); err != nil {
				return fmt.Errorf("executor: install: %w", err)
			}
		}
	}
	return nil
}

// lookupCommand returns the module registered for the command name.
func (e *Executor) lookupCommand(name string) *registered {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, r := range e.modules {
		if slices.Contains(r.commands, name) {
			return r
		}
	}
	return nil
}

// Run runs job and reports how it ended. It never panics on bad input:
// a bad job is a Result with exit 126 and an error.
func (e *Executor) Run(ctx context.Context, job Job) Result {
	return e.run(ctx, job, 0, nil)
}

// run runs job at the given spawn depth; budget is the memory budget of
// the command tree (nil for a new tree).
func (e *Executor) run(ctx context.Context, job Job, depth int, budget *runtime.Budget) Result {
	start := time.Now()
	done := make(chan Result, 1)
	// One goroutine per execution: a panic in a host function of this run
	// becomes this run's error instead of taking the process down.
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- Result{ExitCode: ExitTrap, Err: fmt.Errorf("executor: internal error: %v", p)}
			}
		}()
		done <- e.execute(ctx, job, depth, budget)
	}()
	res := <-done
	res.Duration = time.Since(start)
	return res
}

func (e *Executor) execute(ctx context.Context, job Job, depth int, budget *runtime.Budget) Result {
	if job.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, job.Timeout)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return ctxResult(err)
	}
	if err := validate(&job); err != nil {
		return Result{ExitCode: ExitCannotExecute, Err: err}
	}
	cmd := &command{mod: job.Module, policyName: job.Argv[0]}
	var err error
	if job.Module == nil {
		// A guest's own module is compiled under the job's context, and
		// its estimated compile heap is reserved in the job's budget (the
		// run's, else the process's) for as long as the compile lasts.
		rctx := runtime.WithCompileReserve(ctx, func(n uint64) (func(), error) {
			return e.rt.ReserveCompile(job.Budget, n)
		})
		cmd, err = e.resolve(rctx, job)
	}
	if err != nil {
		switch {
		case errors.Is(err, ErrNotFound):
			return Result{ExitCode: ExitNotFound, Class: ClassNotFound, Err: err}
		case errors.Is(err, runtime.ErrMemoryLimit):
			return Result{ExitCode: ExitLimitExceeded, Class: ClassLimitExceeded, Err: err}
		case ctx.Err() != nil:
			return ctxResult(ctx.Err())
		}
		return Result{ExitCode: ExitCannotExecute, Err: err}
	}
	if job.Allow != nil {
		if aerr := job.Allow(cmd.policyName); aerr != nil {
			return Result{ExitCode: ExitDenied, Class: ClassDenied,
				Err: fmt.Errorf("%s: %w: %w", cmd.policyName, ErrDenied, aerr)}
		}
	}
	parent := job // children bind the original streams to their own context
	closeOnKill, _ := job.Stdin.(interface{ CloseWithError(error) error })
	job.Stdin = bindReader(ctx, job.Stdin)
	job.Stdout = bindWriter(ctx, job.Stdout)
	job.Stderr = bindWriter(ctx, job.Stderr)
	argv := append([]string(nil), job.Argv...)
	if cmd.argv0 != "" {
		argv[0] = cmd.argv0
	} else if job.Arg0 != "" && path.Base(job.Arg0) == path.Base(argv[0]) {
		argv[0] = job.Arg0
	}
	if len(cmd.leading) > 0 {
		argv = slices.Insert(argv, 1, cmd.leading...)
	}
	// Once the guest is refused memory, what it writes to stderr is its
	// crash report (a Go runtime trace): the Result says what happened.
	stderr, muted := muteable(job.Stderr)
	env := job.Env
	dir := ""
	if !job.Plain && cmd.mod.Imports(runtime.SpawnModuleName, runtime.CwdImport) {
		// The guest asks for its directory (runtime.CwdABI): its
		// environment is exactly the job's.
		dir = job.Dir
	} else if !job.Plain {
		env = make([]string, 0, len(job.Env)+1)
		for _, kv := range job.Env {
			if !strings.HasPrefix(kv, "PWD=") {
				env = append(env, kv)
			}
		}
		env = append(env, "PWD="+job.Dir)
	}
	mc := wazero.NewModuleConfig()
	var wasiState *preview1.State
	if e.rt.OwnWASI() {
		src := wasi.NewSources(wasi.Options{Deterministic: job.Deterministic})
		st, err := preview1.NewState(preview1.Config{
			FS: job.FS, Args: argv, Env: env,
			Stdin: job.Stdin, Stdout: job.Stdout, Stderr: stderr,
			Inherited: job.Inherited,
			Walltime:  src.Walltime, Nanotime: src.Nanotime, Rand: src.Rand, Sleep: src.Sleep,
			// `ln -s /abs/target link` is everyday shell use; the target
			// resolves inside the VFS, never on the host. (WASI itself
			// forbids absolute targets; the conformance suite checks that
			// with the option off, as a Plain job does.)
			AbsoluteSymlinks: !job.Plain,
		})
		if err != nil {
			return Result{ExitCode: ExitCannotExecute, Err: fmt.Errorf("%w: %v", ErrBadJob, err)}
		}
		defer st.Close()
		wasiState = st
	} else {
		mc = mc.WithArgs(argv...)
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			mc = mc.WithEnv(k, v)
		}
		mc = wasi.Configure(ctx, mc, job.FS, wasi.Options{
			Deterministic: job.Deterministic,
			Stdin:         job.Stdin,
			Stdout:        job.Stdout,
			Stderr:        stderr,
		})
	}

	if depth == 0 {
		// A killed process's end of its stdin pipe dies with it: close
		// the reader so that a guest blocked reading a pipe made with
		// another (longer) context returns, and the writer gets EPIPE.
		// Spawned children share their parent's stdin and leave it open.
		if c := closeOnKill; c != nil {
			stop := context.AfterFunc(ctx, func() { _ = c.CloseWithError(context.Cause(ctx)) })
			defer stop()
		}
	}
	if budget == nil {
		limit := job.MemoryLimit
		if limit == 0 {
			limit = e.rt.MemoryLimit()
		}
		parent := job.Budget
		if parent == nil {
			parent = e.rt.Budget()
		}
		budget = parent.Child("command", limit)
	}
	sp := &spawner{e: e, parent: parent, depth: depth, budget: budget}
	err = e.rt.Run(ctx, cmd.mod, mc, runtime.RunOptions{MemoryLimit: job.MemoryLimit, Spawner: sp, FS: job.FS, Budget: budget, WASI: wasiState, Dir: dir,
		Name: job.Argv[0], OnMemoryLimit: func() { muted.Store(true) }})
	return resultOf(err)
}

// muteable returns w wrapped so that it drops what is written once the
// flag is set. A pipe keeps what its descriptor needs (poll_oneoff,
// non-blocking writes).
func muteable(w io.Writer) (io.Writer, *atomic.Bool) {
	if w == nil {
		w = io.Discard
	}
	m := &muteWriter{w: w}
	wt, isWaitable := w.(wasi.Waitable)
	tw, isTry := w.(tryWriter)
	switch {
	case isWaitable && isTry:
		return &muteStream{muteWriter: m, wt: wt, tw: tw}, &m.muted
	case isWaitable || isTry:
		return w, new(atomic.Bool) // not muted: rare, and a report is harmless
	}
	return m, &m.muted
}

type tryWriter interface {
	TryWrite(p []byte) (int, error)
}

// muteWriter drops what is written once muted.
type muteWriter struct {
	w     io.Writer
	muted atomic.Bool
}

func (m *muteWriter) Write(p []byte) (int, error) {
	if m.muted.Load() {
		return len(p), nil
	}
	return m.w.Write(p)
}

// muteStream is a muteWriter over a pipe.
type muteStream struct {
	*muteWriter
	wt wasi.Waitable
	tw tryWriter
}

func (m *muteStream) TryWrite(p []byte) (int, error) {
	if m.muted.Load() {
		return len(p), nil
	}
	return m.tw.TryWrite(p)
}

func (m *muteStream) Ready(write bool) bool {
	if write && m.muted.Load() {
		return true
	}
	return m.wt.Ready(write)
}

func (m *muteStream) Wakers() *wasi.Wakers { return m.wt.Wakers() }

// resultOf maps the error of runtime.Run to a Result.
func resultOf(err error) Result {
	if err == nil {
		return Result{}
	}
	var ee *sys.ExitError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Result{ExitCode: ExitTimeout, Class: ClassTimeout, Err: err}
	case errors.Is(err, context.Canceled):
		return Result{ExitCode: ExitCancelled, Class: ClassCancelled, Err: err}
	case errors.Is(err, runtime.ErrMemoryLimit), errors.Is(err, runtime.ErrProcessLimit):
		return Result{ExitCode: ExitLimitExceeded, Class: ClassLimitExceeded, Err: err}
	case errors.As(err, &ee):
		return Result{ExitCode: int(ee.ExitCode() & 0xff)}
	}
	return Result{ExitCode: ExitTrap, Err: err}
}

func ctxResult(err error) Result {
	if errors.Is(err, context.DeadlineExceeded) {
		return Result{ExitCode: ExitTimeout, Class: ClassTimeout, Err: err}
	}
	return Result{ExitCode: ExitCancelled, Class: ClassCancelled, Err: err}
}

func validate(job *Job) error {
	if len(job.Argv) == 0 || job.Argv[0] == "" {
		return fmt.Errorf("%w: empty argv", ErrBadJob)
	}
	if job.FS == nil && job.Module == nil {
		return fmt.Errorf("%w: no filesystem", ErrBadJob)
	}
	if job.Dir == "" {
		job.Dir = "/"
	}
	if job.Dir[0] != '/' {
		return fmt.Errorf("%w: working directory %q is not absolute", ErrBadJob, job.Dir)
	}
	job.Dir = path.Clean(job.Dir)
	for _, a := range job.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("%w: NUL byte in argument", ErrBadJob)
		}
	}
	for _, kv := range job.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.IndexByte(kv, 0) >= 0 {
			return fmt.Errorf("%w: bad environment entry %q", ErrBadJob, kv)
		}
	}
	if job.Stdin == nil {
		job.Stdin = bytes.NewReader(nil)
	}
	if job.Stdout == nil {
		job.Stdout = io.Discard
	}
	if job.Stderr == nil {
		job.Stderr = io.Discard
	}
	return nil
}
