package vfs

import (
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/spf13/afero"
)

// memFile is an open handle of a MemFS inode. Each handle has its own
// offset; the inode's data is shared by all handles.
type memFile struct {
	fs     *MemFS
	n      *inode
	name   string
	read   bool
	write  bool
	append bool

	mu     sync.Mutex // guards the fields below
	off    int64
	closed bool
	dir    []dirent // directory snapshot taken by the first Readdir
	dirPos int
	dirOK  bool
}

var _ afero.File = (*memFile)(nil)

func (f *memFile) truncOnOpen(flag int) (*memFile, error) {
	if flag&os.O_TRUNC != 0 && f.write && f.n.kind == kReg {
		if errno := f.fs.truncate(f.n, 0); errno != 0 {
			f.Close()
			return nil, pathErr("open", f.name, errno)
		}
	}
	return f, nil
}

// Name returns the name the file was opened with.
func (f *memFile) Name() string { return f.name }

func (f *memFile) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return pathErr("close", f.name, syscall.EBADF)
	}
	f.closed = true
	f.dir = nil
	f.mu.Unlock()
	n := f.n
	n.mu.Lock()
	n.opens--
	free := n.opens == 0 && n.nlink == 0 && !n.released
	if free {
		n.released = true
	}
	n.mu.Unlock()
	if free {
		f.fs.release(n)
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if errno := f.check(true, false); errno != 0 {
		return 0, pathErr("read", f.name, errno)
	}
	if f.n.kind == kDev {
		return f.n.dev.Read(p)
	}
	n, err := f.readAt(p, f.off)
	f.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, pathErr("readat", f.name, syscall.EINVAL)
	}
	f.mu.Lock()
	errno := f.check(true, false)
	f.mu.Unlock()
	if errno != 0 {
		return 0, pathErr("readat", f.name, errno)
	}
	if f.n.kind == kDev {
		return io.ReadFull(f.n.dev, p)
	}
	return f.readAt(p, off)
}

// check validates the handle for a read or write. f.mu is held.
func (f *memFile) check(read, write bool) syscall.Errno {
	switch {
	case f.closed:
		return syscall.EBADF
	case f.n.kind == kDir:
		return syscall.EISDIR
	case read && !f.read, write && !f.write:
		return syscall.EBADF
	}
	return 0
}

func (f *memFile) readAt(p []byte, off int64) (int, error) {
	n := f.n
	n.mu.RLock()
	size := int64(len(n.data))
	if off >= size {
		n.mu.RUnlock()
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	c := copy(p, n.data[off:])
	n.mu.RUnlock()
	n.atime.Store(f.fs.now().UnixNano())
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if errno := f.check(false, true); errno != 0 {
		return 0, pathErr("write", f.name, errno)
	}
	if f.n.kind == kDev {
		return f.n.dev.Write(p)
	}
	off, c, errno := f.fs.write(f.n, p, f.off, f.append)
	f.off = off + int64(c)
	if errno != 0 {
		return c, pathErr("write", f.name, errno)
	}
	return c, nil
}

func (f *memFile) WriteString(s string) (int, error) { return f.Write([]byte(s)) }

// WriteAt writes at off without moving the handle's offset. Like pwrite(2)
// in POSIX (and unlike Linux), it writes at off even on an O_APPEND handle.
func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, pathErr("writeat", f.name, syscall.EINVAL)
	}
	f.mu.Lock()
	errno := f.check(false, true)
	f.mu.Unlock()
	if errno != 0 {
		return 0, pathErr("writeat", f.name, errno)
	}
	if f.n.kind == kDev {
		return f.n.dev.Write(p)
	}
	_, c, errno := f.fs.write(f.n, p, off, false)
	if errno != 0 {
		return c, pathErr("writeat", f.name, errno)
	}
	return c, nil
}

