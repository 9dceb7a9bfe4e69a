//go:build wasip1

package guest

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"unsafe"
)

//go:wasmimport wasmbox pipe
func hostPipe(fdsPtr unsafe.Pointer) uint32

//go:wasmimport wasmbox proc_spawn
func hostProcSpawn(reqPtr unsafe.Pointer, reqLen uint32, pfdPtr unsafe.Pointer) uint32

//go:wasmimport wasmbox proc_kill
func hostProcKill(pfd uint32, signal uint32) uint32

//go:wasmimport wasmbox call_input
func hostCallInput(ptr unsafe.Pointer, n uint32) uint32

//go:wasmimport wasmbox call_output
func hostCallOutput(ptr unsafe.Pointer, n uint32) uint32

// Errno maps a WASI errno to a syscall.Errno.
func Errno(e uint32) error {
	switch e {
	case 0:
		return nil
	case 2:
		return syscall.EACCES
	case 6:
		return syscall.EAGAIN
	case 8:
		return syscall.EBADF
	case 21:
		return syscall.EFAULT
	case 22:
		return syscall.EFBIG
	case 28:
		return syscall.EINVAL
	case 32:
		return syscall.ELOOP
	case 37:
		return syscall.ENAMETOOLONG
	case 44:
		return syscall.ENOENT
	case 52:
		return syscall.ENOSYS
	case 54:
		return syscall.ENOTDIR
	case 63:
		return syscall.EPERM
	case 69:
		return syscall.EROFS
	}
	return syscall.EIO
}

// Pipe returns the two ends of a new host pipe, both non-blocking (so that
// Go's netpoller waits for them), as *os.File: they can be handed to
// children by descriptor (Fd).
func Pipe() (r, w *os.File, err error) {
	var fds [2]uint32
	if e := hostPipe(unsafe.Pointer(&fds[0])); e != 0 {
		return nil, nil, &os.SyscallError{Syscall: "pipe", Err: Errno(e)}
	}
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}

// Fd returns the descriptor of f without putting it in blocking mode (as
// (*os.File).Fd does).
func Fd(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	if err := rc.Control(func(d uintptr) { fd = int(d) }); err != nil {
		return -1, err
	}
	return fd, nil
}

// Spawn is a proc_spawn request.
type Spawn struct {
	Argv []string `json:"argv"`
	// Env nil means the caller's environment.
	Env []string `json:"env"`
	Dir string   `json:"dir,omitempty"`
	// Stdin, Stdout, Stderr are descriptors of the caller, -1 for none.
	Stdin  int `json:"stdin"`
	Stdout int `json:"stdout"`
	Stderr int `json:"stderr"`
}

// Causes of a process's end (runtime.ProcessABI).
const (
	CauseExited    = 0
	CauseNotFound  = 1
	CauseDenied    = 2
	CauseLimit     = 3
	CauseTimeout   = 4
	CauseCancelled = 5
	CauseFailed    = 6
	CauseKilled    = 7
)

// Process is a child started by Start.
type Process struct {
	h  *os.File
	fd uint32
}

// Start starts a child and returns at once.
func Start(req Spawn) (*Process, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var pfd uint32
	if e := hostProcSpawn(unsafe.Pointer(unsafe.SliceData(b)), uint32(len(b)), unsafe.Pointer(&pfd)); e != 0 {
		return nil, &os.SyscallError{Syscall: "proc_spawn", Err: Errno(e)}
	}
	return &Process{h: os.NewFile(uintptr(pfd), "proc"), fd: pfd}, nil
}

// Wait waits for the child to end (other goroutines run meanwhile) and
// returns its status and cause. It closes the handle.
func (p *Process) Wait() (status, cause uint32, err error) {
	defer p.h.Close()
	var b [8]byte
	if _, err := io.ReadFull(p.h, b[:]); err != nil {
		return 0, 0, err
	}
	return binary.LittleEndian.Uint32(b[0:]), binary.LittleEndian.Uint32(b[4:]), nil
}

// Kill stops the child; it reports status 128+signal.
func (p *Process) Kill(signal int) error {
	if e := hostProcKill(p.fd, uint32(signal)); e != 0 {
		return &os.SyscallError{Syscall: "proc_kill", Err: Errno(e)}
	}
	return nil
}

// ErrNoInput is returned by Input outside a call with input.
var ErrNoInput = errors.New("guest: no call input")

// Input returns the input of the current call, n bytes long (the length
// the host passed to the export).
func Input(n uint32) ([]byte, error) {
	b := make([]byte, n)
	if e := hostCallInput(unsafe.Pointer(unsafe.SliceData(b)), n); e != 0 {
		return nil, &os.SyscallError{Syscall: "call_input", Err: Errno(e)}
	}
	return b, nil
}

// Output appends b to the output of the current call.
func Output(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if e := hostCallOutput(unsafe.Pointer(unsafe.SliceData(b)), uint32(len(b))); e != 0 {
		return &os.SyscallError{Syscall: "call_output", Err: Errno(e)}
	}
	return nil
}

//go:wasmimport wasi_snapshot_preview1 args_sizes_get
func argsSizesGet(argc, bufLen unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 args_get
func argsGet(argv, buf unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 environ_sizes_get
func environSizesGet(count, bufLen unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 environ_get
func environGet(envv, buf unsafe.Pointer) uint32

// Args reads WASI's argument vector now (os.Args is what it was when the
// program initialized: for a reactor started from a snapshot, the
// snapshot's).
func Args() []string { return readStrings(argsSizesGet, argsGet) }

// Environ reads WASI's environment now (see Args).
func Environ() []string { return readStrings(environSizesGet, environGet) }

// readStrings reads WASI's argument or environment vector.
func readStrings(sizes, get func(unsafe.Pointer, unsafe.Pointer) uint32) []string {
	var n, size uint32
	if sizes(unsafe.Pointer(&n), unsafe.Pointer(&size)) != 0 || n == 0 {
		return nil
	}
	ptrs := make([]uint32, n)
	buf := make([]byte, size)
	if get(unsafe.Pointer(&ptrs[0]), unsafe.Pointer(unsafe.SliceData(buf))) != 0 {
		return nil
	}
	// The vector holds 32-bit addresses into buf, each of a NUL-ended
	// string; the strings follow one another in order.
	out := make([]string, 0, n)
	for _, s := range strings.SplitAfter(string(buf), "\x00") {
		if len(out) == int(n) {
			break
		}
		out = append(out, strings.TrimSuffix(s, "\x00"))
	}
	return out
}

//go:wasmimport wasmbox getcwd
func hostGetcwd(buf unsafe.Pointer, n uint32) uint32

// Getwd returns the working directory the host gives this command
// (runtime.CwdABI), or false when it gives none (then $PWD holds it).
func Getwd() (string, bool) {
	buf := make([]byte, 256)
	for {
		n := hostGetcwd(unsafe.Pointer(&buf[0]), uint32(len(buf)))
		if n == 0 {
			return "", false
		}
		if int(n) <= len(buf) {
			return string(buf[:n]), true
		}
		buf = make([]byte, n)
	}
}
