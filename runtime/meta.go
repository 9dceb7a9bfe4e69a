package runtime

import (
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"

	"github.com/wasmbox/wasmbox/vfs"
)

// MetaABI documents the host calls through which a guest reads and changes
// the POSIX metadata that WASI preview1 cannot express: permission bits and
// owners. (WASI's filestat has no mode or owner, so a wasip1 program sees
// every file as 0600 and every directory as 0700, owned by uid 0, and it
// has no chmod at all.) Tools such as ls -l, stat, find -perm, test -x,
// cp -p, chmod and chown use them.
//
//	(import "wasmbox" "stat"  (func (param $path_ptr i32) (param $path_len i32) (param $follow i32) (param $out_ptr i32) (result i32)))
//	(import "wasmbox" "chmod" (func (param $path_ptr i32) (param $path_len i32) (param $mode i32) (param $follow i32) (result i32)))
//	(import "wasmbox" "chown" (func (param $path_ptr i32) (param $path_len i32) (param $uid i32) (param $gid i32) (param $follow i32) (result i32)))
//
// path is an absolute guest path, UTF-8, at most 4096 bytes (the guest
// resolves relative names against its working directory). follow = 1
// follows a final symlink, 0 acts on the link itself. stat writes 16 bytes
// at out_ptr, little-endian u32s: mode (the POSIX permission and
// set-id/sticky bits, 07777), uid, gid, nlink. chmod sets the 07777 bits of
// mode; chown changes uid and/or gid, 0xFFFFFFFF meaning "leave as is".
// The result is a WASI errno: 0 success, 44 ENOENT, 54 ENOTDIR, 32 ELOOP,
// 2 EACCES, 63 EPERM, 69 EROFS, 28 EINVAL (bad path), 21 EFAULT (pointer
// out of memory), 52 ENOSYS (no filesystem attached to this run), 29 EIO.
const MetaABI = "wasmbox.stat/chmod/chown"

// WASI errno values of the metadata calls (besides those of spawn).
const (
	ErrnoLoop    uint32 = 32
	ErrnoIO      uint32 = 29
	ErrnoNosys   uint32 = 52
	ErrnoNotdir  uint32 = 54
	ErrnoPerm    uint32 = 63
	ErrnoRofs    uint32 = 69
	ErrnoNametoo uint32 = 37
)

type metaFSKey struct{}

// maxMetaPath bounds the path of a metadata call.
const maxMetaPath = 4096