// write stores p at off (at the end when app) and returns the offset it
// wrote at and the number of bytes written. Like write(2) on a full disk, a
// write that would cross the byte quota or the largest file size writes the
// prefix that fits and returns its length with ENOSPC or EFBIG (a short
// write); when nothing fits it writes nothing. The next write then fails
// with the error and nothing written.
func (m *MemFS) write(n *inode, p []byte, off int64, app bool) (int64, int, syscall.Errno) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if app {
		off = int64(len(n.data))
	}
	if len(p) == 0 {
		return off, 0, 0
	}
	limit := m.maxFileSize()
	if off >= limit {
		return off, 0, syscall.EFBIG
	}
	var errno syscall.Errno
	end := off + int64(len(p)) // no overflow: off < limit <= 1<<40
	if end > limit {
		end, errno = limit, syscall.EFBIG
	}
	if old := int64(len(n.data)); end > old {
		if !n.released {
			d := end - old
			got := reserveUpTo(&m.q.bytes, d, m.q.limits.Bytes)
			if got < d {
				if old+got <= off {
					// Not even the first byte fits (the room left is
					// taken by the hole before off): nothing changes.
					m.q.bytes.Add(-got)
					return off, 0, syscall.ENOSPC
				}
				end, errno = old+got, syscall.ENOSPC
			}
		}
		m.growLocked(n, end)
	} else if n.shared {
		n.data = append([]byte(nil), n.data...)
		n.shared = false
	}
	c := copy(n.data[off:end], p)
	now := m.now()
	n.mtime, n.ctime = now, now
	return off, c, errno
}

// reserveUpTo adds to counter c as much of d as fits under limit (0 = no
// limit) and returns how much that was (0 <= got <= d).
func reserveUpTo(c *atomic.Int64, d, limit int64) int64 {
	for {
		cur := c.Load()
		got := d
		if limit > 0 && cur+got > limit {
			got = max(limit-cur, 0)
		}
		if got == 0 || c.CompareAndSwap(cur, cur+got) {
			return got
		}
	}
}

// growLocked makes n.data size bytes long (size > len(n.data)), zeroing the
// new bytes and unsharing forked data. The quota was charged by the caller.
//
// The capacity grows geometrically (doubling), so that a file written in
// small pieces costs O(size) in copies and allocations, not O(size²). The
// slack beyond size is bounded by the room the byte quota has left and by
// the largest file size: the host memory of all files stays within about
// twice the quota, and a file whose capacity is far above its size after a
// truncate gives it back (see resizeLocked).
func (m *MemFS) growLocked(n *inode, size int64) {
	old := int64(len(n.data))
	if !n.shared && size <= int64(cap(n.data)) {
		n.data = n.data[:size]
		clear(n.data[old:])
		return
	}
	c := max(size, 2*old)
	room := c - size
	if l := m.q.limits.Bytes; l > 0 {
		room = min(room, max(l-m.q.bytes.Load(), 0))
	}
	room = min(room, m.maxFileSize()-size)
	nd := make([]byte, size, size+max(room, 0))
	copy(nd, n.data)
	n.data, n.shared = nd, false
}

// resizeLocked makes n.data exactly size bytes (a truncate), charging or
// refunding the quota, zeroing new bytes and unsharing forked data. All or
// nothing: past a quota it changes nothing. n.mu is held.
func (m *MemFS) resizeLocked(n *inode, size int64) syscall.Errno {
	old := int64(len(n.data))
	if size == old && !n.shared {
		return 0
	}
	if size > m.maxFileSize() {
		return syscall.EFBIG
	}
	if d := size - old; d != 0 && !n.released {
		if !reserve(&m.q.bytes, d, m.q.limits.Bytes) {
			return syscall.ENOSPC
		}
	}
	switch {
	case size == 0:
		n.data, n.shared = nil, false
	case size > old:
		m.growLocked(n, size)
	case n.shared || int64(cap(n.data)) > 2*size+shrinkSlack:
		// A copy of the kept part: forked data is not written in place,
		// and a file cut far below its capacity gives the memory back
		// (else truncating big files to a byte would hold host memory
		// the quota no longer counts).
		n.data = append(make([]byte, 0, size), n.data[:size]...)
		n.shared = false
	default:
		n.data = n.data[:size]
	}
	return 0
}

