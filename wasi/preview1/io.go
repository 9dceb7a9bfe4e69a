package preview1

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"syscall"

	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/wasi"
)

// fd_read, fd_pread, fd_write, fd_pwrite: the hot path. The iovecs are
// read in place from guest memory (api.Memory.Read returns a view, not a
// copy) and handed to the file as they are, so a read or write allocates
// nothing on the host.

func fdRead(ctx context.Context, s *State, mem api.Memory, p []uint64) Errno {
	return s.readv(ctx, mem, uint32(p[0]), uint32(p[1]), uint32(p[2]), false, 0, uint32(p[3]))
}

func fdPread(ctx context.Context, s *State, mem api.Memory, p []uint64) Errno {
	return s.readv(ctx, mem, uint32(p[0]), uint32(p[1]), uint32(p[2]), true, int64(p[3]), uint32(p[4]))
}

func fdWrite(ctx context.Context, s *State, mem api.Memory, p []uint64) Errno {
	return s.writev(ctx, mem, uint32(p[0]), uint32(p[1]), uint32(p[2]), false, 0, uint32(p[3]))
}

func fdPwrite(ctx context.Context, s *State, mem api.Memory, p []uint64) Errno {
	return s.writev(ctx, mem, uint32(p[0]), uint32(p[1]), uint32(p[2]), true, int64(p[3]), uint32(p[4]))
}

func iovecs(mem api.Memory, iovs, n uint32) ([]byte, Errno) {
	if uint64(n)*iovecSize > 1<<32-1 {
		return nil, ErrnoInval
	}
	b, ok := read(mem, iovs, n*iovecSize)
	if !ok {
		return nil, ErrnoFault
	}
	return b, 0
}

func (s *State) readv(ctx context.Context, mem api.Memory, fd, iovs, n uint32, positional bool, off int64, result uint32) Errno {
	e, errno := s.lookup(fd)
	if errno != 0 {
		return errno
	}
	if e.kind == kindDir {
		return ErrnoIsdir
	}
	r := rightFdRead
	if positional {
		if e.kind != kindFile {
			return ErrnoSpipe
		}
		if off < 0 {
			return ErrnoInval
		}
	}
	if errno := need(e, r); errno != 0 {
		return errno
	}
	vecs, errno := iovecs(mem, iovs, n)
	if errno != 0 {
		return errno
	}
	var total uint32
	for i := uint32(0); i < n; i++ {
		ptr, l := le.Uint32(vecs[i*8:]), le.Uint32(vecs[i*8+4:])
		if l == 0 {
			continue
		}
		b, ok := read(mem, ptr, l)
		if !ok {
			return ErrnoFault
		}
		var got int
		switch e.kind {
		case kindReader:
			got, errno = s.readStream(ctx, e, b)
		case kindFile:
			unlock := e.lock()
			var xe experimentalsys.Errno
			if positional {
				got, xe = e.file.Pread(b, off)
				off += int64(got)
			} else {
				got, xe = e.file.Read(b)
			}
			unlock()
			errno = s.errno(xe)
		default:
			errno = ErrnoBadf // stdout and stderr are write-only
		}
		if errno != 0 {
			if total > 0 {
				break // report what was read; the error comes again next time
			}
			return errno
		}
		total += uint32(got)
		if got < int(l) {
			break
		}
	}
	return putU32(mem, result, total)
}

// readStream reads a stream descriptor. A non-blocking one never waits:
// EAGAIN when the stream has nothing to give yet.
func (s *State) readStream(ctx context.Context, e *entry, b []byte) (int, Errno) {
	if e.fdflags&fdflagNonblock != 0 {
		if tr, ok := e.r.(tryReader); ok {
			n, err := tr.TryRead(b)
			if err == wasi.ErrWouldBlock {
				return 0, ErrnoAgain
			}
			return s.streamResult(ctx, n, err)
		}
		// Non-blocking (set with fd_fdstat_set_flags) on a stream
		// without TryRead: EAGAIN instead of waiting when it can tell,
		// so the guest waits in poll_oneoff (Go's netpoller does).
		switch r := e.r.(type) {
		case wasi.Waitable:
			if !r.Ready(false) {
				return 0, ErrnoAgain
			}
		case experimentalsys.Pollable:
			if ready, _ := r.Poll(experimentalsys.POLLIN, 0); !ready {
				return 0, ErrnoAgain
			}
		}
	}
	var n int
	var err error
	if cr, ok := e.r.(contextReader); ok {
		n, err = cr.ReadContext(ctx, b)
	} else {
		n, err = e.r.Read(b)
	}
	return s.streamResult(ctx, n, err)
}

func (s *State) streamResult(ctx context.Context, n int, err error) (int, Errno) {
	if err == nil || err == io.EOF {
		return n, 0
	}
	if n > 0 {
		return n, 0
	}
	if isCtxErr(err) {
		exitOnCtxErr(ctx, err)
	}
	return 0, ErrnoOf(err)
}

