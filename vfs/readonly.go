package vfs

import (
	"os"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// ReadOnlyView returns a view of fsys that refuses every change with EROFS:
// opening for writing, creating, removing, renaming, linking, chmod, chown
// and chtimes. Reads, stats and readlinks go to fsys. One read-only view
// can be mounted in many namespaces at once (a sandbox engine shares its
// command entries this way); Fork returns the same view.
func ReadOnlyView(fsys FS) FS { return readOnlyFS{fsys} }

type readOnlyFS struct{ fs FS }

const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_TRUNC | os.O_APPEND

func (r readOnlyFS) rofs(op, name string) error { return pathErr(op, name, syscall.EROFS) }

func (r readOnlyFS) Create(name string) (afero.File, error) { return nil, r.rofs("open", name) }
func (r readOnlyFS) Mkdir(name string, _ os.FileMode) error { return r.rofs("mkdir", name) }
func (r readOnlyFS) MkdirAll(name string, _ os.FileMode) error {
	if fi, err := r.fs.Stat(name); err == nil && fi.IsDir() {
		return nil
	}
	return r.rofs("mkdir", name)
}
func (r readOnlyFS) Open(name string) (afero.File, error) { return r.fs.Open(name) }
func (r readOnlyFS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if flag&writeFlags != 0 {
		return nil, r.rofs("open", name)
	}
	return r.fs.OpenFile(name, flag, perm)
}
func (r readOnlyFS) Remove(name string) error    { return r.rofs("remove", name) }
func (r readOnlyFS) RemoveAll(name string) error { return r.rofs("remove", name) }
func (r readOnlyFS) Rename(oldname, newname string) error {
	return linkErr("rename", oldname, newname, syscall.EROFS)
}
func (r readOnlyFS) Stat(name string) (os.FileInfo, error) { return r.fs.Stat(name) }
func (r readOnlyFS) Name() string                          { return "readonly(" + r.fs.Name() + ")" }
func (r readOnlyFS) Chmod(name string, _ os.FileMode) error {
	return r.rofs("chmod", name)
}
func (r readOnlyFS) Chown(name string, _, _ int) error { return r.rofs("chown", name) }
func (r readOnlyFS) Chtimes(name string, _, _ time.Time) error {
	return r.rofs("chtimes", name)
}
func (r readOnlyFS) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	return r.fs.LstatIfPossible(name)
}
func (r readOnlyFS) SymlinkIfPossible(oldname, newname string) error {
	return linkErr("symlink", oldname, newname, syscall.EROFS)
}
func (r readOnlyFS) ReadlinkIfPossible(name string) (string, error) {
	return r.fs.ReadlinkIfPossible(name)
}
func (r readOnlyFS) Link(oldname, newname string) error {
	return linkErr("link", oldname, newname, syscall.EROFS)
}

// Fork returns the view itself: nothing can change through it.
func (r readOnlyFS) Fork() FS { return r }