// shrinkSlack is the capacity above twice its size that a truncated file
// may keep without being copied to a smaller buffer.
const shrinkSlack = 64 << 10

// truncate sets the size of n.
func (m *MemFS) truncate(n *inode, size int64) syscall.Errno {
	if size < 0 {
		return syscall.EINVAL
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if errno := m.resizeLocked(n, size); errno != 0 {
		return errno
	}
	now := m.now()
	n.mtime, n.ctime = now, now
	return 0
}

func (f *memFile) Truncate(size int64) error {
	f.mu.Lock()
	errno := f.check(false, false)
	if errno == 0 && !f.write {
		errno = syscall.EINVAL
	}
	f.mu.Unlock()
	if errno == 0 && f.n.kind == kDev {
		return nil
	}
	if errno == 0 {
		errno = f.fs.truncate(f.n, size)
	}
	if errno != 0 {
		return pathErr("truncate", f.name, errno)
	}
	return nil
}

func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, pathErr("seek", f.name, syscall.EBADF)
	}
	switch f.n.kind {
	case kDev:
		return 0, nil
	case kDir:
		// Only a rewind is meaningful: it restarts Readdir.
		if offset == 0 && (whence == io.SeekStart || whence == io.SeekCurrent && f.dirPos == 0) {
			f.dir, f.dirPos, f.dirOK = nil, 0, false
			return 0, nil
		}
		if offset == 0 && whence == io.SeekCurrent {
			return int64(f.dirPos), nil
		}
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	var base int64
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = f.off
	case io.SeekEnd:
		f.n.mu.RLock()
		base = int64(len(f.n.data))
		f.n.mu.RUnlock()
	default:
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	pos := base + offset
	if pos < 0 || offset > 0 && pos < base {
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	f.off = pos
	return pos, nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return nil, pathErr("stat", f.name, syscall.EBADF)
	}
	name := statName(f.name)
	return f.fs.info(f.n, name), nil
}

func (f *memFile) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return pathErr("sync", f.name, syscall.EBADF)
	}
	return nil
}

// entries returns up to count directory entries (all when count <= 0)
// from the handle's position. f.mu is held.
func (f *memFile) entries(op string, count int) ([]dirent, error) {
	if f.closed {
		return nil, pathErr(op, f.name, syscall.EBADF)
	}
	if f.n.kind != kDir {
		return nil, pathErr(op, f.name, syscall.ENOTDIR)
	}
	if !f.dirOK {
		f.fs.mu.RLock()
		f.dir = sortedEntries(f.n)
		f.fs.mu.RUnlock()
		f.dirPos, f.dirOK = 0, true
	}
	rest := f.dir[f.dirPos:]
	if count > 0 {
		if len(rest) == 0 {
			return nil, io.EOF
		}
		if len(rest) > count {
			rest = rest[:count]
		}
	}
	f.dirPos += len(rest)
	f.fs.touchAtime(f.n)
	return rest, nil
}

func (m *MemFS) touchAtime(n *inode) { n.atime.Store(m.now().UnixNano()) }

// Readdir returns the next count entries in name order (all remaining when
// count <= 0). Seek(0, io.SeekStart) starts over.
func (f *memFile) Readdir(count int) ([]os.FileInfo, error) {
	f.mu.Lock()
	ents, err := f.entries("readdir", count)
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := make([]os.FileInfo, len(ents))
	for i, e := range ents {
		out[i] = f.fs.info(e.n, e.name)
	}
	return out, nil
}

func (f *memFile) Readdirnames(count int) ([]string, error) {
	f.mu.Lock()
	ents, err := f.entries("readdirent", count)
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.name
	}
	return out, nil
}
