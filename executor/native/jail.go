package native

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ResolveDir maps dir, a path relative to the jail root (slash- or
// OS-separated; "" or "." is the root itself), onto a host directory inside
// the jail and returns the real path of both.
//
// It refuses (with an error matching [ErrJail] and [ErrDenied]) an absolute
// dir, a dir that leaves the jail with "..", any symlink among dir's
// components, and a result that is not a directory. The jail root itself is
// trusted host configuration and may be reached through symlinks. The final
// containment check compares real paths with filepath.Rel, never string
// prefixes.
func ResolveDir(jail, dir string) (jailReal, dirReal string, err error) {
	if jail == "" {
		return "", "", jailDenied("empty jail root")
	}
	if strings.ContainsRune(dir, 0) || strings.ContainsRune(jail, 0) {
		return "", "", jailDenied("path contains a NUL byte")
	}
	absJail, err := filepath.Abs(jail)
	if err != nil {
		return "", "", jailDenied("jail root %q: %v", jail, err)
	}
	jailReal, err = filepath.EvalSymlinks(absJail)
	if err != nil {
		return "", "", jailDenied("jail root %q: %v", jail, err)
	}
	dir = filepath.FromSlash(dir)
	if filepath.IsAbs(dir) || strings.HasPrefix(dir, "/") {
		return "", "", jailDenied("absolute directory %q (want a path relative to the jail)", dir)
	}
	clean := filepath.Clean(dir)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", "", jailDenied("directory %q leaves the jail", dir)
	}
	cur := jailReal
	if clean != "." {
		for _, part := range strings.Split(clean, string(filepath.Separator)) {
			cur = filepath.Join(cur, part)
			fi, err := os.Lstat(cur)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return "", "", jailDenied("directory %q does not exist", dir)
				}
				return "", "", jailDenied("directory %q: %v", dir, err)
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				return "", "", jailDenied("directory %q has a symlinked component %q", dir, part)
			}
			if !fi.IsDir() {
				return "", "", jailDenied("%q is not a directory", dir)
			}
		}
	}
	dirReal, err = filepath.EvalSymlinks(cur)
	if err != nil {
		return "", "", jailDenied("directory %q: %v", dir, err)
	}
	if !within(jailReal, dirReal) {
		return "", "", jailDenied("directory %q resolves to %q outside the jail", dir, dirReal)
	}
	return jailReal, dirReal, nil
}

// within reports whether p (a real path) is root or inside it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil || filepath.IsAbs(rel) {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)))
}
