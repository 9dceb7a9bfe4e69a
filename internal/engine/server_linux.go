package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wasmbox/wasmbox/sandbox"
)

// requestDeadline bounds the wait for a client's request.
const requestDeadline = 10 * time.Second

// Config is an engine's.
type Config struct {
	// Socket is the path to listen on; its directory must be private
	// (CheckPrivateDir).
	Socket string
	// Key is the engine's key (Key): requests of another are not taken.
	Key string
	// Idle is how long the engine waits for a run before it exits.
	Idle time.Duration
	// Handler runs the runs.
	Handler Handler
	// Trim, when positive, is how long the engine waits without a run
	// before it drops the shared sandbox engine (compiled code,
	// snapshots, spare instances) and returns its memory to the system;
	// the next run makes it again from the compilation cache.
	Trim time.Duration
	// Shared, when set, makes the sandbox engine the runs share
	// (compiling the tools); it is called once, when the engine starts.
	// When it fails, the runs waiting get the error and the engine stops:
	// the next run starts an engine that tries again.
	Shared func(ctx context.Context) (*sandbox.Engine, error)
}

// Handler runs r in the engine and returns its exit status, or a reason
// for the client to run it itself (fallback, before r.Accept).
type Handler func(ctx context.Context, r *Run) (exit int, fallback string)

// Run is one client's `wasmbox run` in the engine.
type Run struct {
	Args []string
	Dir  string
	Env  []string
	// Stdin is the client's stdin pipe; Stdout and Stderr its own
	// stdout and stderr. Read and write them only after Accept.
	Stdin          *os.File
	Stdout, Stderr *Output

	s        *Server
	reply    func(Reply)
	accepted bool
	later    []func()
}

// Accept tells the client that the run is taken: it fills stdin.
func (r *Run) Accept() {
	if !r.accepted {
		r.accepted = true
		r.reply(Reply{Accept: true})
	}
}

// Later queues f to run after the client has its answer.
func (r *Run) Later(f func()) { r.later = append(r.later, f) }

// Shared is the sandbox engine the runs share (Config.Shared), waiting
// for its compile or ctx.
func (r *Run) Shared(ctx context.Context) (*sandbox.Engine, error) { return r.s.shared(ctx) }

// ErrRunning: another engine holds the socket's lock.
var ErrRunning = errors.New("an engine already serves this socket")

// Server is a running engine.
type Server struct {
	cfg     Config
	self    Identity // the clients it serves have the same
	started time.Time
	build   string

	ctx context.Context // cancelled by the caller's ctx: cancels every run

	// The shared sandbox engine of the current generation: made on first
	// use, dropped by trim (a new generation is made by the next run).
	engMu   sync.Mutex
	gen     *generation
	trimmed atomic.Int64

	runs, active atomic.Int64
	mu           sync.Mutex
	lastActive   time.Time
	wg           sync.WaitGroup
	stopping     chan struct{}
	stopOnce     sync.Once
	// released is closed once the socket and the lock are given up
	// (drain): a stop is answered only then, so that the client that
	// asked can start a new engine at once.
	released chan struct{}
}

// Serve runs an engine on cfg.Socket until ctx ends (its runs are
// cancelled), a stop request, or cfg.Idle without a run. It returns
// ErrRunning if another engine serves the socket.
func Serve(ctx context.Context, cfg Config) error {
	if cfg.Idle <= 0 {
		return fmt.Errorf("engine: the idle time must be positive, got %v", cfg.Idle)
	}
	sock := cfg.Socket
	if err := CheckPrivateDir(filepath.Dir(sock), os.Geteuid()); err != nil {
		return err
	}
	self, err := SelfIdentity()
	if err != nil {
		return fmt.Errorf("engine: cannot read its own identity: %v", err)
	}
	lock, err := os.OpenFile(sock+".lock", os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return ErrRunning
	}
	os.Remove(sock)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return err
	}
	ln.SetUnlinkOnClose(true)
	defer ln.Close()
	if err := os.Chmod(sock, 0o600); err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	build, _ := BuildID()
	s := &Server{
		cfg: cfg, self: self, started: time.Now(), build: build,
		ctx: ctx, stopping: make(chan struct{}), released: make(chan struct{}),
	}
	return s.serve(ln, lock)
}

// generation is one making of the shared sandbox engine.
type generation struct {
	done chan struct{} // closed once eng, err are set
	eng  *sandbox.Engine
	err  error
}