func (s *State) writev(ctx context.Context, mem api.Memory, fd, iovs, n uint32, positional bool, off int64, result uint32) Errno {
	e, errno := s.lookup(fd)
	if errno != 0 {
		return errno
	}
	if e.kind == kindDir {
		return ErrnoIsdir
	}
	if positional {
		if e.kind != kindFile {
			return ErrnoSpipe
		}
		if off < 0 {
			return ErrnoInval
		}
	}
	if errno := need(e, rightFdWrite); errno != 0 {
		return errno
	}
	vecs, errno := iovecs(mem, iovs, n)
	if errno != 0 {
		return errno
	}
	var total uint32
	for i := uint32(0); i < n; i++ {
		ptr, l := le.Uint32(vecs[i*8:]), le.Uint32(vecs[i*8+4:])
		b, ok := read(mem, ptr, l)
		if !ok {
			return ErrnoFault
		}
		if l == 0 {
			continue
		}
		var put int
		switch e.kind {
		case kindWriter:
			put, errno = s.writeStream(ctx, e, b)
		case kindFile:
			unlock := e.lock()
			var xe experimentalsys.Errno
			if positional {
				put, xe = e.file.Pwrite(b, off)
				off += int64(put)
			} else {
				put, xe = e.file.Write(b)
			}
			unlock()
			errno = s.errno(xe)
		default:
			errno = ErrnoBadf // stdin is read-only
		}
		total += uint32(put)
		if errno != 0 {
			if total > 0 {
				break // a short write; the error comes again next time
			}
			return errno
		}
		if put < int(l) {
			break
		}
	}
	return putU32(mem, result, total)
}

// writeStream writes a stream descriptor. A non-blocking one never waits:
// it writes what fits, EAGAIN when nothing does.
func (s *State) writeStream(ctx context.Context, e *entry, b []byte) (int, Errno) {
	var n int
	var err error
	if tw, ok := e.w.(tryWriter); ok && e.fdflags&fdflagNonblock != 0 {
		n, err = tw.TryWrite(b)
		if err == wasi.ErrWouldBlock {
			return 0, ErrnoAgain
		}
	} else if cw, ok := e.w.(contextWriter); ok {
		n, err = cw.WriteContext(ctx, b)
	} else {
		n, err = e.w.Write(b)
	}
	if err == nil {
		return n, 0
	}
	if isCtxErr(err) {
		exitOnCtxErr(ctx, err)
	}
	if errors.Is(err, syscall.EPIPE) {
		if !e.quiet {
			// The reader is gone: end the guest as SIGPIPE ends a Unix
			// process, so `yes | head -1` stops instead of spinning.
			panic(sys.NewExitError(wasi.ExitCodeBrokenPipe))
		}
		if n > 0 {
			return n, 0
		}
		return 0, ErrnoPipe
	}
	if n > 0 {
		return n, 0
	}
	return 0, ErrnoOf(err)
}

// ---- fd_readdir ----

// dirCache holds a directory's listing ("." and ".." first) from the
// fd_readdir call with cookie 0 until the next one: a cookie is an index
// into it, so a guest paging through a directory sees one consistent
// listing.
type dirCache struct {
	ents []experimentalsys.Dirent
}

func fdReaddir(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	e, errno := s.lookup(uint32(p[0]))
	if errno != 0 {
		return errno
	}
	if e.kind != kindDir {
		return ErrnoNotdir
	}
	if errno := need(e, rightFdReaddir); errno != 0 {
		return errno
	}
	bufPtr, bufLen, cookie, result := uint32(p[1]), uint32(p[2]), p[3], uint32(p[4])
	buf, ok := read(mem, bufPtr, bufLen)
	if !ok {
		return ErrnoFault
	}
	if cookie == 0 || e.dir == nil {
		if _, xe := e.file.Seek(0, io.SeekStart); xe != 0 && xe != experimentalsys.EISDIR {
			return s.errno(xe)
		}
		ents, xe := e.file.Readdir(-1)
		if xe != 0 {
			return s.errno(xe)
		}
		ino, _ := e.file.Ino()
		dots := []experimentalsys.Dirent{
			{Name: ".", Ino: ino, Type: fs.ModeDir},
			{Name: "..", Ino: 0, Type: fs.ModeDir},
		}
		e.dir = &dirCache{ents: append(dots, ents...)}
	}
	ents := e.dir.ents
	pos := uint32(0)
	for i := cookie; i < uint64(len(ents)) && pos < bufLen; i++ {
		d := ents[i]
		var hdr [direntSize]byte
		le.PutUint64(hdr[0:], i+1)
		le.PutUint64(hdr[8:], d.Ino)
		le.PutUint32(hdr[16:], uint32(len(d.Name)))
		hdr[20] = filetype(d.Type)
		c := copy(buf[pos:], hdr[:])
		pos += uint32(c)
		if c < direntSize {
			break
		}
		pos += uint32(copy(buf[pos:], d.Name))
	}
	return putU32(mem, result, pos)
}