func addMetaFunctions(b wazero.HostModuleBuilder) wazero.HostModuleBuilder {
	i32 := api.ValueTypeI32
	return b.
		NewFunctionBuilder().
		WithGoModuleFunction(halting(metaStat), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("path_ptr", "path_len", "follow", "out_ptr").
		WithResultNames("errno").
		Export("stat").
		NewFunctionBuilder().
		WithGoModuleFunction(halting(metaChmod), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("path_ptr", "path_len", "mode", "follow").
		WithResultNames("errno").
		Export("chmod").
		NewFunctionBuilder().
		WithGoModuleFunction(halting(metaChown), []api.ValueType{i32, i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("path_ptr", "path_len", "uid", "gid", "follow").
		WithResultNames("errno").
		Export("chown")
}

// metaArgs reads the filesystem and the path of a metadata call.
func metaArgs(ctx context.Context, mod api.Module, ptr, n uint32) (vfs.FS, string, uint32) {
	fsys, _ := ctx.Value(metaFSKey{}).(vfs.FS)
	if fsys == nil {
		return nil, "", ErrnoNosys
	}
	mem := mod.Memory()
	if mem == nil {
		return nil, "", ErrnoFault
	}
	if n == 0 || n > maxMetaPath {
		return nil, "", ErrnoInval
	}
	b, ok := mem.Read(ptr, n)
	if !ok {
		return nil, "", ErrnoFault
	}
	p := string(b)
	if p[0] != '/' || containsNUL(p) {
		return nil, "", ErrnoInval
	}
	return fsys, path.Clean(p), ErrnoSuccess
}

func metaStat(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, n, follow, out := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	stack[0] = uint64(func() uint32 {
		fsys, p, errno := metaArgs(ctx, mod, ptr, n)
		if errno != ErrnoSuccess {
			return errno
		}
		var fi fs.FileInfo
		var err error
		if follow != 0 {
			fi, err = fsys.Stat(p)
		} else {
			fi, _, err = fsys.LstatIfPossible(p)
		}
		if err != nil {
			return errnoOf(err)
		}
		var buf [16]byte
		binary.LittleEndian.PutUint32(buf[0:], posixMode(fi.Mode()))
		if st, ok := fi.Sys().(*vfs.Stat); ok {
			binary.LittleEndian.PutUint32(buf[4:], st.Uid)
			binary.LittleEndian.PutUint32(buf[8:], st.Gid)
			binary.LittleEndian.PutUint32(buf[12:], uint32(min(st.Nlink, 1<<32-1)))
		} else {
			binary.LittleEndian.PutUint32(buf[12:], 1)
		}
		if !mod.Memory().Write(out, buf[:]) {
			return ErrnoFault
		}
		return ErrnoSuccess
	}())
}

func metaChmod(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, n, mode, follow := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	stack[0] = uint64(func() uint32 {
		fsys, p, errno := metaArgs(ctx, mod, ptr, n)
		if errno != ErrnoSuccess {
			return errno
		}
		if follow == 0 {
			// Linux has no lchmod: changing a symlink's own mode is
			// EOPNOTSUPP; report it as EPERM-like refusal for links.
			fi, _, err := fsys.LstatIfPossible(p)
			if err != nil {
				return errnoOf(err)
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				return ErrnoPerm
			}
		}
		if err := fsys.Chmod(p, goMode(mode)); err != nil {
			return errnoOf(err)
		}
		return ErrnoSuccess
	}())
}

func metaChown(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, n, uid, gid, follow := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3]), uint32(stack[4])
	stack[0] = uint64(func() uint32 {
		fsys, p, errno := metaArgs(ctx, mod, ptr, n)
		if errno != ErrnoSuccess {
			return errno
		}
		fi, _, err := fsys.LstatIfPossible(p)
		if err != nil {
			return errnoOf(err)
		}
		if follow == 0 && fi.Mode()&fs.ModeSymlink != 0 {
			// vfs.FS has no lchown: a symlink's owner stays.
			return ErrnoSuccess
		}
		if follow != 0 {
			if fi, err = fsys.Stat(p); err != nil {
				return errnoOf(err)
			}
		}
		u, g := -1, -1
		if st, ok := fi.Sys().(*vfs.Stat); ok {
			u, g = int(st.Uid), int(st.Gid)
		}
		if uid != 0xFFFFFFFF {
			u = int(uid)
		}
		if gid != 0xFFFFFFFF {
			g = int(gid)
		}
		if err := fsys.Chown(p, u, g); err != nil {
			return errnoOf(err)
		}
		return ErrnoSuccess
	}())
}

// posixMode returns the 07777 bits of m.
func posixMode(m fs.FileMode) uint32 {
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

// goMode is the inverse of posixMode.
func goMode(v uint32) fs.FileMode {
	m := fs.FileMode(v & 0o777)
	if v&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if v&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if v&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// errnoOf maps a vfs error to a WASI errno.
func errnoOf(err error) uint32 {
	var en syscall.Errno
	if !errors.As(err, &en) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return ErrnoNoent
		case errors.Is(err, fs.ErrPermission):
			return ErrnoAcces
		case errors.Is(err, os.ErrInvalid):
			return ErrnoInval
		}
		return ErrnoIO
	}
	switch en {
	case syscall.ENOENT:
		return ErrnoNoent
	case syscall.ENOTDIR:
		return ErrnoNotdir
	case syscall.ELOOP:
		return ErrnoLoop
	case syscall.EACCES:
		return ErrnoAcces
	case syscall.EPERM:
		return ErrnoPerm
	case syscall.EROFS:
		return ErrnoRofs
	case syscall.EINVAL:
		return ErrnoInval
	case syscall.ENAMETOOLONG:
		return ErrnoNametoo
	}
	return ErrnoIO
}
