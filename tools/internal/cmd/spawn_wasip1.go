//go:build wasip1

package cmd

import (
	"fmt"
	"os"
	"unsafe"
)

//go:wasmimport wasmbox spawn
func hostSpawn(reqPtr unsafe.Pointer, reqLen uint32, statusPtr unsafe.Pointer) uint32

// WASI errno values the host returns.
const (
	errnoSuccess = 0
	errnoAcces   = 2
	errnoFault   = 21
	errnoInval   = 28
	errnoNoent   = 44
	errnoNosys   = 52
)

func spawn(req SpawnRequest, _ *Env) (int, error) {
	if req.Dir == "" {
		// The host knows only the directory the program started in; an
		// os.Chdir since then is the program's own state.
		if wd, err := os.Getwd(); err == nil {
			req.Dir = wd
		}
	}
	b, err := req.marshal()
	if err != nil {
		return 0, err
	}
	var status uint32
	switch errno := hostSpawn(unsafe.Pointer(unsafe.SliceData(b)), uint32(len(b)), unsafe.Pointer(&status)); errno {
	case errnoSuccess:
		return int(status), nil
	case errnoNoent:
		return 0, ErrNotFound
	case errnoAcces:
		return 0, ErrDenied
	case errnoInval:
		return 0, ErrInvalid
	case errnoNosys:
		return 0, ErrUnsupported
	case errnoFault:
		return 0, fmt.Errorf("spawn: bad pointer (errno %d)", errno)
	default:
		return 0, fmt.Errorf("spawn: errno %d", errno)
	}
}
