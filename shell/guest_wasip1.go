//go:build wasip1

package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/afero"

	"github.com/wasmbox/wasmbox/internal/guest"
	"github.com/wasmbox/wasmbox/shell/wire"
)

// The shell inside WebAssembly.
//
// shell.wasm (tools/shell) is this package built for wasip1. The sandbox
// filesystem is the guest's root through WASI, so the shell's FS is the
// operating system's (os.Open...) with the modes and owners WASI lacks
// read from the host (internal/guest.Stat); commands start through the
// host's process ABI (guest.Start), with pipes that are host pipes
// (guest.Pipe). A pipe end, an open file or a standard stream is handed to
// a command by its descriptor: the command reads and writes it directly,
// and the shell copies only what must come back into its own memory (a
// command substitution's output).

// GuestFS is the filesystem of shell.wasm: the guest's own, through WASI.
type GuestFS struct{}

func (GuestFS) Open(name string) (afero.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (GuestFS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	created := false
	if flag&os.O_CREATE != 0 && perm.Perm() != 0o644 {
		// WASI creates files 0644 (umask 022); a new file asked for
		// with other bits gets them from the host afterwards.
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			created = true
		}
	}
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if created {
		_ = guest.Chmod(name, uint32(perm.Perm()), true)
	}
	return f, nil
}

func (g GuestFS) Stat(name string) (os.FileInfo, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	return withMeta(name, fi, true), nil
}

func (g GuestFS) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return nil, true, err
	}
	return withMeta(name, fi, false), true, nil
}

func (GuestFS) ReadlinkIfPossible(name string) (string, error) { return os.Readlink(name) }

func (GuestFS) Remove(name string) error { return os.Remove(name) }

// metaInfo is a FileInfo with the mode bits and owner of the host.
type metaInfo struct {
	fs.FileInfo
	mode fs.FileMode
	sys  guestSys
}

func (m metaInfo) Mode() fs.FileMode { return m.mode }
func (m metaInfo) Sys() any          { return m.sys }

// guestSys implements interp.FileSys.
type guestSys struct {
	uid, gid uint32
	dev, ino uint64
	atime    time.Time
}

func (g guestSys) Owner() (uid, gid uint32)  { return g.uid, g.gid }
func (g guestSys) DevIno() (dev, ino uint64) { return g.dev, g.ino }
func (g guestSys) AccessTime() time.Time     { return g.atime }

func withMeta(name string, fi fs.FileInfo, follow bool) fs.FileInfo {
	sys := guestSys{atime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		sys.dev, sys.ino = st.Dev, st.Ino
		sys.atime = time.Unix(0, int64(st.Atime))
	}
	mode := fi.Mode()
	if m, err := guest.Stat(name, follow); err == nil {
		mode = mode&^(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) | fs.FileMode(m.Mode&0o777)
		if m.Mode&0o4000 != 0 {
			mode |= fs.ModeSetuid
		}
		if m.Mode&0o2000 != 0 {
			mode |= fs.ModeSetgid
		}
		if m.Mode&0o1000 != 0 {
			mode |= fs.ModeSticky
		}
		sys.uid, sys.gid = m.Uid, m.Gid
	}
	return metaInfo{FileInfo: fi, mode: mode, sys: sys}
}

// GuestExecutor runs the shell's commands through the host's process ABI.
type GuestExecutor struct {
	// Commands answers `command -v` for names without a file on PATH.
	Commands map[string]string
}

// Resolve implements Resolver.
func (g *GuestExecutor) Resolve(name string) (string, bool) {
	p, ok := g.Commands[name]
	return p, ok
}

// fileOf returns the *os.File under w, looking through the shell's own
// writers that add nothing to what a command writes.
func fileOf(w io.Writer) (*os.File, bool) {
	for {
		switch x := w.(type) {
		case *os.File:
			return x, true
		case *fwdWriter:
			if x.w == nil {
				return nil, false
			}
			w = x.w
		case *capWriter:
			if x.max < 1<<62-1 {
				return nil, false // the cap is the shell's to enforce
			}
			w = x.w
		default:
			return nil, false
		}
	}
}

func readerFileOf(r io.Reader) (*os.File, bool) {
	switch x := r.(type) {
	case *os.File:
		return x, true
	case readerFile:
		return readerFileOf(x.r)
	}
	return nil, false
}

