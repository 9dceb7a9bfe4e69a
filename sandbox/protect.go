package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// ProtectedPath is a host path that the host reads or executes and that
// no mount may cover: the compilation cache (its code runs on the host),
// the key of its MACs, the resident engine's directory, a token file, an
// audit log, the wasmbox executable, an MCP configuration. What says what
// it is and how to move it, for the error: "the compilation cache (move it
// with --cachedir)".
type ProtectedPath struct {
	Path string
	What string
}

// WithProtectedPaths refuses, in New, every mount whose host path covers
// one of paths (see CheckMount). The compilation cache of the sandbox's
// engine (runtime.Runtime.CacheDir) is always protected; this adds the
// paths only the embedder knows (its token file, audit log, executable).
// Calls accumulate.
func WithProtectedPaths(paths ...ProtectedPath) Option {
	return func(c *config) { c.protected = append(c.protected, paths...) }
}

// ErrMountCoversProtected is wrapped by the error of a mount that covers a
// protected path.
var ErrMountCoversProtected = errors.New("covers a path the host reads or executes")

// CheckMount returns an error if a mount of the host path host would give
// a guest access to one of protected: host is the protected path, an
// ancestor of it, or inside it (a directory such as the cache, whose
// entries are the host's). Both sides are made absolute and resolved
// through symlinks (as far as they exist), so a link to an ancestor is
// caught, and a protected path that does not exist yet (an audit log to be
// created) is checked where it will be. The error is one line, naming the
// mount, the protected path, and what it is.
func CheckMount(host string, protected []ProtectedPath) error {
	if len(protected) == 0 {
		return nil
	}
	m, err := resolvePath(host)
	if err != nil {
		return nil // the mount itself reports a path it cannot use
	}
	for _, p := range protected {
		if p.Path == "" {
			continue
		}
		q, err := resolvePath(p.Path)
		if err != nil {
			continue
		}
		if within(q, m) || within(m, q) {
			what := p.What
			if what == "" {
				what = "a path the host reads or executes"
			}
			return fmt.Errorf("mount %s %w: %s is %s; mount a narrower directory", host, ErrMountCoversProtected, p.Path, what)
		}
	}
	return nil
}

// within reports whether p is dir or inside it (both clean and absolute).
func within(p, dir string) bool {
	if p == dir || dir == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

// resolvePath is p absolute, with the symlinks of its longest existing
// prefix resolved and the rest (not existing yet) appended.
func resolvePath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// protectedPaths is what New checks the mounts against: the engine's
// compilation cache and the embedder's paths.
func (c *config) protectedPaths(eng *Engine) []ProtectedPath {
	var ps []ProtectedPath
	if dir := eng.rt.CacheDir(); dir != "" {
		ps = append(ps, ProtectedPath{Path: dir, What: CacheWhat})
	}
	return append(ps, c.protected...)
}

// CacheWhat describes the compilation cache in a refused mount's error.
const CacheWhat = "the compilation cache, whose code the host runs (move it with --cachedir)"
