//go:build wasip1

package cmd

import (
	"io/fs"
	"os"
	"syscall"

	"github.com/wasmbox/wasmbox/internal/guest"
)

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
	m, err := guest.Stat(abs, follow)
	if err != nil {
		// No host support (ENOSYS) or a race with a removal: keep what
		// WASI said.
		return fi, nil
	}
	bits := m.Mode
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
		c.Uid, c.Gid, c.Nlink = m.Uid, m.Gid, uint64(m.Nlink)
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
	if err := guest.Chmod(abs, posixBits(mode), true); err != nil {
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
	if err := guest.Chown(abs, u, g, follow); err != nil {
		return &fs.PathError{Op: "chown", Path: name, Err: err}
	}
	return nil
}
