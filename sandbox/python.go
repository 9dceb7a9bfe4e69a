package sandbox

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/afero"
	"github.com/wasmbox/wasmbox/vfs"
)

// Python.
//
// When the interpreter is built into the binary (wasm.Python, `make
// python`), python3, python and python3.11 are commands like the tools:
// the same policy, allowlist, limits, deadline and audit. Its standard
// library (precompiled, modules as .pyc) is loaded once per engine, on
// first use, into a MemFS and mounted read-only, root-owned, at /usr/lib/python3.11 of every
// sandbox; the rest of the filesystem, site-packages included
// (/usr/local/lib/python3.11/dist-packages, Debian's layout, which the
// interpreter's site module follows), is the sandbox's own and writable.
// Threads and sockets are out of scope: WASI has neither.

// pythonSitePackages is the writable site-packages directory.
const pythonSitePackages = "/usr/local/lib/python3.11/dist-packages"

// loadPythonStdlib returns the tree of the standard library zip as a
// read-only filesystem: directories 0755, files 0644, owned by root.
func loadPythonStdlib(data []byte) (vfs.FS, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("python stdlib: %w", err)
	}
	m := vfs.NewMemFS(vfs.WithOwner(0, 0), vfs.WithQuota(vfs.Quota{}))
	buf := make([]byte, 0, 1<<20)
	for _, f := range zr.File {
		name := "/" + strings.TrimSuffix(f.Name, "/")
		if strings.Contains(f.Name, "..") || !path.IsAbs(name) {
			return nil, fmt.Errorf("python stdlib: bad entry %q", f.Name)
		}
		if strings.HasSuffix(f.Name, "/") {
			if err := m.MkdirAll(name, 0o755); err != nil {
				return nil, fmt.Errorf("python stdlib: %w", err)
			}
			continue
		}
		if err := m.MkdirAll(path.Dir(name), 0o755); err != nil {
			return nil, fmt.Errorf("python stdlib: %w", err)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("python stdlib: %s: %w", f.Name, err)
		}
		buf = buf[:0]
		b := bytes.NewBuffer(buf)
		_, err = io.Copy(b, rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("python stdlib: %s: %w", f.Name, err)
		}
		w, err := m.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("python stdlib: %w", err)
		}
		_, err = w.Write(b.Bytes())
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("python stdlib: %w", err)
		}
		buf = b.Bytes()
	}
	return vfs.ReadOnlyView(m), nil
}

// lazyFS is a filesystem loaded on first use: the standard library is
// decompressed only by a process that runs Python (loading it takes tens
// of milliseconds, which every engine would otherwise pay).
type lazyFS struct {
	get func() (vfs.FS, error)
}

func newLazyFS(load func() (vfs.FS, error)) *lazyFS {
	return &lazyFS{get: sync.OnceValues(load)}
}

func (l *lazyFS) fs(op, name string) (vfs.FS, error) {
	f, err := l.get()
	if err != nil {
		return nil, &os.PathError{Op: op, Path: name, Err: fmt.Errorf("%w (%v)", syscall.EIO, err)}
	}
	return f, nil
}

func (l *lazyFS) Create(name string) (afero.File, error) {
	f, err := l.fs("open", name)
	if err != nil {
		return nil, err
	}
	return f.Create(name)
}

func (l *lazyFS) Mkdir(name string, perm os.FileMode) error {
	f, err := l.fs("mkdir", name)
	if err != nil {
		return err
	}
	return f.Mkdir(name, perm)
}

func (l *lazyFS) MkdirAll(name string, perm os.FileMode) error {
	f, err := l.fs("mkdir", name)
	if err != nil {
		return err
	}
	return f.MkdirAll(name, perm)
}

func (l *lazyFS) Open(name string) (afero.File, error) {
	f, err := l.fs("open", name)
	if err != nil {
		return nil, err
	}
	return f.Open(name)
}

func (l *lazyFS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := l.fs("open", name)
	if err != nil {
		return nil, err
	}
	return f.OpenFile(name, flag, perm)
}

func (l *lazyFS) Remove(name string) error {
	f, err := l.fs("remove", name)
	if err != nil {
		return err
	}
	return f.Remove(name)
}

func (l *lazyFS) RemoveAll(name string) error {
	f, err := l.fs("removeall", name)
	if err != nil {
		return err
	}
	return f.RemoveAll(name)
}

func (l *lazyFS) Rename(oldname, newname string) error {
	f, err := l.fs("rename", oldname)
	if err != nil {
		return err
	}
	return f.Rename(oldname, newname)
}

func (l *lazyFS) Stat(name string) (os.FileInfo, error) {
	f, err := l.fs("stat", name)
	if err != nil {
		return nil, err
	}
	return f.Stat(name)
}

func (l *lazyFS) Name() string { return "PythonStdlib" }

func (l *lazyFS) Chmod(name string, mode os.FileMode) error {
	f, err := l.fs("chmod", name)
	if err != nil {
		return err
	}
	return f.Chmod(name, mode)
}

func (l *lazyFS) Chown(name string, uid, gid int) error {
	f, err := l.fs("chown", name)
	if err != nil {
		return err
	}
	return f.Chown(name, uid, gid)
}

func (l *lazyFS) Chtimes(name string, atime, mtime time.Time) error {
	f, err := l.fs("chtimes", name)
	if err != nil {
		return err
	}
	return f.Chtimes(name, atime, mtime)
}

func (l *lazyFS) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	f, err := l.fs("lstat", name)
	if err != nil {
		return nil, false, err
	}
	return f.LstatIfPossible(name)
}

func (l *lazyFS) SymlinkIfPossible(oldname, newname string) error {
	f, err := l.fs("symlink", newname)
	if err != nil {
		return err
	}
	return f.SymlinkIfPossible(oldname, newname)
}

func (l *lazyFS) ReadlinkIfPossible(name string) (string, error) {
	f, err := l.fs("readlink", name)
	if err != nil {
		return "", err
	}
	return f.ReadlinkIfPossible(name)
}

func (l *lazyFS) Link(oldname, newname string) error {
	f, err := l.fs("link", newname)
	if err != nil {
		return err
	}
	return f.Link(oldname, newname)
}
