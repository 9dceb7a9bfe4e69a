package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/internal/budget"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/shell/session"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// command is one external command of a script, with its streams.
type command struct {
	Argv           []string
	Arg0           string // what the program sees as argv[0] (executor.Job.Arg0)
	Env            []string
	Dir            string
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Inherited: descriptors a build/posix caller's exec hands on
	// (runtime.SpawnABI's "inherit_fds"); wasm commands only.
	Inherited []preview1.Inherited
}

// name is the command as the script named it, for messages: GNU bash
// execs the path it found (Argv[0] /bin/rm, Arg0 rm).
func (c command) name() string {
	if c.Arg0 != "" && path.Base(c.Arg0) == path.Base(c.Argv[0]) {
		return c.Arg0
	}
	return c.Argv[0]
}

// commandRunner starts the commands of the sandbox's shell: the shell
// (GNU bash, bash.wasm) asks for each through the process ABI, and they go to the
// wasm executor or, for allowlisted native binaries, to the native lane.
// Nothing runs on the host otherwise.
type commandRunner struct{ s *Sandbox }

// Spawn implements runtime.Spawner for the children of the sandbox's
// shell.
func (r *commandRunner) Spawn(ctx context.Context, req runtime.SpawnRequest) (uint32, error) {
	c := command{Argv: req.Argv, Arg0: req.Arg0, Env: req.Env, Dir: req.Dir}
	if req.Stdio != nil {
		c.Stdin, c.Stdout, c.Stderr = req.Stdio.Stdin, req.Stdio.Stdout, req.Stdio.Stderr
		c.Inherited = req.Stdio.Inherited
	}
	if c.Dir == "" {
		c.Dir = "/"
	}
	code, err := r.exec(ctx, c)
	return uint32(code), err
}

// exec runs one command; the error is one of runtime's spawn errors, or
// the context's when it stopped the command.
func (r *commandRunner) exec(ctx context.Context, c command) (int, error) {
	s := r.s
	rs, _ := ctx.Value(runStatusKey{}).(*runStatus)
	if rs == nil {
		rs = &runStatus{}
	}
	if len(c.Argv) == 0 {
		return 0, nil
	}
	name := path.Base(c.Argv[0])
	if n := s.inflight.Add(1); n > s.cfg.limits.ConcurrentCommands {
		s.inflight.Add(-1)
		fmt.Fprintf(hostLines(c.Stderr), "%s: too many commands running at once (limit %d)\n", name, s.cfg.limits.ConcurrentCommands)
		rs.note(executor.ExitCannotExecute, ClassLimitExceeded)
		return executor.ExitCannotExecute, nil
	}
	defer s.inflight.Add(-1)

	if s.isMCPCommand(c.Argv[0]) {
		code, err := s.runMCP(ctx, c)
		class := ClassNone
		if err != nil {
			class = classOfCtx(ctx)
		} else if code == mcpExitDenied {
			class = ClassDenied
		}
		rs.note(code, class)
		return code, err
	}
	if s.isNative(name) && (c.Argv[0] == name || path.Dir(c.Argv[0]) == "/usr/bin") {
		code, class := s.runNative(ctx, c)
		rs.note(code, class)
		return code, ctxErr(ctx, class)
	}

	res := s.engine.exec.Run(ctx, executor.Job{
		Argv:          c.Argv,
		Arg0:          c.Arg0,
		Env:           c.Env,
		Dir:           c.Dir,
		Stdin:         c.Stdin,
		Stdout:        c.Stdout,
		Stderr:        c.Stderr,
		Inherited:     c.Inherited,
		MemoryLimit:   s.cfg.limits.MemoryPerCommand,
		Budget:        rs.mem,
		FS:            s.gfs,
		Deterministic: s.cfg.deterministic,
		Allow:         s.allowFunc(),
		Delegate:      r.delegate,
	})
	rs.note(res.ExitCode, res.Class)
	switch res.Class {
	case ClassNotFound:
		return res.ExitCode, fmt.Errorf("%w", runtime.ErrSpawnNotFound)
	case ClassTimeout, ClassCancelled:
		return res.ExitCode, ctxErr(ctx, res.Class)
	case ClassDenied:
		fmt.Fprintf(hostLines(c.Stderr), "%s: not allowed in this sandbox\n", c.name())
		return res.ExitCode, nil
	case ClassLimitExceeded:
		var ee *budget.ExceededError
		if errors.As(res.Err, &ee) && ee.Name != "command" {
			// A budget above the command's own limit (the run's, the
			// process's) refused it: one line that names it.
			fmt.Fprintf(hostLines(c.Stderr), "wasmbox: %s: %s memory budget (%s) exceeded\n", c.name(), ee.Name, spacedBytes(ee.Limit))
			return res.ExitCode, nil
		}
		if errors.Is(res.Err, runtime.ErrMemoryLimit) {
			// One line, in place of the guest's own crash report (the
			// executor drops what it writes once refused memory).
			fmt.Fprintf(hostLines(c.Stderr), "wasmbox: %s: memory limit (%s) exceeded\n", c.name(), spacedBytes(s.cfg.limits.MemoryPerCommand))
			return res.ExitCode, nil
		}
		fmt.Fprintf(hostLines(c.Stderr), "%s: %v\n", c.name(), res.Err)
		return res.ExitCode, nil
	}
	if res.Err != nil {
		fmt.Fprintf(hostLines(c.Stderr), "%s: %v\n", c.name(), res.Err)
	}
	return res.ExitCode, nil
}

