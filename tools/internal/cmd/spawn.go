package cmd

import (
	"encoding/json"
	"errors"
	"time"
)

// SpawnRequest describes a child command for Spawn.
//
// WASI cannot start processes; in the sandbox the executor runs the child
// for us through the host function wasmbox.spawn. The child shares the
// caller's stdout and stderr (and stdin unless StdinNull), the same virtual
// filesystem, deadline, allowlist and limits.
type SpawnRequest struct {
	// Argv is the command and its arguments; Argv[0] is looked up on the
	// sandbox PATH (or used as is when it contains a slash).
	Argv []string
	// Env is the child's environment as "KEY=VALUE" entries; nil inherits
	// the caller's environment, an empty non-nil slice gives an empty one.
	Env []string
	// Dir is the child's working directory (absolute); "" keeps the caller's.
	Dir string
	// StdinNull gives the child an empty stdin instead of the caller's.
	StdinNull bool
	// Timeout kills the child after this long (status 124); 0 means only the
	// caller's own deadline applies.
	Timeout time.Duration
}

// Errors of Spawn. Callers map them to the usual shell statuses: 127 for
// ErrNotFound, 126 for ErrDenied.
var (
	// ErrNotFound means the command does not exist (errno ENOENT).
	ErrNotFound = errors.New("command not found")
	// ErrDenied means the sandbox policy refused to run the command (EACCES).
	ErrDenied = errors.New("permission denied")
	// ErrInvalid means the host rejected the request as malformed (EINVAL).
	ErrInvalid = errors.New("invalid spawn request")
	// ErrUnsupported means the program runs where no spawn host function is
	// available.
	ErrUnsupported = errors.New("spawn not supported")
)

// StatusTimedOut is the status of a child killed by its Timeout.
const StatusTimedOut = 124

// spawnWire is the JSON form of a request on the wasmbox.spawn ABI.
type spawnWire struct {
	Argv      []string `json:"argv"`
	Env       []string `json:"env,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	Stdin     string   `json:"stdin,omitempty"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
}

// marshal encodes req for the host. An inherited environment (nil) is
// omitted; an explicitly empty one is sent as [].
func (req SpawnRequest) marshal() ([]byte, error) {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, ErrInvalid
	}
	w := spawnWire{Argv: req.Argv, Dir: req.Dir, Stdin: "inherit"}
	if req.StdinNull {
		w.Stdin = "null"
	}
	if req.Timeout > 0 {
		w.TimeoutMS = max(1, req.Timeout.Milliseconds())
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	if req.Env != nil {
		// omitempty drops an empty slice; splice it back in explicitly.
		env, err := json.Marshal(req.Env)
		if err != nil {
			return nil, err
		}
		b = append(b[:len(b)-1], `,"env":`...)
		b = append(b, env...)
		b = append(b, '}')
	}
	return b, nil
}

// Spawn runs a child command and waits for it, using the process's own
// standard streams. Inside a command, prefer Env.Spawn, which also works
// in-process in unit tests.
//
// Output that the caller buffered (a bufio.Writer over Env.Stdout) must be
// flushed before Spawn, or it will appear after the child's output.
//
// # Errors
//
// ErrNotFound, ErrDenied, ErrInvalid, ErrUnsupported (errors.Is), or an
// error from the host. A child that ran returns its exit status and a nil
// error, including StatusTimedOut when Timeout expired.
func Spawn(req SpawnRequest) (status int, err error) {
	return spawn(req, OSEnv())
}

// Spawn runs a child command with e's standard streams (see the package
// function Spawn). In the wasip1 build the child always shares the
// program's file descriptors 0, 1 and 2; in a native build (unit tests) it
// is a host process connected to e.Stdin, e.Stdout and e.Stderr.
func (e *Env) Spawn(req SpawnRequest) (status int, err error) {
	return spawn(req, e)
}
