// Package session holds what a live shell session of the sandbox shares
// with its runs (GNU bash's live session, shell/bashsession): the Result
// of a run, its errors and limits, and binding a run's streams to the
// instance (run.go).
//
// It was also the wasmbox interpreter's session (one live instance of
// shell.wasm per session); the interpreter was removed when GNU bash
// became the only shell. Its state format (shell/wire) stays: a sandbox
// snapshot of the interpreter restores into bash.
package session

import "errors"

// DefaultMemoryLimit is the default limit of a session shell's memory.
const DefaultMemoryLimit uint64 = 256 << 20

// Result is how a run ended.
type Result struct {
	// Code is the exit status: the script's, or 124 (deadline), 125
	// (cancelled), 137 (the shell's memory limit), 1 (an internal error).
	Code int
	// Exited: the script ran the exit builtin.
	Exited bool
	// Commands is how many simple commands the shell ran.
	Commands int64
	// Err says why the run was stopped from outside the script: an error
	// that errors.Is context.DeadlineExceeded or context.Canceled,
	// ErrMemoryLimit, a *LimitError of the shell's limits, or
	// ErrInternal. Nil for a script that ran to its end.
	Err error
}

// Errors of a Result.
var (
	// ErrMemoryLimit: the shell's memory limit stopped the run.
	ErrMemoryLimit = errors.New("shell memory limit exceeded")
	// ErrInternal: the shell failed (a trap, a malformed answer); the
	// session continues from its last state.
	ErrInternal = errors.New("internal error of the shell")
	// ErrClosed is returned by a closed Session.
	ErrClosed = errors.New("session: closed")
)

// LimitError is a limit of the shell (script size, commands, nesting
// depth, background jobs, variable size) that stopped a run.
type LimitError struct{ Limit string }

func (e *LimitError) Error() string { return e.Limit + " limit exceeded" }
