package wasi

import (
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/afero"
	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/vfs"
)

// NewFS adapts fsys to wazero's experimental/sys.FS, so that it can be
// mounted into a guest with sysfs.FSConfig.WithSysFSMount (Configure does
// that for you, at guest "/").
//
// wazero hands the adapter paths relative to the mount ("." for the mount
// itself, "a/b", "a/b/" with the trailing slash kept) and resolves nothing
// itself; the adapter turns them into absolute vfs paths and lets the vfs
// resolve symlinks. Every vfs error reaches the guest as the matching WASI
// errno (see toErrno for the few POSIX errnos wazero cannot express).
//
// The returned files enforce their open mode on their own: a read on a
// write-only file or a write on a read-only file fails with EBADF whatever the
// underlying afero.File allows.
//
// fsys may also be any afero.Fs with symlinks and hard links whose
// FileInfo.Sys() is a *vfs.Stat, a *syscall.Stat_t or a *sys.Stat_t; inode
// numbers are zero when it is none of these.
func NewFS(fsys vfs.FS) experimentalsys.FS {
	return &adapterFS{fsys: fsys}
}

// newFS is NewFS with the options of Configure.
func newFS(fsys vfs.FS, opts Options) *adapterFS {
	return &adapterFS{fsys: fsys, absSymlinks: opts.AbsoluteSymlinks}
}

// adapterFS implements experimentalsys.FS over a vfs.FS.
type adapterFS struct {
	experimentalsys.UnimplementedFS
	fsys vfs.FS
	// absSymlinks allows symlinks with an absolute target.
	absSymlinks bool
}

// String names the filesystem in wazero's host logging.
func (a *adapterFS) String() string { return "wasmbox:" + a.fsys.Name() }

// vpath turns a path relative to the mount into an absolute vfs path,
// keeping a trailing slash (it means "must be a directory").
func vpath(p string) string {
	if p == "" || p == "." || p == "/" {
		return "/"
	}
	trailing := strings.HasSuffix(p, "/")
	c := path.Clean("/" + p)
	if trailing && c != "/" {
		c += "/"
	}
	return c
}

// toOSFlag translates wazero open flags to the os/syscall flags the vfs
// understands.
func toOSFlag(flag experimentalsys.Oflag) int {
	var f int
	switch flag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY) {
	case experimentalsys.O_RDWR:
		f = os.O_RDWR
	case experimentalsys.O_WRONLY:
		f = os.O_WRONLY
	default:
		f = os.O_RDONLY
	}
	if flag&experimentalsys.O_APPEND != 0 {
		f |= os.O_APPEND
	}
	if flag&experimentalsys.O_CREAT != 0 {
		f |= os.O_CREATE
	}
	if flag&experimentalsys.O_EXCL != 0 {
		f |= os.O_EXCL
	}
	if flag&experimentalsys.O_TRUNC != 0 {
		f |= os.O_TRUNC
	}
	if flag&experimentalsys.O_DIRECTORY != 0 {
		f |= syscall.O_DIRECTORY
	}
	if flag&experimentalsys.O_NOFOLLOW != 0 {
		f |= syscall.O_NOFOLLOW
	}
	// O_SYNC, O_DSYNC, O_RSYNC: the vfs is in memory (or syncs on Sync);
	// every write is already as durable as it gets. O_NONBLOCK: regular
	// files and directories never block.
	return f
}

func accessMode(flag experimentalsys.Oflag) experimentalsys.Oflag {
	return flag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY)
}

// WASI has no file modes: wazero creates every file with 0600 and every
// directory with 0700. The adapter gives them the modes a POSIX process
// with umask 022 would get instead, so that files written by a command
// look like files written by the shell.
const (
	wasiFilePerm    fs.FileMode = 0o600
	wasiDirPerm     fs.FileMode = 0o700
	defaultFilePerm fs.FileMode = 0o644
	defaultDirPerm  fs.FileMode = 0o755
)

