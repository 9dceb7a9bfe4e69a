//go:build wasip1

package fileutils

import (
	"io/fs"
	"syscall"
	"time"
)

// sysStat extracts the POSIX metadata that fs.FileInfo does not carry.
// WASI preview 1 has no owners; fi comes from cmd.Stat/cmd.Lstat, whose
// Stat_t carries the real uid, gid and link count from the sandbox host.
// The blocks are derived from the size.
func sysStat(fi fs.FileInfo) statx {
	st := statx{uid: sandboxUID, gid: sandboxGID, nlink: 1, mtime: fi.ModTime()}
	st.atime, st.ctime = st.mtime, st.mtime
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.dev, st.ino, st.nlink = s.Dev, s.Ino, s.Nlink
		st.uid, st.gid = s.Uid, s.Gid
		st.atime = time.Unix(0, int64(s.Atime))
		st.ctime = time.Unix(0, int64(s.Ctime))
	}
	st.blocks = (fi.Size() + 4095) / 4096 * 8
	if fi.IsDir() && st.blocks == 0 {
		st.blocks = 8
	}
	return st
}

// selfIDs is the user and group the command runs as: the sandbox user
// (WASI's getuid answers a constant 1).
func selfIDs() (uid, gid uint32) { return sandboxUID, sandboxGID }

// absName makes a relative name absolute against the working directory
// that Go's wasip1 layer tracks (syscall.Getwd only reads it, whereas
// os.Getwd, which cmd.Stat would otherwise call, stats "." and $PWD on
// every call: a third of the time of ls -l in a large directory).
func absName(name string) string {
	if name == "" || name[0] == '/' {
		return name
	}
	wd, err := syscall.Getwd()
	if err != nil || wd == "" {
		return name
	}
	if wd == "/" {
		return "/" + name
	}
	return wd + "/" + name
}
