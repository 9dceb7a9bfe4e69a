package wasi

import (
	"context"
	"errors"
	"io"
	"syscall"

	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"
)

// exitIfDone ends the calling guest when ctx is done. It must only be
// called from inside a wazero host call (a sleep, a stdio read or write):
// wazero recovers a *sys.ExitError panic there and ends the run with it,
// exactly as proc_exit does.
//
// Returning an error to the guest instead is not enough: wazero closes a
// module on ctx.Done() from another goroutine, and a guest that gets EIO
// from a read (or a sleep cut short) may run to a clean exit 0 before that
// close lands, so a cancelled run would look successful. With the panic the
// run always ends with exit code sys.ExitCodeContextCanceled or
// sys.ExitCodeDeadlineExceeded, and errors.Is(err, context.Canceled) (or
// context.DeadlineExceeded) holds for the error InstantiateModule returns.
func exitIfDone(ctx context.Context) {
	switch ctx.Err() {
	case nil:
		return
	case context.DeadlineExceeded:
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	default:
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	}
}

// guestReader is the guest's stdin: the caller's reader, ending the run
// when a read or poll fails because ctx is done.
type guestReader struct {
	ctx context.Context
	r   io.Reader
}

func (g *guestReader) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF && n == 0 && isCtxErr(err) {
		exitIfDone(g.ctx)
	}
	return n, err
}

// Poll implements experimental/sys.Pollable: it asks the underlying reader
// when it can (a PipeReader can), and otherwise reports "ready" as wazero
// does for readers without poll support.
func (g *guestReader) Poll(flag experimentalsys.Pflag, timeoutMillis int32) (bool, experimentalsys.Errno) {
	p, ok := g.r.(experimentalsys.Pollable)
	if !ok {
		if flag != experimentalsys.POLLIN {
			return false, experimentalsys.ENOTSUP
		}
		return true, 0
	}
	ready, errno := p.Poll(flag, timeoutMillis)
	if errno == experimentalsys.EINTR {
		exitIfDone(g.ctx)
	}
	return ready, errno
}

// guestWriter is the guest's stdout or stderr: the caller's writer, ending
// the run when a write fails because ctx is done.
type guestWriter struct {
	ctx context.Context
	w   io.Writer
}

func (g *guestWriter) Write(p []byte) (int, error) {
	n, err := g.w.Write(p)
	if err != nil {
		if isCtxErr(err) {
			exitIfDone(g.ctx)
		}
		if errors.Is(err, syscall.EPIPE) {
			// The reader is gone: end the guest as SIGPIPE ends a Unix
			// process writing to a closed pipe, so `yes | head -1` stops
			// instead of spinning on write errors.
			panic(sys.NewExitError(ExitCodeBrokenPipe))
		}
	}
	return n, err
}

// ExitCodeBrokenPipe is the exit code of a guest whose stdout or stderr
// (given through Options) lost its reader: 128+SIGPIPE, what a shell
// reports for a process killed by SIGPIPE.
const ExitCodeBrokenPipe = 141

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