// OpenFile implements experimentalsys.FS.OpenFile.
func (a *adapterFS) OpenFile(name string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	p := vpath(name)
	writable := accessMode(flag) != experimentalsys.O_RDONLY
	if flag&experimentalsys.O_DIRECTORY != 0 && writable {
		return nil, experimentalsys.EISDIR
	}
	if perm == wasiFilePerm {
		perm = defaultFilePerm
	}
	af, err := a.fsys.OpenFile(p, toOSFlag(flag), perm)
	if err != nil {
		return nil, toErrno(err)
	}
	f := &file{fsys: a.fsys, path: p, perm: perm, f: af, flag: flag, append: flag&experimentalsys.O_APPEND != 0}
	info, err := af.Stat()
	if err != nil {
		_ = af.Close()
		return nil, toErrno(err)
	}
	f.cache(info)
	if f.isDir && writable {
		// The vfs should have refused; make sure a directory is never
		// writable through the adapter.
		_ = af.Close()
		return nil, experimentalsys.EISDIR
	}
	if flag&experimentalsys.O_DIRECTORY != 0 && !f.isDir {
		_ = af.Close()
		return nil, experimentalsys.ENOTDIR
	}
	return f, 0
}

// Lstat implements experimentalsys.FS.Lstat.
func (a *adapterFS) Lstat(name string) (sys.Stat_t, experimentalsys.Errno) {
	info, err := lstat(a.fsys, vpath(name))
	if err != nil {
		return sys.Stat_t{}, toErrno(err)
	}
	return toStat(info), 0
}

// Stat implements experimentalsys.FS.Stat.
func (a *adapterFS) Stat(name string) (sys.Stat_t, experimentalsys.Errno) {
	info, err := a.fsys.Stat(vpath(name))
	if err != nil {
		return sys.Stat_t{}, toErrno(err)
	}
	return toStat(info), 0
}

// Mkdir implements experimentalsys.FS.Mkdir.
func (a *adapterFS) Mkdir(name string, perm fs.FileMode) experimentalsys.Errno {
	if perm == wasiDirPerm {
		perm = defaultDirPerm
	}
	errno := toErrno(a.fsys.Mkdir(vpath(name), perm))
	if errno == experimentalsys.ENOTDIR {
		// mkdir("file/x"): the parent is not a directory. WASI (like
		// wazero's DirFS) reports that as ENOENT.
		if _, err := a.fsys.Stat(path.Dir(strings.TrimSuffix(vpath(name), "/"))); err == nil {
			errno = experimentalsys.ENOENT
		}
	}
	return errno
}

// Chmod implements experimentalsys.FS.Chmod.
func (a *adapterFS) Chmod(name string, perm fs.FileMode) experimentalsys.Errno {
	return toErrno(a.fsys.Chmod(vpath(name), perm))
}

// Rename implements experimentalsys.FS.Rename.
func (a *adapterFS) Rename(from, to string) experimentalsys.Errno {
	return toErrno(a.fsys.Rename(vpath(from), vpath(to)))
}

// Rmdir implements experimentalsys.FS.Rmdir: it removes name only if it is
// an empty directory (a symlink to a directory is ENOTDIR).
func (a *adapterFS) Rmdir(name string) experimentalsys.Errno {
	p := vpath(name)
	if p == "/" {
		return experimentalsys.EINVAL // rmdir("."), as on Linux
	}
	info, err := lstat(a.fsys, strings.TrimSuffix(p, "/"))
	if err != nil {
		return toErrno(err)
	}
	if !info.IsDir() {
		return experimentalsys.ENOTDIR
	}
	return toErrno(a.fsys.Remove(p))
}

