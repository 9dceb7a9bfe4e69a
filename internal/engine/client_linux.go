package engine

import (
	"bufio"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// Env set to off (or 0, false, no) makes run work in-process.
	Env = "WASMBOX_ENGINE"
	// IdleEnv is how long a started engine waits for work before it
	// exits (a Go duration; default DefaultIdle).
	IdleEnv     = "WASMBOX_ENGINE_IDLE"
	DefaultIdle = 10 * time.Minute
	// TrimEnv is how long a started engine waits without a run before
	// it gives its memory back (Config.Trim; default DefaultTrim).
	TrimEnv     = "WASMBOX_ENGINE_TRIM"
	DefaultTrim = time.Minute
)

// ErrNotTaken: the engine did not take the run (a fallback reply, or it
// went away before it read or wrote anything).
var ErrNotTaken = errors.New("engine: run not taken")

// ErrNoEngine: no engine answers on the socket.
var ErrNoEngine = errors.New("no engine of this build is running")

// Key names the engine a client may use: one per build (the Go build ID
// of this executable, so that a rebuilt binary never talks to an engine
// of the old code), compilation cache, umask (the files a run creates
// on the host, in a rw mount, get the engine's: a process has one umask,
// and the engine inherits that of the client that starts it) and
// identity (Identity: a client with fewer capabilities, or in another
// namespace, does not even dial the engine of one with more; it starts
// its own, which inherits its identity). The engine checks the identity
// of each client again, on the connection.
func Key(cacheDir string) (string, error) {
	id, err := BuildID()
	if err != nil {
		return "", err
	}
	self, err := SelfIdentity()
	if err != nil {
		return "", err
	}
	h := sha256.Sum256([]byte(id + "\x00" + cacheDir + "\x00" + strconv.FormatInt(int64(currentUmask()), 8) + "\x00" + strings.Join(self.fields, "\x00")))
	return hex.EncodeToString(h[:8]), nil
}

// BuildID is the Go build ID of this executable.
func BuildID() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return goBuildID(exe)
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

// Dir returns the directory of this user's engine sockets, creating it:
// $XDG_RUNTIME_DIR/wasmbox, else $TMPDIR/wasmbox-UID. It must be a
// directory (not a symlink) owned by this user with no access for others:
// in a shared /tmp another user could have made it first.
func Dir() (string, error) {
	uid := os.Geteuid()
	dir := DirPath()
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	if err := CheckPrivateDir(dir, uid); err != nil {
		return "", err
	}
	return dir, nil
}

// CheckPrivateDir returns an error unless dir is a directory (not a
// symlink) of uid's that no other user may enter.
func CheckPrivateDir(dir string, uid int) error {
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

// Path is this build's engine socket for the cache directory, and the
// engine's key.
func Path(cache string) (sock, key string, err error) {
	if key, err = Key(cache); err != nil {
		return "", "", err
	}
	dir, err := Dir()
	if err != nil {
		return "", "", err
	}
	return filepath.Join(dir, "engine-"+key+".sock"), key, nil
}

// SocketFits reports whether a socket can be bound at sock (its path fits
// in sun_path).
func SocketFits(sock string) bool { return len(sock) < len(unix.RawSockaddrUnix{}.Path) }

// ErrPeer wraps the reason a client refused the process at the other
// end of the socket it dialed.
var ErrPeer = errors.New("engine: refused the process on the socket")

// Dial connects to the engine on sock and checks, on the connection, that
// the process listening is this user's: the path was checked (Dir), but
// whoever owns a directory above it can swap it between the check and
// the connect. On an error wrapping ErrPeer, nothing was sent: the caller
// runs the command itself and starts no engine.
func Dial(sock string) (*net.UnixConn, error) {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if err := checkEngine(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w %s: %v", ErrPeer, sock, err)
	}
	return conn, nil
}

// checkEngine returns an error unless the process at the other end of
// conn runs as this process's effective uid and has its identity (an
// engine that may read more than this process would read it for it; one
// that may read less would not run the command as this process would).
func checkEngine(conn *net.UnixConn) error {
	cred, err := PeerCred(conn)
	if err != nil {
		return err
	}
	if int(cred.Uid) != os.Geteuid() {
		return fmt.Errorf("it runs as uid %d, not %d", cred.Uid, os.Geteuid())
	}
	self, err := SelfIdentity()
	if err != nil {
		return err
	}
	return CheckPeer(conn, self)
}

// Submit sends req with the client's streams over conn and waits for the
// run's end, forwarding stdin once the engine takes the run and a cancel
// for each signal from sigs. ErrNotTaken means nothing was read or
// written: the caller runs the command itself.
func Submit(conn *net.UnixConn, req Request, stdin, stdout, stderr *os.File, sigs <-chan os.Signal) (Reply, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return Reply{}, ErrNotTaken
	}
	defer pw.Close()
	frame, err := AppendFrame(nil, req)
	if err != nil {
		pr.Close()
		return Reply{}, ErrNotTaken
	}
	rights := unix.UnixRights(int(pr.Fd()), int(stdout.Fd()), int(stderr.Fd()))
	// One sendmsg on a stream socket may take only part of a large frame
	// (the descriptors go with the first byte): send the rest.
	n, _, err := conn.WriteMsgUnix(frame, rights, nil)
	if err == nil && n < len(frame) {
		_, err = conn.Write(frame[n:])
	}
	pr.Close()
	if err != nil {
		return Reply{}, ErrNotTaken
	}
	replies := make(chan Reply)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReader(conn)
		for {
			var rep Reply
			if err := ReadFrame(r, &rep, MaxControlFrame); err != nil {
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
				return rep, ErrNotTaken
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
				return Reply{}, ErrNotTaken
			}
			return Reply{}, fmt.Errorf("engine: the run's connection ended: %v", err)
		case <-sigs:
			WriteFrame(conn, Request{Cancel: true})
		}
	}
}

