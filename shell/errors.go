package shell

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/wasmbox/wasmbox/internal/sh/interp"
)

// ErrLimitExceeded is matched (with errors.Is) by every *LimitError: a
// script hit one of the bounds in Limits and was stopped.
var ErrLimitExceeded = errors.New("LIMIT_EXCEEDED")

// ErrUnsupported is matched by errors for shell features that the sandbox
// refuses on purpose, such as output process substitution >(...).
var ErrUnsupported = errors.New("unsupported in the sandbox")

// ErrNotFound is what an Executor returns (wrapped or not) when it has no
// command of the requested name. The shell then prints
// "NAME: command not found" and sets the exit status to 127, like bash.
var ErrNotFound = errors.New("command not found")

// ErrInternal is matched by the error Run returns when the interpreter
// panicked. The panic is recovered; the Shell stays usable.
var ErrInternal = errors.New("internal interpreter error")

// LimitError reports which limit a script exceeded.
type LimitError struct {
	// Limit names the bound: "script size", "commands", "variable size",
	// "output", "nesting depth" or "background jobs".
	Limit string
	// Max is the configured bound, in the limit's unit (bytes, commands,
	// frames or jobs).
	Max int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("LIMIT_EXCEEDED: %s limit of %d exceeded", e.Limit, e.Max)
}

// Is makes errors.Is(err, ErrLimitExceeded) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimitExceeded }

// PanicError is returned by Run when the interpreter panicked in a
// goroutine the shell owns. The panic value and stack are kept for the
// host's logs; the guest only sees a short message on stderr.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("internal interpreter error: %v", e.Value)
}

// Is makes errors.Is(err, ErrInternal) true.
func (e *PanicError) Is(target error) bool { return target == ErrInternal }

// bashPrefix is how bash -c begins a message about the command of hc:
// "bash: line N: ".
func bashPrefix(hc interp.HandlerContext) string {
	if hc.Pos.IsValid() {
		return "bash: line " + strconv.FormatUint(uint64(hc.Pos.Line()), 10) + ": "
	}
	return "bash: "
}
