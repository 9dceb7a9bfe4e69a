package sandbox

import (
	"strings"
	"time"

	"context"
	"errors"
	"fmt"
	"mvdan.cc/sh/v3/syntax"
	"path"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/shell"
)

// commandRunner is the shell's Executor: every external command of a script
// comes here, and goes to the wasm executor or, for allowlisted native
// binaries, to the native lane. It never runs anything on the host
// otherwise.
type commandRunner struct{ s *Sandbox }

// Resolve answers `command -v` / `type` for commands of the registry.
func (r *commandRunner) Resolve(name string) (string, bool) {
	for _, c := range r.s.engine.exec.Commands() {
		if c == name {
			return "/bin/" + name, true
		}
	}
	if r.s.isNative(name) {
		return "/usr/bin/" + name, true
	}
	return "", false
}

func (r *commandRunner) Exec(ctx context.Context, c shell.Command) (int, error) {
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
		fmt.Fprintf(orDiscard(c.Stderr), "%s: too many commands running at once (limit %d)\n", name, s.cfg.limits.ConcurrentCommands)
		rs.note(executor.ExitCannotExecute, ClassLimitExceeded)
		return executor.ExitCannotExecute, nil
	}
	defer s.inflight.Add(-1)

	if s.isNative(name) && (c.Argv[0] == name || path.Dir(c.Argv[0]) == "/usr/bin") {
		code, class := s.runNative(ctx, c)
		rs.note(code, class)
		return code, ctxErr(ctx, class)
	}

	res := s.engine.exec.Run(ctx, executor.Job{
		Argv:          c.Argv,
		Env:           c.Env,
		Dir:           c.Dir,
		Stdin:         c.Stdin,
		Stdout:        c.Stdout,
		Stderr:        c.Stderr,
		MemoryLimit:   s.cfg.limits.MemoryPerCommand,
		FS:            s.fs,
		Deterministic: s.cfg.deterministic,
		Allow:         s.allowFunc(),
		Delegate:      r.delegate,
	})
	rs.note(res.ExitCode, res.Class)
	switch res.Class {
	case ClassNotFound:
		return res.ExitCode, fmt.Errorf("%w", shell.ErrNotFound)
	case ClassTimeout, ClassCancelled:
		return res.ExitCode, ctxErr(ctx, res.Class)
	case ClassDenied:
		fmt.Fprintf(orDiscard(c.Stderr), "%s: not allowed in this sandbox\n", c.Argv[0])
		return res.ExitCode, nil
	case ClassLimitExceeded:
		fmt.Fprintf(orDiscard(c.Stderr), "%s: %v\n", c.Argv[0], res.Err)
		return res.ExitCode, nil
	}
	if res.Err != nil {
		fmt.Fprintf(orDiscard(c.Stderr), "%s: %v\n", c.Argv[0], res.Err)
	}
	return res.ExitCode, nil
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

// delegate runs children spawned by wasm commands that the executor cannot
// run itself: `sh -c ...` / `bash ...` (xargs sh -c, find -exec sh -c,
// awk's system()) in a child shell, and native binaries in the native lane.
// Everything else goes back to the executor (handled=false).
func (r *commandRunner) delegate(ctx context.Context, child executor.Job) (executor.Result, bool) {
	s := r.s
	name := path.Base(child.Argv[0])
	shellName := name == "sh" || name == "bash" || name == "dash"
	if !shellName && !s.isNative(name) {
		return executor.Result{}, false
	}
	depth, _ := ctx.Value(delegateDepthKey{}).(int)
	if depth >= s.cfg.limits.SpawnDepth {
		fmt.Fprintf(orDiscard(child.Stderr), "%s: commands nested deeper than %d\n", name, s.cfg.limits.SpawnDepth)
		return executor.Result{ExitCode: executor.ExitCannotExecute, Class: ClassLimitExceeded}, true
	}
	ctx = context.WithValue(ctx, delegateDepthKey{}, depth+1)
	start := time.Now()
	if !shellName {
		code, class := s.runNative(ctx, shell.Command{Argv: child.Argv, Env: child.Env, Dir: child.Dir, Stdin: child.Stdin, Stdout: child.Stdout, Stderr: child.Stderr})
		return executor.Result{ExitCode: code, Class: class, Duration: time.Since(start)}, true
	}
	if allow := s.allowFunc(); allow != nil {
		if err := allow(name); err != nil {
			fmt.Fprintf(orDiscard(child.Stderr), "%s: not allowed in this sandbox\n", name)
			return executor.Result{ExitCode: executor.ExitDenied, Class: ClassDenied}, true
		}
	}
	cfg := s.shellConfig(child.Dir)
	cfg.Env = child.Env
	cfg.Stdin, cfg.Stdout, cfg.Stderr = child.Stdin, orDiscard(child.Stdout), orDiscard(child.Stderr)
	sh, err := shell.New(cfg)
	if err != nil {
		fmt.Fprintf(orDiscard(child.Stderr), "%s: %v\n", name, err)
		return executor.Result{ExitCode: executor.ExitCannotExecute, Duration: time.Since(start)}, true
	}
	quoted := make([]string, len(child.Argv))
	for i, a := range child.Argv {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			fmt.Fprintf(orDiscard(child.Stderr), "%s: %v\n", name, err)
			return executor.Result{ExitCode: executor.ExitCannotExecute}, true
		}
		quoted[i] = q
	}
	code, err := sh.Run(ctx, strings.Join(quoted, " "))
	res := executor.Result{ExitCode: code, Duration: time.Since(start)}
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded):
		res.Class, res.ExitCode = ClassTimeout, executor.ExitTimeout
	case errors.Is(err, context.Canceled):
		res.Class, res.ExitCode = ClassCancelled, executor.ExitCancelled
	case errors.Is(err, shell.ErrLimitExceeded):
		res.Class = ClassLimitExceeded
	}
	return res, true
}