// Unlink implements experimentalsys.FS.Unlink: it removes a non-directory
// (a symlink itself, never its target). A directory is EISDIR.
func (a *adapterFS) Unlink(name string) experimentalsys.Errno {
	p := vpath(name)
	if strings.HasSuffix(p, "/") {
		// unlink("x/"): POSIX resolves x (following a symlink) and wants a
		// directory, which unlink never removes.
		info, err := a.fsys.Stat(p)
		if err != nil {
			return toErrno(err)
		}
		if info.IsDir() {
			return experimentalsys.EISDIR
		}
		return experimentalsys.ENOTDIR
	}
	info, err := lstat(a.fsys, p)
	if err != nil {
		return toErrno(err)
	}
	if info.IsDir() {
		return experimentalsys.EISDIR
	}
	return toErrno(a.fsys.Remove(p))
}

// Link implements experimentalsys.FS.Link.
func (a *adapterFS) Link(oldName, newName string) experimentalsys.Errno {
	return toErrno(a.fsys.Link(vpath(oldName), vpath(newName)))
}

// Symlink implements experimentalsys.FS.Symlink. The target is stored as
// given and resolved by the vfs relative to the link's directory.
//
// An absolute target is EPERM, as WASI's capability model (and
// wasi-testsuite) want, unless Options.AbsoluteSymlinks is set; then it is
// resolved from the vfs root, which is the guest's "/", so it still never
// leaves the sandbox.
func (a *adapterFS) Symlink(target, linkName string) experimentalsys.Errno {
	if target == "" {
		return experimentalsys.ENOENT
	}
	if strings.HasPrefix(target, "/") && !a.absSymlinks {
		return experimentalsys.EPERM
	}
	return toErrno(a.fsys.SymlinkIfPossible(target, vpath(linkName)))
}

// Readlink implements experimentalsys.FS.Readlink.
func (a *adapterFS) Readlink(name string) (string, experimentalsys.Errno) {
	dst, err := a.fsys.ReadlinkIfPossible(vpath(name))
	if err != nil {
		return "", toErrno(err)
	}
	return dst, 0
}

// Utimens implements experimentalsys.FS.Utimens (following symlinks).
func (a *adapterFS) Utimens(name string, atim, mtim int64) experimentalsys.Errno {
	return utimens(a.fsys, vpath(name), atim, mtim)
}

func utimens(fsys vfs.FS, p string, atim, mtim int64) experimentalsys.Errno {
	if atim == experimentalsys.UTIME_OMIT && mtim == experimentalsys.UTIME_OMIT {
		// Still report a missing file.
		_, err := fsys.Stat(p)
		return toErrno(err)
	}
	var at, mt time.Time
	if atim == experimentalsys.UTIME_OMIT || mtim == experimentalsys.UTIME_OMIT {
		info, err := fsys.Stat(p)
		if err != nil {
			return toErrno(err)
		}
		st := toStat(info)
		if atim == experimentalsys.UTIME_OMIT {
			atim = st.Atim
		}
		if mtim == experimentalsys.UTIME_OMIT {
			mtim = st.Mtim
		}
	}
	at, mt = time.Unix(0, atim), time.Unix(0, mtim)
	return toErrno(fsys.Chtimes(p, at, mt))
}

// toStat converts what the vfs reports into wazero's Stat_t.
func toStat(info fs.FileInfo) sys.Stat_t {
	var st sys.Stat_t
	switch s := info.Sys().(type) {
	case *vfs.Stat:
		st = sys.Stat_t{
			Dev:   s.Dev,
			Ino:   s.Ino,
			Nlink: s.Nlink,
			Atim:  s.Atime.UnixNano(),
			Mtim:  s.Mtime.UnixNano(),
			Ctim:  s.Ctime.UnixNano(),
		}
		if s.Atime.IsZero() {
			st.Atim = info.ModTime().UnixNano()
		}
		if s.Mtime.IsZero() {
			st.Mtim = info.ModTime().UnixNano()
		}
		if s.Ctime.IsZero() {
			st.Ctim = st.Mtim
		}
	case vfs.Stat:
		return toStat(statInfo{info, &s})
	default:
		st = sys.NewStat_t(info)
	}
	st.Mode = info.Mode()
	st.Size = info.Size()
	if st.Nlink == 0 {
		st.Nlink = 1
	}
	return st
}

