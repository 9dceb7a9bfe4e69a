// Package session runs a sandbox session's shell inside WebAssembly: one
// live instance of shell.wasm (package shell built for wasip1, see
// tools/shell) per session, whose state — working directory, variables,
// exports, functions, aliases, options, traps — stays in the instance
// between runs.
//
// The host never runs the interpreter. A run is a call into the instance
// under the run's context: the fuel of the guest's loops and every host
// call it makes watch that context, so a deadline or a cancel ends the
// shell wherever it is, in a loop, in an expansion, in the parser. The
// instance's linear memory has its own limit (Config.MemoryLimit, 256 MiB
// by default): an expansion that wants more ends the run with
// LIMIT_EXCEEDED instead of growing the host.
//
// # Pipelines
//
// The stages of a pipeline run at once, in one instance: stages that are
// shell code (functions, subshells, loops, builtins) are goroutines of the
// guest; stages that are commands are children started through the host's
// process ABI (runtime.ProcessABI), which returns at once. The pipes
// between them are host pipes whose descriptors are non-blocking, and the
// guest waits for them, and for its children's process handles, in
// poll_oneoff: the Go scheduler inside the guest parks a goroutine whose
// pipe is empty or full and runs another, and when every goroutine waits,
// poll_oneoff waits on all their pipes at once. No host call of the shell
// ever blocks on one pipe while another is ready, so no mix of shell code
// and commands can deadlock; commands read and write the pipes directly,
// and data between two commands never passes through the shell.
//
// The other design, a forked shell instance per stage (copy-on-write of the
// parent's memory, as bash forks), was not taken: a Go guest cannot be
// forked in the middle of a call (the wasm call stack lives in the host's
// engine, not in linear memory), so a stage would have to start from an
// idle image and be told what to run, and each stage would cost an
// instance (a spare instance is ~0.2 ms, a fork of the memory more). One
// instance with goroutines starts a stage in microseconds and shares the
// shell's memory limit with it, as bash's subshells share the cgroup.
// Bash's semantics hold all the same: every stage but the last runs in a
// subshell (interp's subshell copy), so `echo x | X=after` leaves X as it
// was.
//
// # State, kills and forks
//
// After a run whose state changed, the guest gives the host the state (a
// wire.State in its binary form; sandbox snapshots keep it as JSON). When a run is killed
// — deadline, cancel, the memory limit, an internal error — the instance
// is discarded at once; the next run starts a new instance (from the
// module's copy-on-write snapshot, usually a spare that is ready) and
// restores the last state the host holds: the session's state is what it
// was before the killed run began. The filesystem keeps what the run
// wrote. Fork starts a new instance the same way, from the parent's state.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/shell/wire"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// DefaultMemoryLimit is the default limit of a session shell's memory.
const DefaultMemoryLimit uint64 = 256 << 20

// Config describes a session.
type Config struct {
	// Runtime and Module: the compiled shell.wasm (wasm.ShellModule).
	Runtime *runtime.Runtime
	Module  *runtime.Module
	// FS is the session's filesystem, the guest's root.
	FS vfs.FS
	// Spawner runs the commands of the shell's scripts (the process ABI's
	// children); nil makes every command fail.
	Spawner runtime.Spawner
	// Init is the shell's initial configuration.
	Init wire.Init
	// MemoryLimit of the shell instance; 0 means DefaultMemoryLimit.
	MemoryLimit uint64
	// Budget is what the shell instance's memory is reserved from (see
	// runtime.InstanceOptions.Budget); nil means the runtime's.
	Budget *runtime.Budget
	// Deterministic, when set, gives the shell fixed clocks and seeded
	// randomness.
	Deterministic *wasi.Deterministic
	// Pool, when set, provides shells started ahead of use (see Pool).
	Pool *Pool
}

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
	// ErrInternal: the interpreter failed (a trap, a panic it could not
	// recover, a malformed answer); the session continues from its last
	// state.
	ErrInternal = errors.New("internal error of the shell")
	// ErrClosed is returned by a closed Session.
	ErrClosed = errors.New("session: closed")
)

// LimitError is a limit of the shell (script size, commands, nesting
// depth, background jobs, variable size) that stopped a run.
type LimitError struct{ Limit string }

func (e *LimitError) Error() string { return e.Limit + " limit exceeded" }

// Session is one live shell.
type Session struct {
	cfg Config

	mu     sync.Mutex // serializes everything below
	st     *preview1.State
	in     *runtime.Instance
	state  []byte // the last state the guest gave (wire.AppendState); nil: Init's
	dir    string // the shell's working directory, as last known
	closed bool

	hit       atomic.Bool // the running call hit the memory limit
	cancelRun atomic.Pointer[context.CancelCauseFunc]
}

