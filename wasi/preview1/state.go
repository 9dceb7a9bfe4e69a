package preview1

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"
	"golang.org/x/term"

	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi"
)

// Config is what one guest run sees through wasi_snapshot_preview1. Zero
// fields take the defaults noted on each.
type Config struct {
	// FS is preopened as the guest's "/" (descriptor 3). Nil means no
	// filesystem at all: no preopen, descriptor 3 is free.
	FS vfs.FS
	// Args are the guest's argv, program name first. Env entries are
	// "KEY=value". Neither may contain a NUL byte.
	Args, Env []string
	// Stdin, Stdout and Stderr are descriptors 0, 1 and 2; nil means empty
	// input and discarded output. A Stdin that implements
	// experimental/sys.Pollable (a wasi.PipeReader does) is waited on by
	// poll_oneoff; other readers are reported ready. A read or write that
	// fails because the call's context is done ends the guest with
	// sys.ExitCodeContextCanceled or ExitCodeDeadlineExceeded; a write
	// whose reader is gone (an error wrapping syscall.EPIPE) ends it with
	// wasi.ExitCodeBrokenPipe (141), as SIGPIPE ends a Unix process.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Walltime reads the realtime clock (default time.Now).
	Walltime func() time.Time
	// Nanotime reads the monotonic clock in nanoseconds (default: time
	// since NewState).
	Nanotime func() int64
	// Rand fills random_get (default crypto/rand).
	Rand io.Reader
	// Sleep waits d or until ctx is done, reporting ctx.Err() then
	// (default wasi.Sleep). It serves poll_oneoff clock subscriptions,
	// which is how wasip1 programs sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// AbsoluteSymlinks lets the guest create symlinks with an absolute
	// target (resolved from the vfs root, so still inside the sandbox).
	// WASI forbids them (EPERM), so the default is off.
	AbsoluteSymlinks bool
	// Inherited are descriptors above the standard streams that the
	// guest's parent lent it (see State.LendStream), each at its number
	// (after the preopen, below MaxInherited), as a Unix child inherits
	// its parent's open descriptors: a shell's process substitution
	// (`diff <(a) <(b)` opens /dev/fd/63). Each has a reader or a writer.
	Inherited []Inherited
}

// Inherited is a descriptor a guest starts with, lent by its parent.
type Inherited struct {
	FD uint32
	R  io.Reader
	W  io.Writer
}

// MaxInherited bounds the descriptor numbers of Config.Inherited (and of
// the descriptors State.LendableFDs reports): a build/posix guest keeps
// its preopens from 960 up (build/posix/src/start.c).
const MaxInherited = 960

// ErrNUL is returned by NewState when an argument or environment entry
// contains a NUL byte (the guest could not tell where it ends).
var ErrNUL = errors.New("preview1: NUL byte in argument or environment")

// State is the per-run state of the host module: the descriptor table
// (with WASI rights), the preopen, stdio, args, environment, clocks and
// randomness. Create one per guest run with NewState, attach it to the
// context the guest runs under with WithState, and Close it when the run
// ends.
//
// A State belongs to one guest module at a time (wasip1 guests have one
// thread); it is not safe for concurrent use by several guests.
type State struct {
	cfg   Config
	tap   *tapFS
	fs    experimentalsys.FS
	files []*entry // indexed by fd; nil means free
	args  []string
	env   []string
	start time.Time
	// monoShift is added to every monotonic reading (ShiftMonotonic).
	monoShift int64
	// streams counts the open host streams of AddStream (atomic: a child
	// that holds the last reference releases it on its own goroutine).
	streams atomic.Int32
	// halt says whether the process tree the guest belongs to is being
	// ended (SetHalt); nil: never.
	halt func() error
}

// SetHalt makes every later host call of the guest (and of the children
// it forks: Fork copies it) end the guest when halt returns an error: a
// context error, whose kind (deadline or cancel) the exit code keeps. The
// runtime uses it so that a process tree ends as one: once its run has
// begun to stop it, a process that sees another one end (a child's status,
// a pipe's end) can no longer act on it, as under a SIGKILL of the whole
// process group; the cancel of each process's own context comes a moment
// later.
func (s *State) SetHalt(halt func() error) { s.halt = halt }

// ExitIfHalted ends the guest (see SetHalt) from inside a host call.
func (s *State) ExitIfHalted() {
	if s.halt == nil {
		return
	}
	if err := s.halt(); err != nil {
		exitFor(err)
	}
}