// statInfo lets toStat treat a vfs.Stat value like a pointer.
type statInfo struct {
	fs.FileInfo
	st *vfs.Stat
}

func (s statInfo) Sys() any { return s.st }

// file implements experimentalsys.File over an afero.File of the vfs.
//
// wazero calls a file from the goroutine of the module that owns it (the
// descriptor table is not shared), so file needs no lock of its own.
type file struct {
	experimentalsys.UnimplementedFile

	fsys vfs.FS
	path string // absolute vfs path it was opened by (for reopen and Utimens)
	perm fs.FileMode
	f    afero.File
	flag experimentalsys.Oflag

	// append is the O_APPEND state the guest sees (SetAppend toggles it).
	append bool

	dev   uint64
	ino   sys.Inode
	isDir bool

	// rewind is set by Seek(0, SeekStart) on a directory: the next Readdir
	// starts from the first entry again.
	rewind bool
	closed bool
}

var _ experimentalsys.File = (*file)(nil)

func (f *file) cache(info fs.FileInfo) {
	st := toStat(info)
	f.dev, f.ino, f.isDir = st.Dev, st.Ino, info.IsDir()
}

// Dev implements experimentalsys.File.Dev.
func (f *file) Dev() (uint64, experimentalsys.Errno) {
	if f.closed {
		return 0, experimentalsys.EBADF
	}
	return f.dev, 0
}

// Ino implements experimentalsys.File.Ino.
func (f *file) Ino() (sys.Inode, experimentalsys.Errno) {
	if f.closed {
		return 0, experimentalsys.EBADF
	}
	return f.ino, 0
}

// IsDir implements experimentalsys.File.IsDir.
func (f *file) IsDir() (bool, experimentalsys.Errno) {
	if f.closed {
		return false, experimentalsys.EBADF
	}
	return f.isDir, 0
}

// IsAppend implements experimentalsys.File.IsAppend.
func (f *file) IsAppend() bool { return f.append }

// SetAppend implements experimentalsys.File.SetAppend. The vfs fixes
// O_APPEND at open, so toggling it reopens the same file (checked by inode)
// with the new flag and the current offset, as wazero's own os files do.
func (f *file) SetAppend(enable bool) experimentalsys.Errno {
	if f.closed {
		return experimentalsys.EBADF
	}
	if f.isDir {
		return experimentalsys.EISDIR
	}
	if enable == f.append {
		return 0
	}
	flag := f.flag &^ (experimentalsys.O_CREAT | experimentalsys.O_TRUNC | experimentalsys.O_EXCL | experimentalsys.O_APPEND)
	if enable {
		flag |= experimentalsys.O_APPEND
	}
	offset, err := f.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return toErrno(err)
	}
	nf, err := f.fsys.OpenFile(f.path, toOSFlag(flag), f.perm)
	if err != nil {
		return toErrno(err)
	}
	if errno := f.sameFile(nf); errno != 0 {
		_ = nf.Close()
		return errno
	}
	if _, err := nf.Seek(offset, io.SeekStart); err != nil {
		_ = nf.Close()
		return toErrno(err)
	}
	_ = f.f.Close()
	f.f, f.flag, f.append = nf, flag, enable
	return 0
}

// sameFile reports ENOENT unless other is the file f has open (the path may
// have been renamed or replaced since).
func (f *file) sameFile(other afero.File) experimentalsys.Errno {
	info, err := other.Stat()
	if err != nil {
		return toErrno(err)
	}
	if f.ino == 0 {
		if !sameFallback(f.f, other) {
			return experimentalsys.ENOENT
		}
		return 0
	}
	if st := toStat(info); st.Ino != f.ino || st.Dev != f.dev {
		return experimentalsys.ENOENT
	}
	return 0
}

