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