func (s *Server) shared(ctx context.Context) (*sandbox.Engine, error) {
	s.engMu.Lock()
	g := s.gen
	if g == nil {
		g = &generation{done: make(chan struct{})}
		s.gen = g
		go func() {
			defer close(g.done)
			if s.cfg.Shared == nil {
				g.err = errors.New("engine: no shared sandbox engine")
				return
			}
			g.eng, g.err = s.cfg.Shared(s.ctx)
			if g.err != nil {
				fmt.Fprintf(os.Stderr, "engine: %v\n", g.err)
				s.shutdown()
			}
		}()
	}
	s.engMu.Unlock()
	select {
	case <-g.done:
		return g.eng, g.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// trim drops the shared sandbox engine (compiled code, snapshots, spare
// instances) and returns the memory to the system, if no run is in
// flight: the next run makes it again, from the compilation cache.
// Runs take the engine only while counted in s.active, which trim
// checks under engMu, the lock shared takes.
func (s *Server) trim() bool {
	s.engMu.Lock()
	g := s.gen
	if g == nil || s.active.Load() != 0 {
		s.engMu.Unlock()
		return false
	}
	select {
	case <-g.done:
	default: // still being made
		s.engMu.Unlock()
		return false
	}
	s.gen = nil
	s.engMu.Unlock()
	if g.eng != nil {
		g.eng.Close(context.Background())
	}
	debug.FreeOSMemory()
	s.trimmed.Add(1)
	return true
}

func (s *Server) touch() {
	s.mu.Lock()
	s.lastActive = time.Now()
	s.mu.Unlock()
}

// stopGrace bounds the wait for runs once the engine's context ended:
// a run stuck where cancelling does not reach must not keep the process.
var stopGrace = 10 * time.Second

// serve accepts clients on ln until ctx ends, a stop request, or idle time
// without a run. It closes ln and lock (another engine may then start)
// before it waits for the runs in flight.
func (s *Server) serve(ln *net.UnixListener, lock *os.File) error {
	s.touch()
	if s.cfg.Shared != nil {
		go s.shared(s.ctx) // compile while the first client connects
	}
	go func() {
		tick := min(s.cfg.Idle/4+time.Millisecond, 10*time.Second)
		if s.cfg.Trim > 0 {
			tick = min(tick, s.cfg.Trim/4+time.Millisecond)
		}
		t := time.NewTicker(tick)
		defer t.Stop()
		trimmedAt := time.Time{} // the lastActive of the last trim
		for {
			select {
			case <-s.ctx.Done():
				s.shutdown()
				return
			case <-s.stopping:
				return
			case <-t.C:
				s.mu.Lock()
				idle := time.Since(s.lastActive)
				s.mu.Unlock()
				if s.active.Load() == 0 && idle >= s.cfg.Idle {
					s.shutdown()
					return
				}
				s.mu.Lock()
				last := s.lastActive
				s.mu.Unlock()
				if s.cfg.Trim > 0 && idle >= s.cfg.Trim && !last.Equal(trimmedAt) && s.trim() {
					trimmedAt = last
				}
			}
		}
	}()
	go func() {
		<-s.stopping
		ln.Close()
	}()
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			select {
			case <-s.stopping:
				return s.drain(ln, lock)
			default:
			}
			time.Sleep(10 * time.Millisecond) // EMFILE and the like
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(conn)
		}()
	}
}

// drain ends the engine: the socket goes, the lock is released (the next
// client starts a new engine at once), then the runs in flight finish;
// once the engine's context ended, for at most stopGrace.
func (s *Server) drain(ln *net.UnixListener, lock *os.File) error {
	ln.Close()
	lock.Close()
	close(s.released)
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-s.ctx.Done():
		select {
		case <-done:
		case <-time.After(stopGrace):
			fmt.Fprintf(os.Stderr, "engine: %d runs did not end %v after the stop; exiting\n", s.active.Load(), stopGrace)
			return nil
		}
	}
	s.engMu.Lock()
	g := s.gen
	s.engMu.Unlock()
	if g != nil {
		select {
		case <-g.done:
			if g.eng != nil {
				g.eng.Close(context.Background())
			}
		default: // still compiling: the process exit ends it
		}
	}
	return nil
}

// shutdown stops accepting; runs in flight finish (or end with s.ctx).
func (s *Server) shutdown() {
	s.stopOnce.Do(func() { close(s.stopping) })
}

// readRequest reads the first frame and the descriptors sent with it.
func readRequest(conn *net.UnixConn) (Request, []int, io.Reader, error) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*4)) // room for one more than 3: too many is an error
	n, oobn, flags, _, err := conn.ReadMsgUnix(buf, oob)
	var fds []int
	if oobn > 0 {
		msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
		if perr == nil {
			for _, m := range msgs {
				if got, err := unix.ParseUnixRights(&m); err == nil {
					fds = append(fds, got...)
				}
			}
		}
	}
	var req Request
	if err != nil {
		return req, fds, nil, err
	}
	if flags&unix.MSG_CTRUNC != 0 {
		return req, fds, nil, errors.New("engine: descriptors truncated")
	}
	r := io.MultiReader(bytes.NewReader(buf[:n]), conn)
	if err := ReadFrame(r, &req, MaxRequestFrame); err != nil {
		return req, fds, nil, err
	}
	return req, fds, r, nil
}

func closeFds(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// rss is this process's resident memory in bytes.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n * int64(os.Getpagesize())
}

