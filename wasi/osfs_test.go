package wasi

import (
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/afero"

	"github.com/wasmbox/wasmbox/vfs"
)

// osFS is a vfs.FS over a host directory, for tests only: the OS does the
// POSIX work (flags, symlinks, errno). It does not confine symlinks with
// absolute targets, so it is never handed hostile input; tests use it to
// cross-check the adapter against the kernel's own semantics.
type osFS struct{ root string }

var _ vfs.FS = osFS{}

func (o osFS) real(name string) string {
	trailing := len(name) > 1 && name[len(name)-1] == '/'
	p := filepath.Join(o.root, filepath.FromSlash(path.Clean("/"+name)))
	if trailing {
		p += "/"
	}
	return p
}

func (o osFS) Create(name string) (afero.File, error) { return os.Create(o.real(name)) }
func (o osFS) Mkdir(name string, perm os.FileMode) error {
	return os.Mkdir(o.real(name), perm)
}
func (o osFS) MkdirAll(name string, perm os.FileMode) error {
	return os.MkdirAll(o.real(name), perm)
}
func (o osFS) Open(name string) (afero.File, error) { return os.Open(o.real(name)) }
func (o osFS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := os.OpenFile(o.real(name), flag, perm)
	if err != nil {
		return nil, err // not a typed-nil *os.File
	}
	return f, nil
}
func (o osFS) Remove(name string) error    { return os.Remove(o.real(name)) }
func (o osFS) RemoveAll(name string) error { return os.RemoveAll(o.real(name)) }
func (o osFS) Rename(oldname, newname string) error {
	// syscall.Rename: os.Rename refuses to replace an empty directory,
	// which rename(2) allows.
	if err := syscall.Rename(o.real(oldname), o.real(newname)); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return nil
}
func (o osFS) Stat(name string) (os.FileInfo, error) { return os.Stat(o.real(name)) }
func (o osFS) Name() string                          { return "osfs" }
func (o osFS) Chmod(name string, mode os.FileMode) error {
	return os.Chmod(o.real(name), mode)
}
func (o osFS) Chown(name string, uid, gid int) error { return os.Chown(o.real(name), uid, gid) }
func (o osFS) Chtimes(name string, atime, mtime time.Time) error {
	return os.Chtimes(o.real(name), atime, mtime)
}
func (o osFS) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	info, err := os.Lstat(o.real(name))
	return info, true, err
}
func (o osFS) SymlinkIfPossible(oldname, newname string) error {
	return os.Symlink(oldname, o.real(newname))
}
func (o osFS) ReadlinkIfPossible(name string) (string, error) { return os.Readlink(o.real(name)) }
func (o osFS) Link(oldname, newname string) error {
	return os.Link(o.real(oldname), o.real(newname))
}
