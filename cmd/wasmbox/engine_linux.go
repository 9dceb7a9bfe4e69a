package main

// The resident engine: `wasmbox run` hands its command line to a process of
// the same build and user that keeps the tool modules compiled and their
// snapshots taken, so that a warm run costs a process start and one round
// trip instead of loading 20 MB of modules (see `wasmbox engine --help`).
//
// The client passes its stdout and stderr as descriptors (SCM_RIGHTS), so
// the engine writes the run's output straight to them, in order, as the
// process itself would; stdin goes through a pipe the client fills from its
// own stdin once the engine has taken the run, as in-process runs read it.
// Each run is a new sandbox: nothing but compiled code is shared.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/sandbox"
)

func init() { subcommands = append(subcommands, newEngineCmd) }

const (
	// engineEnv set to off (or 0, false, no) makes run work in-process.
	engineEnv = "WASMBOX_ENGINE"
	// engineIdleEnv is how long a started engine waits for work before it
	// exits (a Go duration; default defaultEngineIdle).
	engineIdleEnv     = "WASMBOX_ENGINE_IDLE"
	defaultEngineIdle = 10 * time.Minute
	// maxEngineFrame bounds one protocol frame (a command line and an
	// environment: Linux's ARG_MAX is 2 MiB).
	maxEngineFrame = 8 << 20
	// maxControlFrame bounds the frames that follow: cancels from the
	// client, replies from the engine.
	maxControlFrame = 64 << 10
)

// engineRequest is the first frame a client sends, with its descriptors
// (stdin pipe, stdout, stderr) for Op "run". A later frame with Cancel
// set cancels the run (the client got SIGINT or SIGTERM); the client
// closing the connection cancels it too.
type engineRequest struct {
	Op     string   `json:"op"` // run, status, stop
	Key    string   `json:"key,omitempty"`
	Args   []string `json:"args,omitempty"`
	Dir    string   `json:"dir,omitempty"`
	Env    []string `json:"env,omitempty"`
	Cancel bool     `json:"cancel,omitempty"`
}

// engineReply is a frame the engine sends: Accept (the run is taken: fill
// stdin), or Fallback (run it yourself; nothing was read or written), then
// Done with the exit status.
type engineReply struct {
	Accept   bool          `json:"accept,omitempty"`
	Fallback string        `json:"fallback,omitempty"`
	Done     bool          `json:"done,omitempty"`
	Exit     int           `json:"exit"`
	SIGPIPE  bool          `json:"sigpipe,omitempty"`
	Status   *engineStatus `json:"status,omitempty"`
}

// engineStatus is what `wasmbox engine status` prints.
type engineStatus struct {
	PID     int       `json:"pid"`
	Key     string    `json:"key"`
	Socket  string    `json:"socket"`
	Started time.Time `json:"started"`
	Runs    int64     `json:"runs"`
	Active  int64     `json:"active"`
	Idle    string    `json:"idle_timeout"`
}

func writeFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	_, err = w.Write(append(buf, b...))
	return err
}

// readFrame reads a frame of at most max bytes into v. The buffer grows
// as the bytes arrive: a header alone, naming max bytes, costs nothing.
func readFrame(r io.Reader, v any, max uint32) error {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > max {
		return fmt.Errorf("engine: frame of %d bytes", n)
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err != nil {
		return err
	}
	if len(b) < int(n) {
		return io.ErrUnexpectedEOF
	}
	return json.Unmarshal(b, v)
}

// engineKey names the engine a client may use: one per build (the Go build
// ID of this executable, so that a rebuilt binary never talks to an engine
// of the old code), compilation cache and umask (the files a run creates
// on the host, in a rw mount, get the engine's: a process has one umask,
// and the engine inherits that of the client that starts it).
func engineKey(cacheDir string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	id, err := goBuildID(exe)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256([]byte(id + "\x00" + cacheDir + "\x00" + strconv.FormatInt(int64(currentUmask()), 8)))
	return hex.EncodeToString(h[:8]), nil
}

var umaskMu sync.Mutex

// currentUmask is the process's umask: the Umask line of
// /proc/self/status (Linux 4.7 and later), else read by setting it and
// back (the callers, at the start of a client or of an engine, create no
// file meanwhile).
func currentUmask() int {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if m, err := strconv.ParseInt(strings.TrimSpace(v), 8, 32); err == nil {
					return int(m)
				}
			}
		}
	}
	umaskMu.Lock()
	defer umaskMu.Unlock()
	m := unix.Umask(0o077)
	unix.Umask(m)
	return m
}

