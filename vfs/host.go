package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
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
// Host tools (git, editors, the user's shell) follow the symlinks of a
// read-write mount on the host, where a guest path means nothing. So in a
// ReadWrite mount a symlink may only point inside the mount: its target
// must be relative, its ".." components must come first and not climb
// above the mount root from the link's directory (lexically; "a/../b" is
// refused too, since the host resolves "a" first). Anything else is EPERM.
// Rename and Link obey the same rule for every symlink they put at a new
// place (the one moved, or every one under a directory moved; a host-made
// link with an absolute target is not moved), so that a link cannot be
// made harmless and moved where it is not; across filesystems they are
// EXDEV anyway. Links already in the host directory are left as they are.
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

	// linkMu serializes, in a read-write mount, the operations that put a
	// symlink at a place (Symlink, Link, Rename) with their checks: while
	// one holds it, no directory on its path can become a symlink and no
	// symlink can appear in a subtree being moved. See hostLinkOK.
	linkMu sync.Mutex
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
	h.linkMu.Lock()
	defer h.linkMu.Unlock()
	if err := h.checkMove(oldname, newname, true); err != nil {
		return rewrapLink("rename", oldname, newname, err)
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

// SymlinkIfPossible creates a host symlink. In a read-write mount the
// target must stay inside the mount (see hostLinkOK): anything else is
// EPERM, because a host tool (git, an editor, the user's shell) would
// follow the link on the host, where a guest path means nothing.
func (h *hostRaw) SymlinkIfPossible(oldname, newname string) error {
	if h.ro {
		return linkErr("symlink", oldname, newname, syscall.EROFS)
	}
	h.linkMu.Lock()
	defer h.linkMu.Unlock()
	dir := path.Dir(cleanAbs(newname))
	if !hostLinkOK(dir, oldname) {
		// An existing newname is EEXIST whatever the target, as
		// symlink(2) says (and as every other path of the VFS answers).
		if _, err := h.root.Lstat(rel(newname)); err == nil || cleanAbs(newname) == "/" {
			return linkErr("symlink", oldname, newname, syscall.EEXIST)
		}
		return linkErr("symlink", oldname, newname, syscall.EPERM)
	}
	if err := h.realDir(dir); err != nil {
		return rewrapLink("symlink", oldname, newname, err)
	}
	return rewrapLink("symlink", oldname, newname, h.root.Symlink(oldname, rel(newname)))
}

// Link makes a hard link. A hard link to a symlink is a new symlink at a
// new place: in a read-write mount it obeys the rule of Symlink there.
func (h *hostRaw) Link(oldname, newname string) error {
	if h.ro {
		return linkErr("link", oldname, newname, syscall.EROFS)
	}
	h.linkMu.Lock()
	defer h.linkMu.Unlock()
	if err := h.checkMove(oldname, newname, false); err != nil {
		return rewrapLink("link", oldname, newname, err)
	}
	return rewrapLink("link", oldname, newname, h.root.Link(rel(oldname), rel(newname)))
}

// hostLinkOK reports whether a symlink to target in the directory dir of a
// read-write host mount (a clean path, "/" the mount root) stays inside
// the mount when the host resolves it. Only relative targets do: an
// absolute one means the host's root (a guest path means nothing on the
// host). The target's ".." components must all come first, and there may
// not be more of them than dir is deep: the host then climbs through real
// directories (the ones dir is made of; realDir checks them) and comes
// down by names, each of which stays inside or is a symlink that obeyed
// the same rule where it was made. A ".." after a name is refused, since
// it climbs from wherever the name leads (a symlink to "." makes
// "l/../.." climb one level more than it reads). Lexical, so cheap, and
// the same on every host.
func hostLinkOK(dir, target string) bool {
	if target == "" || strings.HasPrefix(target, "/") {
		return false
	}
	depth := len(splitPath(dir))
	named := false
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if named {
				return false
			}
			if depth--; depth < 0 {
				return false
			}
		default:
			named = true
		}
	}
	return true
}

// realDir checks, with linkMu held, that no component of dir (a clean
// path) is a symlink: the directory the host would use is the one dir
// names, at its depth. The VFS resolved dir before linkMu was taken; a
// symlink found now means that the guest changed it since (ENOENT: the
// directory it resolved is gone).
func (h *hostRaw) realDir(dir string) error {
	p := ""
	for _, c := range splitPath(dir) {
		p = path.Join(p, c)
		fi, err := h.root.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			return syscall.ENOENT
		case !fi.IsDir():
			return syscall.ENOTDIR
		}
	}
	return nil
}

// checkMove checks, with linkMu held, that renaming or hard-linking
// oldname to newname puts no symlink at a place where hostLinkOK refuses
// it: oldname itself when it is a symlink, and every symlink under it when
// it is a directory (a relative link climbs from where it is, so moving
// its directory up can make it leave the mount; and an absolute link,
// which the guest cannot make but the host may have, is not to be put at
// a name a host tool uses, such as .git/COMMIT_EDITMSG). A directory is
// walked whole, under linkMu, so nothing changes in it meanwhile; it costs
// one readdir per directory moved. tree is false for Link (a directory
// cannot be hard-linked).
func (h *hostRaw) checkMove(oldname, newname string, tree bool) error {
	ndir := path.Dir(cleanAbs(newname))
	if err := h.realDir(ndir); err != nil {
		return err
	}
	fi, err := h.root.Lstat(rel(oldname))
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		t, err := h.root.Readlink(rel(oldname))
		if err != nil {
			return err
		}
		if !hostLinkOK(ndir, t) {
			return syscall.EPERM
		}
	case fi.IsDir() && tree:
		return h.checkTree(rel(oldname), path.Join(ndir, path.Base(cleanAbs(newname))))
	}
	return nil
}

// checkTree checks the symlinks under the host directory src (relative to
// the root) as if src were at dst.
func (h *hostRaw) checkTree(src, dst string) error {
	d, err := h.root.Open(src)
	if err != nil {
		return err
	}
	defer d.Close()
	for {
		ents, err := d.ReadDir(256)
		for _, e := range ents {
			s, t := path.Join(src, e.Name()), path.Join(dst, e.Name())
			switch {
			case e.Type()&os.ModeSymlink != 0:
				target, err := h.root.Readlink(s)
				if err != nil {
					return err
				}
				if !hostLinkOK(dst, target) {
					return syscall.EPERM
				}
			case e.IsDir():
				if err := h.checkTree(s, t); err != nil {
					return err
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if len(ents) == 0 {
			return nil
		}
	}
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
