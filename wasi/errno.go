package wasi

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"syscall"

	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"
)

// toErrno maps an error from the vfs layer (an *os.PathError or
// *os.LinkError wrapping a syscall.Errno, or an io/fs sentinel) to the errno
// wazero hands to the guest. Unlike experimentalsys.UnwrapOSError it looks
// through any depth of wrapping.
//
// wazero's errno set is smaller than POSIX: ENOSPC, EFBIG, EXDEV, EMLINK and
// friends have no experimentalsys.Errno, so they reach the guest as EIO (the
// same thing wazero's own DirFS does). Host-side callers still see the
// precise syscall.Errno through the vfs error.
func toErrno(err error) experimentalsys.Errno {
	if err == nil || err == io.EOF {
		return 0
	}
	var en experimentalsys.Errno
	if errors.As(err, &en) {
		return en
	}
	var se syscall.Errno
	if errors.As(err, &se) {
		switch se {
		case 0:
			return 0
		case syscall.EOPNOTSUPP:
			return experimentalsys.ENOTSUP
		case syscall.EWOULDBLOCK:
			return experimentalsys.EAGAIN
		}
		return experimentalsys.UnwrapOSError(se)
	}
	switch {
	case errors.Is(err, io.EOF):
		return 0
	case errors.Is(err, fs.ErrNotExist):
		return experimentalsys.ENOENT
	case errors.Is(err, fs.ErrExist):
		return experimentalsys.EEXIST
	case errors.Is(err, fs.ErrPermission):
		return experimentalsys.EPERM
	case errors.Is(err, fs.ErrClosed):
		return experimentalsys.EBADF
	case errors.Is(err, fs.ErrInvalid):
		return experimentalsys.EINVAL
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return experimentalsys.EINTR
	}
	return experimentalsys.EIO
}
