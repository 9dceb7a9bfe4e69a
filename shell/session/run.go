package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/internal/budget"
	"github.com/wasmbox/wasmbox/wasi"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// What every live shell (this package's, and GNU bash's in
// shell/bashsession) does around a run: bind the run's streams to the
// instance, and turn an instance that ended during a call into the run's
// Result.

// EmptyInput is the standard input of a live shell between runs.
var EmptyInput io.Reader = eofReader{}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// BindRun makes stdin, stdout and stderr (nil: no input, discarded output)
// descriptors 0, 1 and 2 of a live shell's st for one run under ctx:
// stdin as something the guest can wait on without blocking (a Waitable
// stream as it is, else a pipe fed from it by a goroutine that stops when
// the run ends), stderr dropping what the guest writes once hit is set
// (its memory limit). unbind, called once the run is over with the
// shell's state if it is still live (nil when the instance was discarded),
// puts back empty input and discarded output.
func BindRun(ctx context.Context, st *preview1.State, stdin io.Reader, stdout, stderr io.Writer, hit *atomic.Bool) (unbind func(live *preview1.State)) {
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	in, stopIn := runInput(ctx, stdin)
	_ = st.SetStream(0, in, nil)
	_ = st.SetStream(1, nil, stdout)
	_ = st.SetStream(2, nil, stderrGuard{w: stderr, hit: hit})
	return func(live *preview1.State) {
		stopIn()
		if live != nil {
			_ = live.SetStream(0, EmptyInput, nil)
			_ = live.SetStream(1, nil, io.Discard)
			_ = live.SetStream(2, nil, io.Discard)
		}
	}
}

// stderrGuard drops what the guest writes to stderr once it hit its
// memory limit (a crash report: the Go runtime's "out of memory" trace)
// and ends it there.
type stderrGuard struct {
	w   io.Writer
	hit *atomic.Bool
}

func (g stderrGuard) Write(p []byte) (int, error) {
	if g.hit.Load() {
		return 0, context.Canceled
	}
	return g.w.Write(p)
}

func runInput(ctx context.Context, r io.Reader) (io.Reader, func()) {
	switch r.(type) {
	case nil:
		return EmptyInput, func() {}
	case wasi.Waitable:
		return r, func() {}
	}
	pr, pw := wasi.NewPipe(ctx)
	go func() {
		_, err := io.Copy(pw, r)
		pw.CloseWithError(err)
	}()
	return pr, func() { pr.Close() }
}

// CtxResult is the Result of a run that ctx's end (err) stopped.
func CtxResult(err error) Result {
	if errors.Is(err, context.DeadlineExceeded) {
		return Result{Code: 124, Err: err}
	}
	return Result{Code: 125, Err: err}
}

// HostLiner is a run's stderr that drops what the guest writes once the run
// has been killed (sandbox's): HostLines is where the live shell's own line
// about the run's end goes instead, so that it is not dropped with the
// guest's output when the kill and a limit come together.
type HostLiner interface {
	HostLines() io.Writer
}

// HostLines returns where the shell's own lines to stderr go: w's
// HostLines if w is a HostLiner, else w.
func HostLines(w io.Writer) io.Writer {
	if h, ok := w.(HostLiner); ok {
		return h.HostLines()
	}
	return w
}

// KilledResult turns the end of a live shell's instance during a run (err,
// from the call) into the run's Result, writing its one line to stderr:
// limit says the instance hit its memory limit (memoryLimit, or the budget
// in limitErr), then ctx's end, then the kill's exit code. exited, when
// not nil, decides the Result of any other exit of the guest (GNU bash
// ending itself); without it, or when it declines, that is an internal
// error.
func KilledResult(ctx context.Context, stderr io.Writer, err error, limit bool, limitErr error, memoryLimit uint64, exited func(code uint32) (Result, bool)) Result {
	stderr = HostLines(stderr)
	switch {
	case limit:
		var ee *budget.ExceededError
		if errors.As(limitErr, &ee) || errors.As(err, &ee) {
			fmt.Fprintf(stderr, "wasmbox: shell: %s memory budget (%s) exceeded\n", ee.Name, FormatSize(ee.Limit))
		} else {
			fmt.Fprintf(stderr, "wasmbox: shell memory limit (%s) exceeded\n", FormatSize(memoryLimit))
		}
		return Result{Code: 137, Err: ErrMemoryLimit}
	case ctx.Err() != nil:
		return CtxResult(ctx.Err())
	}
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		switch ee.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return CtxResult(context.DeadlineExceeded)
		case sys.ExitCodeContextCanceled:
			return CtxResult(context.Canceled)
		}
		if exited != nil {
			if r, ok := exited(ee.ExitCode()); ok {
				return r
			}
		}
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	fmt.Fprintf(stderr, "wasmbox: internal shell error: %v\n", msg)
	return Result{Code: 1, Err: fmt.Errorf("%w: %v", ErrInternal, err)}
}

// FormatSize renders n for messages: "256 MiB", "1536 KiB", "17 bytes".
func FormatSize(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
