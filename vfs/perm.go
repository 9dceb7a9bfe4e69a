package vfs

import (
	"os"
	"slices"
	"syscall"
)

// Permission checks of a user view (see VFS.AsUser).
//
// A view made by AsUser for a uid other than 0 checks every access the
// way Linux does for an unprivileged process (path_resolution(7),
// open(2), unlink(2), rename(2), link(2), chmod(2), chown(2),
// utimensat(2)):
//
//   - search (x) on every directory a lookup goes through, including the
//     directories a symlink's target goes through and a ".." step (EACCES);
//   - on open: read for O_RDONLY, write for O_WRONLY, both for O_RDWR,
//     write for O_TRUNC; a file that the open creates is not checked
//     (EACCES). Listing a directory needs an open for reading, hence r;
//   - creating (open with O_CREATE, mkdir, symlink, link, the target of a
//     rename) needs write and search on the directory that gets the new
//     entry; removing (remove, rmdir, the source of a rename, a replaced
//     rename target) needs the same on the directory holding it (EACCES);
//   - in a sticky directory (mode 1777, /tmp) only the owner of the entry
//     or of the directory may remove or rename it (EPERM);
//   - a directory moved to another parent needs write on itself (its ".."
//     entry changes) (EACCES);
//   - a hard link to a file the user does not own needs a regular file,
//     without setuid (or setgid with group execute), that the user may
//     read and write (fs.protected_hardlinks=1, the default of every
//     distribution) (EPERM);
//   - chmod, chown and setting times only by the owner (EPERM); chown
//     cannot give a file away, and only changes the group to one of the
//     user's groups (EPERM); chmod by a user outside the file's group
//     drops the setgid bit of a regular file.
//
// The owner, group and mode are the ones stat reports: for a host mount,
// the presented owners (see HostDir). Who the user is comes from the Cred
// of the view only: nothing is cached, every check reads the current mode
// of the inode. uid 0 has no checks at all (the FS never executes
// anything, so root's "some x bit for execute" rule does not arise), and
// the unrestricted VFS (the one New and NewDefault return) is the host
// operator's view: it never checks.
//
// Not modelled: fs.protected_symlinks and fs.protected_regular (both off
// on this project's reference machine), ACLs, capabilities other than
// root's, and utimensat's "set to now" case, which Linux grants to any
// user with write permission: setting times is for the owner only here.

// Cred is the identity a user view acts as.
type Cred struct {
	UID, GID uint32
	// Groups are the supplementary groups.
	Groups []uint32
}

// Bits of an access check, as in access(2).
const (
	mayExec  = 1
	mayWrite = 2
	mayRead  = 4
)

func (c *Cred) inGroup(gid uint32) bool {
	return gid == c.GID || slices.Contains(c.Groups, gid)
}

// allows reports whether c may access a file of mode, owner uid and group
// gid for want (mayRead|mayWrite|mayExec). A nil c (the unrestricted
// view) may do anything.
func (c *Cred) allows(mode os.FileMode, uid, gid uint32, want uint32) bool {
	if c == nil || c.UID == 0 {
		return true
	}
	perm := uint32(mode.Perm())
	var bits uint32
	switch {
	case uid == c.UID:
		bits = perm >> 6
	case c.inGroup(gid):
		bits = perm >> 3
	default:
		bits = perm
	}
	return want&^(bits&7) == 0
}

// allowsInfo is allows for a FileInfo of this package.
func (c *Cred) allowsInfo(fi os.FileInfo, want uint32) bool {
	if c == nil || c.UID == 0 {
		return true
	}
	st := statOf(fi)
	return c.allows(fi.Mode(), st.Uid, st.Gid, want)
}

// owns reports whether c may change the metadata of a file owned by uid.
func (c *Cred) owns(uid uint32) bool { return c == nil || c.UID == 0 || c.UID == uid }

// sticky reports whether the sticky bit of a directory (mode dirMode,
// owner dirUID) keeps c from removing or renaming an entry owned by uid.
func (c *Cred) sticky(dirMode os.FileMode, dirUID, uid uint32) bool {
	return dirMode&os.ModeSticky != 0 && !c.owns(uid) && !c.owns(dirUID)
}

