package preview1

import (
	"context"
	"io"
	"sync"

	"github.com/wasmbox/wasmbox/wasi"
)

// Forks and duplicated descriptors.
//
// A guest that forks (the runtime's ForkABI) gets a copy of its State for
// the child: the same arguments, environment, clocks and filesystem, and a
// descriptor table in which every descriptor refers to what the parent's
// does, as after fork(2): the same stream, or the same open file with one
// offset between them (its open file description). Dup and Dup2 make a
// second descriptor of the same kind in one State, as dup(2) and dup2(2)
// do. The object behind shared descriptors is closed when its last holder
// lets go (see the notes on streams and sharing). The descriptor flags
// (FDFLAG_NONBLOCK, the append and sync family) belong to each
// descriptor, not to the shared object.

// dup returns a new descriptor entry for what e refers to.
func (e *entry) dup() *entry {
	n := *e
	n.obj = e.share() // nil for a host-owned standard stream
	n.dir = nil       // a listing of its own
	return &n
}

// Fork returns a State for a forked child of the guest: see the notes on
// forks above. Close it when the child ends; it does not close what the
// parent still holds.
func (s *State) Fork() *State {
	c := &State{cfg: s.cfg, args: s.args, env: s.env, start: s.start, monoShift: s.monoShift, halt: s.halt}
	c.tap = &tapFS{fs: s.cfg.FS}
	if s.fs != nil {
		c.fs = wasi.NewFS(c.tap)
		if s.cfg.AbsoluteSymlinks {
			c.fs = absSymlinkFS{FS: c.fs, vfs: c.tap}
		}
	}
	c.files = make([]*entry, len(s.files))
	for i, e := range s.files {
		if e == nil {
			continue
		}
		if e.kind == kindWriter && e.obj == nil {
			// A standard stream of the host (Config.Stdout, say, a
			// bytes.Buffer): from now on the parent and the child
			// write it from goroutines of their own, one write at a
			// time.
			e.w = lockWriter(e.w)
		}
		c.files[i] = e.dup()
	}
	return c
}

// lockWriter returns w wrapped in a lockedWriter (once), keeping what
// poll_oneoff and non-blocking writes need of it.
func lockWriter(w io.Writer) io.Writer {
	switch w.(type) {
	case *lockedWriter, *lockedWaitable:
		return w
	}
	lw := &lockedWriter{w: w}
	if wt, ok := w.(wasi.Waitable); ok {
		return &lockedWaitable{lockedWriter: lw, wt: wt}
	}
	return lw
}

// lockedWaitable is a lockedWriter of a wasi.Waitable stream (a pipe's
// write end).
type lockedWaitable struct {
	*lockedWriter
	wt wasi.Waitable
}

func (l *lockedWaitable) Ready(write bool) bool { return l.wt.Ready(write) }
func (l *lockedWaitable) Wakers() *wasi.Wakers  { return l.wt.Wakers() }

// TryWrite is the stream's TryWrite under the lock; a stream without one
// is written as it is (the write may wait).
func (l *lockedWaitable) TryWrite(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if tw, ok := l.w.(tryWriter); ok {
		return tw.TryWrite(b)
	}
	return l.w.Write(b)
}

// lockedWriter serializes the writes of processes that share a writer of
// the host.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) WriteContext(ctx context.Context, b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cw, ok := l.w.(contextWriter); ok {
		return cw.WriteContext(ctx, b)
	}
	return l.w.Write(b)
}

// Dup puts a second descriptor of fd at the lowest free descriptor not
// below min, as fcntl(F_DUPFD) does: EBADF for a descriptor that is not
// open, EINVAL for a min past the table's bound, EMFILE when the table is
// full.
func (s *State) Dup(fd, min uint32) (uint32, error) {
	e, errno := s.lookup(fd)
	if errno != 0 {
		return 0, errno
	}
	if min >= maxFiles {
		return 0, ErrnoInval
	}
	for i := int(min); i < len(s.files); i++ {
		if s.files[i] == nil {
			s.files[i] = e.dup()
			return uint32(i), nil
		}
	}
	if len(s.files) >= maxFiles {
		return 0, ErrnoMfile
	}
	for uint32(len(s.files)) < min {
		s.files = append(s.files, nil)
	}
	s.files = append(s.files, e.dup())
	return uint32(len(s.files) - 1), nil
}

// Dup2 makes newfd a second descriptor of oldfd, closing what newfd held
// first, as dup2(2) does: EBADF for an oldfd that is not open or a newfd
// past the table's bound. Dup2 of a descriptor onto itself does nothing.
func (s *State) Dup2(oldfd, newfd uint32) error {
	e, errno := s.lookup(oldfd)
	if errno != 0 {
		return errno
	}
	if newfd >= maxFiles {
		return ErrnoBadf
	}
	if oldfd == newfd {
		return nil
	}
	n := e.dup()
	for uint32(len(s.files)) <= newfd {
		s.files = append(s.files, nil)
	}
	if old := s.files[newfd]; old != nil {
		_ = old.close()
	}
	s.files[newfd] = n
	return nil
}

// contextReader and contextWriter are streams whose blocking calls end
// with the guest's context (a wasi.PipeReader and PipeWriter, the
// runtime's process handles): a guest blocked on one is killed with its
// run.
type contextReader interface {
	ReadContext(ctx context.Context, b []byte) (int, error)
}

type contextWriter interface {
	WriteContext(ctx context.Context, b []byte) (int, error)
}
