//go:build !linux

package vfs

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