// openWant is what an open with flag needs on an existing file.
func openWant(flag int) uint32 {
	var want uint32
	switch flag & accMode {
	case os.O_RDONLY:
		want = mayRead
	case os.O_WRONLY:
		want = mayWrite
	default:
		want = mayRead | mayWrite
	}
	if flag&os.O_TRUNC != 0 {
		want |= mayWrite
	}
	return want
}

// mayLink is link(2)'s check of the existing file under
// fs.protected_hardlinks: EPERM unless c owns it or it is a regular file
// without set-id bits that c may read and write.
func (c *Cred) mayLink(mode os.FileMode, uid, gid uint32) syscall.Errno {
	if c.owns(uid) {
		return 0
	}
	switch {
	case !mode.IsRegular(),
		mode&os.ModeSetuid != 0,
		mode&os.ModeSetgid != 0 && mode&0o010 != 0,
		!c.allows(mode, uid, gid, mayRead|mayWrite):
		return syscall.EPERM
	}
	return 0
}

// mayChown is chown(2)'s check for a file owned by uid:gid changed to
// newUID:newGID (-1: unchanged, which needs nothing): only the owner, who
// may "change" the owner to itself and the group to one of its groups
// (or to the file's group).
func (c *Cred) mayChown(uid, gid uint32, newUID, newGID int) syscall.Errno {
	if c == nil || c.UID == 0 {
		return 0
	}
	if newUID != -1 && (c.UID != uid || uint32(newUID) != uid) {
		return syscall.EPERM
	}
	if newGID != -1 && (c.UID != uid || uint32(newGID) != gid && !c.inGroup(uint32(newGID))) {
		return syscall.EPERM
	}
	return 0
}

// chmodMode is the mode chmod(2) by c sets: without the setgid bit on a
// non-directory whose group c is not in.
func (c *Cred) chmodMode(mode os.FileMode, isDir bool, gid uint32) os.FileMode {
	if c == nil || c.UID == 0 || isDir || c.inGroup(gid) {
		return mode
	}
	return mode &^ os.ModeSetgid
}

// mayDelete is the check for removing (or renaming away) an entry of
// directory dir: write and search on dir, then the sticky bit.
func (c *Cred) mayDelete(dir, fi os.FileInfo) syscall.Errno {
	if c == nil || c.UID == 0 {
		return 0
	}
	if !c.allowsInfo(dir, mayWrite|mayExec) {
		return syscall.EACCES
	}
	if c.sticky(dir.Mode(), statOf(dir).Uid, statOf(fi).Uid) {
		return syscall.EPERM
	}
	return 0
}

// removeAllAs is RemoveAll for a user view: depth first, every entry
// removed through fsys, so every removal is checked (a directory that
// cannot be listed or an entry that cannot be removed stops it with the
// error). A missing name is not an error.
func removeAllAs(fsys FS, name string) error {
	fi, _, err := fsys.LstatIfPossible(name)
	if err != nil {
		if isNotExist(err) {
			return nil
		}
		return err
	}
	if fi.IsDir() {
		f, err := fsys.Open(name)
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := removeAllAs(fsys, joinPath(cleanAbs(name), n)); err != nil {
				return err
			}
		}
	}
	if err := fsys.Remove(name); err != nil && !isNotExist(err) {
		return err
	}
	return nil
}

// The checks of the general resolution (resolving), on resolved paths of
// a raw FS.

func lstatErrno(raw FS, p string) (os.FileInfo, syscall.Errno) {
	fi, _, err := raw.LstatIfPossible(p)
	if err != nil {
		return nil, Errno(err)
	}
	return fi, 0
}

// mayCreate checks that cr may add the entry p to its directory.
func mayCreate(raw FS, cr *Cred, p string) syscall.Errno {
	if cr == nil || cr.UID == 0 || readOnlyAt(raw, p) {
		return 0
	}
	dir, errno := lstatErrno(raw, parentOf(p))
	if errno != 0 {
		return errno
	}
	if !cr.allowsInfo(dir, mayWrite|mayExec) {
		return syscall.EACCES
	}
	return 0
}

