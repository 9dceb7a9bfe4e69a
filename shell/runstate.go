package shell

import (
	"bytes"
	"context"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// runState is what one Run shares with every goroutine and child shell it
// starts: its context (cancelled with a cause when a limit is crossed), the
// counters behind Limits, the capped output streams, and the goroutines
// and temporary files to clean up at the end.
type runState struct {
	exited bool // the script ran the exit builtin
	ctx    context.Context
	cancel context.CancelCauseFunc
	lim    Limits

	commands atomic.Int64
	frames   atomic.Int64
	jobs     atomic.Int64
	// varsChecked is the runner and assigned bytes the last passing size
	// check saw, varsTotal the total it counted (see checkVars; under mu:
	// pipeline stages check at once).
	varsChecked [2]uint64
	varsTotal   int64

	stdout, stderr *capWriter

	wg       goGroup // goroutines the shell started for this Run
	mu       sync.Mutex
	tmpFiles []string
}

func (s *Shell) newRunState(ctx context.Context) *runState {
	ctx, cancel := context.WithCancelCause(ctx)
	rs := &runState{ctx: ctx, cancel: cancel, lim: s.lim}
	rs.stdout = newCapWriter(s.stdout, s.lim.MaxOutputBytes)
	rs.stderr = newCapWriter(s.stderr, s.lim.MaxOutputBytes)
	return rs
}

// fail stops the whole Run with err as the cause and returns err, so that
// a handler can both abort the Run and make its own runner fatal.
func (rs *runState) fail(err error) error {
	rs.cancel(err)
	return err
}

// stdinFile turns the configured stdin into the *os.File the interpreter
// requires. An *os.File is used as is (the interpreter and the read
// builtin cancel blocked reads with read deadlines). Any other reader is
// copied into a pipe by a goroutine; the returned func closes the read end,
// which ends the copy even when the script did not read everything. (A
// reader that blocks forever in Read keeps that goroutine until it
// returns; see CONTAINMENT.md.)
func (rs *runState) stdinFile(r io.Reader, pipe func() (*os.File, *os.File, error)) (*os.File, func()) {
	switch r := r.(type) {
	case nil:
		return nil, func() {}
	case *os.File:
		return r, func() {}
	}
	pr, pw, err := pipe()
	if err != nil {
		return nil, func() {}
	}
	go func() {
		io.Copy(pw, ctxReader{rs.ctx, r})
		pw.Close()
	}()
	return pr, func() { pr.Close() }
}

// ctxReader stops returning data once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// ErrOutputLimit is returned by writes to a Run's stdout or stderr once
// Limits.MaxOutputBytes has been written. It matches syscall.EPIPE: past
// the cap a writer sees what it would see on a closed pipe (a builtin
// ends with 141, as bash's would on SIGPIPE), and the script goes on.
var ErrOutputLimit error = outputLimitError{}

type outputLimitError struct{}

func (outputLimitError) Error() string        { return "output limit reached" }
func (outputLimitError) Is(target error) bool { return target == syscall.EPIPE }

// capWriter forwards at most max bytes to w, and fails every write after.
// It is safe for concurrent use (background jobs write concurrently).
type capWriter struct {
	mu        sync.Mutex
	w         io.Writer
	max, n    int64
	truncated bool
}

func newCapWriter(w io.Writer, max int64) *capWriter {
	if w == nil {
		w = io.Discard
	}
	return &capWriter{w: w, max: max}
}

func (c *capWriter) Write(p []byte) (int, error) {
	if isHookTrace(p) {
		return len(p), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - c.n
	if int64(len(p)) <= room {
		n, err := c.w.Write(p)
		c.n += int64(n)
		return n, err
	}
	c.truncated = true
	if room > 0 {
		n, _ := c.w.Write(p[:room])
		c.n += int64(n)
		return n, ErrOutputLimit
	}
	return 0, ErrOutputLimit
}

// lenWriter fails writes once the buffer it fills (a command
// substitution's) holds more than max bytes; it keeps a runaway command
// from growing host memory through $(...).
type lenWriter struct {
	w   io.Writer
	l   interface{ Len() int }
	max int64
	rs  *runState
}

func (l lenWriter) Write(p []byte) (int, error) {
	if int64(l.l.Len())+int64(len(p)) > l.max {
		return 0, l.rs.fail(&LimitError{Limit: "variable size", Max: l.max})
	}
	return l.w.Write(p)
}

// guardWriter returns w, wrapped so that it cannot grow an in-memory
// buffer (a command substitution) past the variable size limit.
func (rs *runState) guardWriter(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	if l, ok := unwrapWriter(w).(interface{ Len() int }); ok {
		return lenWriter{w: w, l: l, max: rs.lim.MaxVarBytes, rs: rs}
	}
	return w
}

// cancelReads makes blocked reads of r (if it is an *os.File) fail once
// ctx is done, by setting a read deadline in the past. The returned func
// undoes it, after waiting for the deadline to have been set if ctx was
// already done, so that a later reader does not inherit it.
func cancelReads(ctx context.Context, r io.Reader) func() {
	f, ok := r.(*os.File)
	if !ok {
		return func() {}
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		f.SetReadDeadline(time.Now())
		close(fired)
	})
	return func() {
		if !stop() {
			<-fired
			f.SetReadDeadline(time.Time{})
		}
	}
}

// isHookTrace reports an xtrace line (set -x) of a command the sanitizer
// added (loop checks, pipeline guards): the interpreter traces each line
// with one write, and the user never wrote these commands.
func isHookTrace(p []byte) bool {
	if len(p) < 3 || p[0] != '+' || p[len(p)-1] != '\n' {
		return false
	}
	line := bytes.TrimLeft(p[:len(p)-1], "+")
	if bytes.IndexByte(line, '\n') >= 0 && !bytes.HasPrefix(line, []byte(" "+guardCmd+" ")) {
		return false
	}
	return bytes.Equal(line, []byte(" "+checkCmd)) || bytes.HasPrefix(line, []byte(" "+guardCmd+" "))
}

// goGroup counts the goroutines a Run started. Unlike a sync.WaitGroup it
// may gain members while someone waits for it to drain: a background job
// of a finishing Run can still open a file (and start a copier) after
// finishRun began to wait.
type goGroup struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0, if someone waits
}

// Add adds d (which may be negative) to the count.
func (g *goGroup) Add(d int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n += d
	if g.n <= 0 && g.zero != nil {
		close(g.zero)
		g.zero = nil
	}
}

// Done is Add(-1).
func (g *goGroup) Done() { g.Add(-1) }

// Go runs f in a new goroutine counted by g.
func (g *goGroup) Go(f func()) {
	g.Add(1)
	go func() {
		defer g.Done()
		f()
	}()
}

// Idle returns a channel closed once the count is zero.
func (g *goGroup) Idle() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n <= 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	if g.zero == nil {
		g.zero = make(chan struct{})
	}
	return g.zero
}
