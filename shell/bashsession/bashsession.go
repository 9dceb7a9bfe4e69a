// Package bashsession runs GNU bash (wasm/bash.wasm, build/bash) as the
// live shell of a sandbox session: one instance of bash per session, whose
// state — variables, exports, functions, aliases, options, traps, the
// working directory, everything bash keeps — stays in the instance's
// memory between runs.
//
// # The session loop
//
// The host starts bash with the export wasmbox_session_start as
// bash -c with an empty script: bash initializes as for -c, then waits in its session loop
// (build/bash/patches/0003-session-loop.patch) for the host's next call.
// Waiting is an Asyncify unwind point exactly like fork
// (build/posix/src/session.c): the guest's stack unwinds into its memory
// and the export returns, so an idle session holds no goroutine and no
// wasm call stack, and its whole state is a memory image
// (runtime.MemoryImage: linear memory and __stack_pointer). A run hands
// the script to wasmbox_session_resume, which rewinds the stack: bash runs
// it with its own parser and executor, command by command as it runs a -c
// string (so a syntax error further on stops the script there, as in
// bash), and goes idle again with the exit status and whether the script
// ended the shell (exit, set -e). Every command runs through the
// executor; pipelines, subshells and $(...) are forked instances
// (runtime.ForkABI) under the run's context and limits, ended with the
// run. No host process is involved.
//
// # State, kills and forks
//
// After every call that ends idle, the session keeps the image of the
// instance. A call that is killed — deadline, cancel, the memory limit, a
// trap — discards the instance; the next call starts a new instance from
// the image, so the session's state is what it was when the killed run
// began (the filesystem keeps what the run wrote). Fork and Snapshot work
// on the image too: a fork is a new instance in the parent's image, a
// snapshot is the image itself (see Image and NewFromImage).
//
// A run that ends the bash process itself (exec of a command, a fatal
// error of the shell) ends Exited with its status, like exit; as after a
// kill, the next run starts from the state at the start of that run.
//
// What an image does not hold is the WASI state outside the guest's
// memory: descriptors a script left open with exec (exec 3>f) stay open in
// the live instance across runs, but a new instance (after a kill, in a
// fork or a restored snapshot) starts with fds 0-2 and the preopened root
// (at descriptor 960, where the session's C library moved it) only; bash's later use of such a descriptor fails with EBADF. Background
// jobs end with the run that started them, as every child of a call does.
package bashsession

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/shell/session"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// Exports of bash.wasm's session mode (build/posix/src/session.c) and its
// operations (patch 0003).
const (
	exportStart  = "wasmbox_session_start"
	exportResume = "wasmbox_session_resume"
	exportBuf    = "wasmbox_session_buf"
	exportStack  = "wasmbox_session_stack_low"

	opRun    = 1
	opSetenv = 2
	opInfo   = 3

	flagExited = 0x100
)

// InternalTimeout bounds the host's own calls into the shell (info,
// setenv, the check of an image): they run none of the script's code, and a
// shell that does not answer within it (a hostile image) is discarded.
const InternalTimeout = 30 * time.Second

// MaxInfo bounds what the host reads back of the guest's answer to an info
// call (its working directory and exported environment).
const MaxInfo = 16 << 20

// Config describes a session.
type Config struct {
	// Runtime and Module: the compiled bash.wasm.
	Runtime *runtime.Runtime
	Module  *runtime.Module
	// FS is the session's filesystem, the guest's root.
	FS vfs.FS
	// Spawner runs the commands of the shell's scripts; nil makes every
	// command fail.
	Spawner runtime.Spawner
	// Env is the shell's initial environment (NAME=VALUE), Dir its
	// initial working directory.
	Env []string
	Dir string
	// MemoryLimit of the shell instance; 0 means session.DefaultMemoryLimit.
	MemoryLimit uint64
	// Budget is what the shell instance's memory is reserved from; nil
	// means the runtime's.
	Budget *runtime.Budget
	// Deterministic, when set, gives the shell fixed clocks and seeded
	// randomness.
	Deterministic *wasi.Deterministic
	// Commands maps command names that are not files in FS to the path
	// the shell runs them by (the sandbox's native commands and mcp, run
	// by the Spawner as /usr/bin/NAME): bash starts with them in its hash
	// table (hash -p), as the interpreter's wire.Init.Commands.
	Commands map[string]string
	// MaxProcesses bounds the processes of a run running at once: the
	// shell's forks (subshells, pipeline stages, $(...), background
	// jobs) and the commands they start, at any depth; 0 means
	// runtime.MaxProcesses, which is also the most it may be. A run that
	// meets it ends with a *session.LimitError.
	MaxProcesses int
}

