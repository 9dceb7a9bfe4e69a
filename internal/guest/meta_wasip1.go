//go:build wasip1

package guest

import (
	"encoding/binary"
	"unsafe"
)

//go:wasmimport wasmbox stat
func hostStat(pathPtr unsafe.Pointer, pathLen uint32, follow uint32, outPtr unsafe.Pointer) uint32

//go:wasmimport wasmbox chmod
func hostChmod(pathPtr unsafe.Pointer, pathLen uint32, mode uint32, follow uint32) uint32

//go:wasmimport wasmbox chown
func hostChown(pathPtr unsafe.Pointer, pathLen uint32, uid uint32, gid uint32, follow uint32) uint32

// Meta is what WASI cannot say about a file (runtime.MetaABI).
type Meta struct {
	// Mode is the POSIX permission, set-id and sticky bits (07777).
	Mode     uint32
	Uid, Gid uint32
	Nlink    uint32
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// Stat returns the metadata of the absolute path abs, following a final
// symlink when follow is set.
func Stat(abs string, follow bool) (Meta, error) {
	var out [16]byte
	p := []byte(abs)
	if e := hostStat(unsafe.Pointer(unsafe.SliceData(p)), uint32(len(p)), b2u(follow), unsafe.Pointer(&out[0])); e != 0 {
		return Meta{}, Errno(e)
	}
	return Meta{
		Mode:  binary.LittleEndian.Uint32(out[0:]),
		Uid:   binary.LittleEndian.Uint32(out[4:]),
		Gid:   binary.LittleEndian.Uint32(out[8:]),
		Nlink: binary.LittleEndian.Uint32(out[12:]),
	}, nil
}

// Chmod sets the 07777 bits of the absolute path abs.
func Chmod(abs string, bits uint32, follow bool) error {
	p := []byte(abs)
	return Errno(hostChmod(unsafe.Pointer(unsafe.SliceData(p)), uint32(len(p)), bits, b2u(follow)))
}

// Chown sets the owner and group of the absolute path abs; 0xFFFFFFFF
// leaves one as it is.
func Chown(abs string, uid, gid uint32, follow bool) error {
	p := []byte(abs)
	return Errno(hostChown(unsafe.Pointer(unsafe.SliceData(p)), uint32(len(p)), uid, gid, b2u(follow)))
}
