// Package textio holds the small I/O helpers that the text commands built
// into their own tool modules (jq, awk) share: GNU-style error texts,
// opening an input operand ("-" is standard input), reading records, and
// flushing buffered output.
//
// It exists so that those commands need not import package textutils,
// which would link every text command (and its init) into their modules.
// It imports nothing beyond the standard library and package cmd, and has
// no init work. The helpers behave exactly like their counterparts in
// textutils/common.go, so a command prints the same messages whichever
// module it is built into.
package textio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"strings"
	"syscall"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// Version is what the text commands print for --version.
const Version = "(wasmbox textutils) 1.0"

// Flush writes out's buffered output. A write error is reported GNU style
// ("NAME: write error: MESSAGE") and turns a zero status into 1; a broken
// pipe is not an error (the reader went away). It returns the status the
// command should exit with.
func Flush(e *cmd.Env, out *bufio.Writer, status int) int {
	if err := out.Flush(); err != nil {
		if errors.Is(err, syscall.EPIPE) {
			return status
		}
		e.Errorf("write error: %s", Strerror(err))
		if status == 0 {
			status = 1
		}
	}
	return status
}

// Strerror renders an error the way C's strerror does: GNU tools print
// "No such file or directory", not Go's lowercase "no such file or
// directory" nor the operation and path of an *fs.PathError.
func Strerror(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if s, ok := errnoText[errno]; ok {
			return s
		}
		s := errno.Error()
		if s != "" {
			return strings.ToUpper(s[:1]) + s[1:]
		}
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
		return Strerror(pe.Err)
	}
	return err.Error()
}

var errnoText = map[syscall.Errno]string{
	syscall.ENOENT:       "No such file or directory",
	syscall.EACCES:       "Permission denied",
	syscall.EPERM:        "Operation not permitted",
	syscall.EISDIR:       "Is a directory",
	syscall.ENOTDIR:      "Not a directory",
	syscall.EEXIST:       "File exists",
	syscall.ENOSPC:       "No space left on device",
	syscall.EROFS:        "Read-only file system",
	syscall.ELOOP:        "Too many levels of symbolic links",
	syscall.ENAMETOOLONG: "File name too long",
	syscall.EINVAL:       "Invalid argument",
	syscall.EBADF:        "Bad file descriptor",
	syscall.EPIPE:        "Broken pipe",
	syscall.EIO:          "Input/output error",
	syscall.ENOMEM:       "Cannot allocate memory",
	syscall.EMFILE:       "Too many open files",
	syscall.ENOTEMPTY:    "Directory not empty",
	syscall.EFBIG:        "File too large",
}

// OpenInput opens name for reading; "-" is the command's standard input.
// The returned closer must be called when done (a no-op for stdin). A
// directory yields an *fs.PathError with EISDIR, which Strerror renders
// as "Is a directory".
func OpenInput(e *cmd.Env, name string) (io.Reader, func(), error) {
	if name == "-" {
		return e.Stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	return f, func() { f.Close() }, nil
}

// ReadAllInput reads a whole input operand ("-" is standard input).
func ReadAllInput(e *cmd.Env, name string) ([]byte, error) {
	r, closeFn, err := OpenInput(e, name)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	return readAll(r)
}

// readAll is io.ReadAll with a buffer sized from the input's size when it
// is a regular file (one byte more: the end is seen without growing, and
// a caller may append a delimiter in place), so that reading a file of
// N bytes allocates N bytes, not the 2-3N of a doubling buffer (a Go
// guest's heap grows its linear memory and never gives it back).
func readAll(r io.Reader) ([]byte, error) {
	size := 512
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 && fi.Size() < 1<<31 {
			size = int(fi.Size()) + 1
		}
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow (the file grew, or no size)
		}
	}
}

// Inputs returns the operands, or ["-"] (standard input) when there are
// none, as text commands treat a missing file operand.
func Inputs(operands []string) []string {
	if len(operands) == 0 {
		return []string{"-"}
	}
	return operands
}

// LineReader yields delimiter-terminated records (the delimiter kept)
// from a reader, with no limit on a record's length.
type LineReader struct {
	r     *bufio.Reader
	delim byte
}

// NewLineReader reads records of r ending in delim.
func NewLineReader(r io.Reader, delim byte) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), delim: delim}
}

// Next returns the next record including its delimiter (the last record
// may lack it); the slice is valid until the next call. err is io.EOF at
// the end.
func (l *LineReader) Next() ([]byte, error) {
	line, err := l.r.ReadSlice(l.delim)
	if err == bufio.ErrBufferFull {
		buf := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = l.r.ReadSlice(l.delim)
			buf = append(buf, line...)
		}
		line = buf
	}
	if err == io.EOF {
		if len(line) > 0 {
			return line, nil
		}
		return nil, io.EOF
	}
	return line, err
}

// CountByte returns the number of bytes of p equal to c, like bytes.Count
// with a one-byte separator. The standard library counts byte by byte on
// wasm (internal/bytealg has no wasm Count); this counts eight bytes per
// step with a 64-bit load and a population count, both single wasm
// instructions.
func CountByte(p []byte, c byte) int {
	const lo = 0x0101010101010101
	const hi = 0x8080808080808080
	pat := uint64(c) * lo
	n := 0
	i := 0
	for ; i+8 <= len(p); i += 8 {
		x := binary.LittleEndian.Uint64(p[i:]) ^ pat
		// A byte of t has its high bit set iff that byte of x is not
		// zero: the low seven bits plus 0x7f carry into bit 7 unless
		// they are all zero, and | x keeps a set bit 7.
		t := ((x &^ hi) + (hi - lo)) | x
		n += bits.OnesCount64(^t & hi)
	}
	for ; i < len(p); i++ {
		if p[i] == c {
			n++
		}
	}
	return n
}