// goBuildID reads the Go build ID note of an ELF executable (what `go tool
// buildid` prints): a hash of the build's inputs, cheap to read.
func goBuildID(exe string) (string, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return "", errors.New("no Go build ID")
	}
	b, err := s.Data()
	if err != nil {
		return "", err
	}
	// namesz, descsz, type, "Go\x00\x00", desc.
	if len(b) < 16 || string(b[12:16]) != "Go\x00\x00" {
		return "", errors.New("bad Go build ID note")
	}
	n := f.ByteOrder.Uint32(b[4:8])
	if uint64(n) > uint64(len(b)-16) || n == 0 {
		return "", errors.New("bad Go build ID note")
	}
	return string(b[16 : 16+n]), nil
}

// engineDir returns the directory of this user's engine sockets, creating
// it: $XDG_RUNTIME_DIR/wasmbox, else $TMPDIR/wasmbox-UID. It must be a
// directory (not a symlink) owned by this user with no access for others:
// in a shared /tmp another user could have made it first.
func engineDir() (string, error) {
	uid := os.Geteuid()
	var dir string
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		dir = filepath.Join(x, "wasmbox")
	} else {
		dir = filepath.Join(os.TempDir(), "wasmbox-"+strconv.Itoa(uid))
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	if err := checkPrivateDir(dir, uid); err != nil {
		return "", err
	}
	return dir, nil
}

func checkPrivateDir(dir string, uid int) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("engine: %s is not a directory", dir)
	case int(st.Uid) != uid:
		return fmt.Errorf("engine: %s belongs to uid %d, not %d", dir, st.Uid, uid)
	case st.Mode&0o077 != 0:
		return fmt.Errorf("engine: %s is open to other users (mode %#o)", dir, st.Mode&0o777)
	}
	return nil
}

// defaultCacheDir is the runtime's default compilation cache directory.
func defaultCacheDir() string {
	if base, err := os.UserCacheDir(); err == nil {
		return filepath.Join(base, "wasmbox", "compile")
	}
	return ""
}

// viaEngine runs the command line args in this user's engine for this
// build, starting the engine if none runs. ok is false when the command is
// not the engine's (not run, WASMBOX_ENGINE=off, flags the engine leaves to
// the process: --native, --mcp-config, --cachedir) or the engine cannot be
// reached: the caller then runs it itself, as nothing was read or written.
func viaEngine(args []string, stdin, stdout, stderr *os.File) (code int, ok bool) {
	if len(args) == 0 || args[0] != "run" {
		return 0, false
	}
	switch os.Getenv(engineEnv) {
	case "0", "off", "false", "no":
		return 0, false
	}
	cache := defaultCacheDir()
	if cache == "" {
		return 0, false
	}
	sock, key, err := enginePath(cache)
	if err != nil {
		return 0, false
	}
	if len(sock) >= len(unix.RawSockaddrUnix{}.Path) {
		return 0, false // no engine could listen there
	}
	conn, err := dialEngine(sock)
	if err != nil {
		exited, err := spawnEngine(sock, cache)
		if err != nil {
			return 0, false
		}
		if conn, err = waitEngine(sock, 10*time.Second, exited); err != nil {
			return 0, false
		}
	}
	defer conn.Close()
	cwd, err := os.Getwd()
	if err != nil {
		return 0, false
	}
	req := engineRequest{Op: "run", Key: key, Args: args, Dir: cwd, Env: os.Environ()}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	res, err := engineRun(conn, req, stdin, stdout, stderr, sigs)
	switch {
	case errors.Is(err, errNotTaken):
		return 0, false
	case err != nil:
		fmt.Fprintf(stderr, "wasmbox: %v\n", err)
		return 1, true
	case res.SIGPIPE:
		// The engine met a closed pipe on our stdout or stderr, where
		// this process would have died of SIGPIPE.
		dieOfSignal(unix.SIGPIPE)
		return 128 + int(unix.SIGPIPE), true
	}
	return res.Exit, true
}

