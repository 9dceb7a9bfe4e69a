package preview1

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"

	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi"
)

// Streams and sharing.
//
// Besides files and directories of the filesystem, a descriptor can refer
// to a host stream: the standard streams of Config, and what the host adds
// with AddStream — the ends of a pipe, the process handles of the runtime's
// process ABI. A guest that spawns a child (see the runtime's process ABI)
// lends it some of its descriptors as the child's standard streams: the
// child then reads and writes the same stream, or the same open file with
// its shared offset, as a forked Unix process would. The object behind a
// descriptor is closed when the last holder lets go: the descriptor
// (fd_close, fd_renumber over it, State.Close) and every child it was lent
// to.
//
// A stream descriptor may be non-blocking (FDFLAG_NONBLOCK, given by
// AddStream or set by the guest with fd_fdstat_set_flags): a read or write
// that would wait fails with EAGAIN, and the guest waits in poll_oneoff —
// on every stream that implements wasi.Waitable at once, without polling.
// That is how one guest with many goroutines (Go's netpoller) runs a
// pipeline whose stages are its own goroutines and spawned children: no
// host call of the guest ever blocks on one stream while another one is
// ready.

// object is what several holders share: a host stream or an open file.
type object struct {
	refs  atomic.Int32
	close func() error
	// mu serializes the operations of the holders on an open file (the
	// adapter's files are not safe for concurrent use); streams are.
	mu sync.Mutex
}

// release drops one reference and closes the object after the last one.
func (o *object) release() error {
	if o.refs.Add(-1) == 0 && o.close != nil {
		return o.close()
	}
	return nil
}

// close drops what the descriptor holds.
func (e *entry) close() experimentalsys.Errno {
	if e.obj != nil {
		if err := e.obj.release(); err != nil {
			return experimentalsys.EIO
		}
		return 0
	}
	if e.file != nil {
		return e.file.Close()
	}
	return 0
}

// lock serializes file operations with the children the file was lent to.
func (e *entry) lock() func() {
	if e.obj == nil || e.file == nil {
		return func() {}
	}
	e.obj.mu.Lock()
	return e.obj.mu.Unlock
}

// maxStreams bounds the host streams (pipe ends, process handles) one
// State holds at once, so that a guest cannot grow host memory by making
// pipes in a loop.
const maxStreams = 1024

// ErrTooManyStreams is returned by AddStream past maxStreams streams.
var ErrTooManyStreams = errors.New("preview1: too many open streams")

// AddStream puts a host stream at the lowest free descriptor and returns
// the descriptor. Exactly one of r and w is non-nil: the guest reads r or
// writes w. closeFn (may be nil) runs once neither this descriptor nor a
// child it was lent to refers to the stream any more. nonblock sets
// FDFLAG_NONBLOCK (see the package notes on streams); r and w then should
// implement TryRead or TryWrite and wasi.Waitable, as the ends of a
// wasi.NewPipe do. A write that fails with EPIPE gives the guest EPIPE.
func (s *State) AddStream(r io.Reader, w io.Writer, closeFn func() error, nonblock bool) (uint32, error) {
	if (r == nil) == (w == nil) {
		return 0, errors.New("preview1: AddStream needs a reader or a writer")
	}
	if s.streams.Load() >= maxStreams {
		return 0, ErrTooManyStreams
	}
	if s.free() < 0 {
		return 0, ErrnoMfile
	}
	// A character device that is not a terminal (see streamRights).
	e := &entry{ftype: filetypeCharDevice, quiet: true}
	rights := streamRights(nil)
	if r != nil {
		e.kind, e.r, e.base = kindReader, r, rights&^rightFdWrite
	} else {
		e.kind, e.w, e.base = kindWriter, w, rights&^rightFdRead
	}
	if nonblock {
		e.fdflags = fdflagNonblock
	}
	s.streams.Add(1)
	e.obj = &object{close: func() error {
		// The last holder may be a child's goroutine.
		s.streams.Add(-1)
		if closeFn != nil {
			return closeFn()
		}
		return nil
	}}
	e.obj.refs.Store(1)
	return s.insert(e), nil
}

