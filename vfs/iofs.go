package vfs

import (
	"errors"
	"io"
	"io/fs"
	"sort"
	"syscall"

	"github.com/spf13/afero"
)

// IOFS exposes fsys as an io/fs.FS, so that fs.WalkDir, fs.ReadFile,
// fs.Glob, template.ParseFS and friends work on it. Names are io/fs names
// (unrooted, slash-separated, no "." or ".." elements; "." is the root)
// and are resolved from the root of fsys. Device files are files: a walk
// that reads every file never ends on /dev/zero, so walk a subtree. The result also implements
// fs.ReadDirFS, fs.StatFS, fs.ReadFileFS and fs.ReadLinkFS; its directories implement
// fs.ReadDirFile.
func IOFS(fsys FS) fs.FS { return ioFS{fsys} }

type ioFS struct{ fsys FS }

var (
	_ fs.ReadDirFS  = ioFS{}
	_ fs.StatFS     = ioFS{}
	_ fs.ReadFileFS = ioFS{}
	_ fs.ReadLinkFS = ioFS{}
)

// ReadLink implements fs.ReadLinkFS.
func (i ioFS) ReadLink(name string) (string, error) {
	p, err := i.path("readlink", name)
	if err != nil {
		return "", err
	}
	t, err := i.fsys.ReadlinkIfPossible(p)
	return t, fix("readlink", name, err)
}

// Lstat implements fs.ReadLinkFS.
func (i ioFS) Lstat(name string) (fs.FileInfo, error) {
	p, err := i.path("lstat", name)
	if err != nil {
		return nil, err
	}
	fi, _, err := i.fsys.LstatIfPossible(p)
	return fi, fix("lstat", name, err)
}

func (i ioFS) path(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return "/", nil
	}
	return "/" + name, nil
}

// fix reports errors under the io/fs name.
func fix(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: op, Path: name, Err: pe.Err}
	}
	return &fs.PathError{Op: op, Path: name, Err: Errno(err)}
}

func (i ioFS) Open(name string) (fs.File, error) {
	p, err := i.path("open", name)
	if err != nil {
		return nil, err
	}
	f, err := i.fsys.Open(p)
	if err != nil {
		return nil, fix("open", name, err)
	}
	return &ioFile{File: f, name: name}, nil
}

func (i ioFS) Stat(name string) (fs.FileInfo, error) {
	p, err := i.path("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := i.fsys.Stat(p)
	return fi, fix("stat", name, err)
}

func (i ioFS) ReadFile(name string) ([]byte, error) {
	p, err := i.path("readfile", name)
	if err != nil {
		return nil, err
	}
	f, err := i.fsys.Open(p)
	if err != nil {
		return nil, fix("readfile", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	return data, fix("readfile", name, err)
}

func (i ioFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := i.path("readdir", name)
	if err != nil {
		return nil, err
	}
	f, err := i.fsys.Open(p)
	if err != nil {
		return nil, fix("readdir", name, err)
	}
	defer f.Close()
	fis, err := f.Readdir(-1)
	if err != nil {
		return nil, fix("readdir", name, err)
	}
	out := make([]fs.DirEntry, len(fis))
	for j, fi := range fis {
		out[j] = fs.FileInfoToDirEntry(fi)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name() < out[b].Name() })
	return out, nil
}

type ioFile struct {
	afero.File
	name string
}

func (f *ioFile) Stat() (fs.FileInfo, error) {
	fi, err := f.File.Stat()
	return fi, fix("stat", f.name, err)
}

func (f *ioFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	if err == io.EOF {
		return n, err
	}
	return n, fix("read", f.name, err)
}

// ReadDir implements fs.ReadDirFile.
func (f *ioFile) ReadDir(n int) ([]fs.DirEntry, error) {
	fis, err := f.File.Readdir(n)
	if err != nil && err != io.EOF {
		if Errno(err) == syscall.ENOTDIR {
			return nil, &fs.PathError{Op: "readdir", Path: f.name, Err: syscall.ENOTDIR}
		}
		return nil, fix("readdir", f.name, err)
	}
	out := make([]fs.DirEntry, len(fis))
	for j, fi := range fis {
		out[j] = fs.FileInfoToDirEntry(fi)
	}
	return out, err
}

var _ fs.ReadDirFile = (*ioFile)(nil)
