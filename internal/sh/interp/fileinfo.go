// Copyright (c) 2026, wasmbox authors. See LICENSE for licensing information.

package interp

import (
	"context"
	"io/fs"
	"os"
	"time"

	"github.com/wasmbox/wasmbox/internal/sh/syntax"
)

// FileSys is what the -O, -G, -ef and -N tests read from the Sys value of
// a FileInfo a [StatHandler] returns, when it implements it: a stat
// handler over a filesystem that is not the operating system's (a virtual
// one, or a platform such as GOOS=wasip1 whose syscall.Stat_t has no
// owners) reports a file's owner, identity and access time through it.
// With [UserIDs] set, -O and -G compare the owner with those ids.
type FileSys interface {
	Owner() (uid, gid uint32)
	DevIno() (dev, ino uint64)
	AccessTime() time.Time
}

// UserIDs sets the user and group ids of the shell's user, which the -O
// and -G tests compare a file's owner with (see [FileSys]), in place of
// the process's user.
func UserIDs(uid, gid uint32) RunnerOption {
	return func(r *Runner) error {
		r.ids = &[2]uint32{uid, gid}
		return nil
	}
}

// testOwner implements -O and -G with UserIDs; handled is false without
// them.
func (r *Runner) testOwner(ctx context.Context, op syntax.UnTestOperator, x string) (ok, handled bool) {
	if r.ids == nil {
		return false, false
	}
	info, err := r.stat(ctx, x)
	if err != nil {
		return false, true
	}
	fsys, isSys := info.Sys().(FileSys)
	if !isSys {
		return false, true
	}
	uid, gid := fsys.Owner()
	if op == syntax.TsUsrOwn {
		return uid == r.ids[0], true
	}
	return gid == r.ids[1], true
}

// sameFile is os.SameFile, or the identities of FileSys values.
func sameFile(a, b fs.FileInfo) bool {
	sa, okA := a.Sys().(FileSys)
	sb, okB := b.Sys().(FileSys)
	if okA && okB {
		da, ia := sa.DevIno()
		db, ib := sb.DevIno()
		return da == db && ia == ib
	}
	return os.SameFile(a, b)
}

// accessTime is the access time of a FileSys value, or the platform's.
func accessTime(info fs.FileInfo) time.Time {
	if s, ok := info.Sys().(FileSys); ok {
		return s.AccessTime()
	}
	return getAtime(info)
}