// SetStream replaces the stream behind the stream descriptor fd (one of
// the standard streams, say, for the next call of a guest that lives
// across calls), keeping the descriptor's flags. Exactly one of r and w
// must be given, matching the descriptor's direction. The old stream is
// not closed: the host that set it owns it.
func (s *State) SetStream(fd uint32, r io.Reader, w io.Writer) error {
	e, errno := s.lookup(fd)
	if errno != 0 {
		return errno
	}
	switch {
	case e.kind == kindReader && r != nil && w == nil:
		e.r = r
	case e.kind == kindWriter && w != nil && r == nil:
		e.w = w
	default:
		return ErrnoBadf
	}
	if e.obj != nil {
		// Children keep the stream they were lent; the descriptor now
		// refers to a host-owned one.
		_ = e.obj.release()
		e.obj = nil
	}
	return nil
}

// SetQuietPipe sets what a write to the stream descriptor fd that fails
// with EPIPE (its reader is gone) does: with quiet false (the default for
// the standard streams of Config) the guest ends with status 141, as
// SIGPIPE ends a Unix process; with quiet true it gets EPIPE, as a
// process that ignores SIGPIPE does.
func (s *State) SetQuietPipe(fd uint32, quiet bool) error {
	e, errno := s.lookup(fd)
	if errno != 0 {
		return errno
	}
	if e.kind != kindWriter {
		return ErrnoBadf
	}
	e.quiet = quiet
	return nil
}

// SetNonblock sets or clears FDFLAG_NONBLOCK of the stream descriptor fd.
func (s *State) SetNonblock(fd uint32, on bool) error {
	e, errno := s.lookup(fd)
	if errno != 0 {
		return errno
	}
	if e.kind != kindReader && e.kind != kindWriter {
		return ErrnoBadf
	}
	if on {
		e.fdflags |= fdflagNonblock
	} else {
		e.fdflags &^= fdflagNonblock
	}
	return nil
}

// Streams returns how many host streams (AddStream) are open.
func (s *State) Streams() int { return int(s.streams.Load()) }

// share makes the descriptor's object shareable and takes a reference for
// the borrower.
func (e *entry) share() *object {
	if e.obj == nil {
		if e.file == nil {
			return nil // a host-owned standard stream: nothing to count
		}
		f := e.file
		e.obj = &object{close: func() error {
			if xe := f.Close(); xe != 0 {
				return xe
			}
			return nil
		}}
		e.obj.refs.Store(1)
	}
	e.obj.refs.Add(1)
	return e.obj
}

func releaser(o *object) func() {
	if o == nil {
		return func() {}
	}
	var once sync.Once
	return func() { once.Do(func() { _ = o.release() }) }
}

// LendReader returns what reading the descriptor fd gives, for a child
// the guest spawns to read as its standard input: the same stream, or the
// same open file (sharing its offset). release (call it once the child is
// done) drops the child's reference. A descriptor that cannot be read is
// EBADF, a directory EISDIR.
func (s *State) LendReader(fd uint32) (io.Reader, func(), error) {
	e, errno := s.lookup(fd)
	if errno != 0 {
		return nil, nil, errno
	}
	switch e.kind {
	case kindReader:
		o := e.share()
		return e.r, releaser(o), nil
	case kindFile:
		if need(e, rightFdRead) != 0 {
			return nil, nil, ErrnoBadf
		}
		o := e.share()
		return &lentFile{o: o, f: e.file, s: s}, releaser(o), nil
	case kindDir:
		return nil, nil, ErrnoIsdir
	}
	return nil, nil, ErrnoBadf
}

// LendWriter is LendReader for a child's standard output or error.
func (s *State) LendWriter(fd uint32) (io.Writer, func(), error) {
	e, errno := s.lookup(fd)
	if errno != 0 {
		return nil, nil, errno
	}
	switch e.kind {
	case kindWriter:
		o := e.share()
		return e.w, releaser(o), nil
	case kindFile:
		if need(e, rightFdWrite) != 0 {
			return nil, nil, ErrnoBadf
		}
		o := e.share()
		return &lentFile{o: o, f: e.file, s: s}, releaser(o), nil
	case kindDir:
		return nil, nil, ErrnoIsdir
	}
	return nil, nil, ErrnoBadf
}

// LendStream is LendReader or LendWriter of a descriptor above the
// standard streams, for a spawned child to inherit at the same number
// (Config.Inherited): a readable descriptor is lent for reading, a
// write-only one for writing. Directories are not lent (EISDIR).
func (s *State) LendStream(fd uint32) (Inherited, func(), error) {
	e, errno := s.lookup(fd)
	if errno != 0 {
		return Inherited{}, nil, errno
	}
	if e.kind == kindReader || e.kind == kindFile && need(e, rightFdRead) == 0 {
		r, rel, err := s.LendReader(fd)
		return Inherited{FD: fd, R: r}, rel, err
	}
	w, rel, err := s.LendWriter(fd)
	return Inherited{FD: fd, W: w}, rel, err
}

