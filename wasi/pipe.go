package wasi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"
)

// PipeCapacity is how many bytes a pipe buffers before Write blocks, as on
// Linux.
const PipeCapacity = 64 << 10

// ErrReadClosed is what Read returns on a PipeReader that was closed with
// Close (a CloseWithError error is returned instead when given).
var ErrReadClosed = errors.New("wasi: read on closed pipe")

// ErrWouldBlock is returned by the non-blocking calls (TryRead, TryWrite)
// when the call would have to wait. A WASI guest sees it as EAGAIN.
var ErrWouldBlock = errors.New("wasi: operation would block")

// NewPipe creates a bounded in-memory pipe for guest stdio and shell
// pipelines. Writes block while PipeCapacity bytes are buffered
// (back-pressure); Read returns what is buffered, blocking while the pipe is
// empty.
//
//   - After the writer closes, the reader drains the buffer and then gets
//     io.EOF (or the error given to PipeWriter.CloseWithError).
//   - After the reader closes, Write fails with an error that wraps
//     syscall.EPIPE (errors.Is(err, syscall.EPIPE)), and also the error given
//     to PipeReader.CloseWithError, if any.
//   - When ctx is done, every blocked or later Read and Write returns
//     ctx.Err() at once; data already buffered stays readable only until
//     then.
//
// Both ends also have non-blocking calls (TryRead, TryWrite) and implement
// Waitable, which is how a guest's poll_oneoff waits on many pipes at once
// without polling. The reader implements experimental/sys.Pollable, so
// wazero's poll_oneoff on a guest's stdin waits for data (or EOF, or ctx)
// instead of reporting "always ready". A pipe starts no goroutine, and its
// buffer is allocated on the first write; both ends are safe for
// concurrent use.
func NewPipe(ctx context.Context) (*PipeReader, *PipeWriter) {
	if ctx == nil {
		ctx = context.Background()
	}
	p := &pipe{
		ctx:       ctx,
		readable:  make(chan struct{}, 1),
		writeable: make(chan struct{}, 1),
		closed:    make(chan struct{}),
	}
	return &PipeReader{p}, &PipeWriter{p}
}

