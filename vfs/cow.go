package vfs

import (
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// cowFS is a raw FS that overlays an in-memory upper layer on a read-only
// lower layer, like overlayfs: a path present in upper shadows lower;
// directories present in both are merged; a file of lower is copied up
// into upper before it is changed (opened for writing, truncated, chmod,
// chown, chtimes, linked or renamed); a deleted lower path is recorded as
// a whiteout; a directory created where a lower path was deleted is
// opaque (lower entries below it stay hidden). The lower layer is never
// written.
type cowFS struct {
	lower FS // raw, read-only
	upper *MemFS

	mu     sync.RWMutex    // serializes changes; guards white and opaque
	white  map[string]bool // lower path (and below) deleted
	opaque map[string]bool // upper path hiding lower paths below it
}

func newCow(lower FS, upper *MemFS) *cowFS {
	return &cowFS{lower: lower, upper: upper, white: map[string]bool{}, opaque: map[string]bool{}}
}

func (c *cowFS) fork() *cowFS {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := newCow(c.lower, c.upper.Fork())
	for k := range c.white {
		n.white[k] = true
	}
	for k := range c.opaque {
		n.opaque[k] = true
	}
	return n
}

func (c *cowFS) Name() string { return "CopyOnWrite(" + c.lower.Name() + ")" }

// lowerVisible reports whether lower's p can show through. c.mu is held.
func (c *cowFS) lowerVisible(p string) bool {
	if len(c.white) == 0 && len(c.opaque) == 0 {
		return true
	}
	if c.white[p] {
		return false
	}
	for q := parentOf(p); ; q = parentOf(q) {
		if c.white[q] || c.opaque[q] {
			return false
		}
		if q == "/" {
			return true
		}
	}
}

// layer is where p lives: in upper (fi from upper), in lower, or nowhere.
type layer int

const (
	none layer = iota
	inUpper
	inLower
)

// find looks p up in the merged view. c.mu is held.
func (c *cowFS) find(p string) (os.FileInfo, layer, error) {
	fi, _, err := c.upper.LstatIfPossible(p)
	if err == nil {
		return fi, inUpper, nil
	}
	if Errno(err) != syscall.ENOENT {
		return nil, none, err
	}
	if !c.lowerVisible(p) {
		return nil, none, err
	}
	fi, _, err = c.lower.LstatIfPossible(p)
	if err != nil {
		return nil, none, err
	}
	return fi, inLower, nil
}

// lowerHas reports whether lower holds a visible p. c.mu is held.
func (c *cowFS) lowerHas(p string) bool {
	if !c.lowerVisible(p) {
		return false
	}
	_, _, err := c.lower.LstatIfPossible(p)
	return err == nil
}

func (c *cowFS) LstatIfPossible(p string) (os.FileInfo, bool, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	fi, _, err := c.find(p)
	return fi, true, err
}

func (c *cowFS) Stat(p string) (os.FileInfo, error) { return statResolved(c, nil, "stat", p, true) }

func (c *cowFS) ReadlinkIfPossible(p string) (string, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, l, err := c.find(p)
	switch l {
	case inUpper:
		return c.upper.ReadlinkIfPossible(p)
	case inLower:
		return c.lower.ReadlinkIfPossible(p)
	}
	return "", err
}

// copyUpDir makes sure directory p exists in upper, copying the
// directories of lower on the way. c.mu is held for writing.
func (c *cowFS) copyUpDir(p string) error {
	fi, l, err := c.find(p)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return pathErr("mkdir", p, syscall.ENOTDIR)
	}
	if l == inUpper {
		return nil
	}
	if err := c.copyUpDir(parentOf(p)); err != nil {
		return err
	}
	return c.copyAttrs(p, fi, c.upper.Mkdir(p, fi.Mode().Perm()))
}

// copyAttrs gives upper's p the mode and times of lower's fi.
func (c *cowFS) copyAttrs(p string, fi os.FileInfo, err error) error {
	if err != nil {
		return err
	}
	c.upper.Chmod(p, fi.Mode())
	st := statOf(fi)
	return c.upper.Chtimes(p, st.Atime, fi.ModTime())
}

// copyUp makes sure p exists in upper, copying it (not what is below it)
// from lower. c.mu is held for writing.
func (c *cowFS) copyUp(p string) error { return c.copyUpData(p, true) }

// copyUpData is copyUp; without data a regular file is copied up empty
// (for an open with O_TRUNC).
func (c *cowFS) copyUpData(p string, data bool) error {
	fi, l, err := c.find(p)
	if err != nil || l == inUpper {
		return err
	}
	if err := c.copyUpDir(parentOf(p)); err != nil {
		return err
	}
	switch m := fi.Mode(); {
	case m.IsDir():
		return c.copyAttrs(p, fi, c.upper.Mkdir(p, m.Perm()))
	case m&os.ModeSymlink != 0:
		t, err := c.lower.ReadlinkIfPossible(p)
		if err != nil {
			return err
		}
		return c.upper.SymlinkIfPossible(t, p)
	case m.IsRegular():
		src, err := c.lower.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer src.Close()
		dst, err := c.upper.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, m.Perm())
		if err != nil {
			return err
		}
		if data {
			_, err = io.Copy(dst, src)
		}
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			c.upper.Remove(p) // nothing half copied stays behind
			return err
		}
		return c.copyAttrs(p, fi, nil)
	}
	return pathErr("copyup", p, syscall.EACCES)
}