// Exec implements Executor.
func (g *GuestExecutor) Exec(ctx context.Context, c Command) (int, error) {
	req := guest.Spawn{Argv: c.Argv, Env: c.Env, Dir: c.Dir, Stdin: -1, Stdout: -1, Stderr: -1}
	if req.Env == nil {
		req.Env = []string{}
	}
	var (
		lent   []*os.File // our descriptors of pipe ends the child holds
		copies sync.WaitGroup
		fail   = func(err error) (int, error) {
			for _, f := range lent {
				f.Close()
			}
			return 126, err
		}
	)
	if c.Stdin != nil {
		if f, ok := readerFileOf(c.Stdin); ok {
			fd, err := guest.Fd(f)
			if err != nil {
				return fail(err)
			}
			req.Stdin = fd
		} else {
			r, w, err := guest.Pipe()
			if err != nil {
				return fail(err)
			}
			lent = append(lent, r)
			req.Stdin, _ = guest.Fd(r)
			src := c.Stdin
			copies.Add(1)
			go func() {
				defer copies.Done()
				io.Copy(w, ctxReader{ctx, src})
				w.Close()
			}()
		}
	}
	for i, out := range []io.Writer{c.Stdout, c.Stderr} {
		fd := -1
		switch f, ok := fileOf(out); {
		case out == nil:
		case ok:
			d, err := guest.Fd(f)
			if err != nil {
				return fail(err)
			}
			fd = d
		default:
			r, w, err := guest.Pipe()
			if err != nil {
				return fail(err)
			}
			lent = append(lent, w)
			fd, _ = guest.Fd(w)
			dst := out
			copies.Add(1)
			go func() {
				defer copies.Done()
				_, err := io.Copy(dst, r)
				if err != nil {
					// The reader is gone (a full $(...), a cap): the
					// child gets EPIPE, as from a closed pipe.
					r.Close()
					return
				}
				r.Close()
			}()
		}
		if i == 0 {
			req.Stdout = fd
		} else {
			req.Stderr = fd
		}
	}
	p, err := guest.Start(req)
	for _, f := range lent {
		f.Close() // the child holds its own reference
	}
	if err != nil {
		copies.Wait()
		if errors.Is(err, syscall.EAGAIN) {
			fmt.Fprintf(orDiscard(c.Stderr), "bash: %s: too many processes\n", c.Argv[0])
			return 126, nil
		}
		return 126, err
	}
	stop := context.AfterFunc(ctx, func() { p.Kill(9) })
	status, cause, werr := p.Wait()
	stop()
	copies.Wait()
	if werr != nil {
		return 126, werr
	}
	switch cause {
	case guest.CauseNotFound:
		return 127, ErrNotFound
	case guest.CauseTimeout, guest.CauseCancelled:
		if err := ctx.Err(); err != nil {
			return int(status), err
		}
	}
	return int(status), nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// The session: shell.wasm's one live shell (see tools/shell and
// shell/wire).
var session struct {
	sh    *Shell
	stdin *os.File
	state []byte   // the last state the host was given
	key   StateKey // the state's key when it was given
}

// SessionCall serves one call of the session export: op and the length
// of its input (see wire). It returns a WASI errno.
func SessionCall(op, inLen uint32) uint32 {
	in, err := guest.Input(inLen)
	if err != nil {
		return 28
	}
	switch op {
	case wire.OpInit:
		if err := sessionInit(in); err != nil {
			guest.Output([]byte(err.Error()))
			return 28
		}
	case wire.OpRun:
		if session.sh == nil {
			return 8
		}
		if err := guest.Output(sessionRun(string(in))); err != nil {
			return 22
		}
	case wire.OpState:
		if session.sh == nil {
			return 8
		}
		b, err := stateBinary()
		if err != nil {
			guest.Output([]byte(err.Error()))
			return 29
		}
		session.state = b
		if err := guest.Output(b); err != nil {
			return 22
		}
	case wire.OpRestore:
		if session.sh == nil {
			return 8
		}
		st, err := wire.DecodeBinaryState(in)
		if err != nil {
			guest.Output([]byte(err.Error()))
			return 28
		}
		if err := session.sh.Restore(st); err != nil {
			guest.Output([]byte(err.Error()))
			return 28
		}
		session.state = nil
	default:
		return 28
	}
	return 0
}

func sessionInit(in []byte) error {
	var ini wire.Init
	if err := json.Unmarshal(in, &ini); err != nil {
		return err
	}
	// The host made descriptor 0 non-blocking: a read of the run's
	// input parks the goroutine, not the whole guest.
	session.stdin = os.NewFile(0, "/dev/stdin")
	uid, gid := ini.UID, ini.GID
	sh, err := New(Config{
		FS:       GuestFS{},
		Executor: &GuestExecutor{Commands: ini.Commands},
		Env:      ini.Env,
		Dir:      ini.Dir,
		Stdin:    session.stdin,
		Stdout:   os.Stdout,
		Stderr:   os.Stderr,
		Limits: Limits{
			MaxScriptBytes: ini.MaxScriptBytes,
			MaxVarBytes:    ini.MaxVarBytes,
			MaxOutputBytes: -1, // the host caps the streams
			MaxCommands:    ini.MaxCommands,
			MaxDepth:       ini.MaxDepth,
			MaxJobs:        ini.MaxJobs,
			// The shell's memory limit bounds every expansion.
			MaxBraceElems: -1,
		},
		Seed: ini.Seed,
		UID:  &uid,
		GID:  &gid,
		PID:  ini.PID,
		PPID: ini.PPID,
		Pipe: guest.Pipe,
		// The host discards the instance after a limit and restores
		// the session's state from before the run.
		Disposable: true,
	})
	if err != nil {
		return err
	}
	if len(ini.State) > 0 {
		st, err := wire.DecodeBinaryState(ini.State)
		if err != nil {
			return err
		}
		if err := sh.Restore(st); err != nil {
			return err
		}
	}
	session.sh = sh
	session.state = nil
	return nil
}

func stateBinary() ([]byte, error) {
	key := session.sh.StateKey()
	st, err := session.sh.Snapshot()
	if err != nil {
		return nil, err
	}
	session.key = key
	return wire.AppendState(nil, st), nil
}

func sessionRun(script string) []byte {
	code, err := session.sh.Run(context.Background(), script)
	st := session.sh.Stats()
	res := wire.RunResult{Code: int32(code), Commands: st.Commands, Dir: session.sh.Dir()}
	if st.Exited {
		res.Flags |= wire.FlagExited
	}
	var le *LimitError
	switch {
	case errors.As(err, &le):
		res.Flags |= wire.FlagLimit
		res.Limit = le.Limit
	case errors.Is(err, ErrInternal):
		res.Flags |= wire.FlagInternal
	}
	// The state goes to the host when it changed: it is what the session
	// returns to if a later run is killed.
	if session.state != nil && session.sh.StateKey() == session.key {
		return wire.EncodeRunOutput(res, nil)
	}
	b, serr := stateBinary()
	if serr == nil && string(b) != string(session.state) {
		session.state = b
		return wire.EncodeRunOutput(res, b)
	}
	return wire.EncodeRunOutput(res, nil)
}

// CommandMain is `sh`/`bash` run as a command (the executor's, for the
// children tools spawn: xargs sh -c, find -exec bash): a shell on its own
// for one command line, with the command's arguments, environment,
// directory and standard streams.
func CommandMain(args, env []string, dir string) int {
	if len(args) == 0 {
		args = []string{"sh"}
	}
	if dir == "" || !path.IsAbs(dir) {
		dir = "/"
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		dir = "/"
	}
	sh, err := New(Config{
		FS:       GuestFS{},
		Executor: &GuestExecutor{},
		Env:      env,
		Dir:      dir,
		Stdin:    os.Stdin,
		Stdout:   os.Stdout,
		Stderr:   os.Stderr,
		Limits:   Limits{MaxOutputBytes: -1, MaxBraceElems: -1},
		Pipe:     guest.Pipe,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", path.Base(args[0]), err)
		return 126
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = quote(a)
	}
	code, err := sh.Run(context.Background(), strings.Join(quoted, " "))
	if err != nil && code == 0 {
		code = 1
	}
	return code
}

// init warms up, in the module's snapshot (the runtime takes it right after
// the package inits), what every session would otherwise set up on its
// first call: encoding/json's caches of the wire types, the parser, the
// interpreter's lazily built tables, a shell's first run and snapshot.
// Each session then starts from that memory instead of paying for it.
func init() {
	var ini wire.Init
	if b, err := json.Marshal(wire.Init{Env: []string{"A=1"}, Dir: "/", Commands: map[string]string{"a": "/a"}}); err == nil {
		json.Unmarshal(b, &ini)
	}
	sh, err := New(Config{FS: GuestFS{}, Executor: &GuestExecutor{}, Env: []string{"HOME=/", "PATH=/bin"}, Dir: "/",
		Limits: Limits{MaxOutputBytes: -1, MaxBraceElems: -1}, Pipe: guest.Pipe, Disposable: true})
	if err != nil {
		return
	}
	sh.Run(context.Background(), `x=1; a=(1 2); declare -A m=([k]=v); f() { local y="$1"; echo "${y:-z}${#a[@]}" > /dev/null; }
f "$x"; for i in 1 2; do (( x += i )); done; [[ $x == 4 && -d / ]] && x=$(echo "$x"); set -o pipefail; alias q=:; q
g() { while read -r l; do echo "$l"; done; }; f a | g | g > /dev/null; y=$(f b | g); echo c | { read -r z; }
while [ "$x" -lt 6 ]; do x=$((x+1)); done; case $y in b) : ;; esac; printf '%s\n' "$y" > /dev/null`)
	if st, err := sh.Snapshot(); err == nil {
		wire.DecodeBinaryState(wire.AppendState(nil, st))
	}
}