// hostLines is where the sandbox's own line about how a command ended goes:
// past a stderr that drops the guest's output once the run is killed
// (ctxWriter), so that a limit met as the deadline comes is still named.
func hostLines(w io.Writer) io.Writer { return session.HostLines(orDiscard(w)) }

// spacedBytes renders n like runtime.FormatBytes with a space before the
// unit: "16 MiB".
func spacedBytes(n uint64) string {
	f := budget.Format(n)
	i := strings.IndexFunc(f, func(r rune) bool { return r < '0' || r > '9' })
	if i <= 0 {
		return f
	}
	return f[:i] + " " + f[i:]
}

// ctxErr returns the context's error when the class says the command was
// stopped by it, so that the shell stops the script too.
func ctxErr(ctx context.Context, c ErrorClass) error {
	if (c == ClassTimeout || c == ClassCancelled) && ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

// errNotAllowed is the reason given to the executor for a denied command.
var errNotAllowed = errors.New("not in the sandbox's allowlist")

// allowFunc returns the executor's allow hook: nil when every command is
// allowed.
func (s *Sandbox) allowFunc() func(string) error {
	if s.cfg.allow == nil {
		return nil
	}
	allow := s.cfg.allow
	return func(name string) error {
		if allow[name] || allow[path.Base(name)] {
			return nil
		}
		return errNotAllowed
	}
}

// delegateDepthKey counts nested delegated children in a context.
type delegateDepthKey struct{}

// delegate runs the native binaries that wasm commands spawn (xargs git,
// find -exec git) in the native lane, so that a spawned command goes
// through the same path as one the script runs. Everything else — shell
// children (`sh -c`, which the executor runs in the shell module) included
// — goes back to the executor (handled=false).
func (r *commandRunner) delegate(ctx context.Context, child executor.Job) (executor.Result, bool) {
	s := r.s
	name := path.Base(child.Argv[0])
	if s.isMCPCommand(child.Argv[0]) {
		code, err := s.runMCP(ctx, command{Argv: child.Argv, Env: child.Env, Dir: child.Dir, Stdin: child.Stdin, Stdout: child.Stdout, Stderr: child.Stderr})
		res := executor.Result{ExitCode: code}
		if err != nil {
			res.Class = classOfCtx(ctx)
		} else if code == mcpExitDenied {
			res.Class = ClassDenied
		}
		return res, true
	}
	if !s.isNative(name) {
		return executor.Result{}, false
	}
	depth, _ := ctx.Value(delegateDepthKey{}).(int)
	if depth >= s.cfg.limits.SpawnDepth {
		fmt.Fprintf(orDiscard(child.Stderr), "%s: commands nested deeper than %d\n", name, s.cfg.limits.SpawnDepth)
		return executor.Result{ExitCode: executor.ExitCannotExecute, Class: ClassLimitExceeded}, true
	}
	ctx = context.WithValue(ctx, delegateDepthKey{}, depth+1)
	code, class := s.runNative(ctx, command{Argv: child.Argv, Env: child.Env, Dir: child.Dir, Stdin: child.Stdin, Stdout: child.Stdout, Stderr: child.Stderr})
	return executor.Result{ExitCode: code, Class: class}, true
}