// LendableFDs returns the open descriptors from lo up to MaxInherited,
// in order, at most max of them: the ones a spawned child may inherit.
// Preopened directories are not among them.
func (s *State) LendableFDs(lo uint32, max int) []uint32 {
	var fds []uint32
	for fd := lo; int(fd) < len(s.files) && fd < MaxInherited && len(fds) < max; fd++ {
		if e := s.files[fd]; e != nil && e.preopen == "" && e.kind != kindDir {
			fds = append(fds, fd)
		}
	}
	return fds
}

// lentFile reads and writes an open file on behalf of a child, under the
// lock its other holders take.
type lentFile struct {
	o *object
	f experimentalsys.File
	s *State
}

func (l *lentFile) Read(p []byte) (int, error) {
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	n, xe := l.f.Read(p)
	if xe != 0 {
		return n, xe
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (l *lentFile) Write(p []byte) (int, error) {
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	written := 0
	for written < len(p) {
		n, xe := l.f.Write(p[written:])
		written += n
		if xe != 0 {
			if xe == experimentalsys.EIO {
				if last := l.s.tap.lastErr(); last != nil {
					return written, last
				}
			}
			return written, xe
		}
		if n == 0 {
			return written, io.ErrShortWrite
		}
	}
	return written, nil
}

// tryReader and tryWriter are the non-blocking calls of a stream (a
// wasi.PipeReader and PipeWriter have them).
type tryReader interface {
	TryRead(p []byte) (int, error)
}

type tryWriter interface {
	TryWrite(p []byte) (int, error)
}

// waitable returns the stream behind a descriptor as a wasi.Waitable.
func (e *entry) waitable() (wasi.Waitable, bool) {
	switch e.kind {
	case kindReader:
		w, ok := e.r.(wasi.Waitable)
		return w, ok
	case kindWriter:
		w, ok := e.w.(wasi.Waitable)
		return w, ok
	}
	return nil, false
}

// CloseFd closes the descriptor fd as fd_close does.
func (s *State) CloseFd(fd uint32) error {
	e, errno := s.lookup(fd)
	if errno != 0 {
		return errno
	}
	s.files[fd] = nil
	if xe := e.close(); xe != 0 {
		return xe
	}
	return nil
}

// StreamReader returns the stream behind the reading stream descriptor fd
// (the host's own object: a pipe's read end, a process handle).
func (s *State) StreamReader(fd uint32) (io.Reader, error) {
	e, errno := s.lookup(fd)
	if errno != 0 {
		return nil, errno
	}
	if e.kind != kindReader {
		return nil, ErrnoBadf
	}
	return e.r, nil
}

// ErrBusy is returned by SetFS while descriptors of the old filesystem
// are open.
var ErrBusy = errors.New("preview1: files of the filesystem are open")

// SetFS makes fsys the guest's root from now on, in place of Config.FS
// (for a guest that lives across calls and was started ahead of the
// filesystem it will work on). Only the standard streams, the preopen and
// host streams may be open: a descriptor of another file or directory of
// the old filesystem is ErrBusy. The preopen keeps its descriptor.
func (s *State) SetFS(fsys vfs.FS) error {
	if s.fs == nil || fsys == nil {
		return errors.New("preview1: SetFS on a state without a filesystem")
	}
	pre := -1
	for i, e := range s.files {
		switch {
		case e == nil, e.kind == kindReader, e.kind == kindWriter:
		case e.preopen != "":
			pre = i
		default:
			return ErrBusy
		}
	}
	tap := &tapFS{fs: fsys}
	newFS := wasi.NewFS(tap)
	if s.cfg.AbsoluteSymlinks {
		newFS = absSymlinkFS{FS: newFS, vfs: tap}
	}
	root, errno := newFS.OpenFile(".", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0)
	if errno != 0 {
		return fmt.Errorf("preview1: open the root of %s: %w", fsys.Name(), ErrnoOf(errno))
	}
	if pre >= 0 {
		_ = s.files[pre].close()
		s.files[pre].file, s.files[pre].dir = root, nil
	}
	s.cfg.FS, s.tap, s.fs = fsys, tap, newFS
	return nil
}
