package sysutils

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// version is what every command prints for --version.
const version = "(wasmbox coreutils) 1.0"

// helpOpts are appended to every command's option spec.
var helpOpts = []cmd.Option{{Long: "help"}, {Long: "version"}}

// withHelp returns spec plus --help and --version.
func withHelp(spec ...cmd.Option) []cmd.Option {
	return append(spec, helpOpts...)
}

// helpOrVersion handles --help (printing usage) and --version among opts;
// it reports whether one was found.
func helpOrVersion(e *cmd.Env, opts []cmd.Opt, usage string) bool {
	for _, o := range opts {
		switch o.Name {
		case "help":
			fmt.Fprintf(e.Stdout, "Usage: %s %s", e.Name(), usage)
			return true
		case "version":
			fmt.Fprintf(e.Stdout, "%s %s\n", e.Name(), version)
			return true
		}
	}
	return false
}

// errText is the GNU wording of an error from the os package: the strerror
// text of the underlying errno without the Go operation and path.
func errText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return strerror(errno)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "No such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "Permission denied"
	case errors.Is(err, fs.ErrExist):
		return "File exists"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// strerror returns glibc's message for errno (Go's texts are lower case).
func strerror(errno syscall.Errno) string {
	switch errno {
	case syscall.ENOENT:
		return "No such file or directory"
	case syscall.EACCES:
		return "Permission denied"
	case syscall.EISDIR:
		return "Is a directory"
	case syscall.ENOTDIR:
		return "Not a directory"
	case syscall.EEXIST:
		return "File exists"
	case syscall.ENOSPC:
		return "No space left on device"
	case syscall.EROFS:
		return "Read-only file system"
	case syscall.EINVAL:
		return "Invalid argument"
	case syscall.ELOOP:
		return "Too many levels of symbolic links"
	case syscall.ENAMETOOLONG:
		return "File name too long"
	case syscall.EPERM:
		return "Operation not permitted"
	case syscall.EPIPE:
		return "Broken pipe"
	case syscall.EBADF:
		return "Bad file descriptor"
	case syscall.ENOTEMPTY:
		return "Directory not empty"
	}
	s := errno.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// openInput opens a file operand; "-" is stdin. The closer is a no-op for
// stdin.
func openInput(e *cmd.Env, name string) (io.Reader, func(), error) {
	if name == "-" {
		return e.Stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	return f, func() { f.Close() }, nil
}

// output wraps e.Stdout in a buffer; call the returned flush before
// returning (it reports a write error such as a full disk).
func output(e *cmd.Env) (*bufio.Writer, func() int) {
	w := bufio.NewWriterSize(e.Stdout, 32*1024)
	return w, func() int {
		if err := w.Flush(); err != nil {
			if !errors.Is(err, syscall.EPIPE) {
				e.Errorf("write error: %s", errText(err))
			}
			return 1
		}
		return 0
	}
}

// getenv returns the value of an environment variable, or def when unset
// or empty.
func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