type pipe struct {
	ctx context.Context

	mu       sync.Mutex
	buf      []byte // ring buffer of PipeCapacity bytes, nil until the first write
	start, n int    // first buffered byte and count
	rerr     error  // set when the reader closed: what writers get
	rdone    error  // set when the reader closed: what later reads get
	werr     error  // set when the writer closed: what readers get once drained
	wakers   Wakers // poll_oneoff waiters, told of every change

	// readable and writeable carry one pending wake-up each (capacity 1),
	// sent after the state changed, so a waiter that checked the state
	// before sleeping never misses one. closed is closed when either end
	// closes.
	readable  chan struct{}
	writeable chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (p *pipe) closeSide() { p.closeOnce.Do(func() { close(p.closed) }) }

// tryRead reads what is buffered without waiting. It returns
// ErrWouldBlock when the pipe is empty and still open.
func (p *pipe) tryRead(b []byte) (int, error) {
	p.mu.Lock()
	if p.rdone != nil {
		p.mu.Unlock()
		return 0, p.rdone
	}
	if p.n > 0 {
		if len(b) == 0 {
			p.mu.Unlock()
			return 0, nil
		}
		n := 0
		for n < len(b) && p.n > 0 {
			end := min(p.start+p.n, len(p.buf))
			c := copy(b[n:], p.buf[p.start:end])
			n += c
			p.start = (p.start + c) % len(p.buf)
			p.n -= c
		}
		if p.n == 0 {
			p.start = 0
		} else {
			signal(p.readable) // more for another reader
		}
		p.mu.Unlock()
		signal(p.writeable)
		p.wakers.Wake()
		return n, nil
	}
	if p.werr != nil {
		err := p.werr
		p.mu.Unlock()
		return 0, err
	}
	p.mu.Unlock()
	if len(b) == 0 {
		return 0, nil
	}
	return 0, ErrWouldBlock
}

func (p *pipe) read(cctx context.Context, b []byte) (int, error) {
	var cdone <-chan struct{}
	if cctx != nil {
		cdone = cctx.Done()
	}
	for {
		if err := p.ctx.Err(); err != nil {
			return 0, err
		}
		if cctx != nil && cctx.Err() != nil {
			return 0, cctx.Err()
		}
		n, err := p.tryRead(b)
		if err != ErrWouldBlock {
			return n, err
		}
		select {
		case <-p.readable:
		case <-p.closed:
			// One side closed: the next iteration returns (data, EOF or
			// the close error), so this never spins.
		case <-p.ctx.Done():
			return 0, p.ctx.Err()
		case <-cdone:
			return 0, cctx.Err()
		}
	}
}

// tryWrite copies as much of b as fits, without waiting. It returns
// ErrWouldBlock when nothing fits.
func (p *pipe) tryWrite(b []byte) (int, error) {
	p.mu.Lock()
	if p.rerr != nil {
		err := p.rerr
		p.mu.Unlock()
		return 0, err
	}
	if p.werr != nil {
		p.mu.Unlock()
		return 0, &os.PathError{Op: "write", Path: "pipe", Err: os.ErrClosed}
	}
	if len(b) == 0 {
		p.mu.Unlock()
		return 0, nil
	}
	if p.buf == nil {
		p.buf = make([]byte, PipeCapacity)
	}
	written := 0
	for written < len(b) && p.n < len(p.buf) {
		end := p.start + p.n
		if end >= len(p.buf) {
			end -= len(p.buf)
		}
		limit := len(p.buf)
		if end < p.start {
			limit = p.start
		}
		c := copy(p.buf[end:limit], b[written:])
		written += c
		p.n += c
	}
	p.mu.Unlock()
	if written == 0 {
		return 0, ErrWouldBlock
	}
	signal(p.readable)
	p.wakers.Wake()
	return written, nil
}

func (p *pipe) write(cctx context.Context, b []byte) (int, error) {
	var cdone <-chan struct{}
	if cctx != nil {
		cdone = cctx.Done()
	}
	written := 0
	for {
		if err := p.ctx.Err(); err != nil {
			return written, err
		}
		if cctx != nil && cctx.Err() != nil {
			return written, cctx.Err()
		}
		n, err := p.tryWrite(b[written:])
		written += n
		if err != nil && err != ErrWouldBlock {
			return written, err
		}
		if written == len(b) {
			return written, nil
		}
		if err == ErrWouldBlock {
			select {
			case <-p.writeable:
			case <-p.closed:
				// One side closed: the next iteration reports it.
			case <-p.ctx.Done():
				return written, p.ctx.Err()
			case <-cdone:
				return written, cctx.Err()
			}
		}
	}
}

// readReady reports whether a read would return at once (data, EOF or an
// error).
func (p *pipe) readReady() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n > 0 || p.werr != nil || p.rerr != nil || p.ctx.Err() != nil
}

// writeReady reports whether a write would return at once (room, or an
// error).
func (p *pipe) writeReady() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n < PipeCapacity || p.werr != nil || p.rerr != nil || p.ctx.Err() != nil
}

// poll waits until a read would not block, up to timeout (negative: no
// limit).
func (p *pipe) poll(timeout time.Duration) (bool, experimentalsys.Errno) {
	ready := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.n > 0 || p.werr != nil || p.rerr != nil
	}
	if ready() {
		return true, 0
	}
	if timeout == 0 {
		return false, 0
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	for {
		select {
		case <-p.readable:
			if ready() {
				signal(p.readable) // leave the wake-up for the Read that follows
				return true, 0
			}
		case <-p.closed:
			return true, 0 // a read would return at once (EOF or error)
		case <-expired:
			return ready(), 0
		case <-p.ctx.Done():
			return false, experimentalsys.EINTR
		}
	}
}

// PipeReader is the read end of a pipe made by NewPipe.
type PipeReader struct{ p *pipe }

// Read implements io.Reader: it returns buffered bytes, blocks while the
// pipe is empty, and returns io.EOF once the writer closed and everything
// was read. It returns ctx.Err() as soon as the pipe's context is done.
func (r *PipeReader) Read(b []byte) (int, error) { return r.p.read(nil, b) }

// ReadContext is Read that also returns ctx.Err() as soon as ctx is done:
// a command started with a shorter deadline than the pipe's (timeout CMD,
// a spawned child) stops waiting at its own deadline.
func (r *PipeReader) ReadContext(ctx context.Context, b []byte) (int, error) { return r.p.read(ctx, b) }

