package vfs

import (
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// resolving turns a raw FS into a full FS by resolving every guest path
// itself, one component at a time, with Lstat and Readlink on the raw FS.
//
// A raw FS receives only clean absolute paths whose directory components
// are real directories (never symlinks) and never follows a final symlink
// unless the operation is one that follows (Stat, OpenFile, Chmod, Chown,
// Chtimes), in which case the path was already resolved to its target.
// Symlink targets are therefore always interpreted here, in the namespace
// of the resolving FS: an absolute target starts over at its root. This is
// what keeps a host mount's symlinks inside the guest namespace.
type resolving struct {
	raw FS
	// cr is who the paths are resolved for (see VFS.AsUser); nil: no
	// permission checks.
	cr *Cred
}

// checks reports whether r checks permissions.
func (r *resolving) checks() bool { return r.cr != nil && r.cr.UID != 0 }

// rawer is implemented by filesystems built on a raw FS; the mount table
// resolves paths once over the whole namespace and then talks to the raw
// FS directly.
type rawer interface {
	rawFS() FS
}

func (r *resolving) rawFS() FS { return r.raw }

// walk resolves name to a path in raw. The last component is followed
// when follow is set or name ends with a slash; it may not exist (the
// caller decides whether that is an error). mustDir reports a trailing
// slash.
func walk(raw FS, name string, follow bool) (p string, mustDir bool, errno syscall.Errno) {
	return walkAs(raw, nil, name, follow)
}

// walkAs is walk for the user cr: every directory looked up in needs
// search permission (EACCES), the ones a symlink's target goes through
// included.
func walkAs(raw FS, cr *Cred, name string, follow bool) (p string, mustDir bool, errno syscall.Errno) {
	if len(name) > MaxPathLen {
		return "", false, syscall.ENAMETOOLONG
	}
	if strings.IndexByte(name, 0) >= 0 {
		return "", false, syscall.EINVAL
	}
	mustDir = wantsDir(name)
	comps := splitPath(name)
	resolved := "/"
	hops := 0
	check := cr != nil && cr.UID != 0
	var dirInfo os.FileInfo // of resolved, when check; nil: not known yet
	for i := 0; i < len(comps); i++ {
		c := comps[i]
		last := i == len(comps)-1
		if check {
			if dirInfo == nil {
				fi, _, err := raw.LstatIfPossible(resolved)
				if err != nil {
					return "", false, Errno(err)
				}
				dirInfo = fi
			}
			if !cr.allowsInfo(dirInfo, mayExec) {
				return "", false, syscall.EACCES
			}
		}
		if c == ".." {
			resolved = parentOf(resolved)
			dirInfo = nil
			continue
		}
		if len(c) > MaxNameLen {
			return "", false, syscall.ENAMETOOLONG
		}
		next := joinPath(resolved, c)
		if last && !follow && !mustDir {
			return next, mustDir, 0
		}
		fi, _, err := raw.LstatIfPossible(next)
		if err != nil {
			e := Errno(err)
			if last && e == syscall.ENOENT {
				return next, mustDir, 0
			}
			return "", false, e
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			hops++
			if hops > MaxSymlinks {
				return "", false, syscall.ELOOP
			}
			t, err := raw.ReadlinkIfPossible(next)
			if err != nil {
				return "", false, Errno(err)
			}
			if t == "" {
				return "", false, syscall.ENOENT
			}
			if t[0] == '/' {
				resolved = "/"
				dirInfo = nil
			}
			if last && wantsDir(t) {
				mustDir = true
			}
			tc := splitPath(t)
			rest := comps[i+1:]
			nc := make([]string, 0, len(tc)+len(rest))
			comps = append(append(nc, tc...), rest...)
			i = -1
			continue
		}
		if !fi.IsDir() && (!last || mustDir) {
			return "", false, syscall.ENOTDIR
		}
		resolved = next
		dirInfo = fi
	}
	return resolved, mustDir, 0
}

func parentOf(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

func (r *resolving) Name() string { return r.raw.Name() }

func (r *resolving) Create(name string) (afero.File, error) {
	return r.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (r *resolving) Open(name string) (afero.File, error) {
	return r.OpenFile(name, os.O_RDONLY, 0)
}

func (r *resolving) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	return openResolved(r.raw, r.cr, name, flag, perm)
}

// openResolved is open(2) over a raw FS, for the user cr.
func openResolved(raw FS, cr *Cred, name string, flag int, perm os.FileMode) (afero.File, error) {
	const op = "open"
	nofollow := flag&syscall.O_NOFOLLOW != 0
	create := flag&os.O_CREATE != 0
	excl := create && flag&os.O_EXCL != 0
	p, mustDir, errno := walkAs(raw, cr, name, !nofollow && !excl)
	if errno != 0 {
		return nil, pathErr(op, name, errno)
	}
	fi, _, err := raw.LstatIfPossible(p)
	switch {
	case err == nil:
		switch {
		case excl:
			errno = syscall.EEXIST
		case fi.Mode()&os.ModeSymlink != 0:
			errno = syscall.ELOOP
		case !fi.IsDir() && (mustDir || flag&syscall.O_DIRECTORY != 0):
			errno = syscall.ENOTDIR
		case fi.IsDir() && flag&accMode != os.O_RDONLY:
			errno = syscall.EISDIR
		case !cr.allowsInfo(fi, openWant(flag)) && !(openWant(flag)&mayWrite != 0 && readOnlyAt(raw, p)):
			errno = syscall.EACCES
		}
	case Errno(err) != syscall.ENOENT:
		errno = Errno(err)
	case !create:
		errno = syscall.ENOENT
	case mustDir:
		errno = syscall.EISDIR
	default:
		errno = mayCreate(raw, cr, p)
	}
	if errno != 0 {
		return nil, pathErr(op, name, errno)
	}
	f, err := raw.OpenFile(p, flag|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return nil, rewrap(op, name, err)
	}
	return named(f, name), nil
}

func (r *resolving) Mkdir(name string, perm os.FileMode) error {
	const op = "mkdir"
	if lastIsDot(name) {
		return pathErr(op, name, syscall.EEXIST)
	}
	p, _, errno := walkAs(r.raw, r.cr, name, false)
	if errno == 0 && r.checks() && !readOnlyAt(r.raw, p) {
		if _, _, err := r.raw.LstatIfPossible(p); err == nil {
			errno = syscall.EEXIST
		} else {
			errno = mayCreate(r.raw, r.cr, p)
		}
	}
	if errno != 0 {
		return pathErr(op, name, errno)
	}
	return rewrap(op, name, r.raw.Mkdir(p, perm))
}

func (r *resolving) MkdirAll(name string, perm os.FileMode) error { return mkdirAll(r, name, perm) }

func (r *resolving) Remove(name string) error {
	const op = "remove"
	if lastIsDot(name) {
		if len(splitPath(name)) == 0 {
			return pathErr(op, name, syscall.EBUSY)
		}
		return pathErr(op, name, syscall.EINVAL)
	}
	p, mustDir, errno := walkAs(r.raw, r.cr, name, false)
	if errno == 0 && mustDir {
		if fi, _, err := r.raw.LstatIfPossible(p); err == nil && !fi.IsDir() {
			errno = syscall.ENOTDIR
		}
	}
	if errno == 0 && r.checks() {
		errno = mayRemove(r.raw, r.cr, p)
	}
	if errno != 0 {
		return pathErr(op, name, errno)
	}
	return rewrap(op, name, r.raw.Remove(p))
}

func (r *resolving) RemoveAll(name string) error {
	const op = "removeall"
	if r.checks() {
		return removeAllAs(r, name)
	}
	if lastIsDot(name) {
		if len(splitPath(name)) == 0 {
			return pathErr(op, name, syscall.EBUSY)
		}
		return pathErr(op, name, syscall.EINVAL)
	}
	p, _, errno := walkAs(r.raw, r.cr, name, false)
	if errno == syscall.ENOENT {
		return nil
	}
	if errno != 0 {
		return pathErr(op, name, errno)
	}
	if len(splitPath(p)) == 0 {
		// The name reaches the root (a symlink to it, "a/.."): the root
		// cannot be removed, and nothing under it is, as for "/" itself.
		return pathErr(op, name, syscall.EBUSY)
	}
	return rewrap(op, name, r.raw.RemoveAll(p))
}

func (r *resolving) Rename(oldname, newname string) error {
	const op = "rename"
	if lastIsDot(oldname) || lastIsDot(newname) {
		return linkErr(op, oldname, newname, syscall.EBUSY)
	}
	po, oldDir, errno := walkAs(r.raw, r.cr, oldname, false)
	var pn string
	var newDir bool
	if errno == 0 {
		pn, newDir, errno = walkAs(r.raw, r.cr, newname, false)
	}
	if errno == 0 && (oldDir || newDir) {
		fi, _, err := r.raw.LstatIfPossible(po)
		if err != nil {
			errno = Errno(err)
		} else if !fi.IsDir() {
			errno = syscall.ENOTDIR
		}
	}
	if errno == 0 && strings.HasPrefix(pn, po+"/") {
		// Both are resolved: a lexical prefix is the real subtree.
		errno = syscall.EINVAL
	}
	if errno == 0 && r.checks() {
		errno = mayRename(r.raw, r.cr, po, pn)
	}
	if errno != 0 {
		return linkErr(op, oldname, newname, errno)
	}
	return rewrapLink(op, oldname, newname, r.raw.Rename(po, pn))
}

func (r *resolving) Stat(name string) (os.FileInfo, error) {
	return statResolved(r.raw, r.cr, "stat", name, true)
}

func (r *resolving) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	fi, err := statResolved(r.raw, r.cr, "lstat", name, false)
	return fi, true, err
}

func statResolved(raw FS, cr *Cred, op, name string, follow bool) (os.FileInfo, error) {
	p, mustDir, errno := walkAs(raw, cr, name, follow)
	if errno != 0 {
		return nil, pathErr(op, name, errno)
	}
	fi, _, err := raw.LstatIfPossible(p)
	if err != nil {
		return nil, rewrap(op, name, err)
	}
	if mustDir && !fi.IsDir() {
		return nil, pathErr(op, name, syscall.ENOTDIR)
	}
	return renamed(fi, statName(name)), nil
}

func (r *resolving) Chmod(name string, mode os.FileMode) error {
	p, _, errno := walkAs(r.raw, r.cr, name, true)
	if errno == 0 && r.checks() && !readOnlyAt(r.raw, p) {
		var fi os.FileInfo
		if fi, errno = lstatErrno(r.raw, p); errno == 0 {
			if !r.cr.owns(statOf(fi).Uid) {
				errno = syscall.EPERM
			}
			mode = r.cr.chmodMode(mode, fi.IsDir(), statOf(fi).Gid)
		}
	}
	if errno != 0 {
		return pathErr("chmod", name, errno)
	}
	return rewrap("chmod", name, r.raw.Chmod(p, mode))
}

func (r *resolving) Chown(name string, uid, gid int) error {
	p, _, errno := walkAs(r.raw, r.cr, name, true)
	if errno == 0 && r.checks() && !readOnlyAt(r.raw, p) {
		var fi os.FileInfo
		if fi, errno = lstatErrno(r.raw, p); errno == 0 {
			st := statOf(fi)
			errno = r.cr.mayChown(st.Uid, st.Gid, uid, gid)
		}
	}
	if errno != 0 {
		return pathErr("chown", name, errno)
	}
	return rewrap("chown", name, r.raw.Chown(p, uid, gid))
}

func (r *resolving) Chtimes(name string, atime, mtime time.Time) error {
	p, _, errno := walkAs(r.raw, r.cr, name, true)
	if errno == 0 && r.checks() {
		errno = mayTouch(r.raw, r.cr, p)
	}
	if errno != 0 {
		return pathErr("chtimes", name, errno)
	}
	return rewrap("chtimes", name, r.raw.Chtimes(p, atime, mtime))
}

func (r *resolving) SymlinkIfPossible(oldname, newname string) error {
	const op = "symlink"
	if oldname == "" {
		return linkErr(op, oldname, newname, syscall.ENOENT)
	}
	if len(oldname) > MaxPathLen {
		return linkErr(op, oldname, newname, syscall.ENAMETOOLONG)
	}
	if strings.IndexByte(oldname, 0) >= 0 {
		return linkErr(op, oldname, newname, syscall.EINVAL)
	}
	if lastIsDot(newname) {
		return linkErr(op, oldname, newname, syscall.EEXIST)
	}
	p, mustDir, errno := walkAs(r.raw, r.cr, newname, false)
	if errno == 0 && mustDir {
		errno = syscall.ENOENT
		if _, _, err := r.raw.LstatIfPossible(p); err == nil {
			errno = syscall.EEXIST
		}
	}
	if errno == 0 && r.checks() && !readOnlyAt(r.raw, p) {
		if _, _, err := r.raw.LstatIfPossible(p); err == nil {
			errno = syscall.EEXIST
		} else {
			errno = mayCreate(r.raw, r.cr, p)
		}
	}
	if errno != 0 {
		return linkErr(op, oldname, newname, errno)
	}
	return rewrapLink(op, oldname, newname, r.raw.SymlinkIfPossible(oldname, p))
}

func (r *resolving) ReadlinkIfPossible(name string) (string, error) {
	p, _, errno := walkAs(r.raw, r.cr, name, false)
	if errno != 0 {
		return "", pathErr("readlink", name, errno)
	}
	t, err := r.raw.ReadlinkIfPossible(p)
	return t, rewrap("readlink", name, err)
}

func (r *resolving) Link(oldname, newname string) error {
	const op = "link"
	if lastIsDot(newname) {
		return linkErr(op, oldname, newname, syscall.EEXIST)
	}
	// The order of the checks is MemFS's (and link(2)'s): both paths
	// resolve, then a missing oldname, then an existing newname, then a
	// newname that must be a directory ("new/", which link cannot make).
	po, _, errno := walkAs(r.raw, r.cr, oldname, false)
	var pn string
	if errno == 0 {
		var mustDir bool
		pn, mustDir, errno = walkAs(r.raw, r.cr, newname, false)
		if errno == 0 {
			if _, _, err := r.raw.LstatIfPossible(po); err != nil {
				errno = Errno(err)
			}
		}
		if errno == 0 && mustDir {
			errno = syscall.ENOENT
			if _, _, err := r.raw.LstatIfPossible(pn); err == nil {
				errno = syscall.EEXIST
			}
		}
		if errno == 0 && r.checks() {
			errno = mayLinkPaths(r.raw, r.cr, po, pn)
		}
	}
	if errno != 0 {
		return linkErr(op, oldname, newname, errno)
	}
	return rewrapLink(op, oldname, newname, r.raw.Link(po, pn))
}

// namedFile reports the guest name a file was opened with.
type namedFile struct {
	afero.File
	name string
}

func (f *namedFile) Name() string { return f.name }

func named(f afero.File, name string) afero.File {
	if f.Name() == name {
		return f
	}
	if nf, ok := f.(*namedFile); ok {
		f = nf.File
	}
	return &namedFile{File: f, name: name}
}

// Stat reports the file under the base name it was opened with, as
// os.File.Stat does.
func (f *namedFile) Stat() (os.FileInfo, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	return renamed(fi, statName(f.name)), nil
}

// Lchtimes sets the times of name without following a final symlink.
func (r *resolving) Lchtimes(name string, atime, mtime time.Time) error {
	p, _, errno := walkAs(r.raw, r.cr, name, false)
	if errno == 0 && r.checks() {
		errno = mayTouch(r.raw, r.cr, p)
	}
	if errno != 0 {
		return pathErr("lchtimes", name, errno)
	}
	return rewrap("lchtimes", name, Lchtimes(r.raw, p, atime, mtime))
}

// Lchtimes sets the access and modification times of name without
// following a final symlink (a zero time leaves that time unchanged), on
// any FS of this package. For another FS it uses the FS's own Lchtimes
// method if it has one, or changes a non-symlink with Chtimes, and answers
// ENOTSUP for a symlink.
func Lchtimes(fsys FS, name string, atime, mtime time.Time) error {
	if l, ok := fsys.(interface {
		Lchtimes(name string, atime, mtime time.Time) error
	}); ok {
		return l.Lchtimes(name, atime, mtime)
	}
	fi, _, err := fsys.LstatIfPossible(name)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return pathErr("lchtimes", name, syscall.ENOTSUP)
	}
	return fsys.Chtimes(name, atime, mtime)
}
