// Package fserr maps the errors of filesystem calls to errnos, for the
// packages that turn them into what a guest or a shell user sees (vfs,
// shell).
package fserr

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// Errno extracts the syscall.Errno carried by err. Errors of the standard
// library that are not an Errno are mapped to the nearest one (a path that
// escapes an os.Root becomes EACCES, os.ErrClosed becomes EBADF,
// fs.ErrNotExist ENOENT, ...). Errno returns 0 for a nil error and EIO for an
// error it cannot classify.
func Errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST
	case errors.Is(err, fs.ErrPermission):
		return syscall.EACCES
	case errors.Is(err, fs.ErrClosed):
		return syscall.EBADF
	case errors.Is(err, fs.ErrInvalid):
		return syscall.EINVAL
	}
	// os.Root reports "path escapes from parent" with a plain error:
	// refuse access. Other plain errors of the os package inside a
	// PathError or LinkError are misuse ("invalid use of WriteAt on file
	// opened with O_APPEND").
	if strings.Contains(err.Error(), "escapes from parent") {
		return syscall.EACCES
	}
	var pe *os.PathError
	var le *os.LinkError
	if errors.As(err, &pe) || errors.As(err, &le) {
		return syscall.EINVAL
	}
	return syscall.EIO
}
