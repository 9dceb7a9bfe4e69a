package executor

import (
	"context"
	"io"

	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"
)

// A spawned child shares its parent's streams, which were made with the
// parent's context: a child killed by its own timeout must not stay
// blocked in them. These wrappers bind a stream to the child's context.

// ContextReader is implemented by streams whose blocking reads can be
// bounded by another context than their own.
type ContextReader interface {
	ReadContext(ctx context.Context, p []byte) (int, error)
}

// ContextWriter is the writing counterpart of ContextReader.
type ContextWriter interface {
	WriteContext(ctx context.Context, p []byte) (int, error)
}

// pollSlice is how long a bound reader waits on a Pollable stream before
// checking its context again.
const pollSlice = 10 // milliseconds

// bindReader returns r bound to ctx: through ReadContext when r has it,
// else by polling in slices of pollSlice when r is Pollable (e.g. a
// wasi.PipeReader), else r itself (a reader that never blocks, such as a
// bytes.Reader, needs nothing).
func bindReader(ctx context.Context, r io.Reader) io.Reader {
	switch r.(type) {
	case ContextReader:
		return &ctxReader{ctx: ctx, r: r}
	case experimentalsys.Pollable:
		return &pollReader{ctx: ctx, r: r}
	}
	return r
}

// bindWriter returns w bound to ctx when w has WriteContext, else w.
func bindWriter(ctx context.Context, w io.Writer) io.Writer {
	if cw, ok := w.(ContextWriter); ok {
		return &ctxWriter{ctx: ctx, w: cw}
	}
	return w
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	return c.r.(ContextReader).ReadContext(c.ctx, p)
}

// Poll keeps poll_oneoff working when the stream supports it.
func (c *ctxReader) Poll(flag experimentalsys.Pflag, timeoutMillis int32) (bool, experimentalsys.Errno) {
	return pollBound(c.ctx, c.r, flag, timeoutMillis)
}

type pollReader struct {
	ctx context.Context
	r   io.Reader
}

func (p *pollReader) Read(b []byte) (int, error) {
	pr := p.r.(experimentalsys.Pollable)
	for len(b) > 0 {
		if err := p.ctx.Err(); err != nil {
			return 0, err
		}
		ready, errno := pr.Poll(experimentalsys.POLLIN, pollSlice)
		if ready || errno != 0 {
			break
		}
	}
	return p.r.Read(b)
}

func (p *pollReader) Poll(flag experimentalsys.Pflag, timeoutMillis int32) (bool, experimentalsys.Errno) {
	return pollBound(p.ctx, p.r, flag, timeoutMillis)
}

// pollBound polls r (if Pollable) in slices, reporting ready once ctx is
// done so that the Read that follows returns the context's error.
func pollBound(ctx context.Context, r io.Reader, flag experimentalsys.Pflag, timeoutMillis int32) (bool, experimentalsys.Errno) {
	pr, ok := r.(experimentalsys.Pollable)
	if !ok {
		if flag != experimentalsys.POLLIN {
			return false, experimentalsys.ENOTSUP
		}
		return true, 0
	}
	for {
		if ctx.Err() != nil {
			return true, 0
		}
		slice := int32(pollSlice)
		if timeoutMillis >= 0 && timeoutMillis < slice {
			slice = timeoutMillis
		}
		ready, errno := pr.Poll(flag, slice)
		if ready || errno != 0 {
			return ready, errno
		}
		if timeoutMillis >= 0 {
			timeoutMillis -= slice
			if timeoutMillis <= 0 {
				return false, 0
			}
		}
	}
}

type ctxWriter struct {
	ctx context.Context
	w   ContextWriter
}

func (c *ctxWriter) Write(p []byte) (int, error) { return c.w.WriteContext(c.ctx, p) }