// ShiftMonotonic adds ns to every reading of the monotonic clock from now
// on. A guest started from a snapshot of another instance's memory (see
// runtime) keeps that instance's idea of the monotonic time; shifting the
// clock past the snapshot's last reading keeps it from running backwards.
func (s *State) ShiftMonotonic(ns int64) { s.monoShift += ns }

// nanotime reads the monotonic clock.
func (s *State) nanotime() int64 { return s.cfg.Nanotime() + s.monoShift }

type entryKind uint8

const (
	kindReader entryKind = iota // a host stream the guest reads: stdin, a pipe's read end, a process handle
	kindWriter                  // a host stream the guest writes: stdout, stderr, a pipe's write end
	kindFile
	kindDir
)

// entry is one open descriptor.
type entry struct {
	kind entryKind
	r    io.Reader // kindReader
	w    io.Writer // kindWriter
	// obj is the object behind the descriptor when other descriptors or
	// spawned children share it (see AddStream and LendReader); nil when
	// the descriptor alone owns what it refers to.
	obj *object
	// quiet: a write that fails with EPIPE gives the guest EPIPE instead
	// of ending it with status 141 (see SetQuietPipe).
	quiet   bool
	file    experimentalsys.File
	name    string // path from the root, "" for the root itself
	preopen string // the preopen's name, "" when not a preopen
	ftype   uint8
	base    uint64 // rights
	inh     uint64
	fdflags uint16 // the SYNC family and NONBLOCK, as the guest set them
	dir     *dirCache
}

// NewState checks cfg and returns a State with descriptors 0-2 (stdio) and
// 3 (cfg.FS preopened as "/", when given).
func NewState(cfg Config) (*State, error) {
	for _, s := range append(append([]string(nil), cfg.Args...), cfg.Env...) {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, fmt.Errorf("%w: %q", ErrNUL, s)
		}
	}
	st := &State{cfg: cfg, args: cfg.Args, env: cfg.Env, start: time.Now()}
	if st.cfg.Walltime == nil {
		st.cfg.Walltime = time.Now
	}
	if st.cfg.Nanotime == nil {
		start := st.start
		st.cfg.Nanotime = func() int64 { return int64(time.Since(start)) }
	}
	if st.cfg.Rand == nil {
		st.cfg.Rand = rand.Reader
	}
	if st.cfg.Sleep == nil {
		st.cfg.Sleep = wasi.Sleep
	}
	if st.cfg.Stdin == nil {
		st.cfg.Stdin = eofReader{}
	}
	if st.cfg.Stdout == nil {
		st.cfg.Stdout = io.Discard
	}
	if st.cfg.Stderr == nil {
		st.cfg.Stderr = io.Discard
	}
	st.tap = &tapFS{fs: cfg.FS}
	st.files = []*entry{
		{kind: kindReader, r: st.cfg.Stdin, ftype: filetypeCharDevice, base: streamRights(st.cfg.Stdin)},
		{kind: kindWriter, w: st.cfg.Stdout, ftype: filetypeCharDevice, base: streamRights(st.cfg.Stdout)},
		{kind: kindWriter, w: st.cfg.Stderr, ftype: filetypeCharDevice, base: streamRights(st.cfg.Stderr)},
	}
	if cfg.FS == nil {
		return st, st.inherit(cfg.Inherited)
	}
	st.fs = wasi.NewFS(st.tap)
	if cfg.AbsoluteSymlinks {
		st.fs = absSymlinkFS{FS: st.fs, vfs: st.tap}
	}
	root, errno := st.fs.OpenFile(".", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0)
	if errno != 0 {
		return nil, fmt.Errorf("preview1: open the root of %s: %w", cfg.FS.Name(), ErrnoOf(errno))
	}
	st.files = append(st.files, &entry{
		kind: kindDir, file: root, preopen: "/", ftype: filetypeDirectory,
		base: dirRights, inh: dirRights | fileRights,
	})
	return st, st.inherit(cfg.Inherited)
}

