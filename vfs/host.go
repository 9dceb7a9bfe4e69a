package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// MountMode says how a host directory is mounted.
type MountMode int

const (
	// ReadOnly: the guest reads the host directory; every change is EROFS.
	ReadOnly MountMode = iota
	// ReadWrite: the guest reads and writes the host directory itself.
	ReadWrite
	// CopyOnWrite: the guest sees the host directory and may change it,
	// but every change lands in memory (copy-up on write, chmod, truncate,
	// rename; deletions recorded as whiteouts). The host is never written.
	CopyOnWrite
)

func (m MountMode) String() string {
	switch m {
	case ReadOnly:
		return "ro"
	case ReadWrite:
		return "rw"
	case CopyOnWrite:
		return "cow"
	}
	return fmt.Sprintf("MountMode(%d)", int(m))
}

// ErrBadMountSpec is returned (wrapped) by ParseMountSpec.
var ErrBadMountSpec = errors.New("vfs: bad mount spec")

// MountSpec is a parsed --mount argument.
type MountSpec struct {
	Host  string    // host directory
	Guest string    // absolute guest path
	Mode  MountMode // ro, rw or cow
}

// ParseMountSpec parses "HOST:GUEST[:ro|:rw|:cow]" (read-only when the mode
// is omitted). GUEST must be absolute. A HOST containing ':' is not
// supported.
func ParseMountSpec(s string) (MountSpec, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return MountSpec{}, fmt.Errorf("%w %q: want HOST:GUEST[:ro|:rw|:cow]", ErrBadMountSpec, s)
	}
	spec := MountSpec{Host: parts[0], Guest: parts[1], Mode: ReadOnly}
	if spec.Host == "" {
		return MountSpec{}, fmt.Errorf("%w %q: empty host path", ErrBadMountSpec, s)
	}
	if !strings.HasPrefix(spec.Guest, "/") {
		return MountSpec{}, fmt.Errorf("%w %q: guest path must be absolute", ErrBadMountSpec, s)
	}
	spec.Guest = cleanAbs(spec.Guest)
	if len(parts) == 3 {
		switch parts[2] {
		case "ro":
			spec.Mode = ReadOnly
		case "rw":
			spec.Mode = ReadWrite
		case "cow":
			spec.Mode = CopyOnWrite
		default:
			return MountSpec{}, fmt.Errorf("%w %q: mode %q is not ro, rw or cow", ErrBadMountSpec, s, parts[2])
		}
	}
	return spec, nil
}

// HostDir returns the host directory dir as an FS, mounted with mode.
//
// The directory is opened with os.OpenRoot, so no path (with "..") and no
// symlink (absolute or relative, even one swapped in by a concurrent host
// process) can lead outside it. Symlinks are resolved by the returned FS,
// with "/" meaning dir itself; mounted in a VFS, they are resolved in the
// guest namespace. A missing dir or one that is not a directory is an
// error here, not at first use. Options (quota, clock, owner, umask) apply
// to the in-memory upper layer of a CopyOnWrite mount, whose quota is
// DefaultQuotaBytes and DefaultQuotaFiles unless WithQuota says otherwise
// (the upper layer has its own quota, separate from the rest of the
// namespace). A ReadWrite mount has no quota: it writes to the host disk.
//
// On the host, setuid and setgid bits are never set and the owner of a
// file never changes (chown is EPERM, as for an unprivileged user).
//
// The returned FS holds a host file descriptor; it implements io.Closer.
// FileInfo.Sys() is a *Stat filled from the host's stat (device, inode,
// link count, owner, times).
func HostDir(dir string, mode MountMode, opts ...Option) (FS, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("vfs: mount source: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("vfs: mount source %s: %w", dir, &os.PathError{Op: "mount", Path: dir, Err: syscall.ENOTDIR})
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("vfs: mount source: %w", err)
	}
	if mode != ReadOnly && mode != ReadWrite && mode != CopyOnWrite {
		root.Close()
		return nil, fmt.Errorf("vfs: unknown mount mode %v", mode)
	}
	// A descriptor of the root directory itself, for the lookups of the
	// VFS fast path (see hostRaw.fastLstat).
	dirf, err := root.Open(".")
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("vfs: mount source: %w", err)
	}
	abs, _ := filepath.Abs(dir)
	hr := &hostRaw{root: root, dirf: dirf, ro: mode != ReadWrite, dir: abs}
	if mode == CopyOnWrite {
		base := []Option{WithQuota(Quota{Bytes: DefaultQuotaBytes, Files: DefaultQuotaFiles})}
		upper := NewMemFS(append(base, opts...)...)
		return &HostFS{resolving: resolving{raw: newCow(hr, upper)}, closer: hr}, nil
	}
	return &HostFS{resolving: resolving{raw: hr}, closer: hr}, nil
}

