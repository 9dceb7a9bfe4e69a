package vfs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// HostFile returns the single host file file as an FS whose root is that
// file, to be mounted on a file of the guest namespace (VFS.Mount creates
// an empty one there if the point does not exist), like a bind mount of a
// file on Linux. mode is ReadOnly or ReadWrite (copy-on-write is for
// directories).
//
// Nothing but the file is reachable: its directory is opened with
// os.OpenRoot (see HostDir) and every path below the root is ENOTDIR. The
// mount point cannot be removed, renamed or replaced (VFS answers EBUSY for
// a mount point, as Linux does for a bind-mounted file), so a guest can
// neither swap the host file for another nor unlink it; in a ReadWrite
// mount it may change the file's content, mode and times, in a ReadOnly
// one nothing (EROFS). A symlink given as file is resolved once, here, on
// the host: the mount is the file it points to.
//
// The returned FS holds a host file descriptor (of the directory); it
// implements io.Closer.
func HostFile(file string, mode MountMode, opts ...Option) (FS, error) {
	if mode != ReadOnly && mode != ReadWrite {
		return nil, fmt.Errorf("vfs: mount source %s: a single file is mounted ro or rw, not %v", file, mode)
	}
	real, err := filepath.EvalSymlinks(file)
	if err != nil {
		return nil, fmt.Errorf("vfs: mount source: %w", err)
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return nil, fmt.Errorf("vfs: mount source: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("vfs: mount source %s: not a regular file or directory", file)
	}
	dir, err := HostDir(filepath.Dir(real), mode, opts...)
	if err != nil {
		return nil, err
	}
	return &hostFileFS{raw: rawOf(dir), closer: dir.(io.Closer), name: "/" + filepath.Base(real)}, nil
}

// hostFileFS is a host file as an FS rooted at it (see HostFile): "/" is
// the file, name its path in raw, the host directory that holds it.
type hostFileFS struct {
	raw    FS
	closer io.Closer
	name   string
}

var _ FS = (*hostFileFS)(nil)

// Close releases the host directory.
func (f *hostFileFS) Close() error { return f.closer.Close() }

// Mode reports how the file is mounted.
func (f *hostFileFS) Mode() MountMode {
	if readOnlyAt(f.raw, f.name) {
		return ReadOnly
	}
	return ReadWrite
}

func (f *hostFileFS) readOnlyAt(string) bool { return readOnlyAt(f.raw, f.name) }

// path maps a path of this FS to raw's: only the root exists; below it,
// the root is not a directory.
func (f *hostFileFS) path(op, name string) (string, error) {
	if cleanAbs(name) == "/" {
		return f.name, nil
	}
	return "", pathErr(op, name, syscall.ENOTDIR)
}

// busy is the answer to removing, renaming or replacing the root: it is a
// mount point.
func busy(op, name string) error { return pathErr(op, name, syscall.EBUSY) }

func (f *hostFileFS) Name() string { return "HostFile(" + f.name + ")" }

func (f *hostFileFS) Create(name string) (afero.File, error) {
	return f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (f *hostFileFS) Open(name string) (afero.File, error) {
	return f.OpenFile(name, os.O_RDONLY, 0)
}

func (f *hostFileFS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	p, err := f.path("open", name)
	if err != nil {
		return nil, err
	}
	if flag&os.O_EXCL != 0 && flag&os.O_CREATE != 0 {
		return nil, pathErr("open", name, syscall.EEXIST)
	}
	return f.raw.OpenFile(p, flag&^(os.O_CREATE|os.O_EXCL), perm)
}

func (f *hostFileFS) Mkdir(name string, perm os.FileMode) error {
	if _, err := f.path("mkdir", name); err != nil {
		return err
	}
	return pathErr("mkdir", name, syscall.EEXIST)
}

func (f *hostFileFS) MkdirAll(name string, perm os.FileMode) error {
	if _, err := f.path("mkdir", name); err != nil {
		return err
	}
	return pathErr("mkdir", name, syscall.ENOTDIR)
}

func (f *hostFileFS) Remove(name string) error {
	if _, err := f.path("remove", name); err != nil {
		return err
	}
	return busy("remove", name)
}

func (f *hostFileFS) RemoveAll(name string) error {
	if _, err := f.path("remove", name); err != nil {
		return err
	}
	return busy("remove", name)
}

func (f *hostFileFS) Rename(oldname, newname string) error {
	if _, err := f.path("rename", oldname); err != nil {
		return err
	}
	if _, err := f.path("rename", newname); err != nil {
		return err
	}
	return busy("rename", oldname)
}

func (f *hostFileFS) Stat(name string) (os.FileInfo, error) {
	p, err := f.path("stat", name)
	if err != nil {
		return nil, err
	}
	return f.raw.Stat(p)
}

func (f *hostFileFS) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	p, err := f.path("lstat", name)
	if err != nil {
		return nil, true, err
	}
	return f.raw.(afero.Lstater).LstatIfPossible(p)
}

func (f *hostFileFS) ReadlinkIfPossible(name string) (string, error) {
	p, err := f.path("readlink", name)
	if err != nil {
		return "", err
	}
	return f.raw.(afero.LinkReader).ReadlinkIfPossible(p)
}

func (f *hostFileFS) SymlinkIfPossible(oldname, newname string) error {
	if _, err := f.path("symlink", newname); err != nil {
		return err
	}
	return busy("symlink", newname)
}

func (f *hostFileFS) Link(oldname, newname string) error {
	if _, err := f.path("link", oldname); err != nil {
		return err
	}
	if _, err := f.path("link", newname); err != nil {
		return err
	}
	return busy("link", newname)
}

func (f *hostFileFS) Chmod(name string, mode os.FileMode) error {
	p, err := f.path("chmod", name)
	if err != nil {
		return err
	}
	return f.raw.Chmod(p, mode)
}

func (f *hostFileFS) Chown(name string, uid, gid int) error {
	p, err := f.path("chown", name)
	if err != nil {
		return err
	}
	return f.raw.Chown(p, uid, gid)
}

func (f *hostFileFS) Chtimes(name string, atime, mtime time.Time) error {
	p, err := f.path("chtimes", name)
	if err != nil {
		return err
	}
	return f.raw.Chtimes(p, atime, mtime)
}
