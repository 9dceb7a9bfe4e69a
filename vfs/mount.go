package vfs

import (
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// VFS is a mount table: one guest namespace made of filesystems mounted at
// guest paths. The filesystem with the longest mount point that is a
// prefix of a path serves it.
//
// Path resolution is done here, over the whole namespace: a symlink in
// one filesystem may point into another, and an absolute symlink target
// in a host mount starts at the guest root, never at the host's. Rename
// and Link between two filesystems fail with EXDEV; removing or renaming a
// mount point (or a directory above one) fails with EBUSY. Listing a
// directory shows its mount points with the attributes of the mounted
// root.
//
// A VFS is safe for concurrent use; Mount and Unmount may run while other
// goroutines use the namespace.
type VFS struct {
	resolving
	mt *mountTable
}

var _ FS = (*VFS)(nil)

type mount struct {
	point string
	fs    FS // as mounted
	raw   FS // what resolved paths are handed to
}

type mountTable struct {
	mu     sync.RWMutex
	mounts []*mount // longest point first
}

// New returns a VFS whose root filesystem is root.
func New(root FS) *VFS {
	mt := &mountTable{mounts: []*mount{{point: "/", fs: root, raw: rawOf(root)}}}
	return &VFS{resolving: resolving{raw: mt}, mt: mt}
}

func rawOf(fs FS) FS {
	if r, ok := fs.(rawer); ok {
		return r.rawFS()
	}
	return fs
}

// MountPoint describes one entry of the mount table.
type MountPoint struct {
	Path string
	FS   FS
}

// Mount mounts fsys at the absolute guest path point. The mount point is
// created (with parents, mode 0755) in the filesystem that serves it if it
// does not exist; it must not go through a symlink (EINVAL) and must not
// already be a mount point (EBUSY). A single host file (HostFile) is
// mounted on a regular file (EISDIR otherwise), created empty (0644) if
// missing; anything else on a directory (ENOTDIR otherwise).
func (v *VFS) Mount(point string, fsys FS) error {
	const op = "mount"
	if fsys == nil || !strings.HasPrefix(point, "/") {
		return pathErr(op, point, syscall.EINVAL)
	}
	point = cleanAbs(point)
	_, isFile := fsys.(*hostFileFS) // a file is mounted on a file
	fi, err := v.Stat(point)
	if err != nil && isNotExist(err) {
		if isFile {
			err = v.MkdirAll(parentOf(point), 0o755)
			if err == nil {
				var fh afero.File
				if fh, err = v.OpenFile(point, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
					fh.Close()
				}
			}
		} else {
			err = v.MkdirAll(point, 0o755)
		}
		if err == nil {
			fi, err = v.Stat(point)
		}
	}
	if err != nil {
		return rewrap(op, point, err)
	}
	if p, _, errno := walk(v.mt, point, true); errno != 0 {
		return pathErr(op, point, errno)
	} else if p != point {
		return pathErr(op, point, syscall.EINVAL)
	}
	if isFile && !fi.Mode().IsRegular() {
		return pathErr(op, point, syscall.EISDIR)
	}
	if !isFile && !fi.IsDir() {
		return pathErr(op, point, syscall.ENOTDIR)
	}
	v.mt.mu.Lock()
	defer v.mt.mu.Unlock()
	for _, m := range v.mt.mounts {
		if m.point == point {
			return pathErr(op, point, syscall.EBUSY)
		}
	}
	v.mt.mounts = append(v.mt.mounts, &mount{point: point, fs: fsys, raw: rawOf(fsys)})
	sort.SliceStable(v.mt.mounts, func(i, j int) bool { return len(v.mt.mounts[i].point) > len(v.mt.mounts[j].point) })
	return nil
}

// Unmount removes the mount at point (EINVAL if there is none; the root
// cannot be unmounted: EBUSY). The filesystem is not closed.
func (v *VFS) Unmount(point string) error {
	point = cleanAbs(point)
	if point == "/" {
		return pathErr("unmount", point, syscall.EBUSY)
	}
	v.mt.mu.Lock()
	defer v.mt.mu.Unlock()
	for i, m := range v.mt.mounts {
		if m.point == point {
			v.mt.mounts = append(v.mt.mounts[:i], v.mt.mounts[i+1:]...)
			return nil
		}
	}
	return pathErr("unmount", point, syscall.EINVAL)
}

// Mounts lists the mount table, shortest mount point first.
func (v *VFS) Mounts() []MountPoint {
	v.mt.mu.RLock()
	defer v.mt.mu.RUnlock()
	out := make([]MountPoint, 0, len(v.mt.mounts))
	for i := len(v.mt.mounts) - 1; i >= 0; i-- {
		out = append(out, MountPoint{Path: v.mt.mounts[i].point, FS: v.mt.mounts[i].fs})
	}
	return out
}

// Fork returns an independent copy of the namespace: every mounted
// filesystem is forked (see Fork) and mounted at the same place. Host
// read-only and read-write mounts are shared with the fork; the in-memory
// layers (MemFS, copy-on-write uppers) are copied.
func (v *VFS) Fork() *VFS {
	v.mt.mu.RLock()
	defer v.mt.mu.RUnlock()
	mt := &mountTable{mounts: make([]*mount, len(v.mt.mounts))}
	for i, m := range v.mt.mounts {
		f := Fork(m.fs)
		mt.mounts[i] = &mount{point: m.point, fs: f, raw: rawOf(f)}
	}
	return &VFS{resolving: resolving{raw: mt, cr: v.cr}, mt: mt}
}

// AsUser returns a view of the namespace of v (the same mount table, the
// same files) that acts as the user c: every lookup, open, create,
// removal, rename, link and metadata change is checked against the
// permission bits and owners the way Linux checks them for an
// unprivileged process (see Cred for the rules). For uid 0 the view
// checks nothing, as v itself. Forking the view forks the namespace and
// keeps the user.
//
// The checks are part of the path resolution of the view, so they hold
// for every entry point that uses it; v itself stays unrestricted (the
// host operator's view). Mount and Unmount of the view change the shared
// mount table, but create mount points as the user: mount through v.
func (v *VFS) AsUser(c Cred) *VFS {
	var cr *Cred
	if c.UID != 0 {
		c.Groups = append([]uint32(nil), c.Groups...)
		cr = &c
	}
	return &VFS{resolving: resolving{raw: v.mt, cr: cr}, mt: v.mt}
}

// User reports the user a view made by AsUser acts as; false for an
// unrestricted VFS (and a view for uid 0).
func (v *VFS) User() (Cred, bool) {
	if v.cr == nil {
		return Cred{}, false
	}
	c := *v.cr
	c.Groups = append([]uint32(nil), c.Groups...)
	return c, true
}

// Fork returns an independent copy of fsys when fsys can be forked
// (*MemFS, *VFS, a copy-on-write *HostFS, or any type with a method
// Fork() FS); otherwise fsys itself, shared.
func Fork(fsys FS) FS {
	switch f := fsys.(type) {
	case *MemFS:
		return f.Fork()
	case *VFS:
		return f.Fork()
	case interface{ Fork() FS }:
		return f.Fork()
	}
	return fsys
}

// find returns the mount serving resolved path p and p inside it.
func (mt *mountTable) find(p string) (*mount, string) {
	mt.mu.RLock()
	defer mt.mu.RUnlock()
	for _, m := range mt.mounts {
		if m.point == "/" {
			return m, p
		}
		if p == m.point {
			return m, "/"
		}
		if strings.HasPrefix(p, m.point) && p[len(m.point)] == '/' {
			return m, p[len(m.point):]
		}
	}
	return nil, "" // unreachable: "/" is always mounted
}

// busy reports whether p is a mount point or lies above one.
func (mt *mountTable) busy(p string) bool {
	mt.mu.RLock()
	defer mt.mu.RUnlock()
	for _, m := range mt.mounts {
		if m.point == "/" {
			continue
		}
		if m.point == p || p == "/" || strings.HasPrefix(m.point, p+"/") {
			return true
		}
	}
	return false
}

// children returns the mount points directly below p.
func (mt *mountTable) children(p string) []*mount {
	mt.mu.RLock()
	defer mt.mu.RUnlock()
	var out []*mount
	for _, m := range mt.mounts {
		if m.point != "/" && m.point != p && parentOf(m.point) == p {
			out = append(out, m)
		}
	}
	return out
}

func (mt *mountTable) Name() string { return "VFS" }

func (mt *mountTable) Create(p string) (afero.File, error) {
	return mt.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (mt *mountTable) Open(p string) (afero.File, error) { return mt.OpenFile(p, os.O_RDONLY, 0) }

func (mt *mountTable) OpenFile(p string, flag int, perm os.FileMode) (afero.File, error) {
	m, r := mt.find(p)
	f, err := m.raw.OpenFile(r, flag, perm)
	if err != nil {
		return nil, rewrap("open", p, err)
	}
	return mt.wrapDir(p, named(f, p)), nil
}

// wrapDir returns f, or when f is a directory with mount points directly
// below it, a directory handle that lists them with the attributes of the
// mounted roots.
func (mt *mountTable) wrapDir(p string, f afero.File) afero.File {
	if len(mt.children(p)) == 0 {
		return f
	}
	fi, err := f.Stat()
	if err != nil || !fi.IsDir() {
		return f
	}
	return &listDir{name: f.Name(), info: fi, close: f.Close, load: func() ([]os.FileInfo, error) {
		if _, err := f.Seek(0, 0); err != nil {
			return nil, err
		}
		ents, err := f.Readdir(-1)
		if err != nil {
			return nil, err
		}
		idx := make(map[string]int, len(ents))
		for i, e := range ents {
			idx[e.Name()] = i
		}
		for _, k := range mt.children(p) {
			name := baseName(k.point)
			fi, _, err := k.raw.LstatIfPossible("/")
			if err != nil {
				continue
			}
			fi = renamed(fi, name)
			if i, ok := idx[name]; ok {
				ents[i] = fi
			} else {
				ents = append(ents, fi)
			}
		}
		return ents, nil
	}}
}

func (mt *mountTable) Mkdir(p string, perm os.FileMode) error {
	m, r := mt.find(p)
	return rewrap("mkdir", p, m.raw.Mkdir(r, perm))
}

func (mt *mountTable) MkdirAll(p string, perm os.FileMode) error { return mkdirAll(mt, p, perm) }

func (mt *mountTable) Remove(p string) error {
	if mt.busy(p) {
		return pathErr("remove", p, syscall.EBUSY)
	}
	m, r := mt.find(p)
	return rewrap("remove", p, m.raw.Remove(r))
}

func (mt *mountTable) RemoveAll(p string) error {
	if !mt.busy(p) {
		m, r := mt.find(p)
		return rewrap("removeall", p, m.raw.RemoveAll(r))
	}
	return removeAllRaw(mt, p)
}

func (mt *mountTable) Rename(oldname, newname string) error {
	if mt.busy(oldname) || mt.busy(newname) {
		return linkErr("rename", oldname, newname, syscall.EBUSY)
	}
	mo, ro := mt.find(oldname)
	mn, rn := mt.find(newname)
	if mo != mn {
		return linkErr("rename", oldname, newname, syscall.EXDEV)
	}
	return rewrapLink("rename", oldname, newname, mo.raw.Rename(ro, rn))
}

func (mt *mountTable) Stat(p string) (os.FileInfo, error) {
	return statResolved(mt, nil, "stat", p, true)
}

func (mt *mountTable) LstatIfPossible(p string) (os.FileInfo, bool, error) {
	m, r := mt.find(p)
	fi, _, err := m.raw.LstatIfPossible(r)
	if err != nil {
		return nil, true, rewrap("lstat", p, err)
	}
	if r == "/" {
		fi = renamed(fi, baseName(p))
	}
	return fi, true, nil
}

func (mt *mountTable) ReadlinkIfPossible(p string) (string, error) {
	m, r := mt.find(p)
	t, err := m.raw.ReadlinkIfPossible(r)
	return t, rewrap("readlink", p, err)
}

func (mt *mountTable) SymlinkIfPossible(target, p string) error {
	m, r := mt.find(p)
	return rewrapLink("symlink", target, p, m.raw.SymlinkIfPossible(target, r))
}

func (mt *mountTable) Link(oldname, newname string) error {
	mo, ro := mt.find(oldname)
	mn, rn := mt.find(newname)
	if mo != mn {
		return linkErr("link", oldname, newname, syscall.EXDEV)
	}
	return rewrapLink("link", oldname, newname, mo.raw.Link(ro, rn))
}

func (mt *mountTable) Chmod(p string, mode os.FileMode) error {
	m, r := mt.find(p)
	return rewrap("chmod", p, m.raw.Chmod(r, mode))
}

func (mt *mountTable) Chown(p string, uid, gid int) error {
	m, r := mt.find(p)
	return rewrap("chown", p, m.raw.Chown(r, uid, gid))
}

func (mt *mountTable) Chtimes(p string, atime, mtime time.Time) error {
	m, r := mt.find(p)
	return rewrap("chtimes", p, m.raw.Chtimes(r, atime, mtime))
}

func (mt *mountTable) Lchtimes(p string, atime, mtime time.Time) error {
	m, r := mt.find(p)
	return rewrap("lchtimes", p, Lchtimes(m.raw, r, atime, mtime))
}
