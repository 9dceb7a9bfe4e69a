package vfs

import (
	"os"
	"path"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// renameAt renames with rename(2) semantics (replacing an empty
// directory, which os.Root.Rename refuses): both parent directories are
// opened through the os.Root, so they are inside it, and renameat(2) gets
// plain base names relative to them, so it cannot leave it.
func (h *hostRaw) renameAt(oldname, newname string) error {
	od, err := h.root.OpenFile(rel(path.Dir(oldname)), os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer od.Close()
	nd, err := h.root.OpenFile(rel(path.Dir(newname)), os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer nd.Close()
	ob, nb := path.Base(oldname), path.Base(newname)
	if ob == "." || ob == ".." || ob == "/" || nb == "." || nb == ".." || nb == "/" {
		return syscall.EBUSY
	}
	for {
		err = syscall.Renameat(int(od.Fd()), ob, int(nd.Fd()), nb)
		if err != syscall.EINTR {
			return err
		}
	}
}

// lchtimesAt sets the times of name itself (a symlink is not followed):
// the parent directory is opened through the os.Root and utimensat(2)
// gets the plain base name with AT_SYMLINK_NOFOLLOW.
func (h *hostRaw) lchtimesAt(name string, atime, mtime time.Time) error {
	d, err := h.root.OpenFile(rel(path.Dir(name)), os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	b := path.Base(name)
	if b == "/" {
		b = "."
	}
	ts := []unix.Timespec{timespec(atime), timespec(mtime)}
	return unix.UtimesNanoAt(int(d.Fd()), b, ts, unix.AT_SYMLINK_NOFOLLOW)
}

func timespec(t time.Time) unix.Timespec {
	if t.IsZero() {
		return unix.Timespec{Nsec: unix.UTIME_OMIT}
	}
	return unix.NsecToTimespec(t.UnixNano())
}

// The VFS fast path over a host mount. A lookup goes down with one
// openat(2) per directory, relative to the previous directory and starting
// at the descriptor of the mount root, each time with a single plain
// component (never "." or "..": the VFS only takes this path for names
// without "..") and O_PATH|O_NOFOLLOW|O_DIRECTORY. Such a walk cannot
// leave the root. A symlink met on the way (or as the last component when
// it would be followed) gives errSymlink, and the VFS falls back to the
// resolution over the whole guest namespace.

// withParent runs fn with a descriptor of the directory holding the last
// component of comps (the root itself when comps has one element, and
// comps may be empty: then fn gets the root and ""). For the user cr,
// every directory a component is looked up in needs search permission
// by its presented owner and mode (one fstat each; EACCES).
func (h *hostRaw) withParent(comps []string, cr *Cred, fn func(dirfd int, last string) error) error {
	rc, err := h.dirf.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	// Control keeps the root descriptor from being closed under us.
	cerr := rc.Control(func(rootfd uintptr) {
		fd := int(rootfd)
		if len(comps) == 0 {
			ferr = fn(fd, "")
			return
		}
		var opened []int
		defer func() {
			for _, o := range opened {
				unix.Close(o)
			}
		}()
		for _, c := range comps[:len(comps)-1] {
			if c == "." || c == ".." {
				ferr = errSymlink
				return
			}
			if ferr = searchable(fd, cr); ferr != nil {
				return
			}
			nfd, err := unix.Openat(fd, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				if err == unix.ENOTDIR || err == unix.ELOOP {
					var st unix.Stat_t
					if unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
						err = errSymlink
					}
				}
				ferr = err
				return
			}
			opened = append(opened, nfd)
			fd = nfd
		}
		last := comps[len(comps)-1]
		if last == "." || last == ".." {
			ferr = errSymlink
			return
		}
		if ferr = searchable(fd, cr); ferr != nil {
			return
		}
		ferr = fn(fd, last)
	})
	if cerr != nil {
		return cerr
	}
	return ferr
}

// searchable checks that cr may search the directory fd.
func searchable(fd int, cr *Cred) error {
	if cr == nil || cr.UID == 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if !cr.allows(os.FileMode(st.Mode&0o777), guestUID(st.Uid), guestGID(st.Gid), mayExec) {
		return syscall.EACCES
	}
	return nil
}

// fastLstat is Lstat (Stat when follow) of the resolved path r, for cr.
func (h *hostRaw) fastLstat(r string, follow, mustDir bool, cr *Cred) (os.FileInfo, error) {
	var st unix.Stat_t
	err := h.withParent(splitPath(r), cr, func(dirfd int, last string) error {
		if last == "" {
			return unix.Fstat(dirfd, &st)
		}
		return unix.Fstatat(dirfd, last, &st, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return nil, err
	}
	fi := unixInfo(statName(r), &st)
	if fi.mode&os.ModeSymlink != 0 && (follow || mustDir) {
		return nil, errSymlink
	}
	if mustDir && !fi.IsDir() {
		return nil, syscall.ENOTDIR
	}
	return fi, nil
}

// fastOpen opens the resolved path r for reading (flag has no write
// access, O_CREATE, O_TRUNC or O_APPEND), for cr (who needs read
// permission).
func (h *hostRaw) fastOpen(r, display string, flag int, cr *Cred) (*hostFile, error) {
	var fd int
	err := h.withParent(splitPath(r), cr, func(dirfd int, last string) error {
		if last == "" {
			last = "."
		}
		var err error
		fd, err = unix.Openat(dirfd, last, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if flag&unix.O_NOFOLLOW == 0 {
			switch err {
			case unix.ELOOP:
				err = errSymlink
			case unix.ENOTDIR:
				// O_DIRECTORY on a symlink fails with ENOTDIR before
				// O_NOFOLLOW is considered: one to a directory must be
				// followed.
				var st unix.Stat_t
				if unix.Fstatat(dirfd, last, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					err = errSymlink
				}
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	f, err := checkHostFile(os.NewFile(uintptr(fd), display), display)
	if err == nil && cr != nil && cr.UID != 0 {
		fi, serr := f.Stat()
		if serr != nil || !cr.allowsInfo(fi, mayRead) {
			f.Close()
			return nil, pathErr("open", display, syscall.EACCES)
		}
	}
	return f, err
}

// unixInfo converts a stat(2) result like os.Lstat does.
func unixInfo(name string, st *unix.Stat_t) *fileInfo {
	mode := os.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= os.ModeDevice
	case unix.S_IFCHR:
		mode |= os.ModeDevice | os.ModeCharDevice
	case unix.S_IFDIR:
		mode |= os.ModeDir
	case unix.S_IFIFO:
		mode |= os.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= os.ModeSymlink
	case unix.S_IFSOCK:
		mode |= os.ModeSocket
	}
	if st.Mode&unix.S_ISGID != 0 {
		mode |= os.ModeSetgid
	}
	if st.Mode&unix.S_ISUID != 0 {
		mode |= os.ModeSetuid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		mode |= os.ModeSticky
	}
	mtime := time.Unix(st.Mtim.Unix())
	return &fileInfo{
		name:  name,
		size:  st.Size,
		mode:  mode,
		mtime: mtime,
		sys: &Stat{
			Dev:   st.Dev,
			Ino:   st.Ino,
			Nlink: uint64(st.Nlink),
			Uid:   guestUID(st.Uid),
			Gid:   guestGID(st.Gid),
			Rdev:  st.Rdev,
			Atime: time.Unix(st.Atim.Unix()),
			Mtime: mtime,
			Ctime: time.Unix(st.Ctim.Unix()),
		},
	}
}
