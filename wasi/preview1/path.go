package preview1

import (
	"context"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"

	"github.com/wasmbox/wasmbox/vfs"
)

// atPath reads the path argument of a path_* call and resolves it against
// the directory descriptor fd, returning the path relative to the root
// ("." for the root) with a trailing slash kept (it means "must be a
// directory"). Absolute paths and paths that climb out of the directory
// with ".." are EPERM, as in wazero and the WASI capability model.
func (s *State) atPath(mem api.Memory, fd, ptr, n uint32, r uint64) (*entry, string, Errno) {
	e, errno := s.lookup(fd)
	if errno != 0 {
		return nil, "", errno
	}
	b, ok := read(mem, ptr, n)
	if !ok {
		return nil, "", ErrnoFault
	}
	if e.kind != kindDir {
		return nil, "", ErrnoNotdir
	}
	if errno := need(e, r); errno != 0 {
		return nil, "", errno
	}
	if len(b) > vfs.MaxPathLen {
		return nil, "", ErrnoNametoolong
	}
	name := string(b)
	if strings.IndexByte(name, 0) >= 0 {
		return nil, "", ErrnoInval
	}
	trailing := strings.HasSuffix(name, "/")
	name = path.Clean(name)
	if !fs.ValidPath(name) {
		return nil, "", ErrnoPerm
	}
	if e.name != "" {
		name = e.name + "/" + name
	}
	if trailing {
		name += "/"
	}
	return e, name, 0
}

func pathCreateDirectory(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	_, name, errno := s.atPath(mem, uint32(p[0]), uint32(p[1]), uint32(p[2]), rightPathCreateDirectory)
	if errno != 0 {
		return errno
	}
	return s.errno(s.fs.Mkdir(name, 0o700))
}

func pathFilestatGet(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	_, name, errno := s.atPath(mem, uint32(p[0]), uint32(p[2]), uint32(p[3]), rightPathFilestatGet)
	if errno != 0 {
		return errno
	}
	b, ok := read(mem, uint32(p[4]), filestatSize)
	if !ok {
		return ErrnoFault
	}
	if fd, ok := s.procFD(name, uint16(p[1])&lookupSymlinkFollow != 0); ok {
		// A descriptor of the caller by name (procfd.go).
		e, errno := s.lookup(fd)
		if errno != 0 || e.preopen != "" {
			return ErrnoNoent
		}
		return s.entryFilestat(e, b)
	}
	stat := s.fs.Lstat
	if uint16(p[1])&lookupSymlinkFollow != 0 {
		stat = s.fs.Stat
	}
	st, xe := stat(name)
	if xe != 0 {
		return s.errno(xe)
	}
	writeFilestat(b, &st, filetype(st.Mode))
	return 0
}

func pathFilestatSetTimes(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	_, name, errno := s.atPath(mem, uint32(p[0]), uint32(p[2]), uint32(p[3]), rightPathFilestatSetTimes)
	if errno != 0 {
		return errno
	}
	atim, mtim, errno := s.toTimes(int64(p[4]), int64(p[5]), uint16(p[6]))
	if errno != 0 {
		return errno
	}
	if uint16(p[1])&lookupSymlinkFollow != 0 {
		return s.errno(s.fs.Utimens(name, atim, mtim))
	}
	// Without SYMLINK_FOLLOW a final symlink itself gets the times.
	st, xe := s.fs.Lstat(name)
	if xe != 0 {
		return s.errno(xe)
	}
	if st.Mode&fs.ModeSymlink == 0 {
		return s.errno(s.fs.Utimens(name, atim, mtim))
	}
	var at, mt time.Time
	if atim != experimentalsys.UTIME_OMIT {
		at = time.Unix(0, atim)
		if at.IsZero() {
			at = time.Unix(0, 1)
		}
	}
	if mtim != experimentalsys.UTIME_OMIT {
		mt = time.Unix(0, mtim)
	}
	return ErrnoOf(vfs.Lchtimes(s.cfg.FS, vfsPath(name), at, mt))
}

// vfsPath turns a root-relative name into the absolute vfs path.
func vfsPath(name string) string {
	trailing := strings.HasSuffix(name, "/")
	c := path.Clean("/" + name)
	if trailing && c != "/" {
		c += "/"
	}
	return c
}

