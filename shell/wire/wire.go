// Package wire is what the host and the wasmbox interpreter (shell.wasm,
// removed) exchanged: the requests of the session calls and their
// answers, and the shell's persistent state. The state (State, in a
// sandbox snapshot of format 1 as JSON) stays: such a snapshot restores
// into GNU bash (sandbox/interpstate.go). Everything the host reads here
// was written by a guest: decode it with Decode*, which bound sizes and
// never panic.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Session operations: the first parameter of the guest's export
// wasmbox_session(op, input_len) -> errno.
const (
	// OpInit starts the session's shell: input an Init (JSON).
	OpInit = 1
	// OpRun runs a script: input the script's bytes; output a RunResult,
	// then, if the shell's state changed, the state (see EncodeRunOutput).
	OpRun = 2
	// OpState answers the state of the idle shell (binary, AppendState).
	OpState = 3
	// OpRestore replaces the state: input its binary form.
	OpRestore = 4
)

// Export is the session export of shell.wasm.
const Export = "wasmbox_session"

// Init configures a session's shell.
type Init struct {
	Env []string `json:"env"`
	Dir string   `json:"dir"`
	// Limits, 0 for the default, negative for none.
	MaxScriptBytes int   `json:"max_script_bytes,omitempty"`
	MaxVarBytes    int64 `json:"max_var_bytes,omitempty"`
	MaxCommands    int64 `json:"max_commands,omitempty"`
	MaxDepth       int64 `json:"max_depth,omitempty"`
	MaxJobs        int64 `json:"max_jobs,omitempty"`
	// Seed, when set, seeds $RANDOM.
	Seed *uint64 `json:"seed,omitempty"`
	UID  uint32  `json:"uid"`
	GID  uint32  `json:"gid"`
	PID  int     `json:"pid"`
	PPID int     `json:"ppid"`
	// Commands maps names that no file of the filesystem's PATH provides
	// (native commands) to the path `command -v` reports.
	Commands map[string]string `json:"commands,omitempty"`
	// State, when set, is the binary form of a state (AppendState) loaded
	// right after the shell starts (a fork, or a restart after a killed
	// run): one call instead of OpInit and OpRestore.
	State []byte `json:"state,omitempty"`
}

// State is the part of a shell that persists across runs.
type State struct {
	Dir   string
	Umask uint32
	Vars  []Var
	// Funcs maps each function name to its definition as shell source.
	Funcs map[string]string
	// Aliases maps each alias name to its text.
	Aliases map[string]string
	// Options are the `set -o` options that are on (errexit, pipefail...).
	Options []string
	// ShellOptions are the `shopt` options that are on (extglob...).
	ShellOptions []string
	// ErrTrap is the ERR trap's command, if any. (The EXIT trap fires at
	// the end of every Run and does not persist.)
	ErrTrap string
}

// Var is one shell variable with its attributes. Kind is "string",
// "indexed", "associative" or "nameref" (whose Str is the target name).
type Var struct {
	Name     string
	Kind     string
	Str      string            `json:",omitempty"`
	List     []string          `json:",omitempty"`
	Indexes  []int             `json:",omitempty"`
	Map      map[string]string `json:",omitempty"`
	Exported bool              `json:",omitempty"`
	ReadOnly bool              `json:",omitempty"`
}

// RunResult is how a run ended, as the shell saw it.
type RunResult struct {
	// Code is the script's exit status.
	Code int32
	// Flags: FlagExited, FlagLimit, FlagInternal, FlagTimeout, FlagCancelled.
	Flags uint32
	// Commands is how many simple commands ran.
	Commands int64
	// Limit names the limit the run crossed (FlagLimit), e.g. "nesting depth".
	Limit string
	// Dir is the shell's working directory after the run.
	Dir string
}

// Flags of a RunResult.
const (
	FlagExited    = 1 << 0 // the script ran the exit builtin
	FlagLimit     = 1 << 1 // a limit of the shell stopped it
	FlagInternal  = 1 << 2 // an internal error of the interpreter (recovered)
	FlagTimeout   = 1 << 3 // its context's deadline passed
	FlagCancelled = 1 << 4 // its context was cancelled
	FlagState     = 1 << 5 // the output carries the new state after the result
)