// copyUpTree copies p and everything below it into upper.
func (c *cowFS) copyUpTree(p string) error {
	if err := c.copyUp(p); err != nil {
		return err
	}
	fi, _, err := c.upper.LstatIfPossible(p)
	if err != nil || !fi.IsDir() {
		return err
	}
	ents, err := c.merged(p)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := c.copyUpTree(joinPath(p, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// lowerEntries lists the visible entries of lower's directory p that upper
// does not shadow. c.mu is held.
func (c *cowFS) lowerEntries(p string) ([]os.FileInfo, error) {
	if c.opaque[p] || !c.lowerVisible(p) {
		return nil, nil
	}
	fi, _, err := c.lower.LstatIfPossible(p)
	if err != nil || !fi.IsDir() {
		return nil, nil
	}
	ents, err := readDirAll(c.lower, p)
	if err != nil {
		return nil, err
	}
	out := ents[:0]
	for _, e := range ents {
		cp := joinPath(p, e.Name())
		if c.white[cp] {
			continue
		}
		if _, _, err := c.upper.LstatIfPossible(cp); err == nil {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// merged lists directory p of the merged view. c.mu is held.
func (c *cowFS) merged(p string) ([]os.FileInfo, error) {
	var out []os.FileInfo
	if fi, _, err := c.upper.LstatIfPossible(p); err == nil && fi.IsDir() {
		ents, err := readDirAll(c.upper, p)
		if err != nil {
			return nil, err
		}
		out = ents
	}
	low, err := c.lowerEntries(p)
	if err != nil {
		return nil, err
	}
	return append(out, low...), nil
}

// created records that p now exists in upper. c.mu is held for writing.
func (c *cowFS) created(p string) {
	if c.white[p] {
		delete(c.white, p)
		c.opaque[p] = true
	}
}

// forget drops whiteouts and opaque marks strictly below p.
func (c *cowFS) forget(p string) {
	pre := p + "/"
	if p == "/" {
		pre = "/"
	}
	for k := range c.white {
		if strings.HasPrefix(k, pre) {
			delete(c.white, k)
		}
	}
	for k := range c.opaque {
		if strings.HasPrefix(k, pre) {
			delete(c.opaque, k)
		}
	}
}

// hide records that p no longer exists. c.mu is held for writing.
func (c *cowFS) hide(p string, lowerHad bool) {
	c.forget(p)
	if lowerHad || c.opaque[p] {
		c.white[p] = true
	}
	delete(c.opaque, p)
}

func (c *cowFS) Create(p string) (afero.File, error) {
	return c.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (c *cowFS) Open(p string) (afero.File, error) { return c.OpenFile(p, os.O_RDONLY, 0) }

func (c *cowFS) OpenFile(p string, flag int, perm os.FileMode) (afero.File, error) {
	if flag&(accMode|os.O_CREATE|os.O_TRUNC|os.O_APPEND) == os.O_RDONLY {
		c.mu.RLock()
		defer c.mu.RUnlock()
		fi, l, err := c.find(p)
		if err != nil {
			return nil, rewrap("open", p, err)
		}
		if fi.IsDir() {
			return &listDir{name: p, info: fi, load: func() ([]os.FileInfo, error) {
				c.mu.RLock()
				defer c.mu.RUnlock()
				return c.merged(p)
			}}, nil
		}
		if l == inUpper {
			return c.upper.OpenFile(p, flag, perm)
		}
		return c.lower.OpenFile(p, flag, perm)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, l, err := c.find(p)
	switch {
	case l == inLower:
		if flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0 {
			return nil, pathErr("open", p, syscall.EEXIST)
		}
		if err := c.copyUpData(p, flag&os.O_TRUNC == 0); err != nil {
			return nil, rewrap("open", p, err)
		}
	case l == none && Errno(err) == syscall.ENOENT && flag&os.O_CREATE != 0:
		if err := c.copyUpDir(parentOf(p)); err != nil {
			return nil, rewrap("open", p, err)
		}
	case l == none:
		return nil, rewrap("open", p, err)
	}
	f, err := c.upper.OpenFile(p, flag, perm)
	if err == nil && l == none {
		c.created(p)
	}
	return f, err
}

func (c *cowFS) Mkdir(p string, perm os.FileMode) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, l, _ := c.find(p); l != none {
		return pathErr("mkdir", p, syscall.EEXIST)
	}
	if err := c.copyUpDir(parentOf(p)); err != nil {
		return rewrap("mkdir", p, err)
	}
	if err := c.upper.Mkdir(p, perm); err != nil {
		return err
	}
	c.created(p)
	return nil
}

func (c *cowFS) MkdirAll(p string, perm os.FileMode) error { return mkdirAll(c, p, perm) }

func (c *cowFS) Remove(p string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p == "/" {
		return pathErr("remove", p, syscall.EBUSY)
	}
	fi, l, err := c.find(p)
	if err != nil {
		return rewrap("remove", p, err)
	}
	if fi.IsDir() {
		ents, err := c.merged(p)
		if err != nil {
			return rewrap("remove", p, err)
		}
		if len(ents) > 0 {
			return pathErr("remove", p, syscall.ENOTEMPTY)
		}
	}
	if l == inUpper {
		if err := c.upper.Remove(p); err != nil {
			return err
		}
	}
	c.hide(p, c.lowerHas(p))
	return nil
}

func (c *cowFS) RemoveAll(p string) error { return removeAllRaw(c, p) }

func (c *cowFS) Rename(oldname, newname string) error {
	const op = "rename"
	c.mu.Lock()
	defer c.mu.Unlock()
	if oldname == "/" || newname == "/" {
		return linkErr(op, oldname, newname, syscall.EBUSY)
	}
	src, _, err := c.find(oldname)
	if err != nil {
		return rewrapLink(op, oldname, newname, err)
	}
	dst, _, err := c.find(newname)
	switch {
	case err == nil:
		if oldname == newname || sameFile(src, dst) {
			return nil
		}
		switch {
		case src.IsDir() && !dst.IsDir():
			return linkErr(op, oldname, newname, syscall.ENOTDIR)
		case !src.IsDir() && dst.IsDir():
			return linkErr(op, oldname, newname, syscall.EISDIR)
		case dst.IsDir():
			ents, err := c.merged(newname)
			if err != nil {
				return rewrapLink(op, oldname, newname, err)
			}
			if len(ents) > 0 {
				return linkErr(op, oldname, newname, syscall.ENOTEMPTY)
			}
		}
	case Errno(err) != syscall.ENOENT:
		return rewrapLink(op, oldname, newname, err)
	}
	if src.IsDir() && strings.HasPrefix(newname, oldname+"/") {
		return linkErr(op, oldname, newname, syscall.EINVAL)
	}
	if err := c.copyUpTree(oldname); err != nil {
		return rewrapLink(op, oldname, newname, err)
	}
	if err := c.copyUpDir(parentOf(newname)); err != nil {
		return rewrapLink(op, oldname, newname, err)
	}
	if err := c.upper.Rename(oldname, newname); err != nil {
		return err
	}
	c.forget(newname)
	delete(c.white, newname)
	if c.lowerHas(newname) || src.IsDir() {
		c.opaque[newname] = true
	}
	c.hide(oldname, c.lowerHas(oldname))
	return nil
}

func sameFile(a, b os.FileInfo) bool {
	sa, sb := statOf(a), statOf(b)
	return sa.Ino != 0 && sa.Ino == sb.Ino && sa.Dev == sb.Dev
}

func (c *cowFS) SymlinkIfPossible(target, p string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, l, _ := c.find(p); l != none {
		return linkErr("symlink", target, p, syscall.EEXIST)
	}
	if err := c.copyUpDir(parentOf(p)); err != nil {
		return rewrapLink("symlink", target, p, err)
	}
	if err := c.upper.SymlinkIfPossible(target, p); err != nil {
		return err
	}
	c.created(p)
	return nil
}

func (c *cowFS) Link(oldname, newname string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	fi, _, err := c.find(oldname)
	if err != nil {
		return rewrapLink("link", oldname, newname, err)
	}
	if _, l, _ := c.find(newname); l != none {
		return linkErr("link", oldname, newname, syscall.EEXIST)
	}
	if fi.IsDir() {
		return linkErr("link", oldname, newname, syscall.EPERM)
	}
	if err := c.copyUp(oldname); err != nil {
		return rewrapLink("link", oldname, newname, err)
	}
	if err := c.copyUpDir(parentOf(newname)); err != nil {
		return rewrapLink("link", oldname, newname, err)
	}
	if err := c.upper.Link(oldname, newname); err != nil {
		return err
	}
	c.created(newname)
	return nil
}

// change copies p up and applies fn to it in upper.
func (c *cowFS) change(op, p string, fn func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.copyUp(p); err != nil {
		return rewrap(op, p, err)
	}
	return fn()
}

func (c *cowFS) Chmod(p string, mode os.FileMode) error {
	return c.change("chmod", p, func() error { return c.upper.Chmod(p, mode) })
}

func (c *cowFS) Chown(p string, uid, gid int) error {
	return c.change("chown", p, func() error { return c.upper.Chown(p, uid, gid) })
}

func (c *cowFS) Chtimes(p string, atime, mtime time.Time) error {
	return c.change("chtimes", p, func() error { return c.upper.Chtimes(p, atime, mtime) })
}

func (c *cowFS) Lchtimes(p string, atime, mtime time.Time) error {
	return c.change("lchtimes", p, func() error { return c.upper.Lchtimes(p, atime, mtime) })
}