// New starts a session: an instance of the shell, initialized with
// cfg.Init.
func New(ctx context.Context, cfg Config) (*Session, error) {
	if cfg.Runtime == nil || cfg.Module == nil || cfg.FS == nil {
		return nil, errors.New("session: Config needs Runtime, Module and FS")
	}
	if cfg.MemoryLimit == 0 {
		cfg.MemoryLimit = DefaultMemoryLimit
	}
	s := &Session{cfg: cfg, dir: cfg.Init.Dir}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// start makes a new instance and brings it to the session's state.
func (s *Session) start(ctx context.Context) error {
	if p := s.cfg.Pool; p != nil && p.take(ctx, s) {
		return nil
	}
	src := wasi.NewSources(wasi.Options{Deterministic: s.cfg.Deterministic})
	st, err := preview1.NewState(preview1.Config{
		FS: s.cfg.FS, Args: []string{"sh"},
		Stdout: io.Discard, Stderr: io.Discard,
		Walltime: src.Walltime, Nanotime: src.Nanotime, Rand: src.Rand, Sleep: src.Sleep,
		AbsoluteSymlinks: true,
	})
	if err != nil {
		return fmt.Errorf("session: %w", err)
	}
	// The shell waits for its input in poll_oneoff (a read must not park
	// the whole guest), and gets EPIPE rather than death from a closed
	// output.
	_ = st.SetNonblock(0, true)
	_ = st.SetQuietPipe(1, true)
	_ = st.SetQuietPipe(2, true)
	in, err := s.cfg.Runtime.Instantiate(ctx, s.cfg.Module, runtime.InstanceOptions{
		MemoryLimit:   s.cfg.MemoryLimit,
		Budget:        s.cfg.Budget,
		WASI:          st,
		FS:            s.cfg.FS,
		Spawner:       s.cfg.Spawner,
		OnMemoryLimit: s.onMemoryLimit,
	})
	if err != nil {
		st.Close()
		return fmt.Errorf("session: %w", err)
	}
	init := s.cfg.Init
	init.State = s.state // the state to come back to, if any
	ini, err := json.Marshal(init)
	if err != nil {
		in.Close(ctx)
		st.Close()
		return fmt.Errorf("session: %w", err)
	}
	if err := s.call(ctx, in, wire.OpInit, ini, nil); err != nil {
		in.Close(ctx)
		st.Close()
		return fmt.Errorf("session: starting the shell: %w", err)
	}
	s.st, s.in = st, in
	return nil
}

// onMemoryLimit is called when the shell asks for memory past its limit:
// the guest sees memory.grow fail; end it at its next host call rather
// than let it print the Go runtime's trace.
func (s *Session) onMemoryLimit() {
	s.hit.Store(true)
	if c := s.cancelRun.Load(); c != nil {
		(*c)(ErrMemoryLimit)
	}
}

// call makes one session call that is not a run; out, when not nil,
// receives the output.
func (s *Session) call(ctx context.Context, in *runtime.Instance, op uint32, input []byte, out *[]byte) error {
	res, b, err := in.CallData(ctx, wire.Export, input, wire.MaxOutput, uint64(op), uint64(len(input)))
	if err != nil {
		return err
	}
	if errno := uint32(res[0]); errno != 0 {
		msg := strings.TrimSpace(string(b))
		if len(msg) > 512 {
			msg = msg[:512]
		}
		return fmt.Errorf("errno %d: %s", errno, msg)
	}
	if out != nil {
		*out = b
	}
	return nil
}

// ready returns a live instance, starting one from the session's state
// after a killed run.
func (s *Session) ready(ctx context.Context) error {
	if s.closed {
		return ErrClosed
	}
	if s.in != nil && !s.in.Dead() {
		return nil
	}
	s.discard()
	return s.start(ctx)
}

// discard drops the instance.
func (s *Session) discard() {
	if s.in != nil {
		s.in.Close(context.Background())
		s.in = nil
	}
	if s.st != nil {
		s.st.Close()
		s.st = nil
	}
}

// Run runs script with the given streams (nil: no input, discarded
// output). The error is for a session that cannot run at all (closed, or
// no instance could start); a run that failed, was killed or crossed a
// limit is a Result.
func (s *Session) Run(ctx context.Context, script string, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return CtxResult(cerr), nil
		}
		return Result{}, err
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.cancelRun.Store(&cancel)
	defer s.cancelRun.Store(nil)
	s.hit.Store(false)
	unbind := BindRun(cctx, s.st, stdin, stdout, stderr, &s.hit)
	defer func() { unbind(s.st) }()
	res, out, err := s.in.CallData(cctx, wire.Export, []byte(script), wire.MaxOutput, wire.OpRun, uint64(len(script)))
	if err != nil {
		return s.killed(ctx, stderr, err), nil
	}
	if errno := uint32(res[0]); errno != 0 {
		s.discard()
		fmt.Fprintf(stderr, "wasmbox: internal shell error (errno %d)\n", errno)
		return Result{Code: 1, Err: ErrInternal}, nil
	}
	rr, state, err := wire.DecodeRunOutput(out)
	if err != nil {
		s.discard()
		fmt.Fprintf(stderr, "wasmbox: internal shell error: %v\n", err)
		return Result{Code: 1, Err: ErrInternal}, nil
	}
	r := Result{Code: int(rr.Code), Exited: rr.Flags&wire.FlagExited != 0, Commands: rr.Commands}
	switch {
	case rr.Flags&wire.FlagLimit != 0:
		r.Err = &LimitError{Limit: rr.Limit}
	case rr.Flags&wire.FlagInternal != 0:
		r.Err = ErrInternal
	}
	if r.Err != nil {
		// A limit, like a kill, ends the shell: the session goes on from
		// the state it had before the run.
		s.discard()
		return r, nil
	}
	if state != nil {
		if _, err := wire.DecodeBinaryState(state); err != nil {
			s.discard()
			fmt.Fprintf(stderr, "wasmbox: internal shell error: %v\n", err)
			return Result{Code: 1, Err: ErrInternal}, nil
		}
		s.state = append([]byte(nil), state...)
	}
	s.dir = rr.Dir
	return r, nil
}

