//go:build !wasip1

package fileutils

import (
	"io/fs"
	"os"
	"syscall"
)

// sysStat extracts the POSIX metadata that fs.FileInfo does not carry.
func sysStat(fi fs.FileInfo) statx {
	st := statx{uid: sandboxUID, gid: sandboxGID, nlink: 1, mtime: fi.ModTime()}
	st.atime, st.ctime = st.mtime, st.mtime
	st.blocks = (fi.Size() + 511) / 512
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.dev, st.ino, st.nlink = uint64(s.Dev), s.Ino, uint64(s.Nlink)
		st.uid, st.gid = s.Uid, s.Gid
		st.blocks = s.Blocks
		st.atime, st.ctime = statTimes(s)
		st.rdev = uint64(s.Rdev)
	}
	return st
}

// selfIDs is the user and group the command runs as (natively: the real
// process's).
func selfIDs() (uid, gid uint32) { return uint32(os.Getuid()), uint32(os.Getgid()) }

// absName is the identity natively: cmd.Stat is os.Stat there.
func absName(name string) string { return name }
