package vfs

import (
	"os"
	"path"
	"strings"
	"time"
)

// fileInfo is the os.FileInfo of every filesystem of this package.
type fileInfo struct {
	name  string
	size  int64
	mode  os.FileMode
	mtime time.Time
	sys   *Stat
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.size }
func (fi *fileInfo) Mode() os.FileMode  { return fi.mode }
func (fi *fileInfo) ModTime() time.Time { return fi.mtime }
func (fi *fileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi *fileInfo) Sys() any           { return fi.sys }

// renamed returns a copy of fi under another base name.
func renamed(fi os.FileInfo, name string) os.FileInfo {
	if fi.Name() == name {
		return fi
	}
	if f, ok := fi.(*fileInfo); ok {
		c := *f
		c.name = name
		return &c
	}
	return &fileInfo{name: name, size: fi.Size(), mode: fi.Mode(), mtime: fi.ModTime(), sys: statOf(fi)}
}

// statOf returns the *Stat of fi, or one built from what fi exposes.
func statOf(fi os.FileInfo) *Stat {
	if s, ok := fi.Sys().(*Stat); ok {
		return s
	}
	return &Stat{Nlink: 1, Atime: fi.ModTime(), Mtime: fi.ModTime(), Ctime: fi.ModTime()}
}

// splitPath splits a guest path into its components, dropping empty and
// "." components. ".." is kept.
func splitPath(p string) []string {
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			n++
		}
	}
	out := make([]string, 0, n+1)
	for len(p) > 0 {
		i := strings.IndexByte(p, '/')
		var c string
		if i < 0 {
			c, p = p, ""
		} else {
			c, p = p[:i], p[i+1:]
		}
		if c == "" || c == "." {
			continue
		}
		out = append(out, c)
	}
	return out
}

// wantsDir reports whether p ends in a way that requires a directory:
// a trailing slash, "/." or "/.." (or is "." or "..").
func wantsDir(p string) bool {
	return strings.HasSuffix(p, "/") || p == "." || p == ".." ||
		strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")
}

// lastIsDot reports whether the last component of p is "." or "..", or p
// names the root: such a path cannot be created, removed or renamed.
func lastIsDot(p string) bool {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return true
	}
	b := path.Base(p)
	return b == "." || b == ".."
}

// cleanAbs returns the lexically clean absolute form of p. Only used on
// paths that contain no symlinks (resolved paths) or for mount points.
func cleanAbs(p string) string {
	return path.Clean("/" + p)
}

func baseName(p string) string {
	if p == "/" || p == "" {
		return "/"
	}
	return path.Base(p)
}

// statName is the name a FileInfo reports for a path, as os.Stat does:
// the last element, trailing slashes removed ("/" for the root).
func statName(p string) string {
	for len(p) > 1 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	if p == "" || p == "/" {
		return "/"
	}
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