// Errors of a session.
var (
	// ErrNotSession: the module has no session mode (a bash.wasm built
	// before patch 0003).
	ErrNotSession = errors.New("bashsession: bash.wasm has no session mode (rebuild it: make bash)")
	// ErrReadOnly is SetEnv's error for a read-only variable.
	ErrReadOnly = errors.New("read-only variable")
)

// Session is one live bash.
type Session struct {
	cfg Config

	mu     sync.Mutex // serializes everything below
	st     *preview1.State
	in     *runtime.Instance // idle between calls; nil once discarded
	img    *runtime.MemoryImage
	dir    string
	dirOK  bool // dir is the instance's (no run since it was read)
	closed bool

	// stackLow is the lowest address of bash's shadow stack (0: not
	// known; images then keep the dead stack too).
	stackLow uint64

	hit       atomic.Bool // the memory limit stopped the call
	procHit   atomic.Bool // the process limit stopped the call
	cancelRun atomic.Pointer[context.CancelCauseFunc]
}

// New starts a session: bash, initialized with cfg.Env in cfg.Dir.
func New(ctx context.Context, cfg Config) (*Session, error) {
	if cfg.Runtime == nil || cfg.Module == nil || cfg.FS == nil {
		return nil, errors.New("bashsession: Config needs Runtime, Module and FS")
	}
	if cfg.MemoryLimit == 0 {
		cfg.MemoryLimit = session.DefaultMemoryLimit
	}
	s := &Session{cfg: cfg, dir: cfg.Dir}
	st, in, err := s.instance(ctx, nil)
	if err != nil {
		return nil, err
	}
	if _, err := in.Call(ctx, exportStart); err != nil {
		if strings.Contains(err.Error(), "no exported function") {
			err = ErrNotSession
		}
		in.Close(ctx)
		st.Close()
		return nil, fmt.Errorf("bashsession: starting bash: %w", err)
	}
	s.st, s.in = st, in
	if len(cfg.Commands) > 0 {
		names := make([]string, 0, len(cfg.Commands))
		for name := range cfg.Commands {
			names = append(names, name)
		}
		sort.Strings(names)
		var b strings.Builder
		for _, name := range names {
			fmt.Fprintf(&b, "hash -p %s %s\n", shellQuote(cfg.Commands[name]), shellQuote(name))
		}
		cctx, cancel := context.WithTimeout(ctx, InternalTimeout)
		_, err := s.call(cctx, opRun, []byte(b.String()))
		cancel()
		if err != nil {
			s.discard()
			return nil, fmt.Errorf("bashsession: starting bash: %w", err)
		}
	}
	if err := s.keep(); err != nil {
		s.discard()
		return nil, err
	}
	return s, nil
}

// shellQuote quotes s for bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// NewFromImage starts a session in the state img (an Image of another
// session of the same module), with dir as its working directory as far
// as the host knows until the shell says otherwise.
func NewFromImage(ctx context.Context, cfg Config, img *runtime.MemoryImage) (*Session, error) {
	if cfg.Runtime == nil || cfg.Module == nil || cfg.FS == nil {
		return nil, errors.New("bashsession: Config needs Runtime, Module and FS")
	}
	if cfg.MemoryLimit == 0 {
		cfg.MemoryLimit = session.DefaultMemoryLimit
	}
	if err := img.Check(cfg.MemoryLimit); err != nil {
		return nil, fmt.Errorf("bashsession: %w", err)
	}
	img.Hold()
	s := &Session{cfg: cfg, dir: cfg.Dir, img: img}
	if err := s.ready(ctx); err != nil {
		s.Close()
		return nil, err
	}
	// An image the host did not make may hold anything: it must at least
	// answer as an idle session does before it is one.
	if _, err := s.info(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("bashsession: the image is not an idle bash session: %w", err)
	}
	return s, nil
}