// HostFS is a host directory as an FS (see HostDir).
type HostFS struct {
	resolving
	closer io.Closer
}

// Close releases the host directory. Files already open stay usable.
func (h *HostFS) Close() error { return h.closer.Close() }

// Mode reports how the directory is mounted.
func (h *HostFS) Mode() MountMode {
	switch r := h.raw.(type) {
	case *hostRaw:
		if r.ro {
			return ReadOnly
		}
		return ReadWrite
	}
	return CopyOnWrite
}

// Fork returns h itself for a read-only or read-write mount (the host
// directory is shared: a fork writing to a rw mount changes what the
// parent sees) and an independent copy of the in-memory layer for a
// copy-on-write mount. Either way the host directory handle is shared:
// Close it only when no fork uses it any more (closing a fork of a
// copy-on-write mount does nothing).
func (h *HostFS) Fork() FS {
	if c, ok := h.raw.(*cowFS); ok {
		return &HostFS{resolving: resolving{raw: c.fork()}, closer: nopCloser{}}
	}
	return h
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// hostRaw is the raw FS over an os.Root.
type hostRaw struct {
	root *os.Root
	dirf *os.File // the root directory
	ro   bool
	dir  string
}

// Close releases the host directory.
func (h *hostRaw) Close() error {
	err := h.dirf.Close()
	if rerr := h.root.Close(); err == nil {
		err = rerr
	}
	return err
}

func rel(p string) string {
	p = strings.TrimLeft(p, "/")
	if p == "" {
		return "."
	}
	return p
}

func (h *hostRaw) Name() string { return "HostDir(" + h.dir + ")" }

func (h *hostRaw) erofs(op, name string) error {
	if h.ro {
		return pathErr(op, name, syscall.EROFS)
	}
	return nil
}

func (h *hostRaw) Create(name string) (afero.File, error) {
	return h.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (h *hostRaw) Open(name string) (afero.File, error) { return h.OpenFile(name, os.O_RDONLY, 0) }

func (h *hostRaw) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if flag&(accMode|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != os.O_RDONLY {
		if err := h.erofs("open", name); err != nil {
			return nil, err
		}
	}
	// O_NONBLOCK: opening a FIFO must not wait for a writer (nothing could
	// cancel that wait); checkHostFile then refuses anything but regular
	// files and directories.
	f, err := h.root.OpenFile(rel(name), flag|syscall.O_NONBLOCK, perm&os.ModePerm)
	if err != nil {
		return nil, rewrap("open", name, err)
	}
	return checkHostFile(f, name)
}

// checkHostFile refuses (EACCES) to hand out host FIFOs, sockets and
// devices: reading them could block the guest forever or reach host
// hardware. Regular files and directories are what a mount shares.
func checkHostFile(f *os.File, name string) (*hostFile, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, rewrap("open", name, err)
	}
	if m := fi.Mode(); !m.IsRegular() && !m.IsDir() {
		f.Close()
		return nil, pathErr("open", name, syscall.EACCES)
	}
	return &hostFile{f: f, name: name}, nil
}

func (h *hostRaw) Mkdir(name string, perm os.FileMode) error {
	if err := h.erofs("mkdir", name); err != nil {
		return err
	}
	return rewrap("mkdir", name, h.root.Mkdir(rel(name), perm&(os.ModePerm|os.ModeSticky)))
}

func (h *hostRaw) MkdirAll(name string, perm os.FileMode) error { return mkdirAll(h, name, perm) }

func (h *hostRaw) Remove(name string) error {
	if err := h.erofs("remove", name); err != nil {
		return err
	}
	if rel(name) == "." {
		return pathErr("remove", name, syscall.EBUSY)
	}
	return rewrap("remove", name, h.root.Remove(rel(name)))
}

func (h *hostRaw) RemoveAll(name string) error {
	if err := h.erofs("removeall", name); err != nil {
		return err
	}
	if rel(name) == "." {
		return pathErr("removeall", name, syscall.EBUSY)
	}
	return rewrap("removeall", name, h.root.RemoveAll(rel(name)))
}

func (h *hostRaw) Rename(oldname, newname string) error {
	if h.ro {
		return linkErr("rename", oldname, newname, syscall.EROFS)
	}
	if rel(oldname) == "." || rel(newname) == "." {
		return linkErr("rename", oldname, newname, syscall.EBUSY)
	}
	err := h.renameAt(oldname, newname)
	return rewrapLink("rename", oldname, newname, err)
}

func (h *hostRaw) Stat(name string) (os.FileInfo, error) {
	fi, err := h.root.Stat(rel(name))
	if err != nil {
		return nil, rewrap("stat", name, err)
	}
	return hostInfo(fi), nil
}

func (h *hostRaw) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	fi, err := h.root.Lstat(rel(name))
	if err != nil {
		return nil, true, rewrap("lstat", name, err)
	}
	return hostInfo(fi), true, nil
}

