package vfs

import (
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// MemFS is an in-memory filesystem with POSIX semantics: inodes with stable
// numbers and link counts, directories, regular files, symlinks, hard links
// and character devices; per-handle offsets; O_APPEND, O_EXCL, O_TRUNC,
// O_NOFOLLOW and O_DIRECTORY; rename that replaces atomically; files that
// stay readable after being unlinked while open; atime, mtime and ctime
// from a configurable clock; and quotas (see Quota).
//
// MemFS is safe for concurrent use. Namespace changes (create, remove,
// rename, link) take one filesystem-wide lock for a short time; file data
// is guarded by a lock per inode, so reads and writes of different files
// never wait for each other and no data copy happens under the global lock.
//
// Fork returns an independent copy in time proportional to the number of
// inodes, sharing file contents copy-on-write.
type MemFS struct {
	mu   sync.RWMutex // guards the namespace: children, parent, link counts
	root *inode
	cfg  config
	q    *quotaState
	ino  *atomic.Uint64
	dev  uint64
}

var _ FS = (*MemFS)(nil)

var devCounter atomic.Uint64

// newDev is the device number of a new MemFS (or fork) of this
// configuration: the one WithDevice gave, else a new one.
func (c config) newDev() uint64 {
	if c.dev != 0 {
		return c.dev
	}
	return devCounter.Add(1)
}

type kind uint8

const (
	kReg kind = iota
	kDir
	kSymlink
	kDev
)

type inode struct {
	ino  uint64
	kind kind

	// Guarded by the filesystem lock.
	children map[string]*inode
	parent   *inode
	target   string // symlink target, immutable
	dev      Device // device behaviour, immutable

	atime atomic.Int64 // unix nanoseconds

	mu       sync.RWMutex // guards the fields below
	nlink    uint64       // written under both the filesystem lock and mu
	mode     os.FileMode
	uid, gid uint32
	mtime    time.Time
	ctime    time.Time
	data     []byte
	shared   bool // data is shared with a fork: copy before writing
	opens    int
	released bool // quota given back; the inode is gone
}

type quotaState struct {
	limits Quota
	bytes  atomic.Int64
	files  atomic.Int64
}

// reserve adds d to counter c if the result stays within limit (0 = no
// limit). Negative d always succeeds.
func reserve(c *atomic.Int64, d, limit int64) bool {
	if d <= 0 {
		c.Add(d)
		return true
	}
	for {
		cur := c.Load()
		if limit > 0 && cur+d > limit {
			return false
		}
		if c.CompareAndSwap(cur, cur+d) {
			return true
		}
	}
}

// NewMemFS returns an empty filesystem holding only its root directory
// (mode 0755). See WithClock, WithQuota and WithOwner.
func NewMemFS(opts ...Option) *MemFS {
	cfg := newConfig(opts)
	m := &MemFS{cfg: cfg, q: &quotaState{limits: cfg.quota}, ino: new(atomic.Uint64), dev: cfg.newDev()}
	now := m.now()
	m.root = m.newInode(kDir, os.ModeDir|0o755, now)
	m.root.parent = m.root
	m.root.nlink = 2
	m.q.files.Store(1)
	return m
}

// Usage reports the bytes and inodes in use, as counted against the quota.
func (m *MemFS) Usage() (bytes, files int64) { return m.q.bytes.Load(), m.q.files.Load() }

// Quota returns the limits of the filesystem.
func (m *MemFS) Quota() Quota { return m.q.limits }

func (m *MemFS) now() time.Time { return m.cfg.clock() }

func (m *MemFS) maxFileSize() int64 {
	if l := m.q.limits.FileSize; l > 0 && l < hardMaxFileSize {
		return l
	}
	return hardMaxFileSize
}

func (m *MemFS) newInode(k kind, mode os.FileMode, now time.Time) *inode {
	n := &inode{ino: m.ino.Add(1), kind: k, mode: mode, uid: m.cfg.uid, gid: m.cfg.gid, mtime: now, ctime: now, nlink: 1}
	n.atime.Store(now.UnixNano())
	if k == kDir {
		n.children = make(map[string]*inode)
		n.nlink = 2
	}
	return n
}

// Name returns "MemFS".
func (m *MemFS) Name() string { return "MemFS" }

// lookup is the result of resolving a path.
type lookup struct {
	dir     *inode // directory holding the last component; nil for "/", "." and ".."
	name    string // last component
	node    *inode // nil when the last component does not exist
	mustDir bool   // the path requires a directory (trailing slash)
}

// resolve walks name from the root. Intermediate symlinks are always
// followed; the last one only when follow is set or the path ends in a
// slash. The caller holds m.mu (read or write).
// errSymlink is returned by resolve in strict mode when a symlink would
// have to be followed; it never leaves the package (the VFS falls back to
// resolving over the whole namespace).
const errSymlink = syscall.Errno(0x7fff)

// access is how a MemFS call resolves its path: plain for the MemFS's own
// API; for the VFS fast path strict, and with the permission checks of
// the user cr when cr is set (see Cred). The checks read the inodes'
// mode and owner under m.mu, which chmod and chown take for writing.
type access struct {
	strict bool
	cr     *Cred
}

var plain = access{}

// allowsNode is allows for an inode; the caller holds m.mu.
func (c *Cred) allowsNode(n *inode, want uint32) bool {
	return c == nil || c.allows(n.mode, n.uid, n.gid, want)
}

// mayDeleteNode is mayDelete for inodes; the caller holds m.mu.
func (c *Cred) mayDeleteNode(dir, n *inode) syscall.Errno {
	if c == nil || c.UID == 0 {
		return 0
	}
	if !c.allowsNode(dir, mayWrite|mayExec) {
		return syscall.EACCES
	}
	if c.sticky(dir.mode, dir.uid, n.uid) {
		return syscall.EPERM
	}
	return 0
}

func (m *MemFS) resolve(name string, follow bool, how access) (lookup, syscall.Errno) {
	strict, cr := how.strict, how.cr
	if len(name) > MaxPathLen {
		return lookup{}, syscall.ENAMETOOLONG
	}
	if strings.IndexByte(name, 0) >= 0 {
		return lookup{}, syscall.EINVAL
	}
	mustDir := wantsDir(name)
	comps := splitPath(name)
	cur := m.root
	hops := 0
	for i := 0; i < len(comps); i++ {
		c := comps[i]
		last := i == len(comps)-1
		if cr != nil && !cr.allowsNode(cur, mayExec) {
			return lookup{}, syscall.EACCES
		}
		if c == ".." {
			cur = cur.parent
			if last {
				return lookup{node: cur, name: "..", mustDir: mustDir}, 0
			}
			continue
		}
		if len(c) > MaxNameLen {
			return lookup{}, syscall.ENAMETOOLONG
		}
		child := cur.children[c]
		if child != nil && child.kind == kSymlink && (!last || follow || mustDir) {
			if strict {
				return lookup{}, errSymlink
			}
			hops++
			if hops > MaxSymlinks {
				return lookup{}, syscall.ELOOP
			}
			t := child.target
			if t == "" {
				return lookup{}, syscall.ENOENT
			}
			if t[0] == '/' {
				cur = m.root
			}
			if last && wantsDir(t) {
				mustDir = true
			}
			tc := splitPath(t)
			rest := comps[i+1:]
			nc := make([]string, 0, len(tc)+len(rest))
			nc = append(append(nc, tc...), rest...)
			comps = nc
			i = -1
			if len(comps) == 0 {
				return lookup{node: cur, name: ".", mustDir: mustDir}, 0
			}
			continue
		}
		if last {
			if child != nil && mustDir && child.kind != kDir {
				return lookup{}, syscall.ENOTDIR
			}
			return lookup{dir: cur, name: c, node: child, mustDir: mustDir}, 0
		}
		if child == nil {
			return lookup{}, syscall.ENOENT
		}
		if child.kind != kDir {
			return lookup{}, syscall.ENOTDIR
		}
		cur = child
	}
	return lookup{node: cur, name: "."}, 0
}

// touchDir records a change of dir's entries. The caller holds m.mu.
func touchDir(dir *inode, now time.Time) {
	dir.mu.Lock()
	dir.mtime, dir.ctime = now, now
	dir.mu.Unlock()
}

// link adds n as name in dir. The caller holds m.mu for writing.
func (m *MemFS) link(dir *inode, name string, n *inode, now time.Time) {
	dir.children[name] = n
	if n.kind == kDir {
		n.parent = dir
		dir.mu.Lock()
		dir.nlink++
		dir.mu.Unlock()
	}
	touchDir(dir, now)
}

// unlink removes name (naming n) from dir. The caller holds m.mu for
// writing.
func (m *MemFS) unlink(dir *inode, name string, n *inode, now time.Time) {
	delete(dir.children, name)
	if n.kind == kDir {
		dir.mu.Lock()
		dir.nlink--
		dir.mu.Unlock()
	}
	touchDir(dir, now)
	n.mu.Lock()
	if n.kind == kDir {
		n.nlink = 0
	} else if n.nlink > 0 {
		n.nlink--
	}
	n.ctime = now
	free := n.nlink == 0 && n.opens == 0 && !n.released
	if free {
		n.released = true
	}
	n.mu.Unlock()
	if free {
		m.release(n)
	}
}

// release gives the quota of a gone inode back. n.released was set by the
// caller under n.mu.
func (m *MemFS) release(n *inode) {
	n.mu.Lock()
	size := n.sizeLocked()
	if n.kind == kReg {
		n.data = nil
	}
	n.mu.Unlock()
	m.q.bytes.Add(-size)
	m.q.files.Add(-1)
}

// sizeLocked is the size charged to the quota. n.mu is held.
func (n *inode) sizeLocked() int64 {
	switch n.kind {
	case kReg:
		return int64(len(n.data))
	case kSymlink:
		return int64(len(n.target))
	}
	return 0
}

// create makes a new inode of kind k as name in dir, charging the quota.
// The caller holds m.mu for writing and checked that name is free.
func (m *MemFS) create(dir *inode, name string, k kind, mode os.FileMode, target string) (*inode, syscall.Errno) {
	if dir.nlink == 0 {
		return nil, syscall.ENOENT // directory was removed
	}
	if !reserve(&m.q.files, 1, m.q.limits.Files) {
		return nil, syscall.ENOSPC
	}
	if k == kSymlink && !reserve(&m.q.bytes, int64(len(target)), m.q.limits.Bytes) {
		m.q.files.Add(-1)
		return nil, syscall.ENOSPC
	}
	if k != kSymlink {
		mode &^= m.cfg.umask
	}
	now := m.now()
	n := m.newInode(k, mode, now)
	n.target = target
	m.link(dir, name, n, now)
	return n, 0
}

// Create creates or truncates name for reading and writing (mode 0666).
func (m *MemFS) Create(name string) (afero.File, error) {
	return m.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Open opens name for reading.
func (m *MemFS) Open(name string) (afero.File, error) {
	return m.OpenFile(name, os.O_RDONLY, 0)
}

const accMode = os.O_RDONLY | os.O_WRONLY | os.O_RDWR

// OpenFile opens name with POSIX open(2) semantics; see FS.
func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := m.openFile(name, name, flag, perm, plain)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (m *MemFS) openFile(name, display string, flag int, perm os.FileMode, how access) (*memFile, error) {
	const op = "open"
	nofollow := flag&syscall.O_NOFOLLOW != 0
	excl := flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL
	writable := flag&accMode != os.O_RDONLY
	var lk lookup
	var errno syscall.Errno
	if flag&os.O_CREATE != 0 && !excl {
		// Most creating opens (">>", ">") find the file already there:
		// try under the read lock first.
		m.mu.RLock()
		lk, errno = m.resolve(name, !nofollow, how)
		if errno == 0 && lk.node != nil {
			errno = m.checkOpen(lk.node, flag, nofollow, writable)
			if errno == 0 && how.cr != nil && !how.cr.allowsNode(lk.node, openWant(flag)) {
				errno = syscall.EACCES
			}
			var f *memFile
			if errno == 0 {
				f = m.newHandle(lk.node, display, flag)
			}
			m.mu.RUnlock()
			if errno != 0 {
				return nil, pathErr(op, name, errno)
			}
			return f.truncOnOpen(flag)
		}
		m.mu.RUnlock()
	}
	if flag&os.O_CREATE != 0 {
		m.mu.Lock()
		lk, errno = m.resolve(name, !nofollow && !excl, how)
		if errno == 0 && lk.node != nil && excl {
			errno = syscall.EEXIST
		}
		created := false
		if errno == 0 && lk.node == nil {
			switch {
			case lk.mustDir:
				errno = syscall.EISDIR
			case lk.dir == nil:
				errno = syscall.EEXIST
			case how.cr != nil && !how.cr.allowsNode(lk.dir, mayWrite|mayExec):
				errno = syscall.EACCES
			default:
				created = true
				lk.node, errno = m.create(lk.dir, lk.name, kReg, perm&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky), "")
				if errno == 0 {
					flag &^= os.O_TRUNC
				}
			}
		}
		if errno == 0 {
			errno = m.checkOpen(lk.node, flag, nofollow, writable)
		}
		if errno == 0 && !created && how.cr != nil && !how.cr.allowsNode(lk.node, openWant(flag)) {
			errno = syscall.EACCES
		}
		var f *memFile
		if errno == 0 {
			f = m.newHandle(lk.node, display, flag)
		}
		m.mu.Unlock()
		if errno != 0 {
			return nil, pathErr(op, name, errno)
		}
		return f.truncOnOpen(flag)
	}
	m.mu.RLock()
	lk, errno = m.resolve(name, !nofollow, how)
	if errno == 0 && lk.node == nil {
		errno = syscall.ENOENT
	}
	if errno == 0 {
		errno = m.checkOpen(lk.node, flag, nofollow, writable)
	}
	if errno == 0 && how.cr != nil && !how.cr.allowsNode(lk.node, openWant(flag)) {
		errno = syscall.EACCES
	}
	var f *memFile
	if errno == 0 {
		f = m.newHandle(lk.node, display, flag)
	}
	m.mu.RUnlock()
	if errno != 0 {
		return nil, pathErr(op, name, errno)
	}
	return f.truncOnOpen(flag)
}

func (m *MemFS) checkOpen(n *inode, flag int, nofollow, writable bool) syscall.Errno {
	switch {
	case n.kind == kSymlink:
		// Only reached with O_NOFOLLOW (or O_CREATE|O_EXCL, handled before).
		return syscall.ELOOP
	case flag&syscall.O_DIRECTORY != 0 && n.kind != kDir:
		return syscall.ENOTDIR
	case n.kind == kDir && writable:
		return syscall.EISDIR
	}
	return 0
}

func (m *MemFS) newHandle(n *inode, name string, flag int) *memFile {
	n.mu.Lock()
	n.opens++
	n.mu.Unlock()
	acc := flag & accMode
	return &memFile{
		fs:     m,
		n:      n,
		name:   name,
		read:   acc == os.O_RDONLY || acc == os.O_RDWR,
		write:  acc == os.O_WRONLY || acc == os.O_RDWR,
		append: flag&os.O_APPEND != 0,
	}
}

// Mkdir creates directory name. Its parent must exist (ENOENT otherwise).
func (m *MemFS) Mkdir(name string, perm os.FileMode) error { return m.mkdir(name, perm, plain) }

func (m *MemFS) mkdir(name string, perm os.FileMode, how access) error {
	const op = "mkdir"
	if lastIsDot(name) {
		return pathErr(op, name, syscall.EEXIST)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lk, errno := m.resolve(name, false, how)
	if errno == 0 && lk.node != nil {
		errno = syscall.EEXIST
	}
	if errno == 0 && !how.cr.allowsNode(lk.dir, mayWrite|mayExec) {
		errno = syscall.EACCES
	}
	if errno == 0 {
		_, errno = m.create(lk.dir, lk.name, kDir, os.ModeDir|perm&(os.ModePerm|os.ModeSetgid|os.ModeSticky), "")
	}
	if errno != 0 {
		return pathErr(op, name, errno)
	}
	return nil
}

// MkdirAll creates name and every missing parent.
func (m *MemFS) MkdirAll(name string, perm os.FileMode) error { return mkdirAll(m, name, perm) }

// Remove removes a file, symlink, device or empty directory. A non-empty
// directory is ENOTEMPTY.
func (m *MemFS) Remove(name string) error { return m.remove(name, plain) }

func (m *MemFS) remove(name string, how access) error {
	const op = "remove"
	if lastIsDot(name) {
		if name == "/" || len(splitPath(name)) == 0 {
			return pathErr(op, name, syscall.EBUSY)
		}
		return pathErr(op, name, syscall.EINVAL)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lk, errno := m.resolve(name, false, how)
	if errno == 0 && lk.node == nil {
		errno = syscall.ENOENT
	}
	if errno == 0 && lk.dir == nil {
		errno = syscall.EBUSY
	}
	if errno == 0 {
		errno = how.cr.mayDeleteNode(lk.dir, lk.node)
	}
	if errno == 0 && lk.node.kind == kDir && len(lk.node.children) > 0 {
		errno = syscall.ENOTEMPTY
	}
	if errno != 0 {
		return pathErr(op, name, errno)
	}
	m.unlink(lk.dir, lk.name, lk.node, m.now())
	return nil
}

// RemoveAll removes name and everything below it. A missing name is not an
// error. Symlinks are removed, never followed. The root cannot be removed
// (EBUSY).
func (m *MemFS) RemoveAll(name string) error { return m.removeAll(name, plain) }

func (m *MemFS) removeAll(name string, how access) error {
	const op = "removeall"
	if lastIsDot(name) {
		if len(splitPath(name)) == 0 {
			return pathErr(op, name, syscall.EBUSY)
		}
		return pathErr(op, name, syscall.EINVAL)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lk, errno := m.resolve(name, false, how)
	if errno == syscall.ENOENT || errno == 0 && lk.node == nil {
		return nil
	}
	if errno != 0 {
		return pathErr(op, name, errno)
	}
	if lk.dir == nil {
		return pathErr(op, name, syscall.EBUSY)
	}
	now := m.now()
	var rm func(dir *inode, name string, n *inode)
	rm = func(dir *inode, name string, n *inode) {
		if n.kind == kDir {
			for cn, c := range n.children {
				rm(n, cn, c)
			}
		}
		m.unlink(dir, name, n, now)
	}
	rm(lk.dir, lk.name, lk.node)
	return nil
}

// Rename renames oldname to newname with rename(2) semantics: an existing
// newname is replaced atomically (a file by a file, a directory by a
// directory only if empty: ENOTEMPTY), a directory cannot move into its own
// subtree (EINVAL), a file cannot replace a directory (EISDIR) nor a
// directory a file (ENOTDIR).
func (m *MemFS) Rename(oldname, newname string) error { return m.rename(oldname, newname, plain) }

func (m *MemFS) rename(oldname, newname string, how access) error {
	const op = "rename"
	if lastIsDot(oldname) || lastIsDot(newname) {
		return linkErr(op, oldname, newname, syscall.EBUSY)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	errno := m.renameLocked(oldname, newname, how)
	if errno != 0 {
		return linkErr(op, oldname, newname, errno)
	}
	return nil
}

func (m *MemFS) renameLocked(oldname, newname string, how access) syscall.Errno {
	src, errno := m.resolve(oldname, false, how)
	if errno != 0 {
		return errno
	}
	dst, errno := m.resolve(newname, false, how)
	if errno != 0 {
		return errno
	}
	if src.node == nil {
		return syscall.ENOENT
	}
	if src.dir == nil {
		return syscall.EBUSY
	}
	if dst.dir == nil {
		return syscall.EBUSY
	}
	if dst.node == nil && dst.dir.nlink == 0 {
		return syscall.ENOENT
	}
	if src.node.kind != kDir && (src.mustDir || dst.mustDir) {
		return syscall.ENOTDIR
	}
	if dst.node == src.node {
		return 0 // same file: nothing to do
	}
	if src.node.kind == kDir {
		for d := dst.dir; ; d = d.parent {
			if d == src.node {
				return syscall.EINVAL
			}
			if d == m.root {
				break
			}
		}
	}
	if cr := how.cr; cr != nil {
		if errno := cr.mayDeleteNode(src.dir, src.node); errno != 0 {
			return errno
		}
		if dst.node != nil {
			if errno := cr.mayDeleteNode(dst.dir, dst.node); errno != 0 {
				return errno
			}
		} else if !cr.allowsNode(dst.dir, mayWrite|mayExec) {
			return syscall.EACCES
		}
		if src.node.kind == kDir && src.dir != dst.dir && !cr.allowsNode(src.node, mayWrite) {
			return syscall.EACCES
		}
	}
	now := m.now()
	if dst.node != nil {
		switch {
		case src.node.kind == kDir && dst.node.kind != kDir:
			return syscall.ENOTDIR
		case src.node.kind != kDir && dst.node.kind == kDir:
			return syscall.EISDIR
		case dst.node.kind == kDir && len(dst.node.children) > 0:
			return syscall.ENOTEMPTY
		}
		m.unlink(dst.dir, dst.name, dst.node, now)
	}
	delete(src.dir.children, src.name)
	if src.node.kind == kDir {
		src.dir.mu.Lock()
		src.dir.nlink--
		src.dir.mu.Unlock()
	}
	touchDir(src.dir, now)
	m.link(dst.dir, dst.name, src.node, now)
	src.node.mu.Lock()
	src.node.ctime = now
	src.node.mu.Unlock()
	return 0
}

// Stat returns the FileInfo of name, following symlinks.
func (m *MemFS) Stat(name string) (os.FileInfo, error) { return m.stat("stat", name, true, plain) }

// LstatIfPossible returns the FileInfo of name without following a final
// symlink. The boolean is always true.
func (m *MemFS) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	fi, err := m.stat("lstat", name, false, plain)
	return fi, true, err
}

func (m *MemFS) stat(op, name string, follow bool, how access) (os.FileInfo, error) {
	m.mu.RLock()
	lk, errno := m.resolve(name, follow, how)
	if errno == 0 && lk.node == nil {
		errno = syscall.ENOENT
	}
	m.mu.RUnlock()
	if errno != 0 {
		return nil, pathErr(op, name, errno)
	}
	return m.info(lk.node, statName(name)), nil
}

// info returns a snapshot of n's metadata.
func (m *MemFS) info(n *inode, name string) os.FileInfo {
	n.mu.RLock()
	fi := &fileInfo{
		name:  name,
		mode:  n.mode,
		mtime: n.mtime,
		sys: &Stat{
			Dev:   m.dev,
			Ino:   n.ino,
			Nlink: n.nlink,
			Uid:   n.uid,
			Gid:   n.gid,
			Atime: time.Unix(0, n.atime.Load()),
			Mtime: n.mtime,
			Ctime: n.ctime,
		},
	}
	switch n.kind {
	case kReg:
		fi.size = int64(len(n.data))
	case kSymlink:
		fi.size = int64(len(n.target))
	case kDir:
		fi.size = 4096
	}
	n.mu.RUnlock()
	return fi
}

// SymlinkIfPossible creates newname as a symlink to oldname. The target is
// stored as given and resolved when used.
func (m *MemFS) SymlinkIfPossible(oldname, newname string) error {
	return m.symlink(oldname, newname, plain)
}

func (m *MemFS) symlink(oldname, newname string, how access) error {
	const op = "symlink"
	if oldname == "" {
		return linkErr(op, oldname, newname, syscall.ENOENT)
	}
	if len(oldname) > MaxPathLen {
		return linkErr(op, oldname, newname, syscall.ENAMETOOLONG)
	}
	if strings.IndexByte(oldname, 0) >= 0 {
		return linkErr(op, oldname, newname, syscall.EINVAL)
	}
	if lastIsDot(newname) {
		return linkErr(op, oldname, newname, syscall.EEXIST)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lk, errno := m.resolve(newname, false, how)
	if errno == 0 && lk.node != nil {
		errno = syscall.EEXIST
	}
	if errno == 0 && lk.mustDir {
		errno = syscall.ENOENT
	}
	if errno == 0 && !how.cr.allowsNode(lk.dir, mayWrite|mayExec) {
		errno = syscall.EACCES
	}
	if errno == 0 {
		_, errno = m.create(lk.dir, lk.name, kSymlink, os.ModeSymlink|0o777, oldname)
	}
	if errno != 0 {
		return linkErr(op, oldname, newname, errno)
	}
	return nil
}

// ReadlinkIfPossible returns the target of symlink name (EINVAL if name is
// not a symlink).
func (m *MemFS) ReadlinkIfPossible(name string) (string, error) { return m.readlink(name, plain) }

func (m *MemFS) readlink(name string, how access) (string, error) {
	const op = "readlink"
	m.mu.RLock()
	lk, errno := m.resolve(name, false, how)
	if errno == 0 && lk.node == nil {
		errno = syscall.ENOENT
	}
	if errno == 0 && lk.node.kind != kSymlink {
		errno = syscall.EINVAL
	}
	m.mu.RUnlock()
	if errno != 0 {
		return "", pathErr(op, name, errno)
	}
	return lk.node.target, nil
}

// Link creates newname as a hard link to oldname. A symlink oldname is
// linked itself, not followed; a directory is EPERM.
func (m *MemFS) Link(oldname, newname string) error { return m.hardlink(oldname, newname, plain) }

func (m *MemFS) hardlink(oldname, newname string, how access) error {
	const op = "link"
	if lastIsDot(newname) {
		return linkErr(op, oldname, newname, syscall.EEXIST)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	src, errno := m.resolve(oldname, false, how)
	var dst lookup
	if errno == 0 {
		dst, errno = m.resolve(newname, false, how)
	}
	if errno == 0 && src.node == nil {
		errno = syscall.ENOENT
	}
	if errno == 0 && dst.node != nil {
		errno = syscall.EEXIST
	}
	// As link(2): the new name is checked (its directory, a trailing
	// slash) before the old one's kind.
	if errno == 0 && (dst.dir == nil || dst.mustDir) {
		errno = syscall.ENOENT
	}
	if errno == 0 && dst.dir.nlink == 0 {
		errno = syscall.ENOENT
	}
	if cr := how.cr; errno == 0 && cr != nil {
		if errno = cr.mayLink(src.node.mode, src.node.uid, src.node.gid); errno == 0 && !cr.allowsNode(dst.dir, mayWrite|mayExec) {
			errno = syscall.EACCES
		}
	}
	if errno == 0 && src.node.kind == kDir {
		errno = syscall.EPERM
	}
	if errno != 0 {
		return linkErr(op, oldname, newname, errno)
	}
	now := m.now()
	n := src.node
	n.mu.Lock()
	n.nlink++
	n.ctime = now
	n.mu.Unlock()
	m.link(dst.dir, dst.name, n, now)
	return nil
}

// node resolves name (following symlinks) for a metadata change.
func (m *MemFS) node(op, name string, follow bool, how access) (*inode, error) {
	m.mu.RLock()
	lk, errno := m.resolve(name, follow, how)
	if errno == 0 && lk.node == nil {
		errno = syscall.ENOENT
	}
	m.mu.RUnlock()
	if errno != 0 {
		return nil, pathErr(op, name, errno)
	}
	return lk.node, nil
}

// Chmod sets the permission bits (and setuid, setgid, sticky) of name.
func (m *MemFS) Chmod(name string, mode os.FileMode) error {
	n, err := m.node("chmod", name, true, plain)
	if err != nil {
		return err
	}
	m.chmod(n, mode, nil)
	return nil
}

const chmodBits = os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky

// chmod changes the mode of n for cr (nil: unchecked). It holds m.mu
// for writing, which path lookups with permission checks read under.
func (m *MemFS) chmod(n *inode, mode os.FileMode, cr *Cred) syscall.Errno {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !cr.owns(n.uid) {
		return syscall.EPERM
	}
	mode = cr.chmodMode(mode, n.kind == kDir, n.gid)
	n.mu.Lock()
	n.mode = n.mode&^chmodBits | mode&chmodBits
	n.ctime = now
	n.mu.Unlock()
	return 0
}

// Chown sets the owner of name; -1 leaves a value unchanged.
func (m *MemFS) Chown(name string, uid, gid int) error {
	n, err := m.node("chown", name, true, plain)
	if err != nil {
		return err
	}
	m.chown(n, uid, gid, nil)
	return nil
}

// chown changes the owner of n for cr (nil: unchecked), under m.mu as
// chmod.
func (m *MemFS) chown(n *inode, uid, gid int, cr *Cred) syscall.Errno {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if errno := cr.mayChown(n.uid, n.gid, uid, gid); errno != 0 {
		return errno
	}
	n.mu.Lock()
	if uid >= 0 {
		n.uid = uint32(uid)
	}
	if gid >= 0 {
		n.gid = uint32(gid)
	}
	n.ctime = now
	n.mu.Unlock()
	return 0
}

// Chtimes sets the access and modification times of name; a zero time
// leaves that time unchanged (as os.Chtimes does).
func (m *MemFS) Chtimes(name string, atime, mtime time.Time) error {
	n, err := m.node("chtimes", name, true, plain)
	if err != nil {
		return err
	}
	m.chtimes(n, atime, mtime, nil)
	return nil
}

// Lchtimes is Chtimes without following a final symlink: it sets the
// times of the symlink itself.
func (m *MemFS) Lchtimes(name string, atime, mtime time.Time) error {
	n, err := m.node("lchtimes", name, false, plain)
	if err != nil {
		return err
	}
	m.chtimes(n, atime, mtime, nil)
	return nil
}

// chtimes sets the times of n for cr (nil: unchecked).
func (m *MemFS) chtimes(n *inode, atime, mtime time.Time, cr *Cred) syscall.Errno {
	now := m.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if !cr.owns(n.uid) {
		return syscall.EPERM
	}
	if !atime.IsZero() {
		n.atime.Store(atime.UnixNano())
	}
	if !mtime.IsZero() {
		n.mtime = mtime
	}
	n.ctime = now
	return 0
}

// Mknod creates a character device node name with behaviour dev.
func (m *MemFS) Mknod(name string, perm os.FileMode, dev Device) error {
	return m.mknod(name, perm, dev, plain)
}

func (m *MemFS) mknod(name string, perm os.FileMode, dev Device, how access) error {
	const op = "mknod"
	if dev == nil {
		return pathErr(op, name, syscall.EINVAL)
	}
	if lastIsDot(name) {
		return pathErr(op, name, syscall.EEXIST)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lk, errno := m.resolve(name, false, how)
	if errno == 0 && lk.node != nil {
		errno = syscall.EEXIST
	}
	var n *inode
	if errno == 0 {
		n, errno = m.create(lk.dir, lk.name, kDev, os.ModeDevice|os.ModeCharDevice|perm&os.ModePerm, "")
	}
	if errno != 0 {
		return pathErr(op, name, errno)
	}
	n.dev = dev
	return nil
}

// Fork returns an independent copy of the filesystem. Directories and
// metadata are copied; file contents are shared until either side writes
// (copy-on-write), so forking costs time proportional to the number of
// inodes, not to their size. Hard links stay hard links in the copy. Files
// that are unlinked but still open are not part of the copy. The copy has
// the same quota limits and usage, and a new device number (the same one
// with WithDevice).
func (m *MemFS) Fork() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	nm := &MemFS{cfg: m.cfg, q: &quotaState{limits: m.q.limits}, ino: new(atomic.Uint64), dev: m.cfg.newDev()}
	nm.ino.Store(m.ino.Load())
	seen := make(map[*inode]*inode)
	// One allocation for all inodes of the copy.
	slab := make([]inode, 0, m.q.files.Load())
	var bytes, files int64
	var cp func(n, parent *inode) *inode
	cp = func(n, parent *inode) *inode {
		if n.kind != kDir && n.nlink > 1 {
			if c, ok := seen[n]; ok {
				return c
			}
		}
		var c *inode
		if len(slab) < cap(slab) {
			slab = slab[:len(slab)+1]
			c = &slab[len(slab)-1]
		} else {
			c = new(inode)
		}
		c.ino, c.kind, c.target, c.dev = n.ino, n.kind, n.target, n.dev
		c.atime.Store(n.atime.Load())
		n.mu.Lock()
		c.nlink, c.mode, c.uid, c.gid, c.mtime, c.ctime = n.nlink, n.mode, n.uid, n.gid, n.mtime, n.ctime
		if n.kind == kReg && len(n.data) > 0 {
			n.shared = true
			c.data, c.shared = n.data, true
		}
		bytes += n.sizeLocked()
		n.mu.Unlock()
		files++
		if n.kind != kDir && c.nlink > 1 {
			seen[n] = c // hard links: copy the inode once
		}
		if n.kind == kDir {
			c.parent = parent
			c.children = make(map[string]*inode, len(n.children))
			for name, ch := range n.children {
				c.children[name] = cp(ch, c)
			}
		}
		return c
	}
	root := cp(m.root, nil)
	root.parent = root
	nm.root = root
	nm.q.bytes.Store(bytes)
	nm.q.files.Store(files)
	return nm
}

// mkdirAll is MkdirAll over any FS.
func mkdirAll(fsys afero.Fs, name string, perm os.FileMode) error {
	if fi, err := fsys.Stat(name); err == nil {
		if fi.IsDir() {
			return nil
		}
		return pathErr("mkdir", name, syscall.ENOTDIR)
	}
	comps := splitPath(name)
	p := ""
	for _, c := range comps {
		p += "/" + c
		if c == ".." {
			continue
		}
		err := fsys.Mkdir(p, perm)
		if err == nil {
			continue
		}
		if Errno(err) != syscall.EEXIST {
			return err
		}
		fi, serr := fsys.Stat(p)
		if serr != nil {
			return serr
		}
		if !fi.IsDir() {
			return pathErr("mkdir", p, syscall.ENOTDIR)
		}
	}
	return nil
}

// sortedEntries returns the entries of dir sorted by name. The caller
// holds the filesystem lock.
func sortedEntries(dir *inode) []dirent {
	out := make([]dirent, 0, len(dir.children))
	for name, n := range dir.children {
		out = append(out, dirent{name: name, n: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

type dirent struct {
	name string
	n    *inode
}