// preopenFD is where a build/posix program keeps the root preopen (WASI's
// descriptor 3) from its start on: WB_PREOPEN_FD of build/posix/src.
const preopenFD = 960

// instance makes a new instance, in img when not nil.
func (s *Session) instance(ctx context.Context, img *runtime.MemoryImage) (*preview1.State, *runtime.Instance, error) {
	src := wasi.NewSources(wasi.Options{Deterministic: s.cfg.Deterministic})
	env := make([]string, 0, len(s.cfg.Env)+1)
	for _, kv := range s.cfg.Env {
		if !strings.HasPrefix(kv, "PWD=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PWD="+s.cfg.Dir)
	st, err := preview1.NewState(preview1.Config{
		FS: s.cfg.FS, Args: []string{"bash", "-c", ""}, Env: env,
		Stdin: session.EmptyInput, Stdout: io.Discard, Stderr: io.Discard,
		Walltime: src.Walltime, Nanotime: src.Nanotime, Rand: src.Rand, Sleep: src.Sleep,
		AbsoluteSymlinks: true,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("bashsession: %w", err)
	}
	_ = st.SetQuietPipe(1, true)
	_ = st.SetQuietPipe(2, true)
	if img != nil {
		// The image's C library reaches the file system through the
		// root preopen moved to preopenFD when the session started
		// (build/posix's __wb_move_preopens), and descriptor 3 is the
		// script's own: the new instance's descriptors say the same.
		if err := st.Dup2(3, preopenFD); err != nil {
			st.Close()
			return nil, nil, fmt.Errorf("bashsession: the root preopen: %w", err)
		}
		_ = st.CloseFd(3)
	}
	opts := runtime.InstanceOptions{
		MemoryLimit:   s.cfg.MemoryLimit,
		Budget:        s.cfg.Budget,
		WASI:          st,
		FS:            s.cfg.FS,
		Spawner:       s.cfg.Spawner,
		OnMemoryLimit: s.onMemoryLimit,
		OnForkLimit:   s.onForkLimit,
		MaxProcesses:  s.cfg.MaxProcesses,
	}
	var in *runtime.Instance
	if img != nil {
		in, err = s.cfg.Runtime.InstantiateImage(ctx, s.cfg.Module, img, opts)
	} else if fresh, ferr := s.cfg.Runtime.FreshImage(ctx, s.cfg.Module); ferr == nil {
		// A new bash: its memory mapped from the module's fresh image
		// instead of allocated and filled (nothing of it has run).
		in, err = s.cfg.Runtime.InstantiateImage(ctx, s.cfg.Module, fresh, opts)
	} else {
		in, err = s.cfg.Runtime.Instantiate(ctx, s.cfg.Module, opts)
	}
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("bashsession: %w", err)
	}
	return st, in, nil
}

func (s *Session) onMemoryLimit() {
	s.hit.Store(true)
	if c := s.cancelRun.Load(); c != nil {
		(*c)(session.ErrMemoryLimit)
	}
}

// onForkLimit ends the run whose process tree met the shell's memory
// (forks count against it as the shell does) or the process limit: the
// guest would see ENOMEM or EAGAIN, and bash says "fork: Out of memory"
// or retries, and a fork bomb goes on to the deadline; the run ends
// instead, with the limit's one line, and the session goes back to its
// state at the start of the run.
func (s *Session) onForkLimit(err error) {
	if errors.Is(err, runtime.ErrProcessLimit) {
		if s.hit.Load() {
			return
		}
		s.procHit.Store(true)
		if c := s.cancelRun.Load(); c != nil {
			(*c)(err)
		}
		return
	}
	s.onMemoryLimit()
}

// keep takes the image of the idle instance: the state a killed call
// comes back to.
func (s *Session) keep() error {
	if s.stackLow == 0 {
		if res, err := s.in.Call(context.Background(), exportStack); err == nil {
			s.stackLow = uint64(uint32(res[0]))
		}
	}
	prev := s.img
	if prev == nil {
		// A new bash: its memory came from the module's fresh image,
		// whose unchanged pages (most of the data segments) the image
		// shares.
		prev, _ = s.cfg.Runtime.FreshImage(context.Background(), s.cfg.Module)
	}
	img, err := s.in.MemoryImageSince(s.stackLow, prev)
	if err != nil {
		return fmt.Errorf("bashsession: %w", err)
	}
	img.Hold()
	if s.img != nil {
		s.img.Release()
	}
	s.img = img
	return nil
}

// ready makes sure an idle instance is live: after a killed call, a new
// one from the last image.
func (s *Session) ready(ctx context.Context) error {
	if s.closed {
		return session.ErrClosed
	}
	if s.in != nil && !s.in.Dead() {
		return nil
	}
	s.discard()
	st, in, err := s.instance(ctx, s.img)
	if err != nil {
		return err
	}
	s.st, s.in = st, in
	s.dirOK = false
	return nil
}

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

// call hands the idle guest operation op with arg and returns its answer.
func (s *Session) call(ctx context.Context, op int, arg []byte) (int32, error) {
	var ptr uint32
	if arg != nil {
		res, err := s.in.Call(ctx, exportBuf, uint64(len(arg)+1))
		if err != nil {
			return 0, err
		}
		ptr = uint32(res[0])
		if ptr == 0 {
			return 0, fmt.Errorf("%w: no room for the %d-byte argument", session.ErrInternal, len(arg))
		}
		if err := s.in.WriteMemory(ptr, append(arg, 0)); err != nil {
			return 0, fmt.Errorf("%w: the %d-byte argument: %w", session.ErrInternal, len(arg), err)
		}
	}
	res, err := s.in.Call(ctx, exportResume, uint64(op), uint64(ptr), uint64(len(arg)))
	if err != nil {
		return 0, err
	}
	r := int32(uint32(res[0]))
	if r == -1 {
		return 0, fmt.Errorf("%w: the shell was not idle", session.ErrInternal)
	}
	return r, nil
}

// Run runs script with the given streams (nil: no input, discarded
// output). The error is for a session that cannot run at all (closed, or
// no instance could start); a run that failed or was killed is a Result.
func (s *Session) Run(ctx context.Context, script string, stdin io.Reader, stdout, stderr io.Writer) (session.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return session.CtxResult(cerr), nil
		}
		return session.Result{}, err
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
	s.procHit.Store(false)
	unbind := session.BindRun(cctx, s.st, stdin, stdout, stderr, &s.hit)
	defer func() { unbind(s.st) }()
	s.dirOK = false
	r, err := s.call(cctx, opRun, []byte(script))
	if err == nil && (s.hit.Load() || s.procHit.Load()) {
		// A limit ended the run's tree while bash itself was in a host
		// call (waitpid for the child the limit ended) and finished
		// the script before the cancel reached it: the run still ended
		// at the limit, and the session goes back to its state before
		// it, as for any run a limit ends.
		// (The flag is set just before the cancel: the cause may
		// not be there yet.)
		if err = context.Cause(cctx); err == nil {
			err = errLimitMet
		}
	}
	if err != nil {
		return s.killed(ctx, stderr, err), nil
	}
	if err := s.keep(); err != nil {
		s.discard()
		fmt.Fprintf(session.HostLines(stderr), "wasmbox: internal shell error: %v\n", err)
		return session.Result{Code: 1, Err: session.ErrInternal}, nil
	}
	return session.Result{Code: int(r & 0xff), Exited: r&flagExited != 0}, nil
}