// sameFallback is used when the vfs reports no inode numbers.
func sameFallback(a, b afero.File) bool {
	ia, err1 := a.Stat()
	ib, err2 := b.Stat()
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

// Stat implements experimentalsys.File.Stat.
func (f *file) Stat() (sys.Stat_t, experimentalsys.Errno) {
	if f.closed {
		return sys.Stat_t{}, experimentalsys.EBADF
	}
	info, err := f.f.Stat()
	if err != nil {
		return sys.Stat_t{}, toErrno(err)
	}
	return toStat(info), 0
}

func (f *file) readable() experimentalsys.Errno {
	switch {
	case f.closed:
		return experimentalsys.EBADF
	case f.isDir:
		return experimentalsys.EISDIR
	case accessMode(f.flag) == experimentalsys.O_WRONLY:
		return experimentalsys.EBADF
	}
	return 0
}

func (f *file) writable() experimentalsys.Errno {
	switch {
	case f.closed:
		return experimentalsys.EBADF
	case f.isDir:
		return experimentalsys.EISDIR
	case accessMode(f.flag) == experimentalsys.O_RDONLY:
		return experimentalsys.EBADF
	}
	return 0
}

// Read implements experimentalsys.File.Read.
func (f *file) Read(buf []byte) (int, experimentalsys.Errno) {
	if errno := f.readable(); errno != 0 {
		return 0, errno
	}
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := f.f.Read(buf)
	return n, toErrno(err)
}

// Pread implements experimentalsys.File.Pread.
func (f *file) Pread(buf []byte, off int64) (int, experimentalsys.Errno) {
	if errno := f.readable(); errno != 0 {
		return 0, errno
	}
	if off < 0 {
		return 0, experimentalsys.EINVAL
	}
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := f.f.ReadAt(buf, off)
	return n, toErrno(err)
}

// Seek implements experimentalsys.File.Seek. On a directory only
// Seek(0, io.SeekStart) is allowed: it rewinds Readdir.
//
// go vet's stdmethods check flags this signature (io.Seeker returns error);
// wazero's interface requires an Errno, as in wazero's own files. Vet this
// package with -stdmethods=false.
func (f *file) Seek(offset int64, whence int) (int64, experimentalsys.Errno) {
	if f.closed {
		return 0, experimentalsys.EBADF
	}
	if whence < io.SeekStart || whence > io.SeekEnd {
		return 0, experimentalsys.EINVAL
	}
	if f.isDir {
		if offset == 0 && whence == io.SeekStart {
			f.rewind = true
			return 0, 0
		}
		return 0, experimentalsys.EISDIR
	}
	if whence == io.SeekStart && offset < 0 {
		return 0, experimentalsys.EINVAL
	}
	if whence != io.SeekStart {
		// The resulting offset must not be negative; afero files differ in
		// how they report that, so check here.
		var base int64
		if whence == io.SeekCurrent {
			cur, err := f.f.Seek(0, io.SeekCurrent)
			if err != nil {
				return 0, toErrno(err)
			}
			base = cur
		} else {
			info, err := f.f.Stat()
			if err != nil {
				return 0, toErrno(err)
			}
			base = info.Size()
		}
		if base+offset < 0 {
			return 0, experimentalsys.EINVAL
		}
	}
	n, err := f.f.Seek(offset, whence)
	return n, toErrno(err)
}

// Readdir implements experimentalsys.File.Readdir. wazero adds "." and ".."
// itself (internal/sys.DirentCache), so they are not returned here.
func (f *file) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	if f.closed {
		return nil, experimentalsys.EBADF
	}
	if !f.isDir {
		return nil, experimentalsys.ENOTDIR
	}
	if f.rewind {
		f.rewind = false
		if _, err := f.f.Seek(0, io.SeekStart); err != nil {
			// The vfs cannot rewind this handle: open the directory again.
			nf, err := f.fsys.OpenFile(f.path, os.O_RDONLY, 0)
			if err != nil {
				return nil, toErrno(err)
			}
			if errno := f.sameFile(nf); errno != 0 {
				_ = nf.Close()
				return nil, errno
			}
			_ = f.f.Close()
			f.f = nf
		}
	}
	infos, err := f.f.Readdir(n)
	if errno := toErrno(err); errno != 0 {
		return nil, errno
	}
	dirents := make([]experimentalsys.Dirent, 0, len(infos))
	for _, info := range infos {
		st := toStat(info)
		dirents = append(dirents, experimentalsys.Dirent{Name: info.Name(), Ino: st.Ino, Type: info.Mode().Type()})
	}
	return dirents, 0
}

