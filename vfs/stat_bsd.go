//go:build darwin || freebsd || netbsd

package vfs

import (
	"os"
	"syscall"
	"time"
)

// hostStat fills a *Stat from the host's stat of fi (macOS and the BSDs
// name the times Atimespec, Mtimespec and Ctimespec).
func hostStat(fi os.FileInfo) *Stat {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &Stat{Nlink: 1, Atime: fi.ModTime(), Mtime: fi.ModTime(), Ctime: fi.ModTime()}
	}
	return &Stat{
		Dev:   uint64(st.Dev),
		Ino:   uint64(st.Ino),
		Nlink: uint64(st.Nlink),
		Uid:   guestUID(st.Uid),
		Gid:   guestGID(st.Gid),
		Rdev:  uint64(st.Rdev),
		Atime: time.Unix(int64(st.Atimespec.Sec), int64(st.Atimespec.Nsec)),
		Mtime: time.Unix(int64(st.Mtimespec.Sec), int64(st.Mtimespec.Nsec)),
		Ctime: time.Unix(int64(st.Ctimespec.Sec), int64(st.Ctimespec.Nsec)),
	}
}
