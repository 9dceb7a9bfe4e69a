package executor

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/wasmbox/wasmbox/runtime"
)

// spawner runs the children of one job's wasmbox.spawn calls.
type spawner struct {
	e      *Executor
	parent Job // validated: Dir clean and absolute, streams non-nil
	depth  int
	budget *runtime.Budget // shared by the whole command tree
}

// Spawn implements runtime.Spawner: the child is a Job like its parent,
// with the request's argv, env, dir, stdin and timeout, and the parent's
// memory budget.
func (s *spawner) Spawn(ctx context.Context, req runtime.SpawnRequest) (uint32, error) {
	stderr := s.parent.Stderr
	if req.Stdio != nil {
		stderr = orDiscard(req.Stdio.Stderr)
	}
	if s.depth+1 > s.e.maxDepth {
		fmt.Fprintf(stderr, "%s: spawn nesting deeper than %d\n", req.Argv[0], s.e.maxDepth)
		return ExitCannotExecute, runtime.ErrSpawnDepth
	}
	child := s.parent
	child.Argv, child.Arg0 = req.Argv, req.Arg0
	child.Module = nil // the child is looked up by its own argv[0]
	child.Plain = false
	if !req.InheritEnv {
		child.Env = req.Env
	}
	if req.Dir != "" {
		child.Dir = req.Dir
	}
	if req.StdinNull {
		child.Stdin = bytes.NewReader(nil)
	}
	if sio := req.Stdio; sio != nil {
		// A child of the process ABI: its own streams.
		child.Stdin, child.Stdout, child.Stderr = sio.Stdin, orDiscard(sio.Stdout), stderr
		if child.Stdin == nil {
			child.Stdin = bytes.NewReader(nil)
		}
	}
	child.Inherited = nil // a child inherits its own caller's, not the job's
	if req.Stdio != nil {
		child.Inherited = req.Stdio.Inherited
	}
	child.Timeout = req.Timeout
	var res Result
	handled := false
	if s.parent.Delegate != nil {
		dctx := ctx
		if child.Timeout > 0 {
			var cancel context.CancelFunc
			dctx, cancel = context.WithTimeout(ctx, child.Timeout)
			defer cancel()
		}
		res, handled = s.parent.Delegate(dctx, child)
		if handled && res.Class == ClassTimeout && ctx.Err() == nil {
			// The child's own deadline, not the parent's: like a
			// killed executor child, status 124.
			res.ExitCode = ExitTimeout
		}
	}
	if !handled {
		res = s.e.run(ctx, child, s.depth+1, s.budget)
	}
	// The guest only sees EACCES for a denial; the reason goes to stderr.
	writeReason(stderr, res)
	switch res.Class {
	case ClassNotFound:
		return 0, fmt.Errorf("%s: %w", req.Argv[0], runtime.ErrSpawnNotFound)
	case ClassDenied:
		return 0, runtime.ErrSpawnDenied
	}
	return uint32(res.ExitCode), nil
}

// writeReason writes to stderr why a child job ended, when wasmbox and
// not the guest ended it or the guest could not say: its denial, its
// limit (a line of wasmbox's that names the command), or the error of a
// run that ended without a class.
func writeReason(stderr io.Writer, res Result) {
	switch res.Class {
	case ClassDenied:
		fmt.Fprintf(stderr, "%v\n", res.Err)
	case ClassLimitExceeded:
		fmt.Fprintf(stderr, "wasmbox: %v\n", res.Err)
	case ClassNone:
		if res.Err != nil {
			fmt.Fprintf(stderr, "%v\n", res.Err)
		}
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Spawner returns a runtime.Spawner that runs every child as a job made
// from template — its filesystem, environment, directory, memory limit,
// allow hook, delegate and determinism — with the child's argv,
// environment, directory and streams (runtime.SpawnRequest.Stdio). It is
// what a live shell instance (shell/session) starts its commands with:
// each child is a command tree of its own, with its own memory budget, as
// each command of a script is. A child that is not found, is denied or
// crosses a limit is reported with runtime's errors (ErrSpawnNotFound,
// ErrSpawnDenied, ErrSpawnLimit) after its message is written to its
// stderr; one stopped by ctx with ctx's error.
func (e *Executor) Spawner(template Job) runtime.Spawner {
	return runtime.SpawnFunc(func(ctx context.Context, req runtime.SpawnRequest) (uint32, error) {
		job := template
		job.Argv, job.Arg0 = req.Argv, req.Arg0
		job.Module = nil
		if !req.InheritEnv {
			job.Env = req.Env
		}
		if req.Dir != "" {
			job.Dir = req.Dir
		}
		if req.StdinNull {
			job.Stdin = bytes.NewReader(nil)
		}
		job.Inherited = nil
		if sio := req.Stdio; sio != nil {
			job.Stdin, job.Stdout, job.Stderr = sio.Stdin, sio.Stdout, sio.Stderr
			job.Inherited = sio.Inherited
		}
		job.Timeout = req.Timeout
		res := e.Run(ctx, job)
		return SpawnResult(ctx, res, orDiscard(job.Stderr))
	})
}

// SpawnResult maps the Result of a child job to what a runtime.Spawner
// returns, writing the reason of a denial or a limit to stderr.
func SpawnResult(ctx context.Context, res Result, stderr io.Writer) (uint32, error) {
	writeReason(stderr, res)
	switch res.Class {
	case ClassNotFound:
		return ExitNotFound, fmt.Errorf("%w: %w", runtime.ErrSpawnNotFound, res.Err)
	case ClassDenied:
		return ExitDenied, fmt.Errorf("%w: %w", runtime.ErrSpawnDenied, res.Err)
	case ClassLimitExceeded:
		return uint32(res.ExitCode), fmt.Errorf("%w: %w", runtime.ErrSpawnLimit, res.Err)
	case ClassTimeout, ClassCancelled:
		if err := ctx.Err(); err != nil {
			return uint32(res.ExitCode), err
		}
	}
	return uint32(res.ExitCode), nil
}
