package preview1

import (
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/third_party/wazero/api"

	"github.com/wasmbox/wasmbox/vfs"
)

// The calling process's descriptors by name.
//
// As on Linux, /proc/self/fd/N names the caller's descriptor N, and the
// default layout links /dev/stdin, /dev/stdout, /dev/stderr and /dev/fd
// there (vfs.NewDefault). path_open of such a name (through those links or
// directly) opens what descriptor N refers to: for a stream (a pipe, the
// standard streams of the host) a new descriptor of the same stream; for a
// file or directory, the file opened again by its path, with the flags and
// rights asked for and their checks, as Linux reopens it (a new offset).
// A descriptor that is not open is ENOENT, as on Linux, and so is a
// preopened directory (WASI's, not an inherited descriptor). Nothing under
// /proc exists in the filesystem: only path_open and path_filestat_get
// know these names.

// procFD reports whether name (a path from the root, as atPath returns it)
// names a descriptor of the caller, and which. The last component is
// followed only with follow; /dev/fd in the middle is followed when it is
// the layout's link.
func (s *State) procFD(name string, follow bool) (uint32, bool) {
	name = strings.TrimSuffix(name, "/")
	for range vfs.MaxSymlinks + 1 {
		if rest, ok := strings.CutPrefix(name, "proc/self/fd/"); ok {
			n, err := strconv.ParseUint(rest, 10, 32)
			return uint32(n), err == nil
		}
		if rest, ok := strings.CutPrefix(name, "dev/fd/"); ok {
			if t, xe := s.fs.Readlink("dev/fd"); xe != 0 || path.Clean(t) != "/proc/self/fd" {
				return 0, false
			}
			name = "proc/self/fd/" + rest
			continue
		}
		if !follow {
			return 0, false
		}
		st, xe := s.fs.Lstat(name)
		if xe != 0 || st.Mode&fs.ModeSymlink == 0 {
			return 0, false
		}
		t, xe := s.fs.Readlink(name)
		if xe != 0 {
			return 0, false
		}
		name = linkTarget(name, t)
	}
	return 0, false
}

// openProcFD opens descriptor fd of the caller for path_open (see above).
// reopen is set, with the path to open instead, for a file or directory.
func (s *State) openProcFD(mem api.Memory, fd uint32, base, inh uint64, oflags uint16, resultPtr uint32) (reopen string, errno Errno) {
	e, errno := s.lookup(fd)
	if errno != 0 || e.preopen != "" {
		// A preopened directory is WASI's, not one of the descriptors a
		// Unix program inherits: descriptor 3 of a command is the root
		// preopen, never its shell's fd 3.
		return "", ErrnoNoent
	}
	switch e.kind {
	case kindFile, kindDir:
		if e.name == "" {
			return ".", 0
		}
		return e.name, 0
	}
	if oflags&(oflagDirectory) != 0 {
		return "", ErrnoNotdir
	}
	if oflags&(oflagCreat|oflagExcl) == oflagCreat|oflagExcl {
		return "", ErrnoExist
	}
	// A stream is opened in its own direction only.
	if e.kind == kindReader && base&rightFdWrite != 0 && base&rightFdRead == 0 ||
		e.kind == kindWriter && base&rightFdRead != 0 && base&rightFdWrite == 0 {
		return "", ErrnoAcces
	}
	if s.free() < 0 {
		return "", ErrnoMfile
	}
	c := &entry{kind: e.kind, r: e.r, w: e.w, quiet: e.quiet, ftype: e.ftype,
		base: e.base & (base | rightFdFdstatSetFlags), inh: e.inh & inh, fdflags: e.fdflags}
	if o := e.share(); o != nil {
		c.obj = o
	}
	nfd := s.insert(c)
	if errno := putU32(mem, resultPtr, nfd); errno != 0 {
		s.files[nfd] = nil
		_ = c.close()
		return "", errno
	}
	return "", 0
}
