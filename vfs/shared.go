package vfs

import (
	"errors"
	"syscall"
)

// ErrNotShareable is returned by ReadShared for a file that is not in a
// MemFS (a host mount): read it with Open instead.
var ErrNotShareable = errors.New("vfs: file content cannot be shared")

// ReadShared returns the content of the regular file name without copying
// it, and the file's inode number. The returned slice is shared with the
// file copy-on-write, as Fork shares it: a later write, truncate or append
// to the file copies the content first, so the slice never changes. The
// caller must not modify it. No symlink is followed: one on the way is
// ELOOP; a name that is not a regular file (a symlink too) is EINVAL.
//
// Two calls that return the same slice (the same first byte and length)
// therefore return the same bytes, as long as the first one's slice is
// kept alive: incremental snapshots use that to skip files that did not
// change.
func (m *MemFS) ReadShared(name string) (data []byte, ino uint64, err error) {
	const op = "readshared"
	m.mu.RLock()
	lk, errno := m.resolve(name, false, access{strict: true})
	if errno == errSymlink {
		errno = syscall.ELOOP
	}
	if errno == 0 && lk.node == nil {
		errno = syscall.ENOENT
	}
	if errno == 0 && lk.node.kind != kReg {
		errno = syscall.EINVAL
	}
	m.mu.RUnlock()
	if errno != 0 {
		return nil, 0, pathErr(op, name, errno)
	}
	n := lk.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.data) > 0 {
		n.shared = true
	}
	return n.data, n.ino, nil
}

// ReadShared is MemFS.ReadShared for the file at the resolved path name
// (no symlink is followed): ErrNotShareable unless a MemFS serves it.
func (v *VFS) ReadShared(name string) ([]byte, uint64, error) {
	if name == "" || name[0] != '/' || cleanAbs(name) != name {
		return nil, 0, pathErr("readshared", name, syscall.EINVAL)
	}
	mnt, rel := v.mt.find(name)
	mfs, ok := mnt.raw.(*MemFS)
	if !ok {
		return nil, 0, ErrNotShareable
	}
	return mfs.ReadShared(rel)
}