func (h *hostRaw) ReadlinkIfPossible(name string) (string, error) {
	t, err := h.root.Readlink(rel(name))
	return t, rewrap("readlink", name, err)
}

func (h *hostRaw) SymlinkIfPossible(oldname, newname string) error {
	if h.ro {
		return linkErr("symlink", oldname, newname, syscall.EROFS)
	}
	return rewrapLink("symlink", oldname, newname, h.root.Symlink(oldname, rel(newname)))
}

func (h *hostRaw) Link(oldname, newname string) error {
	if h.ro {
		return linkErr("link", oldname, newname, syscall.EROFS)
	}
	return rewrapLink("link", oldname, newname, h.root.Link(rel(oldname), rel(newname)))
}

func (h *hostRaw) Chmod(name string, mode os.FileMode) error {
	if err := h.erofs("chmod", name); err != nil {
		return err
	}
	// No setuid or setgid bits on the host: a guest must not be able to
	// plant a privileged executable for a host user to run.
	return rewrap("chmod", name, h.root.Chmod(rel(name), mode&(os.ModePerm|os.ModeSticky)))
}

func (h *hostRaw) Chown(name string, uid, gid int) error {
	if err := h.erofs("chown", name); err != nil {
		return err
	}
	// Guest user ids mean nothing on the host, and the sandbox user is
	// not root: changing the owner of a host file is refused, as chown(2)
	// refuses it to an unprivileged user. Only a no-op change succeeds.
	fi, err := h.root.Stat(rel(name))
	if err != nil {
		return rewrap("chown", name, err)
	}
	st := hostStat(fi)
	if (uid == -1 || uint32(uid) == st.Uid) && (gid == -1 || uint32(gid) == st.Gid) {
		return nil
	}
	return pathErr("chown", name, syscall.EPERM)
}

func (h *hostRaw) Chtimes(name string, atime, mtime time.Time) error {
	if err := h.erofs("chtimes", name); err != nil {
		return err
	}
	return rewrap("chtimes", name, h.root.Chtimes(rel(name), atime, mtime))
}

// hostInfo converts a host FileInfo so that Sys() is a *Stat.
func hostInfo(fi os.FileInfo) os.FileInfo {
	if fi == nil {
		return nil
	}
	return &fileInfo{name: fi.Name(), size: fi.Size(), mode: fi.Mode(), mtime: fi.ModTime(), sys: hostStat(fi)}
}

// hostFile is an open host file; errors carry the guest name and an Errno.
type hostFile struct {
	f    *os.File
	name string
}

var _ afero.File = (*hostFile)(nil)

func (f *hostFile) Name() string { return f.name }

func (f *hostFile) fix(op string, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	return rewrap(op, f.name, err)
}

func (f *hostFile) Close() error { return f.fix("close", f.f.Close()) }

func (f *hostFile) Read(p []byte) (int, error) {
	n, err := f.f.Read(p)
	return n, f.fix("read", err)
}

func (f *hostFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	return n, f.fix("readat", err)
}

func (f *hostFile) Write(p []byte) (int, error) {
	n, err := f.f.Write(p)
	return n, f.fix("write", err)
}

func (f *hostFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.f.WriteAt(p, off)
	return n, f.fix("writeat", err)
}

func (f *hostFile) WriteString(s string) (int, error) { return f.Write([]byte(s)) }

func (f *hostFile) Seek(offset int64, whence int) (int64, error) {
	n, err := f.f.Seek(offset, whence)
	return n, f.fix("seek", err)
}

func (f *hostFile) Stat() (os.FileInfo, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return nil, f.fix("stat", err)
	}
	return renamed(hostInfo(fi), statName(f.name)), nil
}

func (f *hostFile) Sync() error { return f.fix("sync", f.f.Sync()) }

func (f *hostFile) Truncate(size int64) error { return f.fix("truncate", f.f.Truncate(size)) }

func (f *hostFile) Readdir(count int) ([]os.FileInfo, error) {
	fis, err := f.f.Readdir(count)
	for i, fi := range fis {
		fis[i] = hostInfo(fi)
	}
	return fis, f.fix("readdir", err)
}

func (f *hostFile) Readdirnames(count int) ([]string, error) {
	names, err := f.f.Readdirnames(count)
	return names, f.fix("readdirent", err)
}

func (h *hostRaw) Lchtimes(name string, atime, mtime time.Time) error {
	if err := h.erofs("lchtimes", name); err != nil {
		return err
	}
	return rewrap("lchtimes", name, h.lchtimesAt(name, atime, mtime))
}

var (
	_ FS = (*HostFS)(nil)
	_ FS = (*hostRaw)(nil)
	_ FS = (*cowFS)(nil)
	_ FS = (*mountTable)(nil)
	_ FS = (*resolving)(nil)
)