func (s *Server) status() *Status {
	exe, _ := os.Executable()
	return &Status{
		PID: os.Getpid(), Key: s.cfg.Key, Build: s.build, Exe: exe, Socket: s.cfg.Socket, Started: s.started,
		Runs: s.runs.Load(), Active: s.active.Load(), Idle: s.cfg.Idle.String(), RSS: rss(), Trims: s.trimmed.Load(),
	}
}

func (s *Server) handle(conn *net.UnixConn) {
	defer conn.Close()
	if cred, err := PeerCred(conn); err != nil || int(cred.Uid) != os.Geteuid() {
		return // only this user's processes
	}
	// Of those, only the processes that may read and do what the engine
	// may: a client with fewer capabilities, or in another namespace
	// (mounts hiding a directory), would read through the engine what it
	// cannot read itself. It runs in-process. (Checked before the request
	// is acted on; the request is read first, so that the client, still
	// sending it, reads the answer rather than a reset.)
	peerErr := CheckPeer(conn, s.self)
	conn.SetReadDeadline(time.Now().Add(requestDeadline))
	req, fds, rest, err := readRequest(conn)
	conn.SetReadDeadline(time.Time{})
	if err != nil {
		closeFds(fds)
		return
	}
	if peerErr != nil {
		closeFds(fds)
		WriteFrame(conn, Reply{Fallback: "the client " + strings.TrimPrefix(peerErr.Error(), "engine: the peer ") + ": it runs in-process"})
		return
	}
	switch req.Op {
	case "status":
		closeFds(fds)
		WriteFrame(conn, Reply{Done: true, Status: s.status()})
	case "stop":
		closeFds(fds)
		st := s.status()
		s.shutdown()
		// Answer once the lock is free (the accept loop drains right
		// after the listener closes; the bound is only a safety net).
		select {
		case <-s.released:
		case <-time.After(5 * time.Second):
		}
		WriteFrame(conn, Reply{Done: true, Status: st})
	case "run":
		// Only runs keep the engine from going idle: not status polls,
		// nor connections it refused.
		s.touch()
		defer s.touch()
		s.runs.Add(1)
		s.active.Add(1)
		defer s.active.Add(-1)
		s.run(conn, req, fds, rest)
	default:
		closeFds(fds)
	}
}

// run serves one `wasmbox run` for the client on conn.
func (s *Server) run(conn *net.UnixConn, req Request, fds []int, rest io.Reader) {
	if req.Key != s.cfg.Key {
		closeFds(fds)
		WriteFrame(conn, Reply{Fallback: "an engine of another build"})
		return
	}
	if len(req.Args) == 0 || req.Args[0] != "run" {
		// Other commands (serve, mcp, engine serve) would live in the
		// engine for as long as their client does: never the engine's.
		closeFds(fds)
		WriteFrame(conn, Reply{Fallback: "only run is the engine's"})
		return
	}
	if len(fds) != 3 {
		closeFds(fds)
		return
	}
	stdin, err := pipeFile(fds[0], "stdin")
	if err != nil {
		closeFds(fds)
		return
	}
	defer stdin.Close()
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	var sigpipe atomic.Bool
	onEPIPE := func() {
		sigpipe.Store(true)
		cancel()
	}
	stdout, stderr := newOutput(fds[1], "stdout", onEPIPE), newOutput(fds[2], "stderr", onEPIPE)
	defer stdout.Close()
	defer stderr.Close()

	// The client cancels with a frame, or by going away: then nobody
	// reads the output, and closing it unblocks a write to a full pipe.
	go func() {
		for {
			var r Request
			if err := ReadFrame(rest, &r, MaxControlFrame); err != nil {
				cancel()
				stdout.Close()
				stderr.Close()
				return
			}
			if r.Cancel {
				cancel()
			}
		}
	}()

	var wmu sync.Mutex
	r := &Run{
		Args: req.Args, Dir: req.Dir, Env: req.Env, Stdin: stdin, Stdout: stdout, Stderr: stderr, s: s,
		reply: func(rep Reply) {
			wmu.Lock()
			defer wmu.Unlock()
			WriteFrame(conn, rep)
		},
	}
	defer func() {
		for _, f := range r.later {
			f()
		}
	}()
	var fallback string
	code := func() (code int) {
		defer func() {
			if p := recover(); p != nil {
				// One client's bug must not end the others' runs.
				fmt.Fprintf(os.Stderr, "engine: panic in a run: %v\n%s", p, debug.Stack())
				if r.accepted {
					fmt.Fprintf(stderr, "wasmbox: internal error: %v\n", p)
				}
				code = 1
			}
		}()
		code, fallback = s.cfg.Handler(ctx, r)
		return code
	}()
	if fallback != "" && !r.accepted {
		r.reply(Reply{Fallback: fallback})
		return
	}
	r.reply(Reply{Done: true, Exit: code, SIGPIPE: sigpipe.Load()})
}

// pipeFile adopts fd, which must be a pipe (the client's stdin pipe), as a
// non-blocking *os.File: closing it ends a read in progress.
func pipeFile(fd int, name string) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil, fmt.Errorf("engine: %s is not a pipe", name)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}
