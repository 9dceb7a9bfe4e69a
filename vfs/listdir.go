package vfs

import (
	"io"
	"os"
	"sort"
	"sync"
	"syscall"

	"github.com/spf13/afero"
)

// listDir is an open directory whose entries are computed by load (a
// merged copy-on-write directory, or a directory with mount points in
// it). Entries are listed in name order; Seek(0, io.SeekStart) reloads.
type listDir struct {
	name string
	info os.FileInfo
	load func() ([]os.FileInfo, error)

	mu     sync.Mutex
	ents   []os.FileInfo
	loaded bool
	pos    int
	closed bool
	close  func() error
}

var _ afero.File = (*listDir)(nil)

func (d *listDir) Name() string { return d.name }

func (d *listDir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return pathErr("close", d.name, syscall.EBADF)
	}
	d.closed = true
	d.ents = nil
	if d.close != nil {
		return d.close()
	}
	return nil
}

func (d *listDir) errOp(op string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return pathErr(op, d.name, syscall.EBADF)
	}
	return pathErr(op, d.name, syscall.EISDIR)
}

func (d *listDir) Read([]byte) (int, error)           { return 0, d.errOp("read") }
func (d *listDir) ReadAt([]byte, int64) (int, error)  { return 0, d.errOp("readat") }
func (d *listDir) Write([]byte) (int, error)          { return 0, d.errOp("write") }
func (d *listDir) WriteAt([]byte, int64) (int, error) { return 0, d.errOp("writeat") }
func (d *listDir) WriteString(string) (int, error)    { return 0, d.errOp("write") }
func (d *listDir) Truncate(int64) error               { return d.errOp("truncate") }

func (d *listDir) Sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return pathErr("sync", d.name, syscall.EBADF)
	}
	return nil
}

func (d *listDir) Stat() (os.FileInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, pathErr("stat", d.name, syscall.EBADF)
	}
	return d.info, nil
}

func (d *listDir) Seek(offset int64, whence int) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.closed:
		return 0, pathErr("seek", d.name, syscall.EBADF)
	case offset == 0 && whence == io.SeekStart:
		d.ents, d.loaded, d.pos = nil, false, 0
		return 0, nil
	case offset == 0 && whence == io.SeekCurrent:
		return int64(d.pos), nil
	}
	return 0, pathErr("seek", d.name, syscall.EINVAL)
}

func (d *listDir) next(op string, count int) ([]os.FileInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, pathErr(op, d.name, syscall.EBADF)
	}
	if !d.loaded {
		ents, err := d.load()
		if err != nil {
			return nil, rewrap(op, d.name, err)
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
		d.ents, d.loaded, d.pos = ents, true, 0
	}
	rest := d.ents[d.pos:]
	if count > 0 {
		if len(rest) == 0 {
			return nil, io.EOF
		}
		if len(rest) > count {
			rest = rest[:count]
		}
	}
	d.pos += len(rest)
	return append([]os.FileInfo(nil), rest...), nil
}

func (d *listDir) Readdir(count int) ([]os.FileInfo, error) { return d.next("readdir", count) }

func (d *listDir) Readdirnames(count int) ([]string, error) {
	fis, err := d.next("readdirent", count)
	names := make([]string, len(fis))
	for i, fi := range fis {
		names[i] = fi.Name()
	}
	return names, err
}

// readDirAll lists directory p of fsys.
func readDirAll(fsys afero.Fs, p string) ([]os.FileInfo, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdir(-1)
}

// removeAllRaw removes p and everything below it from a raw FS, depth
// first, never following symlinks.
func removeAllRaw(fsys FS, p string) error {
	fi, _, err := fsys.LstatIfPossible(p)
	if err != nil {
		if isNotExist(err) {
			return nil
		}
		return err
	}
	if fi.IsDir() {
		f, err := fsys.OpenFile(p, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return err
		}
		var first error
		for _, n := range names {
			if err := removeAllRaw(fsys, joinPath(p, n)); err != nil && first == nil {
				first = err
			}
		}
		if first != nil {
			return first
		}
	}
	err = fsys.Remove(p)
	if err != nil && isNotExist(err) {
		return nil
	}
	return err
}
