// Package vfs is the filesystem the host owns: a POSIX-correct in-memory
// filesystem, mounts of host directories (read-only, read-write or
// copy-on-write), /dev nodes, quotas, and the default sandbox layout.
//
// Every path is a guest path: slash-separated and resolved from "/" (a
// relative path is taken relative to "/"). Errors are *os.PathError or
// *os.LinkError wrapping a syscall.Errno (ENOENT, ENOTDIR, EISDIR, EEXIST,
// ENOTEMPTY, ELOOP, ENOSPC, EFBIG, EROFS, EXDEV, EINVAL, EBADF, EBUSY,
// ENAMETOOLONG, EPERM), so callers can map them with errors.Is; Errno
// extracts the number from any error.
//
// # Pieces
//
//   - MemFS (NewMemFS): the in-memory filesystem. Inodes, hard links,
//     symlinks, devices (Mknod, DevNull, DevZero, DevRandom), quotas
//     (WithQuota), a clock (WithClock), Fork.
//   - VFS (New, NewDefault): a mount table giving one guest namespace.
//     Symlinks are resolved over the whole namespace; EXDEV across mounts.
//   - HostDir: a host directory as an FS, read-only, read-write or
//     copy-on-write, confined by os.Root. ParseMountSpec reads
//     "HOST:GUEST[:ro|:rw|:cow]".
//   - NewDefault: the sandbox layout (/bin, /usr/bin, /home/user, /tmp,
//     /etc/passwd, /dev/...), with InstallCommand for command entries.
//   - VFS.AsUser: the namespace as an unprivileged user sees it, with
//     the permission checks of Linux (search on every directory of a
//     lookup, read/write on open, write on the directory to create or
//     remove, the sticky bit, owner-only chmod/chown/utimes; see Cred).
//     The sandbox hands this view to the guest (uid 1000); the VFS itself
//     is the host operator's and checks nothing.
//   - IOFS: any FS as an io/fs.FS.
//   - Package vfstest: the conformance suite every implementation passes.
//
// # Concurrency
//
// Every FS of this package is safe for concurrent use by many goroutines
// (many guest modules at once). No operation blocks on anything but short
// internal locks, so none takes a context.
package vfs

import (
	"time"

	"github.com/spf13/afero"
)

// FS is the interface every filesystem of this package implements: an
// afero.Fs with symlinks (afero.Symlinker: SymlinkIfPossible,
// ReadlinkIfPossible, LstatIfPossible) and hard links.
//
// OpenFile honours os.O_CREATE, O_EXCL, O_TRUNC, O_APPEND (every write goes
// to the end), O_RDONLY/O_WRONLY/O_RDWR, syscall.O_NOFOLLOW (ELOOP when the
// last component is a symlink) and syscall.O_DIRECTORY (ENOTDIR unless a
// directory). Symlinks in any component are followed (at most 40 hops,
// then ELOOP). A trailing slash on a path that names a non-directory is
// ENOTDIR.
//
// FileInfo.Sys() of every file returns a *Stat.
type FS interface {
	afero.Fs
	afero.Symlinker
	// Link creates newname as a hard link to oldname.
	Link(oldname, newname string) error
}

// Stat is what FileInfo.Sys() returns for files of an FS.
type Stat struct {
	Dev   uint64
	Ino   uint64
	Nlink uint64
	Uid   uint32
	Gid   uint32
	Rdev  uint64
	Atime time.Time
	Mtime time.Time
	Ctime time.Time
}

// Owner returns the file's owner and group.
func (s *Stat) Owner() (uid, gid uint32) { return s.Uid, s.Gid }

// DevIno returns the file's device and inode numbers, which identify it.
func (s *Stat) DevIno() (dev, ino uint64) { return s.Dev, s.Ino }

// AccessTime returns the file's access time.
func (s *Stat) AccessTime() time.Time { return s.Atime }