// killed turns the end of an instance during a run into the run's result;
// the instance is gone, the session's state is the last one it gave.
func (s *Session) killed(ctx context.Context, stderr io.Writer, err error) Result {
	limit := s.hit.Load() || s.in.LimitHit() || errors.Is(err, runtime.ErrMemoryLimit)
	lerr := s.in.LimitError()
	s.discard()
	return KilledResult(ctx, stderr, err, limit, lerr, s.cfg.MemoryLimit, nil)
}

// State returns the shell's current state (of the live instance, else the
// last one it gave).
func (s *Session) State(ctx context.Context) (wire.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return wire.State{}, err
	}
	var b []byte
	if err := s.call(ctx, s.in, wire.OpState, nil, &b); err != nil {
		s.discard()
		return wire.State{}, fmt.Errorf("session: state: %w", err)
	}
	st, err := wire.DecodeBinaryState(b)
	if err != nil {
		s.discard()
		return wire.State{}, err
	}
	s.state = b
	if st.Dir != "" {
		s.dir = st.Dir
	}
	return st, nil
}

// Restore replaces the shell's state; on error the session keeps its
// previous state.
func (s *Session) Restore(ctx context.Context, st wire.State) error {
	if err := st.Check(); err != nil {
		return err
	}
	b := wire.AppendState(nil, st)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return err
	}
	if err := s.call(ctx, s.in, wire.OpRestore, b, nil); err != nil {
		s.discard() // the guest may be half-way: start again from s.state
		return fmt.Errorf("session: restore: %w", err)
	}
	s.state = b
	if st.Dir != "" {
		s.dir = st.Dir
	}
	return nil
}

// Dir is the shell's working directory (as of the end of the last run or
// restore).
func (s *Session) Dir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dir
}

// SetSpawner makes sp start the shell's commands from the next run on.
func (s *Session) SetSpawner(sp runtime.Spawner) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.Spawner = sp
	if s.in != nil {
		s.in.SetSpawner(sp)
	}
}

// Fork returns a new session over fsys and spawner with this session's
// state.
func (s *Session) Fork(ctx context.Context, fsys vfs.FS, spawner runtime.Spawner) (*Session, error) {
	return s.ForkBudget(ctx, fsys, spawner, s.cfg.Budget)
}

// ForkBudget is Fork with the new shell's memory reserved from b (see
// Config.Budget).
func (s *Session) ForkBudget(ctx context.Context, fsys vfs.FS, spawner runtime.Spawner, b *runtime.Budget) (*Session, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	cfg := s.cfg
	state := s.state
	s.mu.Unlock()
	cfg.FS, cfg.Spawner, cfg.Budget = fsys, spawner, b
	c := &Session{cfg: cfg, state: state, dir: s.Dir()}
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Close ends the session. It is idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.discard()
	return nil
}

// MemorySize is the size of the shell instance's linear memory (0 when
// none is live).
func (s *Session) MemorySize() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.in == nil {
		return 0
	}
	return s.in.MemorySize()
}