// errLimitMet ends a run whose limit flag was set before its cancel (see
// Run); killed reports the limit by the flags.
var errLimitMet = errors.New("the run met a limit")

// killed turns the end of an instance during a call into the run's
// result; the session goes back to its last image.
func (s *Session) killed(ctx context.Context, stderr io.Writer, err error) session.Result {
	limit := s.hit.Load() || s.in.LimitHit() || errors.Is(err, runtime.ErrMemoryLimit)
	lerr := s.in.LimitError()
	s.discard()
	if !limit && s.procHit.Load() {
		max := s.cfg.MaxProcesses
		if max <= 0 || max > runtime.MaxProcesses {
			max = runtime.MaxProcesses
		}
		fmt.Fprintf(session.HostLines(stderr), "wasmbox: process limit (%d at once) exceeded\n", max)
		return session.Result{Code: 1, Err: &session.LimitError{Limit: "process"}}
	}
	return session.KilledResult(ctx, stderr, err, limit, lerr, s.cfg.MemoryLimit, func(code uint32) (session.Result, bool) {
		// The bash process itself ended (exec, a fatal error of the
		// shell): the run ended the shell, with that status; the next
		// run starts from the state at the start of this one.
		return session.Result{Code: int(code & 0xff), Exited: true}, true
	})
}