// Op sends op (status, stop) to the engine on sock and returns its reply.
func Op(sock, op string) (Reply, error) {
	conn, err := Dial(sock)
	if errors.Is(err, ErrPeer) {
		return Reply{}, err
	}
	if err != nil {
		return Reply{}, ErrNoEngine
	}
	defer conn.Close()
	if err := WriteFrame(conn, Request{Op: op}); err != nil {
		return Reply{}, err
	}
	var rep Reply
	if err := ReadFrame(conn, &rep, MaxControlFrame); err != nil {
		return Reply{}, fmt.Errorf("engine: %w", err)
	}
	return rep, nil
}

// Spawn starts `EXE engine serve` for sock in a session of its own, its
// output going to sock.log. Of two clients starting one at once, one
// engine takes the socket's lock; the other exits (status 0). exited
// receives the engine's end, if it comes while this process lives.
func Spawn(sock, cache string) (exited <-chan error, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	idle := DefaultIdle.String()
	if v := os.Getenv(IdleEnv); v != "" {
		idle = v
	}
	logf, err := os.OpenFile(sock+".log", os.O_CREATE|os.O_WRONLY|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := []string{"engine", "serve", "--socket", sock, "--idle", idle, "--cachedir", cache}
	if v := os.Getenv(TrimEnv); v != "" {
		args = append(args, "--trim", v)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = "/"
	cmd.Env = Environ(os.Environ())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return done, nil
}

// Environ is the environment an engine starts with: what locates its
// files and tunes the Go runtime, not the rest of the starting client's
// environment (its secrets among them). Each run carries its client's
// environment in its request.
func Environ(env []string) []string {
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

// Wait dials sock until an engine answers or d passes, or the engine
// started for it (exited, may be nil) fails: it could not listen (the
// reason is in sock.log), and waiting longer is in vain.
func Wait(sock string, d time.Duration, exited <-chan error) (*net.UnixConn, error) {
	deadline := time.Now().Add(d)
	wait := time.Millisecond
	for {
		conn, err := Dial(sock)
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

// GoRunBinary reports whether exe is a binary the go command built for
// `go run`: NAME in an exe directory below a go-build*
// directory of $GOTMPDIR or the temporary directory. Such a binary starts
// no engine: each distinct build would leave one behind, for the idle
// time, after the go command has deleted the binary.
func GoRunBinary(exe string) bool {
	dir := filepath.Dir(exe)
	if filepath.Base(dir) != "exe" {
		return false
	}
	for _, root := range []string{os.Getenv("GOTMPDIR"), os.TempDir()} {
		if root == "" {
			continue
		}
		if r, err := filepath.EvalSymlinks(root); err == nil {
			root = r // os.Executable's path is the kernel's, symlinks resolved
		}
		rel, err := filepath.Rel(root, dir)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		first, _, _ := strings.Cut(rel, string(filepath.Separator))
		if strings.HasPrefix(first, "go-build") {
			return true
		}
	}
	return false
}
