package preview1

import (
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/afero"

	"github.com/wasmbox/wasmbox/vfs"
)

// tapFS wraps the vfs.FS handed to wasi.NewFS and remembers the last error
// any of its operations (or of the files it opened) returned. The adapter
// speaks wazero's errno set, which has no ENOSPC, EFBIG, EXDEV or EMLINK:
// those reach it as EIO. When the adapter reports EIO, the host functions
// look at the recorded error and give the guest the precise errno instead.
//
// The record is reset at the start of every host call and read when it
// ends. A State belongs to one guest module and wasip1 guests are single
// threaded, but a file the guest lent to a spawned child (LendWriter) is
// used from the child's goroutine too: the record is atomic, and a
// child's error seen by the guest's call at worst refines an EIO.
type tapFS struct {
	fs   vfs.FS
	last atomic.Pointer[error]
}

func (t *tapFS) rec(err error) error {
	if err != nil && err != io.EOF {
		t.last.Store(&err)
	}
	return err
}

func (t *tapFS) lastErr() error {
	if p := t.last.Load(); p != nil {
		return *p
	}
	return nil
}

func (t *tapFS) wrap(f afero.File, err error) (afero.File, error) {
	if err != nil {
		return nil, t.rec(err)
	}
	return &tapFile{File: f, t: t}, nil
}

func (t *tapFS) Create(name string) (afero.File, error) { return t.wrap(t.fs.Create(name)) }
func (t *tapFS) Mkdir(name string, perm os.FileMode) error {
	return t.rec(t.fs.Mkdir(name, perm))
}
func (t *tapFS) MkdirAll(path string, perm os.FileMode) error {
	return t.rec(t.fs.MkdirAll(path, perm))
}
func (t *tapFS) Open(name string) (afero.File, error) { return t.wrap(t.fs.Open(name)) }
func (t *tapFS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	return t.wrap(t.fs.OpenFile(name, flag, perm))
}
func (t *tapFS) Remove(name string) error    { return t.rec(t.fs.Remove(name)) }
func (t *tapFS) RemoveAll(path string) error { return t.rec(t.fs.RemoveAll(path)) }
func (t *tapFS) Rename(oldname, newname string) error {
	return t.rec(t.fs.Rename(oldname, newname))
}
func (t *tapFS) Stat(name string) (os.FileInfo, error) {
	fi, err := t.fs.Stat(name)
	return fi, t.rec(err)
}
func (t *tapFS) Name() string { return t.fs.Name() }
func (t *tapFS) Chmod(name string, mode os.FileMode) error {
	return t.rec(t.fs.Chmod(name, mode))
}
func (t *tapFS) Chown(name string, uid, gid int) error {
	return t.rec(t.fs.Chown(name, uid, gid))
}
func (t *tapFS) Chtimes(name string, atime, mtime time.Time) error {
	return t.rec(t.fs.Chtimes(name, atime, mtime))
}
func (t *tapFS) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	fi, ok, err := t.fs.LstatIfPossible(name)
	return fi, ok, t.rec(err)
}
func (t *tapFS) SymlinkIfPossible(oldname, newname string) error {
	return t.rec(t.fs.SymlinkIfPossible(oldname, newname))
}
func (t *tapFS) ReadlinkIfPossible(name string) (string, error) {
	s, err := t.fs.ReadlinkIfPossible(name)
	return s, t.rec(err)
}
func (t *tapFS) Link(oldname, newname string) error { return t.rec(t.fs.Link(oldname, newname)) }

var _ vfs.FS = (*tapFS)(nil)

// tapFile records the errors of one open file.
type tapFile struct {
	afero.File
	t *tapFS
}

func (f *tapFile) Close() error { return f.t.rec(f.File.Close()) }
func (f *tapFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	return n, f.t.rec(err)
}
func (f *tapFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	return n, f.t.rec(err)
}
func (f *tapFile) Seek(offset int64, whence int) (int64, error) {
	n, err := f.File.Seek(offset, whence)
	return n, f.t.rec(err)
}
func (f *tapFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, f.t.rec(err)
}
func (f *tapFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	return n, f.t.rec(err)
}
func (f *tapFile) WriteString(s string) (int, error) {
	n, err := f.File.WriteString(s)
	return n, f.t.rec(err)
}
func (f *tapFile) Readdir(count int) ([]os.FileInfo, error) {
	fi, err := f.File.Readdir(count)
	return fi, f.t.rec(err)
}
func (f *tapFile) Readdirnames(n int) ([]string, error) {
	s, err := f.File.Readdirnames(n)
	return s, f.t.rec(err)
}
func (f *tapFile) Stat() (os.FileInfo, error) {
	fi, err := f.File.Stat()
	return fi, f.t.rec(err)
}
func (f *tapFile) Sync() error               { return f.t.rec(f.File.Sync()) }
func (f *tapFile) Truncate(size int64) error { return f.t.rec(f.File.Truncate(size)) }
