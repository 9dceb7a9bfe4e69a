//go:build !linux

package vfs

import (
	"os"
	"syscall"
	"time"
)

func (h *hostRaw) renameAt(oldname, newname string) error {
	if fi, err := h.root.Lstat(rel(newname)); err == nil && fi.IsDir() {
		if src, err := h.root.Lstat(rel(oldname)); err == nil && src.IsDir() {
			if err := h.root.Remove(rel(newname)); err != nil {
				return err
			}
		}
	}
	return h.root.Rename(rel(oldname), rel(newname))
}

func (h *hostRaw) lchtimesAt(name string, atime, mtime time.Time) error {
	fi, err := h.root.Lstat(rel(name))
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return syscall.ENOTSUP
	}
	return h.root.Chtimes(rel(name), atime, mtime)
}

func (h *hostRaw) fastLstat(r string, follow, mustDir bool, _ *Cred) (os.FileInfo, error) {
	return nil, errSymlink
}

func (h *hostRaw) fastOpen(r, display string, flag int, _ *Cred) (*hostFile, error) {
	return nil, errSymlink
}