// dieOfSignal ends the process by sig with the default action, so that its
// parent sees the death by signal (not an exit status). Go's own handler
// ignores a SIGPIPE that no write to fd 1 or 2 raised, so the default
// action is put back first (as the runtime's dieFromSignal does).
func dieOfSignal(sig unix.Signal) {
	signal.Reset(sig)
	var sa struct { // the kernel's struct sigaction: SIG_DFL, no flags, empty mask
		handler, flags, restorer uintptr
		mask                     uint64
	}
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&sa)), 0, unsafe.Sizeof(sa.mask), 0, 0)
	unix.Kill(os.Getpid(), sig)
}

// errNotTaken: the engine did not take the run (a fallback reply, or it
// went away before it read or wrote anything).
var errNotTaken = errors.New("engine: run not taken")

// engineRun sends req with the client's streams over conn and waits for
// the run's end, forwarding stdin once the engine takes the run and a
// cancel for each signal from sigs.
func engineRun(conn *net.UnixConn, req engineRequest, stdin, stdout, stderr *os.File, sigs <-chan os.Signal) (engineReply, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return engineReply{}, errNotTaken
	}
	defer pw.Close()
	b, err := json.Marshal(req)
	if err != nil {
		pr.Close()
		return engineReply{}, errNotTaken
	}
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	frame = append(frame, b...)
	rights := unix.UnixRights(int(pr.Fd()), int(stdout.Fd()), int(stderr.Fd()))
	// One sendmsg on a stream socket may take only part of a large frame
	// (the descriptors go with the first byte): send the rest.
	n, _, err := conn.WriteMsgUnix(frame, rights, nil)
	if err == nil && n < len(frame) {
		_, err = conn.Write(frame[n:])
	}
	pr.Close()
	if err != nil {
		return engineReply{}, errNotTaken
	}
	replies := make(chan engineReply)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReader(conn)
		for {
			var rep engineReply
			if err := readFrame(r, &rep, maxControlFrame); err != nil {
				readErr <- err
				return
			}
			replies <- rep
			if rep.Done || rep.Fallback != "" {
				return
			}
		}
	}()
	accepted := false
	for {
		select {
		case rep := <-replies:
			switch {
			case rep.Fallback != "":
				return rep, errNotTaken
			case rep.Done:
				return rep, nil
			case rep.Accept && !accepted:
				accepted = true
				if stdin != nil {
					go func() {
						io.Copy(pw, stdin)
						pw.Close()
					}()
				} else {
					pw.Close()
				}
			}
		case err := <-readErr:
			if !accepted {
				return engineReply{}, errNotTaken
			}
			return engineReply{}, fmt.Errorf("engine: the run's connection ended: %v", err)
		case <-sigs:
			writeFrame(conn, engineRequest{Cancel: true})
		}
	}
}

func dialEngine(sock string) (*net.UnixConn, error) {
	return net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
}

// spawnEngine starts `wasmbox engine serve` for sock in a session of its
// own, its output going to sock.log. Of two clients starting one at once,
// one engine takes the socket's lock; the other exits (status 0). exited
// receives the engine's end, if it comes while this process lives.
func spawnEngine(sock, cache string) (exited <-chan error, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	idle := defaultEngineIdle.String()
	if v := os.Getenv(engineIdleEnv); v != "" {
		idle = v
	}
	logf, err := os.OpenFile(sock+".log", os.O_CREATE|os.O_WRONLY|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(exe, "engine", "serve", "--socket", sock, "--idle", idle, "--cachedir", cache)
	cmd.Dir = "/"
	cmd.Env = engineEnviron(os.Environ())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return done, nil
}

// engineEnviron is the environment an engine starts with: what locates
// its files and tunes the Go runtime, not the rest of the starting
// client's environment (its secrets among them). Each run carries its
// client's environment in its request.
func engineEnviron(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH", k == "HOME", k == "TMPDIR", k == "USER", k == "LOGNAME",
			strings.HasPrefix(k, "XDG_"), strings.HasPrefix(k, "WASMBOX_"),
			k == "GODEBUG", k == "GOGC", k == "GOMEMLIMIT", k == "GOMAXPROCS", k == "GOTRACEBACK":
			out = append(out, kv)
		}
	}
	return out
}