// TryRead is Read without waiting: when the pipe is empty and its writer
// still open it returns ErrWouldBlock.
func (r *PipeReader) TryRead(b []byte) (int, error) {
	if err := r.p.ctx.Err(); err != nil {
		return 0, err
	}
	return r.p.tryRead(b)
}

// Ready implements Waitable: a read would not block (for write, false).
func (r *PipeReader) Ready(write bool) bool { return !write && r.p.readReady() }

// Wakers implements Waitable.
func (r *PipeReader) Wakers() *Wakers { return &r.p.wakers }

// Close closes the read end: writers get an error wrapping syscall.EPIPE.
// It is idempotent and never blocks.
func (r *PipeReader) Close() error { return r.CloseWithError(nil) }

// CloseWithError closes the read end; writers get an error wrapping both
// syscall.EPIPE and err (when err is non-nil). Later reads return err, or
// ErrReadClosed when err is nil.
func (r *PipeReader) CloseWithError(err error) error {
	p := r.p
	p.mu.Lock()
	if p.rerr == nil {
		if err == nil {
			p.rerr = &os.PathError{Op: "write", Path: "pipe", Err: syscall.EPIPE}
		} else {
			p.rerr = fmt.Errorf("write pipe: %w: %w", syscall.EPIPE, err)
		}
		p.rdone = err
		if err == nil {
			p.rdone = ErrReadClosed
		}
		p.n, p.start = 0, 0 // nobody will read it
		p.buf = nil
	}
	p.mu.Unlock()
	p.closeSide()
	signal(p.writeable)
	p.wakers.Wake()
	return nil
}

// Poll implements experimental/sys.Pollable for wazero's poll_oneoff: it
// reports whether a Read would return without blocking (data buffered, or
// the pipe closed), waiting up to timeoutMillis (negative: without limit)
// and returning EINTR when the pipe's context is done. Only POLLIN is
// supported.
func (r *PipeReader) Poll(flag experimentalsys.Pflag, timeoutMillis int32) (bool, experimentalsys.Errno) {
	if flag != experimentalsys.POLLIN {
		return false, experimentalsys.ENOTSUP
	}
	return r.p.poll(time.Duration(timeoutMillis) * time.Millisecond)
}

// Buffered returns how many bytes are waiting to be read.
func (r *PipeReader) Buffered() int {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	return r.p.n
}

var (
	_ experimentalsys.Pollable = (*PipeReader)(nil)
	_ Waitable                 = (*PipeReader)(nil)
	_ Waitable                 = (*PipeWriter)(nil)
)

// PipeWriter is the write end of a pipe made by NewPipe.
type PipeWriter struct{ p *pipe }

// Write implements io.Writer: it copies all of b into the pipe, blocking
// while the pipe is full. It returns how much was written and an error
// wrapping syscall.EPIPE if the reader closed, or ctx.Err() as soon as the
// pipe's context is done.
func (w *PipeWriter) Write(b []byte) (int, error) { return w.p.write(nil, b) }

// WriteContext is Write that also returns ctx.Err() as soon as ctx is
// done, with the number of bytes written before.
func (w *PipeWriter) WriteContext(ctx context.Context, b []byte) (int, error) {
	return w.p.write(ctx, b)
}

// TryWrite is Write without waiting: it copies what fits and returns
// ErrWouldBlock when nothing does.
func (w *PipeWriter) TryWrite(b []byte) (int, error) {
	if err := w.p.ctx.Err(); err != nil {
		return 0, err
	}
	return w.p.tryWrite(b)
}

// Ready implements Waitable: a write would not block (for read, false).
func (w *PipeWriter) Ready(write bool) bool { return write && w.p.writeReady() }

// Wakers implements Waitable.
func (w *PipeWriter) Wakers() *Wakers { return &w.p.wakers }

// Close closes the write end: the reader gets io.EOF after the buffered
// data. It is idempotent and never blocks.
func (w *PipeWriter) Close() error { return w.CloseWithError(nil) }

// CloseWithError closes the write end; the reader gets err (io.EOF when
// nil) after the buffered data.
func (w *PipeWriter) CloseWithError(err error) error {
	if err == nil {
		err = io.EOF
	}
	p := w.p
	p.mu.Lock()
	if p.werr == nil {
		p.werr = err
	}
	p.mu.Unlock()
	p.closeSide()
	signal(p.readable)
	p.wakers.Wake()
	return nil
}