// MaxOutput bounds what the host accepts from one session call: the
// result and the state (variables are bounded by the shell's own
// MaxVarBytes, 16 MiB by default, functions and aliases by the script
// size).
const MaxOutput = 64 << 20

const runResultSize = 4 + 4 + 8 + 4 + 4

// EncodeRunOutput is what OpRun gives the host: the result, then the
// state's binary form when state is not nil.
func EncodeRunOutput(res RunResult, state []byte) []byte {
	if state != nil {
		res.Flags |= FlagState
	}
	b := make([]byte, runResultSize, runResultSize+len(res.Limit)+len(res.Dir)+len(state))
	binary.LittleEndian.PutUint32(b[0:], uint32(res.Code))
	binary.LittleEndian.PutUint32(b[4:], res.Flags)
	binary.LittleEndian.PutUint64(b[8:], uint64(res.Commands))
	binary.LittleEndian.PutUint32(b[16:], uint32(len(res.Limit)))
	binary.LittleEndian.PutUint32(b[20:], uint32(len(res.Dir)))
	b = append(b, res.Limit...)
	b = append(b, res.Dir...)
	return append(b, state...)
}

// ErrMalformed is wrapped by the errors of the decoders.
var ErrMalformed = errors.New("wire: malformed shell output")

// DecodeRunOutput splits the output of OpRun; state is nil when the run
// did not change it.
func DecodeRunOutput(b []byte) (res RunResult, state []byte, err error) {
	if len(b) < runResultSize {
		return res, nil, fmt.Errorf("%w: run result of %d bytes", ErrMalformed, len(b))
	}
	res.Code = int32(binary.LittleEndian.Uint32(b[0:]))
	res.Flags = binary.LittleEndian.Uint32(b[4:])
	res.Commands = int64(binary.LittleEndian.Uint64(b[8:]))
	n := binary.LittleEndian.Uint32(b[16:])
	nd := binary.LittleEndian.Uint32(b[20:])
	rest := b[runResultSize:]
	if uint64(n) > uint64(len(rest)) || n > 1024 {
		return res, nil, fmt.Errorf("%w: limit name of %d bytes", ErrMalformed, n)
	}
	res.Limit = string(rest[:n])
	if !utf8.ValidString(res.Limit) {
		return res, nil, fmt.Errorf("%w: limit name is not UTF-8", ErrMalformed)
	}
	rest = rest[n:]
	if uint64(nd) > uint64(len(rest)) || nd > 4096 {
		return res, nil, fmt.Errorf("%w: directory of %d bytes", ErrMalformed, nd)
	}
	res.Dir = string(rest[:nd])
	if len(res.Dir) == 0 || res.Dir[0] != '/' {
		return res, nil, fmt.Errorf("%w: directory %q is not absolute", ErrMalformed, res.Dir)
	}
	rest = rest[nd:]
	if res.Flags&FlagState != 0 {
		state = rest
	} else if len(rest) != 0 {
		return res, nil, fmt.Errorf("%w: %d bytes after the run result", ErrMalformed, len(rest))
	}
	if res.Code < 0 || res.Code > 255 {
		return res, nil, fmt.Errorf("%w: exit status %d", ErrMalformed, res.Code)
	}
	return res, state, nil
}

// Check reports a state that no shell could have: a relative directory,
// bad names, NUL bytes.
func (st State) Check() error {
	if st.Dir != "" && st.Dir[0] != '/' {
		return fmt.Errorf("%w: state directory %q is not absolute", ErrMalformed, st.Dir)
	}
	if st.Umask > 0o777 {
		return fmt.Errorf("%w: umask %o", ErrMalformed, st.Umask)
	}
	for _, v := range st.Vars {
		if !validName(v.Name) {
			return fmt.Errorf("%w: variable name %q", ErrMalformed, v.Name)
		}
		switch v.Kind {
		case "string", "indexed", "associative", "nameref":
		default:
			return fmt.Errorf("%w: variable %s of kind %q", ErrMalformed, v.Name, v.Kind)
		}
	}
	for name := range st.Funcs {
		if name == "" {
			return fmt.Errorf("%w: empty function name", ErrMalformed)
		}
	}
	return nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
