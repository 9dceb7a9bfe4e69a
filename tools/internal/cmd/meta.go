package cmd

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WASI preview1 has no permission bits and no owners: a wasip1 program's
// os.Stat reports every file as 0600 and every directory as 0700, owned by
// uid 0, and os.Chmod/os.Chown fail. The sandbox host answers these
// through its wasmbox.stat/chmod/chown calls (runtime.MetaABI); the
// functions here use them under wasip1 and are the os functions elsewhere.
// Every command that shows or changes modes or owners (ls -l, stat, find
// -perm/-user, test -x, cp -p, chmod, chown) must use them.

// Stat is os.Stat with the real mode bits, owner and link count.
func Stat(name string) (fs.FileInfo, error) { return statMeta(name, true) }

// Lstat is os.Lstat with the real mode bits, owner and link count.
func Lstat(name string) (fs.FileInfo, error) { return statMeta(name, false) }

// Chmod sets the permission (and set-id, sticky) bits of name, following
// a final symlink.
func Chmod(name string, mode fs.FileMode) error { return chmodMeta(name, mode) }

// Chown sets the owner and group of name (-1 leaves one unchanged),
// following a final symlink; Lchown acts on a symlink itself.
func Chown(name string, uid, gid int) error { return chownMeta(name, uid, gid, true) }

// Lchown is Chown without following a final symlink.
func Lchown(name string, uid, gid int) error { return chownMeta(name, uid, gid, false) }

// Owner returns the uid and gid of a FileInfo from Stat or Lstat
// (-1, -1 if unknown).
func Owner(fi fs.FileInfo) (uid, gid int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return -1, -1
}

// absPath makes name absolute against the working directory.
func absPath(name string) (string, error) {
	if filepath.IsAbs(name) {
		return filepath.Clean(name), nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return filepath.Join(wd, name), nil
}

// metaInfo is a FileInfo with corrected mode bits.
type metaInfo struct {
	fs.FileInfo
	mode fs.FileMode
	sys  any
}

func (m metaInfo) Mode() fs.FileMode { return m.mode }
func (m metaInfo) Sys() any          { return m.sys }
