package vfs

import (
	"os"
	"syscall"

	"github.com/wasmbox/wasmbox/internal/fserr"
)

// Limits on names, as on Linux.
const (
	// MaxNameLen is the longest single path component, in bytes.
	MaxNameLen = 255
	// MaxPathLen is the longest path accepted, in bytes.
	MaxPathLen = 4096
	// MaxSymlinks is how many symlinks one path lookup follows before ELOOP.
	MaxSymlinks = 40
)

func pathErr(op, name string, errno syscall.Errno) error {
	return &os.PathError{Op: op, Path: name, Err: errno}
}

func linkErr(op, oldname, newname string, errno syscall.Errno) error {
	return &os.LinkError{Op: op, Old: oldname, New: newname, Err: errno}
}

// Errno extracts the syscall.Errno carried by err. Errors of the standard
// library that are not an Errno are mapped to the nearest one (a path that
// escapes an os.Root becomes EACCES, os.ErrClosed becomes EBADF,
// fs.ErrNotExist ENOENT, ...). Errno returns 0 for a nil error and EIO for an
// error it cannot classify.
func Errno(err error) syscall.Errno { return fserr.Errno(err) }

// rewrap returns err as a *os.PathError for op and name whose Err is an
// Errno, keeping the caller-visible guest path instead of a host path.
func rewrap(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: name, Err: Errno(err)}
}

func rewrapLink(op, oldname, newname string, err error) error {
	if err == nil {
		return nil
	}
	return &os.LinkError{Op: op, Old: oldname, New: newname, Err: Errno(err)}
}

func isNotExist(err error) bool { return Errno(err) == syscall.ENOENT }
