package engine

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Output is the client's stdout or stderr in the engine. A write there
// must end when the run does (the client went away) even if nobody reads:
// a pipe or a terminal is reopened through /proc/self/fd as a description
// of its own, made non-blocking, so that closing it ends a write blocked
// on a full buffer, without changing the client's description (which its
// shell shares); a socket, which cannot be reopened, is written with
// MSG_DONTWAIT, waiting in poll for room or for Close. Any other file is
// used as the client's process would (a regular file shares its offset).
// A write meeting EPIPE calls onEPIPE: where the process would have died
// of SIGPIPE.
type Output struct {
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

func newOutput(fd int, name string, onEPIPE func()) *Output {
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
			o := &Output{f: os.NewFile(uintptr(fd), name), fd: uintptr(fd), name: name, onEPIPE: onEPIPE, sock: true}
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
				return &Output{f: os.NewFile(uintptr(nfd), name), fd: uintptr(nfd), name: name, onEPIPE: onEPIPE}
			case errors.Is(err, unix.ENXIO):
				// A pipe without reader: writes meet EPIPE, as the
				// process's would.
			}
		}
	}
	return &Output{f: os.NewFile(uintptr(fd), name), fd: uintptr(fd), name: name, onEPIPE: onEPIPE}
}

func (o *Output) Write(p []byte) (int, error) {
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
func (o *Output) send(p []byte) (int, error) {
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

func (o *Output) Fd() uintptr                { return o.fd }
func (o *Output) Stat() (os.FileInfo, error) { return o.f.Stat() }
func (o *Output) Close() error {
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
