//go:build !wasip1

package cmd

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
)

// spawn is the native fallback used by unit tests: the child is a host
// process found on the host PATH, connected to e's streams.
func spawn(req SpawnRequest, e *Env) (int, error) {
	if _, err := req.marshal(); err != nil {
		return 0, err
	}
	ctx := context.Background()
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	c := exec.CommandContext(ctx, req.Argv[0], req.Argv[1:]...)
	c.Env = req.Env
	if req.Env != nil && len(req.Env) == 0 {
		c.Env = []string{} // empty, not inherited
	}
	c.Dir = req.Dir
	if !req.StdinNull {
		c.Stdin = e.Stdin
	}
	c.Stdout, c.Stderr = e.Stdout, e.Stderr
	err := c.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case ctx.Err() != nil && req.Timeout > 0:
		return StatusTimedOut, nil
	case errors.As(err, &exit):
		return exit.ExitCode(), nil
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return 0, ErrNotFound
	case errors.Is(err, syscall.EACCES), errors.Is(err, os.ErrPermission):
		return 0, ErrDenied
	}
	return 0, err
}
