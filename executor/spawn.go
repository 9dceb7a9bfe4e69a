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
	child.Argv = req.Argv
	child.Module = nil // the child is looked up by its own argv[0]
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
	switch res.Class {
	case ClassNotFound:
		return 0, fmt.Errorf("%s: %w", req.Argv[0], runtime.ErrSpawnNotFound)
	case ClassDenied:
		// The guest only sees EACCES; the reason goes to stderr.
		fmt.Fprintf(stderr, "%v\n", res.Err)
		return 0, runtime.ErrSpawnDenied
	case ClassNone:
		if res.Err != nil {
			fmt.Fprintf(stderr, "%v\n", res.Err)
		}
	case ClassLimitExceeded:
		fmt.Fprintf(stderr, "%v\n", res.Err)
	}
	return uint32(res.ExitCode), nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
