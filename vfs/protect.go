package vfs

import (
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// ProtectNames returns a view of fsys in which every path with a
// component equal to one of names (".git") is read-only: creating,
// writing, truncating, removing, renaming, linking, chmod, chown and
// chtimes there answer EROFS, as do a rename or hard link that would move
// something into or out of such a path, and a symlink whose target names
// one (which would reach it under another name). Reads are unchanged.
//
// The check runs on resolved paths (the view is a raw filesystem under
// the mount table, which resolves every symlink first), so no symlink in
// the guest's namespace leads around it. The sandbox uses it for the
// .git directories of host mounts the native lane writes: only git,
// through the lane, changes them.
func ProtectNames(fsys FS, names ...string) FS {
	p := &protectRaw{raw: rawOf(fsys), names: append([]string(nil), names...), orig: fsys}
	return &protectedFS{resolving: resolving{raw: p}, p: p}
}

type protectedFS struct {
	resolving
	p *protectRaw
}

// Fork forks the protected filesystem and protects the fork.
func (f *protectedFS) Fork() FS { return ProtectNames(Fork(f.p.orig), f.p.names...) }

type protectRaw struct {
	raw   FS
	orig  FS
	names []string
}

func (p *protectRaw) hit(name string) bool {
	for _, c := range strings.Split(name, "/") {
		for _, n := range p.names {
			if c == n {
				return true
			}
		}
	}
	return false
}

func (p *protectRaw) deny(op, name string) error { return pathErr(op, name, syscall.EROFS) }

func (p *protectRaw) Name() string { return "protect(" + p.raw.Name() + ")" }
func (p *protectRaw) Create(name string) (afero.File, error) {
	if p.hit(name) {
		return nil, p.deny("open", name)
	}
	return p.raw.Create(name)
}
func (p *protectRaw) Open(name string) (afero.File, error) { return p.raw.Open(name) }
func (p *protectRaw) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if flag&writeFlags != 0 && p.hit(name) {
		return nil, p.deny("open", name)
	}
	return p.raw.OpenFile(name, flag, perm)
}
func (p *protectRaw) Mkdir(name string, perm os.FileMode) error {
	if p.hit(name) {
		return p.deny("mkdir", name)
	}
	return p.raw.Mkdir(name, perm)
}
func (p *protectRaw) MkdirAll(name string, perm os.FileMode) error {
	if p.hit(name) {
		if fi, err := p.raw.Stat(name); err == nil && fi.IsDir() {
			return nil
		}
		return p.deny("mkdir", name)
	}
	return p.raw.MkdirAll(name, perm)
}
func (p *protectRaw) Remove(name string) error {
	if p.hit(name) {
		return p.deny("remove", name)
	}
	return p.raw.Remove(name)
}
func (p *protectRaw) RemoveAll(name string) error {
	if p.hit(name) || p.holds(name) {
		return p.deny("remove", name)
	}
	return p.raw.RemoveAll(name)
}

// holds reports whether the directory name has a protected entry
// (RemoveAll of a directory would take it along).
func (p *protectRaw) holds(name string) bool {
	f, err := p.raw.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		return false
	}
	found := false
	_ = afero.Walk(p.raw, name, func(path string, info os.FileInfo, err error) error {
		if err == nil && p.hit(path) {
			found = true
			return errStopWalk
		}
		return nil
	})
	return found
}

var errStopWalk = pathErr("walk", "", syscall.ECANCELED)

func (p *protectRaw) Rename(oldname, newname string) error {
	if p.hit(oldname) || p.hit(newname) {
		return linkErr("rename", oldname, newname, syscall.EROFS)
	}
	return p.raw.Rename(oldname, newname)
}
func (p *protectRaw) Stat(name string) (os.FileInfo, error) { return p.raw.Stat(name) }
func (p *protectRaw) Chmod(name string, mode os.FileMode) error {
	if p.hit(name) {
		return p.deny("chmod", name)
	}
	return p.raw.Chmod(name, mode)
}
func (p *protectRaw) Chown(name string, uid, gid int) error {
	if p.hit(name) {
		return p.deny("chown", name)
	}
	return p.raw.Chown(name, uid, gid)
}
func (p *protectRaw) Chtimes(name string, atime, mtime time.Time) error {
	if p.hit(name) {
		return p.deny("chtimes", name)
	}
	return p.raw.Chtimes(name, atime, mtime)
}
func (p *protectRaw) Lchtimes(name string, atime, mtime time.Time) error {
	if p.hit(name) {
		return p.deny("lchtimes", name)
	}
	return Lchtimes(p.raw, name, atime, mtime)
}
func (p *protectRaw) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	return p.raw.LstatIfPossible(name)
}
func (p *protectRaw) SymlinkIfPossible(oldname, newname string) error {
	if p.hit(newname) || p.hit(oldname) {
		return linkErr("symlink", oldname, newname, syscall.EROFS)
	}
	return p.raw.SymlinkIfPossible(oldname, newname)
}
func (p *protectRaw) ReadlinkIfPossible(name string) (string, error) {
	return p.raw.ReadlinkIfPossible(name)
}
func (p *protectRaw) Link(oldname, newname string) error {
	if p.hit(oldname) || p.hit(newname) {
		return linkErr("link", oldname, newname, syscall.EROFS)
	}
	return p.raw.Link(oldname, newname)
}