// mayRemove checks that cr may remove the existing entry p (ENOENT when
// it does not exist).
func mayRemove(raw FS, cr *Cred, p string) syscall.Errno {
	if readOnlyAt(raw, p) {
		return 0
	}
	fi, errno := lstatErrno(raw, p)
	if errno != 0 {
		return errno
	}
	if p == "/" {
		return 0 // the raw FS answers EBUSY
	}
	dir, errno := lstatErrno(raw, parentOf(p))
	if errno != 0 {
		return errno
	}
	return cr.mayDelete(dir, fi)
}

// mayRename checks that cr may rename po to pn.
func mayRename(raw FS, cr *Cred, po, pn string) syscall.Errno {
	if readOnlyAt(raw, po) || readOnlyAt(raw, pn) {
		return 0
	}
	fi, errno := lstatErrno(raw, po)
	if errno != 0 {
		return errno
	}
	if po == "/" || pn == "/" {
		return 0 // the raw FS answers EBUSY
	}
	target, _, terr := raw.LstatIfPossible(pn)
	if terr == nil && sameFile(fi, target) {
		return 0 // rename(2) does nothing
	}
	dir, errno := lstatErrno(raw, parentOf(po))
	if errno != 0 {
		return errno
	}
	if errno = cr.mayDelete(dir, fi); errno != 0 {
		return errno
	}
	if terr == nil {
		ndir, errno := lstatErrno(raw, parentOf(pn))
		if errno != 0 {
			return errno
		}
		if errno = cr.mayDelete(ndir, target); errno != 0 {
			return errno
		}
	} else if errno = mayCreate(raw, cr, pn); errno != 0 {
		return errno
	}
	if fi.IsDir() && parentOf(po) != parentOf(pn) && !cr.allowsInfo(fi, mayWrite) {
		return syscall.EACCES
	}
	return 0
}

// mayLinkPaths checks that cr may make pn a hard link to po.
func mayLinkPaths(raw FS, cr *Cred, po, pn string) syscall.Errno {
	if readOnlyAt(raw, po) || readOnlyAt(raw, pn) {
		return 0
	}
	fi, errno := lstatErrno(raw, po)
	if errno != 0 {
		return errno
	}
	if _, _, err := raw.LstatIfPossible(pn); err == nil {
		return syscall.EEXIST
	}
	st := statOf(fi)
	if errno = cr.mayLink(fi.Mode(), st.Uid, st.Gid); errno != 0 {
		return errno
	}
	return mayCreate(raw, cr, pn)
}

// mayTouch checks that cr may set the times of p.
func mayTouch(raw FS, cr *Cred, p string) syscall.Errno {
	if readOnlyAt(raw, p) {
		return 0
	}
	fi, errno := lstatErrno(raw, p)
	if errno != 0 {
		return errno
	}
	if !cr.owns(statOf(fi).Uid) {
		return syscall.EPERM
	}
	return 0
}

// errnoErr is errno as an error, nil for 0.
func errnoErr(errno syscall.Errno) error {
	if errno == 0 {
		return nil
	}
	return errno
}

// roAt is implemented by the raw filesystems that refuse changes (EROFS)
// at some resolved paths: read-only views and mounts, protected names.
type roAt interface {
	readOnlyAt(p string) bool
}

func (readOnlyFS) readOnlyAt(string) bool { return true }
func (h *hostRaw) readOnlyAt(string) bool { return h.ro }
func (p *protectRaw) readOnlyAt(name string) bool {
	return p.hit(name) || readOnlyAt(p.raw, name)
}
func (mt *mountTable) readOnlyAt(p string) bool {
	m, r := mt.find(p)
	return readOnlyAt(m.raw, r)
}

// readOnlyAt reports whether raw refuses every change at p. A change
// there is not checked against the permission bits: the raw FS answers
// EROFS, as Linux checks a read-only mount before the permission bits.
func readOnlyAt(raw FS, p string) bool {
	ro, ok := raw.(roAt)
	return ok && ro.readOnlyAt(p)
}