// waitEngine dials sock until an engine answers or d passes, or the engine
// started for it (exited, may be nil) fails: it could not listen (the
// reason is in sock.log), and waiting longer is in vain.
func waitEngine(sock string, d time.Duration, exited <-chan error) (*net.UnixConn, error) {
	deadline := time.Now().Add(d)
	wait := time.Millisecond
	for {
		conn, err := dialEngine(sock)
		if err == nil || time.Now().After(deadline) {
			return conn, err
		}
		select {
		case err := <-exited:
			if err != nil {
				return nil, fmt.Errorf("engine: %v (see %s.log)", err, sock)
			}
			exited = nil // another engine has the socket: wait for it
		case <-time.After(wait):
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}

// engineServer is a running `wasmbox engine serve`.
type engineServer struct {
	key, sock string
	cacheDir  string
	noCache   bool
	idle      time.Duration
	started   time.Time

	ctx context.Context // cancelled by SIGINT or SIGTERM: cancels every run

	engOnce sync.Once
	engDone chan struct{}
	eng     *sandbox.Engine
	engErr  error

	runs, active atomic.Int64
	mu           sync.Mutex
	lastActive   time.Time
	wg           sync.WaitGroup
	stopping     chan struct{}
	stopOnce     sync.Once
}

// sandboxEngine returns the engine's sandbox engine, waiting for its
// compile (started at serve) or ctx.
func (s *engineServer) sandboxEngine(ctx context.Context) (*sandbox.Engine, error) {
	s.engOnce.Do(func() {
		go func() {
			defer close(s.engDone)
			s.eng, s.engErr = sandbox.NewEngine(s.ctx, runtime.Config{CacheDir: s.cacheDir, DisableCache: s.noCache})
			if s.engErr != nil {
				// The runs waiting get the error (as an in-process run
				// would); the next run starts a new engine, which tries
				// again, instead of this one failing every run until
				// it is idle.
				fmt.Fprintf(os.Stderr, "engine: %v\n", s.engErr)
				s.shutdown()
			}
		}()
	})
	select {
	case <-s.engDone:
		return s.eng, s.engErr
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (s *engineServer) touch() {
	s.mu.Lock()
	s.lastActive = time.Now()
	s.mu.Unlock()
}

// serve accepts clients on ln until ctx ends, a stop request, or idle time
// without a run.
func (s *engineServer) serve(ln *net.UnixListener) error {
	s.touch()
	go s.sandboxEngine(s.ctx) // compile while the first client connects
	go func() {
		t := time.NewTicker(min(s.idle/4+time.Millisecond, 10*time.Second))
		defer t.Stop()
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
				if s.active.Load() == 0 && idle >= s.idle {
					s.shutdown()
					return
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
				s.wg.Wait()
				select {
				case <-s.engDone:
					if s.eng != nil {
						s.eng.Close(context.Background())
					}
				default: // still compiling: the process exit ends it
				}
				return nil
			default:
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
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

// shutdown stops accepting; runs in flight finish (or end with s.ctx).
func (s *engineServer) shutdown() {
	s.stopOnce.Do(func() { close(s.stopping) })
}

// peerUID is the uid of the process at the other end of conn.
func peerUID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, cerr
	}
	return int(cred.Uid), nil
}

// readRequest reads the first frame and the descriptors sent with it.
func readRequest(conn *net.UnixConn) (engineRequest, []int, io.Reader, error) {
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
	var req engineRequest
	if err != nil {
		return req, fds, nil, err
	}
	if flags&unix.MSG_CTRUNC != 0 {
		return req, fds, nil, errors.New("engine: descriptors truncated")
	}
	r := io.MultiReader(bytes.NewReader(buf[:n]), conn)
	if err := readFrame(r, &req, maxEngineFrame); err != nil {
		return req, fds, nil, err
	}
	return req, fds, r, nil
}

func closeFds(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

func (s *engineServer) handle(conn *net.UnixConn) {
	defer conn.Close()
	if uid, err := peerUID(conn); err != nil || uid != os.Geteuid() {
		return // only this user's processes
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	req, fds, rest, err := readRequest(conn)
	conn.SetReadDeadline(time.Time{})
	if err != nil {
		closeFds(fds)
		return
	}
	switch req.Op {
	case "status":
		closeFds(fds)
		writeFrame(conn, engineReply{Done: true, Status: &engineStatus{
			PID: os.Getpid(), Key: s.key, Socket: s.sock, Started: s.started,
			Runs: s.runs.Load(), Active: s.active.Load(), Idle: s.idle.String(),
		}})
	case "stop":
		closeFds(fds)
		s.shutdown()
		writeFrame(conn, engineReply{Done: true})
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
func (s *engineServer) run(conn *net.UnixConn, req engineRequest, fds []int, rest io.Reader) {
	if req.Key != s.key {
		closeFds(fds)
		writeFrame(conn, engineReply{Fallback: "an engine of another build"})
		return
	}
	if len(req.Args) == 0 || req.Args[0] != "run" {
		// Other commands (serve, mcp, engine serve) would live in the
		// engine for as long as their client does: never the engine's.
		closeFds(fds)
		writeFrame(conn, engineReply{Fallback: "only run is the engine's"})
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
	stdout, stderr := newEngineOut(fds[1], "stdout", onEPIPE), newEngineOut(fds[2], "stderr", onEPIPE)
	defer stdout.Close()
	defer stderr.Close()

	// The client cancels with a frame, or by going away: then nobody
	// reads the output, and closing it unblocks a write to a full pipe.
	go func() {
		for {
			var r engineRequest
			if err := readFrame(rest, &r, maxControlFrame); err != nil {
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
	reply := func(r engineReply) {
		wmu.Lock()
		defer wmu.Unlock()
		writeFrame(conn, r)
	}
	var after []func()
	defer func() {
		for _, f := range after {
			f()
		}
	}()
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, cwd: req.Dir, environ: req.Env, shared: s.sandboxEngine,
		later: func(f func()) { after = append(after, f) }}
	var fallback string
	a.admit = func(cmd *cobra.Command, f *sandboxFlags) error {
		switch {
		case len(f.native) > 0 || f.unjailed:
			fallback = "--native runs host programs: they belong to the calling process"
		case f.mcpConfig != "":
			fallback = "--mcp-config starts host programs: they belong to the calling process"
		case a.cacheDir != "" || a.noCache || a.cacheMax != "":
			fallback = "--cachedir, --nocache and --cachemax choose another runtime"
		}
		if fallback != "" {
			return errFallback{fallback}
		}
		reply(engineReply{Accept: true})
		return nil
	}
	code := func() (code int) {
		defer func() {
			if p := recover(); p != nil {
				// One client's bug must not end the others' runs.
				fmt.Fprintf(os.Stderr, "engine: panic in a run: %v\n", p)
				fmt.Fprintf(stderr, "wasmbox: internal error: %v\n", p)
				code = 1
			}
		}()
		return a.main(ctx, req.Args)
	}()
	if fallback != "" {
		reply(engineReply{Fallback: fallback})
		return
	}
	reply(engineReply{Done: true, Exit: code, SIGPIPE: sigpipe.Load()})
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

// engineOut is the client's stdout or stderr in the engine. A write there
// must end when the run does (the client went away) even if nobody reads:
// a pipe or a terminal is reopened through /proc/self/fd as a description
// of its own, made non-blocking, so that closing it ends a write blocked
// on a full buffer, without changing the client's description (which its
// shell shares); a socket, which cannot be reopened, is written with
// MSG_DONTWAIT, waiting in poll for room or for Close. Any other file is
// used as the client's process would (a regular file shares its offset).
// A write meeting EPIPE calls onEPIPE: where the process would have died
// of SIGPIPE.
type engineOut struct {
	f       *os.File
	fd      uintptr // for isatty; Fd() would make f blocking again
	name    string
	onEPIPE func()
	once    sync.Once

	// A socket's: writes hold mu; Close closes stop[1] to wake them.
	sock   bool
	mu     sync.Mutex
	closed bool
	stop   [2]int
}

func newEngineOut(fd int, name string, onEPIPE func()) *engineOut {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		reopen := false
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFIFO:
			reopen = true
		case unix.S_IFCHR:
			_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
			reopen = err == nil // a terminal
		case unix.S_IFSOCK:
			o := &engineOut{f: os.NewFile(uintptr(fd), name), fd: uintptr(fd), name: name, onEPIPE: onEPIPE, sock: true}
			if unix.Pipe2(o.stop[:], unix.O_CLOEXEC) == nil {
				return o
			}
			o.sock = false
			return o
		}
		if reopen {
			// O_NOCTTY: the engine, a session leader, must not take a
			// client's terminal as its own.
			nfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
			switch {
			case err == nil:
				unix.Close(fd)
				return &engineOut{f: os.NewFile(uintptr(nfd), name), fd: uintptr(nfd), name: name, onEPIPE: onEPIPE}
			case errors.Is(err, unix.ENXIO):
				// A pipe without reader: writes meet EPIPE, as the
				// process's would.
			}
		}
	}
	return &engineOut{f: os.NewFile(uintptr(fd), name), fd: uintptr(fd), name: name, onEPIPE: onEPIPE}
}

func (o *engineOut) Write(p []byte) (int, error) {
	var n int
	var err error
	if o.sock {
		n, err = o.send(p)
	} else {
		n, err = o.f.Write(p)
	}
	if errors.Is(err, syscall.EPIPE) {
		o.onEPIPE()
	}
	return n, err
}

// send writes p to the socket, waiting for room until Close.
func (o *engineOut) send(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for n < len(p) {
		if o.closed {
			return n, os.ErrClosed
		}
		m, err := unix.SendmsgN(int(o.fd), p[n:], nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
		n += max(m, 0)
		switch err {
		case nil, unix.EINTR:
		case unix.EAGAIN:
			pfd := []unix.PollFd{{Fd: int32(o.fd), Events: unix.POLLOUT}, {Fd: int32(o.stop[0]), Events: unix.POLLIN}}
			if _, err := unix.Poll(pfd, -1); err != nil && err != unix.EINTR {
				return n, &os.PathError{Op: "write", Path: o.name, Err: err}
			}
			if pfd[1].Revents != 0 {
				return n, os.ErrClosed
			}
		default:
			return n, &os.PathError{Op: "write", Path: o.name, Err: err}
		}
	}
	return n, nil
}

func (o *engineOut) Fd() uintptr                { return o.fd }
func (o *engineOut) Stat() (os.FileInfo, error) { return o.f.Stat() }
func (o *engineOut) Close() error {
	var err error
	o.once.Do(func() {
		if o.sock {
			unix.Close(o.stop[1]) // wakes a send waiting in poll
			o.mu.Lock()
			o.closed = true
			err = o.f.Close()
			unix.Close(o.stop[0])
			o.mu.Unlock()
			return
		}
		err = o.f.Close()
	})
	return err
}

// serveEngine runs an engine on sock until it is stopped or idle.
func serveEngine(ctx context.Context, sock, cacheDir string, noCache bool, idle time.Duration) error {
	if err := checkPrivateDir(filepath.Dir(sock), os.Geteuid()); err != nil {
		return err
	}
	key, err := engineKey(cacheDir)
	if err != nil {
		return err
	}
	lock, err := os.OpenFile(sock+".lock", os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return errEngineRunning
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
	s := &engineServer{
		key: key, sock: sock, cacheDir: cacheDir, noCache: noCache, idle: idle, started: time.Now(),
		ctx: ctx, engDone: make(chan struct{}), stopping: make(chan struct{}),
	}
	return s.serve(ln)
}

var errEngineRunning = errors.New("an engine already serves this socket")

func newEngineCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "The resident engine that makes warm `wasmbox run` fast",
		Long: `wasmbox run hands its command line to a resident engine of the same build,
user and umask, started on first use: the engine keeps the tools compiled, and
every run is still a new sandbox. The engine listens on a socket in
$XDG_RUNTIME_DIR/wasmbox (else $TMPDIR/wasmbox-UID), a directory only
its user may enter, accepts only its user's processes, and exits after
10 minutes without a run (WASMBOX_ENGINE_IDLE=30s changes that).

The run's work is done, and its CPU and memory counted, in the engine:
set WASMBOX_ENGINE=off to run in the wasmbox process itself (for a
cgroup, ulimit or nice of its own). Runs with --native or --mcp-config,
which start host programs, always run in the wasmbox process.`,
	}
	var (
		sock string
		idle time.Duration
	)
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Run an engine in the foreground (wasmbox run starts one itself)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if idle <= 0 {
				return fmt.Errorf("--idle must be positive, got %v", idle)
			}
			cache := a.cacheDir
			if cache == "" {
				cache = defaultCacheDir()
			}
			if sock == "" {
				p, _, err := enginePath(cache)
				if err != nil {
					return a.fail(err)
				}
				sock = p
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			sandbox.KeepHostResponsive()
			err := serveEngine(ctx, sock, cache, a.noCache, idle)
			if errors.Is(err, errEngineRunning) {
				return nil
			}
			if err != nil {
				return a.fail(err)
			}
			return nil
		},
	}
	serve.Flags().StringVar(&sock, "socket", "", "the socket to listen on (default: this build's, in the engine directory)")
	serve.Flags().DurationVar(&idle, "idle", defaultEngineIdle, "exit after this long without a run")
	status := &cobra.Command{
		Use:   "status",
		Short: "Print the running engine of this build as JSON, or exit 1",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := engineCall(a, "status")
			if err != nil {
				return a.fail(err)
			}
			enc := json.NewEncoder(a.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(rep.Status)
		},
	}
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop the engine of this build once its runs end",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := engineCall(a, "stop"); err != nil && !errors.Is(err, errNoEngine) {
				return a.fail(err)
			}
			return nil
		},
	}
	cmd.AddCommand(serve, status, stop)
	return cmd
}

var errNoEngine = errors.New("no engine of this build is running")

// enginePath is this build's engine socket for the cache directory, and
// the engine's key.
func enginePath(cache string) (sock, key string, err error) {
	if key, err = engineKey(cache); err != nil {
		return "", "", err
	}
	dir, err := engineDir()
	if err != nil {
		return "", "", err
	}
	return filepath.Join(dir, "engine-"+key+".sock"), key, nil
}

// engineCall sends op to this build's engine and returns its reply.
func engineCall(a *app, op string) (engineReply, error) {
	cache := a.cacheDir
	if cache == "" {
		cache = defaultCacheDir()
	}
	sock, _, err := enginePath(cache)
	if err != nil {
		return engineReply{}, err
	}
	return engineOp(sock, op)
}

// engineOp sends op (status, stop) to the engine on sock.
func engineOp(sock, op string) (engineReply, error) {
	conn, err := dialEngine(sock)
	if err != nil {
		return engineReply{}, errNoEngine
	}
	defer conn.Close()
	if err := writeFrame(conn, engineRequest{Op: op}); err != nil {
		return engineReply{}, err
	}
	var rep engineReply
	if err := readFrame(conn, &rep, maxControlFrame); err != nil {
		return engineReply{}, fmt.Errorf("engine: %w", err)
	}
	return rep, nil
}