// Info is what the shell says of itself.
type Info struct {
	Dir string
	// Env is the exported environment, NAME=VALUE, in bash's order.
	Env []string
}

// info asks the idle guest for its working directory and environment.
func (s *Session) info(ctx context.Context) (Info, error) {
	ctx, cancel := context.WithTimeout(ctx, InternalTimeout)
	defer cancel()
	r, err := s.call(ctx, opInfo, nil)
	if err != nil {
		s.discard()
		return Info{}, err
	}
	if r == 0 {
		s.discard()
		return Info{}, fmt.Errorf("%w: bad info answer (none)", session.ErrInternal)
	}
	hdr, err := s.in.ReadMemory(uint32(r), 8)
	if err != nil {
		s.discard()
		return Info{}, fmt.Errorf("%w: bad info answer: %w", session.ErrInternal, err)
	}
	ptr := uint32(hdr[0]) | uint32(hdr[1])<<8 | uint32(hdr[2])<<16 | uint32(hdr[3])<<24
	n := uint32(hdr[4]) | uint32(hdr[5])<<8 | uint32(hdr[6])<<16 | uint32(hdr[7])<<24
	if n > MaxInfo || n == 0 {
		s.discard()
		return Info{}, fmt.Errorf("%w: bad info answer (%d bytes at %#x)", session.ErrInternal, n, ptr)
	}
	b, err := s.in.ReadMemory(ptr, n)
	if err != nil || b[n-1] != 0 {
		s.discard()
		return Info{}, fmt.Errorf("%w: bad info answer (%d bytes at %#x): %v", session.ErrInternal, n, ptr, err)
	}
	parts := strings.Split(string(b[:n-1]), "\x00")
	info := Info{Dir: parts[0], Env: parts[1:]}
	s.dir, s.dirOK = info.Dir, true
	return info, nil
}

// Info returns the shell's working directory and exported environment.
func (s *Session) Info(ctx context.Context) (Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return Info{}, err
	}
	return s.info(ctx)
}

// SetEnv sets and exports a variable of the shell (ErrReadOnly for a
// read-only one).
func (s *Session) SetEnv(ctx context.Context, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, InternalTimeout)
	defer cancel()
	r, err := s.call(cctx, opSetenv, []byte(key+"="+value))
	if err != nil {
		s.discard()
		return fmt.Errorf("bashsession: setenv: %w", err)
	}
	switch r {
	case 0:
	case 2:
		return fmt.Errorf("bashsession: %s: %w", key, ErrReadOnly)
	default:
		return fmt.Errorf("bashsession: %q: not a valid variable name", key)
	}
	return s.keep()
}

// Dir is the shell's working directory (asked of the shell after a run
// changed it).
func (s *Session) Dir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dirOK && !s.closed {
		if err := s.ready(context.Background()); err == nil {
			_, _ = s.info(context.Background())
		}
	}
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

// Image returns the session's state: the image of its last idle point (the
// start of the next run), and its working directory.
func (s *Session) Image() (*runtime.MemoryImage, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, "", session.ErrClosed
	}
	if !s.dirOK {
		if err := s.ready(context.Background()); err == nil {
			_, _ = s.info(context.Background())
		}
	}
	return s.img, s.dir, nil
}

// ForkBudget returns a new session over fsys and spawner in this session's
// state, its memory reserved from b.
func (s *Session) ForkBudget(ctx context.Context, fsys vfs.FS, spawner runtime.Spawner, b *runtime.Budget) (*Session, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, session.ErrClosed
	}
	cfg, img, dir, dirOK := s.cfg, s.img, s.dir, s.dirOK
	img.Hold() // under s.mu: a run of s cannot let it go first
	s.mu.Unlock()
	cfg.FS, cfg.Spawner, cfg.Budget = fsys, spawner, b
	c := &Session{cfg: cfg, img: img, dir: dir, dirOK: dirOK}
	if err := c.ready(ctx); err != nil {
		c.Close()
		return nil, err
	}
	c.dirOK = dirOK
	return c, nil
}

// Close ends the session. It is idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.discard()
	if s.img != nil {
		s.img.Release()
		s.img = nil
	}
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