// Write implements experimentalsys.File.Write.
func (f *file) Write(buf []byte) (int, experimentalsys.Errno) {
	if errno := f.writable(); errno != 0 {
		return 0, errno
	}
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := f.f.Write(buf)
	return n, toErrno(err)
}

// Pwrite implements experimentalsys.File.Pwrite. Like POSIX (and unlike
// Linux) it writes at off even when the file is in append mode, and it never
// moves the file offset.
func (f *file) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	if errno := f.writable(); errno != 0 {
		return 0, errno
	}
	if off < 0 {
		return 0, experimentalsys.EINVAL
	}
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := f.f.WriteAt(buf, off)
	if err != nil && f.append && n == 0 {
		// Some afero files (os.File among them, and so host mounts) refuse
		// WriteAt on a file opened with O_APPEND: write through a second,
		// non-append handle. A real failure (ENOSPC, ...) fails there too.
		return f.pwriteAside(buf, off)
	}
	return n, toErrno(err)
}

func (f *file) pwriteAside(buf []byte, off int64) (int, experimentalsys.Errno) {
	nf, err := f.fsys.OpenFile(f.path, os.O_WRONLY, 0)
	if err != nil {
		return 0, toErrno(err)
	}
	defer nf.Close()
	if errno := f.sameFile(nf); errno != 0 {
		return 0, errno
	}
	n, err := nf.WriteAt(buf, off)
	return n, toErrno(err)
}

// Truncate implements experimentalsys.File.Truncate.
func (f *file) Truncate(size int64) experimentalsys.Errno {
	if errno := f.writable(); errno != 0 {
		if errno == experimentalsys.EBADF && !f.closed {
			return experimentalsys.EINVAL // ftruncate on a read-only descriptor
		}
		return errno
	}
	if size < 0 {
		return experimentalsys.EINVAL
	}
	return toErrno(f.f.Truncate(size))
}

// Sync implements experimentalsys.File.Sync.
func (f *file) Sync() experimentalsys.Errno {
	if f.closed {
		return experimentalsys.EBADF
	}
	return toErrno(f.f.Sync())
}

// Datasync implements experimentalsys.File.Datasync.
func (f *file) Datasync() experimentalsys.Errno { return f.Sync() }

// Utimens implements experimentalsys.File.Utimens. The vfs sets times by
// path only, so this goes through the path the file was opened by, after
// checking it still names the same file.
func (f *file) Utimens(atim, mtim int64) experimentalsys.Errno {
	if f.closed {
		return experimentalsys.EBADF
	}
	info, err := f.fsys.Stat(f.path)
	if err != nil {
		return toErrno(err)
	}
	if st := toStat(info); st.Ino != f.ino || st.Dev != f.dev {
		return experimentalsys.ENOENT
	}
	return utimens(f.fsys, f.path, atim, mtim)
}

// Close implements experimentalsys.File.Close. It is idempotent.
func (f *file) Close() experimentalsys.Errno {
	if f.closed {
		return 0
	}
	f.closed = true
	return toErrno(f.f.Close())
}

// lstat is LstatIfPossible without the "was it really an lstat" flag: a
// vfs.FS always lstats.
func lstat(fsys vfs.FS, p string) (fs.FileInfo, error) {
	info, _, err := fsys.LstatIfPossible(p)
	return info, err
}
