//go:build linux || darwin || freebsd || netbsd

package vfs

import (
	"os"
	"syscall"
)

// hostStat fills a *Stat from the host's stat of fi (the times come from
// statTimes: the systems name their fields differently).
func hostStat(fi os.FileInfo) *Stat {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &Stat{Nlink: 1, Atime: fi.ModTime(), Mtime: fi.ModTime(), Ctime: fi.ModTime()}
	}
	s := &Stat{
		Dev:   uint64(st.Dev),
		Ino:   uint64(st.Ino),
		Nlink: uint64(st.Nlink),
		Uid:   guestUID(st.Uid),
		Gid:   guestGID(st.Gid),
		Rdev:  uint64(st.Rdev),
	}
	s.Atime, s.Mtime, s.Ctime = statTimes(st)
	return s
}