// inherit puts the lent descriptors at their numbers.
func (s *State) inherit(list []Inherited) error {
	for _, in := range list {
		if (in.R == nil) == (in.W == nil) {
			return fmt.Errorf("preview1: inherited descriptor %d needs a reader or a writer", in.FD)
		}
		if int(in.FD) < len(s.files) && s.files[in.FD] != nil || in.FD < 3 || in.FD >= MaxInherited {
			return fmt.Errorf("preview1: inherited descriptor %d is taken or out of range", in.FD)
		}
		e := &entry{ftype: filetypeCharDevice}
		if in.R != nil {
			e.kind, e.r, e.base = kindReader, in.R, streamRights(in.R)
		} else {
			e.kind, e.w, e.base = kindWriter, in.W, streamRights(in.W)
		}
		for uint32(len(s.files)) <= in.FD {
			s.files = append(s.files, nil)
		}
		s.files[in.FD] = e
	}
	return nil
}

// Close closes every descriptor the guest left open (objects lent to
// children stay open until those release them). It is idempotent.
func (s *State) Close() error {
	for i, e := range s.files {
		if e != nil {
			_ = e.close()
		}
		s.files[i] = nil
	}
	return nil
}

// OpenFiles returns how many descriptors are open (stdio and the preopen
// included), for tests and leak checks.
func (s *State) OpenFiles() int {
	n := 0
	for _, e := range s.files {
		if e != nil {
			n++
		}
	}
	return n
}

type stateKey struct{}

// WithState returns ctx carrying st. The host functions of Instantiate find
// their State in the context of the guest call: wazero hands a host
// function the context its exported function (such as "_start") was
// called with, and during instantiation the context of InstantiateModule.
// So either instantiate the guest with this context (start functions run
// then), or instantiate it with ModuleConfig.WithStartFunctions() and call
// "_start" with it.
func WithState(ctx context.Context, st *State) context.Context {
	return context.WithValue(ctx, stateKey{}, st)
}

// StateFrom returns the State WithState attached to ctx, or nil.
func StateFrom(ctx context.Context) *State {
	st, _ := ctx.Value(stateKey{}).(*State)
	return st
}

func (s *State) lookup(fd uint32) (*entry, Errno) {
	if uint64(fd) >= uint64(len(s.files)) || s.files[fd] == nil {
		return nil, ErrnoBadf
	}
	return s.files[fd], 0
}

// insert puts e at the lowest free descriptor.
func (s *State) insert(e *entry) uint32 {
	for i, f := range s.files {
		if f == nil {
			s.files[i] = e
			return uint32(i)
		}
	}
	s.files = append(s.files, e)
	return uint32(len(s.files) - 1)
}

// maxFiles bounds the descriptor table (EMFILE past it), so that a guest
// opening files in a loop cannot grow host memory without limit.
const maxFiles = 1 << 16

// errno maps an errno of the wasi adapter, looking through EIO to the
// precise vfs error recorded by the tap (ENOSPC, EFBIG, EXDEV, ...).
func (s *State) errno(e experimentalsys.Errno) Errno {
	if e == experimentalsys.EIO {
		if w := ErrnoOf(s.tap.lastErr()); w != ErrnoSuccess {
			return w
		}
	}
	return fromSys(e)
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// absSymlinkFS lets absolute symlink targets through (Config.AbsoluteSymlinks).
type absSymlinkFS struct {
	experimentalsys.FS
	vfs vfs.FS
}

func (a absSymlinkFS) Symlink(target, link string) experimentalsys.Errno {
	if strings.HasPrefix(target, "/") {
		err := a.vfs.SymlinkIfPossible(target, "/"+strings.TrimPrefix(link, "/"))
		if err == nil {
			return 0
		}
		return experimentalsys.EIO // the tap keeps the precise error
	}
	return a.FS.Symlink(target, link)
}

func yield() { runtime.Gosched() }

// streamRights are the rights of a host stream descriptor. Every stream is
// a character device to the guest (WASI has no pipe type; a Go guest
// takes an unknown type for a regular file, so that wc, for one, laid out
// a pipe's counts as a file's). A terminal is told apart as wasi-libc's
// and Rust's isatty do: a character device without the seek and tell
// rights. Only a terminal of the host lacks them; a pipe or a buffer has
// them, and seeking it is ESPIPE, as on a Unix pipe. (Every stream had
// been a terminal to them: python3 in a pipeline said sys.stdin.isatty()
// True, C tools prompted and line-buffered.)
func streamRights(stream any) uint64 {
	if f, ok := stream.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(f.Fd())) {
		return fileRights &^ (rightFdSeek | rightFdTell)
	}
	return fileRights
}
