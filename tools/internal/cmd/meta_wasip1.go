//go:build wasip1

package cmd

import (
	"encoding/binary"
	"io/fs"
	"os"
	"syscall"
	"unsafe"
)

//go:wasmimport wasmbox stat
func hostStat(pathPtr unsafe.Pointer, pathLen uint32, follow uint32, outPtr unsafe.Pointer) uint32

//go:wasmimport wasmbox chmod
func hostChmod(pathPtr unsafe.Pointer, pathLen uint32, mode uint32, follow uint32) uint32

//go:wasmimport wasmbox chown
func hostChown(pathPtr unsafe.Pointer, pathLen uint32, uid uint32, gid uint32, follow uint32) uint32

// wasiErrno maps the WASI errno of a metadata call to a syscall.Errno.
func wasiErrno(e uint32) error {
	switch e {
	case 0:
		return nil
	case 2:
		return syscall.EACCES
	case 21:
		return syscall.EFAULT
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

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func statMeta(name string, follow bool) (fs.FileInfo, error) {
	var fi fs.FileInfo
	var err error
	if follow {
		fi, err = os.Stat(name)
	} else {
		fi, err = os.Lstat(name)
	}
	if err != nil {
		return nil, err
	}
	abs, err := absPath(name)
	if err != nil {
		return fi, nil
	}
	var out [16]byte
	p := []byte(abs)
	if e := hostStat(unsafe.Pointer(unsafe.SliceData(p)), uint32(len(p)), b2u(follow), unsafe.Pointer(&out[0])); e != 0 {
		// No host support (ENOSYS) or a race with a removal: keep what
		// WASI said.
		return fi, nil
	}
	bits := binary.LittleEndian.Uint32(out[0:])
	mode := fi.Mode()&^(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) | fs.FileMode(bits&0o777)
	if bits&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if bits&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if bits&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	var sys any = fi.Sys()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		c := *st
		c.Uid = binary.LittleEndian.Uint32(out[4:])
		c.Gid = binary.LittleEndian.Uint32(out[8:])
		c.Nlink = uint64(binary.LittleEndian.Uint32(out[12:]))
		sys = &c
	}
	return metaInfo{FileInfo: fi, mode: mode, sys: sys}, nil
}

func posixBits(m fs.FileMode) uint32 {
	v := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	return v
}

func chmodMeta(name string, mode fs.FileMode) error {
	abs, err := absPath(name)
	if err != nil {
		return &fs.PathError{Op: "chmod", Path: name, Err: err}
	}
	p := []byte(abs)
	if err := wasiErrno(hostChmod(unsafe.Pointer(unsafe.SliceData(p)), uint32(len(p)), posixBits(mode), 1)); err != nil {
		return &fs.PathError{Op: "chmod", Path: name, Err: err}
	}
	return nil
}

func chownMeta(name string, uid, gid int, follow bool) error {
	abs, err := absPath(name)
	if err != nil {
		return &fs.PathError{Op: "chown", Path: name, Err: err}
	}
	u, g := uint32(0xFFFFFFFF), uint32(0xFFFFFFFF)
	if uid >= 0 {
		u = uint32(uid)
	}
	if gid >= 0 {
		g = uint32(gid)
	}
	p := []byte(abs)
	if err := wasiErrno(hostChown(unsafe.Pointer(unsafe.SliceData(p)), uint32(len(p)), u, g, b2u(follow))); err != nil {
		return &fs.PathError{Op: "chown", Path: name, Err: err}
	}
	return nil
}