func pathLink(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	_, oldName, errno := s.atPath(mem, uint32(p[0]), uint32(p[2]), uint32(p[3]), rightPathLinkSource)
	if errno != 0 {
		return errno
	}
	_, newName, errno := s.atPath(mem, uint32(p[4]), uint32(p[5]), uint32(p[6]), rightPathLinkTarget)
	if errno != 0 {
		return errno
	}
	if uint16(p[1])&lookupSymlinkFollow != 0 {
		if oldName, errno = s.follow(oldName); errno != 0 {
			return errno
		}
	}
	return s.errno(s.fs.Link(oldName, newName))
}

// follow resolves the symlinks at the end of name (at most vfs.MaxSymlinks,
// then ELOOP), for path_link with LOOKUP_SYMLINK_FOLLOW. Targets resolve
// inside the vfs: an absolute one from the root.
func (s *State) follow(name string) (string, Errno) {
	for i := 0; i <= vfs.MaxSymlinks; i++ {
		st, xe := s.fs.Lstat(name)
		if xe != 0 {
			return "", s.errno(xe)
		}
		if st.Mode&fs.ModeSymlink == 0 {
			return name, 0
		}
		target, xe := s.fs.Readlink(name)
		if xe != 0 {
			return "", s.errno(xe)
		}
		name = linkTarget(name, target)
	}
	return "", ErrnoLoop
}

// linkTarget is the path (from the root, "." for the root) that the symlink
// name with the given target points to: an absolute target from the root,
// a relative one from the link's directory.
func linkTarget(name, target string) string {
	var p string
	if strings.HasPrefix(target, "/") {
		p = strings.TrimPrefix(path.Clean(target), "/")
	} else {
		p = strings.TrimPrefix(path.Clean("/"+path.Join(path.Dir(strings.TrimSuffix(name, "/")), target)), "/")
	}
	if p == "" {
		return "."
	}
	return p
}

func pathOpen(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	dirflags, oflags := uint16(p[1]), uint16(p[4])
	base, inh, fdflags := p[5], p[6], uint16(p[7])
	need := rightPathOpen
	if oflags&oflagCreat != 0 {
		need |= rightPathCreateFile
	}
	if oflags&oflagTrunc != 0 {
		need |= rightPathFilestatSetSize
	}
	dir, name, errno := s.atPath(mem, uint32(p[0]), uint32(p[2]), uint32(p[3]), need)
	if errno != 0 {
		return errno
	}
	if uint32(p[3]) == 0 {
		return ErrnoNoent
	}
	if oflags&^(oflagCreat|oflagDirectory|oflagExcl|oflagTrunc) != 0 {
		return ErrnoInval
	}
	if oflags&oflagDirectory != 0 && oflags&(oflagCreat|oflagTrunc) != 0 {
		return ErrnoInval
	}
	if s.free() < 0 {
		return ErrnoMfile
	}
	// The new descriptor gets what was asked, within what the directory
	// may hand down.
	base &= dir.inh
	inh &= dir.inh
	if fd, ok := s.procFD(name, dirflags&lookupSymlinkFollow != 0); ok {
		// A descriptor of the caller by name (procfd.go): a stream is
		// opened here; a file is opened again by its path below.
		reopen, errno := s.openProcFD(mem, fd, base, inh, oflags, uint32(p[8]))
		if errno != 0 || reopen == "" {
			return errno
		}
		name = reopen
	}

	var flag experimentalsys.Oflag
	if dirflags&lookupSymlinkFollow == 0 {
		flag |= experimentalsys.O_NOFOLLOW
	}
	def := experimentalsys.O_RDONLY
	if oflags&oflagDirectory != 0 {
		flag |= experimentalsys.O_DIRECTORY
	}
	if oflags&oflagExcl != 0 {
		flag |= experimentalsys.O_EXCL
	}
	if oflags&oflagTrunc != 0 {
		flag |= experimentalsys.O_TRUNC
		def = experimentalsys.O_RDWR
	}
	if oflags&oflagCreat != 0 {
		flag |= experimentalsys.O_CREAT
		def = experimentalsys.O_RDWR
	}
	if fdflags&fdflagAppend != 0 {
		flag |= experimentalsys.O_APPEND
		def = experimentalsys.O_RDWR
	}
	switch {
	case base&(rightFdRead|rightFdWrite) == rightFdRead|rightFdWrite:
		flag |= experimentalsys.O_RDWR
	case base&rightFdWrite != 0:
		flag |= experimentalsys.O_WRONLY
	case base&rightFdRead != 0:
		flag |= experimentalsys.O_RDONLY
	default:
		flag |= def
	}
	f, xe := s.fs.OpenFile(name, flag, 0o600)
	if xe == experimentalsys.EISDIR && flag&(experimentalsys.O_CREAT|experimentalsys.O_TRUNC|experimentalsys.O_APPEND|experimentalsys.O_DIRECTORY) == 0 {
		// A directory asked for with write rights (C's and Rust's
		// defaults ask for everything): open it read-only; the rights
		// below are cut to what a directory can do.
		f, xe = s.fs.OpenFile(name, flag&^(experimentalsys.O_RDWR|experimentalsys.O_WRONLY)|experimentalsys.O_RDONLY, 0o600)
	}
	if xe != 0 {
		return s.errno(xe)
	}
	st, xe := f.Stat()
	if xe != 0 {
		_ = f.Close()
		return s.errno(xe)
	}
	e := &entry{kind: kindFile, file: f, name: strings.TrimSuffix(name, "/"), ftype: filetype(st.Mode),
		fdflags: fdflags & (fdflagDsync | fdflagRsync | fdflagSync | fdflagNonblock)}
	if e.name == "." {
		e.name = ""
	}
	if st.Mode.IsDir() {
		e.kind = kindDir
		e.base, e.inh = base&dirRights, inh
	} else {
		e.base, e.inh = base&fileRights, inh&fileRights
	}
	fd := s.insert(e)
	if errno := putU32(mem, uint32(p[8]), fd); errno != 0 {
		s.files[fd] = nil
		_ = f.Close()
		return errno
	}
	return 0
}

