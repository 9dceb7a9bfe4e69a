package vfs

import (
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// The fast path of the VFS. Resolving a path one component at a time over
// the whole namespace (resolving.walk) costs one Lstat per component. Most
// paths contain no ".." and no symlink and stay inside one MemFS: for them
// the lexically cleaned path is the resolved path, and the MemFS can walk
// it in one go under its own lock. The MemFS is asked to walk in strict
// mode, where meeting a symlink that would have to be followed fails with
// errSymlink instead; the VFS then starts over with the general
// resolution, so symlinks still resolve over the whole guest namespace.
//
// Mount points and the directories above them are never symlinks: the VFS
// refuses to remove or rename them (EBUSY).
//
// Host directories (read-only and read-write mounts) get the same fast
// path for Stat, Lstat and opens for reading: see hostRaw.withParent.

type fastPath struct {
	mem *MemFS
	m   *mount
	p   string // guest path, clean
	r   string // path inside mem
}

// fast prepares the fast path of name over a MemFS.
func (v *VFS) fast(name string) (fastPath, bool) {
	fp, ok := v.fastAny(name)
	return fp, ok && fp.mem != nil
}

// fastAny is fast for a MemFS or a host directory (fp.mem == nil and
// fp.m.raw is a *hostRaw).
func (v *VFS) fastAny(name string) (fastPath, bool) {
	if len(name) > MaxPathLen || strings.Contains(name, "..") || strings.IndexByte(name, 0) >= 0 {
		return fastPath{}, false
	}
	p := cleanAbs(name)
	m, r := v.mt.find(p)
	mem, ok := m.raw.(*MemFS)
	if !ok {
		if _, ok := m.raw.(*hostRaw); !ok {
			return fastPath{}, false
		}
	}
	if v.cr != nil && m.point != "/" && !v.reachable(m.point) {
		// The general resolution says which directory is in the way.
		return fastPath{}, false
	}
	if r != "/" && wantsDir(name) {
		r += "/"
	}
	return fastPath{mem: mem, m: m, p: p, r: r}, true
}

// how is the access of the fast path's MemFS calls: strict, with the
// view's permission checks.
func (v *VFS) how() access { return access{strict: true, cr: v.cr} }

// reachable reports whether the user of the view may search every
// directory above the mount point point (those belong to other mounts;
// the fast path checks the mount's own directories). Mount points and the
// directories above them are never symlinks.
func (v *VFS) reachable(point string) bool {
	for d := parentOf(point); ; d = parentOf(d) {
		fi, _, err := v.mt.LstatIfPossible(d)
		if err != nil || !v.cr.allowsInfo(fi, mayExec) {
			return false
		}
		if d == "/" {
			return true
		}
	}
}

// fallback reports whether a strict MemFS call met a symlink.
func fallback(err error) bool { return err != nil && Errno(err) == errSymlink }

// Create creates or truncates name (mode 0666).
func (v *VFS) Create(name string) (afero.File, error) {
	return v.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Open opens name for reading.
func (v *VFS) Open(name string) (afero.File, error) { return v.OpenFile(name, os.O_RDONLY, 0) }

// OpenFile opens name; see FS for the flags honoured.
func (v *VFS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	fp, ok := v.fastAny(name)
	if ok && fp.mem == nil && flag&(accMode|os.O_CREATE|os.O_TRUNC|os.O_APPEND) == os.O_RDONLY && !wantsDir(name) {
		f, err := fp.m.raw.(*hostRaw).fastOpen(fp.r, name, flag, v.cr)
		if err == nil {
			return v.mt.wrapDir(fp.p, f), nil
		}
		if !fallback(err) {
			return nil, rewrap("open", name, err)
		}
	}
	if ok && fp.mem != nil {
		f, err := fp.mem.openFile(fp.r, name, flag, perm, v.how())
		if err == nil {
			return v.mt.wrapDir(fp.p, f), nil
		}
		if !fallback(err) {
			return nil, rewrap("open", name, err)
		}
	}
	if v.cr != nil {
		var f afero.File
		nofollow := flag&syscall.O_NOFOLLOW != 0
		excl := flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL
		if err, ok := v.userFast(name, !nofollow && !excl, func(fp fastPath) error {
			mf, err := fp.mem.openFile(fp.r, name, flag, perm, v.how())
			if err == nil {
				f = v.mt.wrapDir(fp.p, mf)
			}
			return err
		}); ok {
			if err != nil {
				return nil, rewrap("open", name, err)
			}
			return f, nil
		}
	}
	return v.resolving.OpenFile(name, flag, perm)
}

// Stat returns the FileInfo of name, following symlinks.
func (v *VFS) Stat(name string) (os.FileInfo, error) { return v.stat("stat", name, true) }

// LstatIfPossible returns the FileInfo of name without following a final
// symlink; the boolean is always true.
func (v *VFS) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	fi, err := v.stat("lstat", name, false)
	return fi, true, err
}

func (v *VFS) stat(op, name string, follow bool) (os.FileInfo, error) {
	fp, ok := v.fastAny(name)
	if ok && fp.mem == nil {
		fi, err := fp.m.raw.(*hostRaw).fastLstat(fp.r, follow, wantsDir(name), v.cr)
		if err == nil {
			return renamed(fi, statName(name)), nil
		}
		if !fallback(err) {
			return nil, rewrap(op, name, err)
		}
	}
	if ok && fp.mem != nil {
		fi, err := fp.mem.stat(op, fp.r, follow, v.how())
		if err == nil {
			return renamed(fi, statName(name)), nil
		}
		if !fallback(err) {
			return nil, rewrap(op, name, err)
		}
	}
	if v.cr != nil {
		var fi os.FileInfo
		if err, ok := v.userFast(name, follow, func(fp fastPath) error {
			var err error
			fi, err = fp.mem.stat(op, fp.r, follow, v.how())
			return err
		}); ok {
			if err != nil {
				return nil, rewrap(op, name, err)
			}
			return renamed(fi, statName(name)), nil
		}
	}
	return statResolved(v.mt, v.cr, op, name, follow)
}

// Mkdir creates directory name; its parent must exist.
func (v *VFS) Mkdir(name string, perm os.FileMode) error {
	if fp, ok := v.fast(name); ok && !lastIsDot(name) {
		err := fp.mem.mkdir(fp.r, perm, v.how())
		if !fallback(err) {
			return rewrap("mkdir", name, err)
		}
	}
	if v.cr != nil && !lastIsDot(name) {
		if err, ok := v.userFast(name, false, func(fp fastPath) error {
			return fp.mem.mkdir(fp.r, perm, v.how())
		}); ok {
			return rewrap("mkdir", name, err)
		}
	}
	return v.resolving.Mkdir(name, perm)
}

// MkdirAll creates name and every missing parent.
func (v *VFS) MkdirAll(name string, perm os.FileMode) error { return mkdirAll(v, name, perm) }

// Remove removes a file, symlink or empty directory; mount points are
// EBUSY.
func (v *VFS) Remove(name string) error {
	if fp, ok := v.fast(name); ok && !lastIsDot(name) && !v.mt.busy(fp.p) {
		err := fp.mem.remove(fp.r, v.how())
		if !fallback(err) {
			return rewrap("remove", name, err)
		}
	}
	if v.cr != nil && !lastIsDot(name) {
		if err, ok := v.userFast(name, false, func(fp fastPath) error {
			if v.mt.busy(fp.p) {
				return syscall.EBUSY
			}
			return fp.mem.remove(fp.r, v.how())
		}); ok {
			return rewrap("remove", name, err)
		}
	}
	return v.resolving.Remove(name)
}

// RemoveAll removes name and everything below it, never following
// symlinks. Mounted filesystems below name are emptied, and then EBUSY is
// reported for their mount points.
func (v *VFS) RemoveAll(name string) error {
	if v.cr != nil {
		return removeAllAs(v, name)
	}
	if fp, ok := v.fast(name); ok && !lastIsDot(name) && !v.mt.busy(fp.p) {
		err := fp.mem.removeAll(fp.r, v.how())
		if !fallback(err) {
			return rewrap("removeall", name, err)
		}
	}
	return v.resolving.RemoveAll(name)
}

// Rename renames oldname to newname (EXDEV across filesystems, EBUSY for
// mount points).
func (v *VFS) Rename(oldname, newname string) error {
	if fo, ok := v.fast(oldname); ok && !lastIsDot(oldname) && !lastIsDot(newname) {
		if fn, ok := v.fast(newname); ok && fn.m == fo.m && !v.mt.busy(fo.p) && !v.mt.busy(fn.p) {
			err := fo.mem.rename(fo.r, fn.r, v.how())
			if !fallback(err) {
				return rewrapLink("rename", oldname, newname, err)
			}
		}
	}
	if v.cr != nil && !lastIsDot(oldname) && !lastIsDot(newname) {
		if err, ok := v.userFast2(oldname, newname, func(fo, fn fastPath) error {
			if v.mt.busy(fo.p) || v.mt.busy(fn.p) {
				return syscall.EBUSY
			}
			return fo.mem.rename(fo.r, fn.r, v.how())
		}); ok {
			return rewrapLink("rename", oldname, newname, err)
		}
	}
	return v.resolving.Rename(oldname, newname)
}

// Link creates newname as a hard link to oldname (EXDEV across
// filesystems).
func (v *VFS) Link(oldname, newname string) error {
	// A newname with a trailing slash takes the general path, which
	// answers as link(2) does (ENOENT, or EEXIST) before it looks at
	// oldname.
	if fo, ok := v.fast(oldname); ok && !lastIsDot(newname) && !strings.HasSuffix(newname, "/") {
		if fn, ok := v.fast(newname); ok && fn.m == fo.m {
			err := fo.mem.hardlink(fo.r, fn.r, v.how())
			if !fallback(err) {
				return rewrapLink("link", oldname, newname, err)
			}
		}
	}
	if v.cr != nil && !lastIsDot(newname) && !strings.HasSuffix(newname, "/") {
		if err, ok := v.userFast2(oldname, newname, func(fo, fn fastPath) error {
			return fo.mem.hardlink(fo.r, fn.r, v.how())
		}); ok {
			return rewrapLink("link", oldname, newname, err)
		}
	}
	return v.resolving.Link(oldname, newname)
}

// SymlinkIfPossible creates newname as a symlink to oldname.
func (v *VFS) SymlinkIfPossible(oldname, newname string) error {
	if fp, ok := v.fast(newname); ok && !lastIsDot(newname) {
		err := fp.mem.symlink(oldname, fp.r, v.how())
		if !fallback(err) {
			return rewrapLink("symlink", oldname, newname, err)
		}
	}
	if v.cr != nil && !lastIsDot(newname) {
		if err, ok := v.userFast(newname, false, func(fp fastPath) error {
			return fp.mem.symlink(oldname, fp.r, v.how())
		}); ok {
			return rewrapLink("symlink", oldname, newname, err)
		}
	}
	return v.resolving.SymlinkIfPossible(oldname, newname)
}

// ReadlinkIfPossible returns the target of symlink name.
func (v *VFS) ReadlinkIfPossible(name string) (string, error) {
	if fp, ok := v.fast(name); ok {
		t, err := fp.mem.readlink(fp.r, v.how())
		if !fallback(err) {
			return t, rewrap("readlink", name, err)
		}
	}
	if v.cr != nil {
		var t string
		if err, ok := v.userFast(name, false, func(fp fastPath) error {
			var err error
			t, err = fp.mem.readlink(fp.r, v.how())
			return err
		}); ok {
			return t, rewrap("readlink", name, err)
		}
	}
	return v.resolving.ReadlinkIfPossible(name)
}

// node finds the inode of name on the fast path.
func (v *VFS) node(op, name string, follow bool) (m *MemFS, n *inode, ok bool, err error) {
	fp, ok := v.fast(name)
	if !ok {
		return nil, nil, false, nil
	}
	n, err = fp.mem.node(op, fp.r, follow, v.how())
	if fallback(err) {
		return nil, nil, false, nil
	}
	return fp.mem, n, true, rewrap(op, name, err)
}

// Chmod sets the permission bits of name.
func (v *VFS) Chmod(name string, mode os.FileMode) error {
	if m, n, ok, err := v.node("chmod", name, true); ok {
		if err == nil {
			err = rewrap("chmod", name, errnoErr(m.chmod(n, mode, v.cr)))
		}
		return err
	}
	if v.cr != nil {
		if err, ok := v.userFast(name, true, func(fp fastPath) error {
			n, err := fp.mem.node("chmod", fp.r, true, v.how())
			if err != nil {
				return err
			}
			return errnoErr(fp.mem.chmod(n, mode, v.cr))
		}); ok {
			return rewrap("chmod", name, err)
		}
	}
	return v.resolving.Chmod(name, mode)
}

// Chown sets the owner of name; -1 leaves a value unchanged.
func (v *VFS) Chown(name string, uid, gid int) error {
	if m, n, ok, err := v.node("chown", name, true); ok {
		if err == nil {
			err = rewrap("chown", name, errnoErr(m.chown(n, uid, gid, v.cr)))
		}
		return err
	}
	if v.cr != nil {
		if err, ok := v.userFast(name, true, func(fp fastPath) error {
			n, err := fp.mem.node("chown", fp.r, true, v.how())
			if err != nil {
				return err
			}
			return errnoErr(fp.mem.chown(n, uid, gid, v.cr))
		}); ok {
			return rewrap("chown", name, err)
		}
	}
	return v.resolving.Chown(name, uid, gid)
}

// Chtimes sets the access and modification times of name.
func (v *VFS) Chtimes(name string, atime, mtime time.Time) error {
	if m, n, ok, err := v.node("chtimes", name, true); ok {
		if err == nil {
			err = rewrap("chtimes", name, errnoErr(m.chtimes(n, atime, mtime, v.cr)))
		}
		return err
	}
	if v.cr != nil {
		if err, ok := v.userFast(name, true, func(fp fastPath) error {
			n, err := fp.mem.node("chtimes", fp.r, true, v.how())
			if err != nil {
				return err
			}
			return errnoErr(fp.mem.chtimes(n, atime, mtime, v.cr))
		}); ok {
			return rewrap("chtimes", name, err)
		}
	}
	return v.resolving.Chtimes(name, atime, mtime)
}

// Lchtimes sets the times of name without following a final symlink.
// Filesystems mounted in the VFS that cannot do it answer ENOTSUP.
func (v *VFS) Lchtimes(name string, atime, mtime time.Time) error {
	if m, n, ok, err := v.node("lchtimes", name, false); ok {
		if err == nil {
			err = rewrap("lchtimes", name, errnoErr(m.chtimes(n, atime, mtime, v.cr)))
		}
		return err
	}
	if v.cr != nil {
		if err, ok := v.userFast(name, false, func(fp fastPath) error {
			n, err := fp.mem.node("lchtimes", fp.r, false, v.how())
			if err != nil {
				return err
			}
			return errnoErr(fp.mem.chtimes(n, atime, mtime, v.cr))
		}); ok {
			return rewrap("lchtimes", name, err)
		}
	}
	return v.resolving.Lchtimes(name, atime, mtime)
}

// userFast is the general resolution of a user view made safe against a
// symlink swapped in on the way: name is resolved over the whole
// namespace (with the search checks; a failure is the answer), and when
// the resolved path lies in
// a MemFS, fn runs the operation there by the strict fast path, which
// checks the permissions again under the MemFS's lock and refuses
// (errSymlink) a directory that has become a symlink since; the
// resolution then starts over. ok is false when the path is not in a
// MemFS: the caller takes the general path.
func (v *VFS) userFast(name string, follow bool, fn func(fastPath) error) (err error, ok bool) {
	for try := 0; try < MaxSymlinks; try++ {
		p, mustDir, errno := walkAs(v.mt, v.cr, name, follow)
		if errno != 0 {
			return errno, true
		}
		if mustDir && p != "/" {
			p += "/"
		}
		fp, ok := v.fast(p)
		if !ok {
			return nil, false
		}
		if err := fn(fp); !fallback(err) {
			return err, true
		}
	}
	return syscall.ELOOP, true
}

// userFast2 is userFast for the two names of a rename or link, which the
// fast path serves when both resolve into the same MemFS.
func (v *VFS) userFast2(oldname, newname string, fn func(fo, fn fastPath) error) (err error, ok bool) {
	for try := 0; try < MaxSymlinks; try++ {
		po, oldDir, errno := walkAs(v.mt, v.cr, oldname, false)
		if errno != 0 {
			return errno, true
		}
		pn, newDir, errno := walkAs(v.mt, v.cr, newname, false)
		if errno != 0 {
			return errno, true
		}
		if oldDir && po != "/" {
			po += "/"
		}
		if newDir && pn != "/" {
			pn += "/"
		}
		fo, ok := v.fast(po)
		if !ok {
			return nil, false
		}
		fnp, ok := v.fast(pn)
		if !ok || fnp.m != fo.m {
			return nil, false
		}
		if err := fn(fo, fnp); !fallback(err) {
			return err, true
		}
	}
	return syscall.ELOOP, true
}
