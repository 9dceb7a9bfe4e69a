package sandbox

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/wasmbox/wasmbox/vfs"
)

// Python.
//
// When the interpreter is built into the binary (wasm.Python, `make
// python`), python3, python and python3.11 are commands like the tools:
// the same policy, allowlist, limits, deadline and audit. Its standard
// library (precompiled, modules as .pyc) is loaded once per engine into a
// MemFS and mounted read-only, root-owned, at /usr/lib/python3.11 of every
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