// free reports whether a descriptor is free or can be added: -1 when the
// table is full.
func (s *State) free() int {
	for i, f := range s.files {
		if f == nil {
			return i
		}
	}
	if len(s.files) >= maxFiles {
		return -1
	}
	return len(s.files)
}

func pathReadlink(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	_, name, errno := s.atPath(mem, uint32(p[0]), uint32(p[1]), uint32(p[2]), rightPathReadlink)
	if errno != 0 {
		return errno
	}
	buf, ok := read(mem, uint32(p[3]), uint32(p[4]))
	if !ok {
		return ErrnoFault
	}
	target, xe := s.fs.Readlink(name)
	if xe != 0 {
		return s.errno(xe)
	}
	// Like readlink(2): a short buffer gets the first bytes.
	n := copy(buf, target)
	return putU32(mem, uint32(p[5]), uint32(n))
}

func pathRemoveDirectory(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	_, name, errno := s.atPath(mem, uint32(p[0]), uint32(p[1]), uint32(p[2]), rightPathRemoveDirectory)
	if errno != 0 {
		return errno
	}
	return s.errno(s.fs.Rmdir(name))
}

func pathRename(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	_, oldName, errno := s.atPath(mem, uint32(p[0]), uint32(p[1]), uint32(p[2]), rightPathRenameSource)
	if errno != 0 {
		return errno
	}
	_, newName, errno := s.atPath(mem, uint32(p[3]), uint32(p[4]), uint32(p[5]), rightPathRenameTarget)
	if errno != 0 {
		return errno
	}
	return s.errno(s.fs.Rename(oldName, newName))
}

func pathSymlink(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	target, ok := read(mem, uint32(p[0]), uint32(p[1]))
	if !ok {
		return ErrnoFault
	}
	_, name, errno := s.atPath(mem, uint32(p[2]), uint32(p[3]), uint32(p[4]), rightPathSymlink)
	if errno != 0 {
		return errno
	}
	if len(target) == 0 || uint32(p[4]) == 0 {
		return ErrnoNoent
	}
	return s.errno(s.fs.Symlink(string(target), name))
}

func pathUnlinkFile(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	_, name, errno := s.atPath(mem, uint32(p[0]), uint32(p[1]), uint32(p[2]), rightPathUnlinkFile)
	if errno != 0 {
		return errno
	}
	return s.errno(s.fs.Unlink(name))
}
