package fileutils

import (
	"bufio"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// The sandbox user, as WASI has no notion of file ownership.
const (
	sandboxUID = 1000
	sandboxGID = 1000
)

// statx is the metadata of a file beyond fs.FileInfo.
type statx struct {
	dev, ino, nlink, rdev uint64
	uid, gid              uint32
	blocks                int64 // 512-byte blocks
	atime, mtime, ctime   time.Time
}

// idNames resolves numeric user and group ids through /etc/passwd and
// /etc/group, loaded once per command run.
type idNames struct {
	users, groups map[uint32]string
	loaded        bool
}

func (n *idNames) load() {
	if n.loaded {
		return
	}
	n.loaded = true
	n.users = readIDFile("/etc/passwd")
	n.groups = readIDFile("/etc/group")
	// Without a passwd entry, the sandbox user still has its login name.
	if u := os.Getenv("USER"); u != "" && sandboxUID != 0 {
		if _, ok := n.users[sandboxUID]; !ok {
			n.users[sandboxUID] = u
		}
		if _, ok := n.groups[sandboxGID]; !ok {
			n.groups[sandboxGID] = u
		}
	}
}

func readIDFile(path string) map[uint32]string {
	m := map[uint32]string{}
	f, err := os.Open(path)
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 3 {
			continue
		}
		id, err := strconv.ParseUint(fields[2], 10, 32)
		if err != nil {
			continue
		}
		if _, dup := m[uint32(id)]; !dup {
			m[uint32(id)] = fields[0]
		}
	}
	return m
}

func (n *idNames) user(id uint32) string {
	n.load()
	if s, ok := n.users[id]; ok {
		return s
	}
	return strconv.FormatUint(uint64(id), 10)
}

func (n *idNames) group(id uint32) string {
	n.load()
	if s, ok := n.groups[id]; ok {
		return s
	}
	return strconv.FormatUint(uint64(id), 10)
}

// modeString renders a mode like ls -l: "drwxr-xr-x". Symbolic links are
// always shown as lrwxrwxrwx, as on Linux (wasip1 reports 0600 for them).
func modeString(m fs.FileMode) string {
	if m&fs.ModeSymlink != 0 {
		m |= 0o777
	}
	var b [10]byte
	switch {
	case m&fs.ModeDir != 0:
		b[0] = 'd'
	case m&fs.ModeSymlink != 0:
		b[0] = 'l'
	case m&fs.ModeNamedPipe != 0:
		b[0] = 'p'
	case m&fs.ModeSocket != 0:
		b[0] = 's'
	case m&fs.ModeCharDevice != 0:
		b[0] = 'c'
	case m&fs.ModeDevice != 0:
		b[0] = 'b'
	default:
		b[0] = '-'
	}
	const rwx = "rwxrwxrwx"
	for i := 0; i < 9; i++ {
		if m&(1<<uint(8-i)) != 0 {
			b[i+1] = rwx[i]
		} else {
			b[i+1] = '-'
		}
	}
	if m&fs.ModeSetuid != 0 {
		b[3] = sx(b[3], 's')
	}
	if m&fs.ModeSetgid != 0 {
		b[6] = sx(b[6], 's')
	}
	if m&fs.ModeSticky != 0 {
		b[9] = sx(b[9], 't')
	}
	return string(b[:])
}

func sx(c byte, set byte) byte {
	if c == '-' {
		return set - 'a' + 'A'
	}
	return set
}

// unixMode returns the POSIX permission bits (with setuid/setgid/sticky).
func unixMode(m fs.FileMode) uint32 {
	if m&fs.ModeSymlink != 0 {
		m |= 0o777
	}
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 04000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 02000
	}
	if m&fs.ModeSticky != 0 {
		u |= 01000
	}
	return u
}

// fileTypeName is stat's %F.
func fileTypeName(fi fs.FileInfo) string {
	m := fi.Mode()
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character special file"
	case m&fs.ModeDevice != 0:
		return "block special file"
	case fi.Size() == 0:
		return "regular empty file"
	}
	return "regular file"
}

// sameFile is os.SameFile for FileInfos from cmd.Stat/cmd.Lstat (which
// wrap the os ones, so os.SameFile cannot see through them): the same
// device and inode.
func sameFile(a, b fs.FileInfo) bool {
	if a == nil || b == nil {
		return false
	}
	if os.SameFile(a, b) {
		return true
	}
	sa, sb := sysStat(a), sysStat(b)
	return sa.ino != 0 && sa.dev == sb.dev && sa.ino == sb.ino
}

// canAccess reports whether the running user may access the file of fi
// (from cmd.Stat/cmd.Lstat) for want, a combination of 4 (read), 2 (write)
// and 1 (execute), by the POSIX rules: the owner's bits for the owner, the
// group's for a member of the group, the others' otherwise; root may read
// and write anything and execute what has any x bit (or is a directory).
func canAccess(fi fs.FileInfo, want uint32) bool {
	m := unixMode(fi.Mode())
	if fi.Mode()&fs.ModeSymlink != 0 {
		m = uint32(fi.Mode().Perm())
	}
	uid, gid := selfIDs()
	st := sysStat(fi)
	return permits(m, st.uid, st.gid, uid, gid, fi.IsDir(), want)
}

// permits is the access(2) decision for a file of mode bits m owned by
// fileUID:fileGID, asked by uid:gid for want (4 read, 2 write, 1 execute).
func permits(m, fileUID, fileGID, uid, gid uint32, isDir bool, want uint32) bool {
	if uid == 0 {
		return want&1 == 0 || isDir || m&0o111 != 0
	}
	var bits uint32
	switch {
	case fileUID == uid:
		bits = m >> 6 & 7
	case fileGID == gid:
		bits = m >> 3 & 7
	default:
		bits = m & 7
	}
	return bits&want == want
}

// known reports whether name is a user (or a group) in /etc/passwd (or
// /etc/group).
func (n *idNames) known(user bool, name string) bool {
	_, ok := n.lookup(user, name)
	return ok
}

// lookup returns the id of a user (or group) name.
func (n *idNames) lookup(user bool, name string) (uint32, bool) {
	n.load()
	m := n.groups
	if user {
		m = n.users
	}
	for id, s := range m {
		if s == name {
			return id, true
		}
	}
	return 0, false
}

// metaStat is cmd.Stat (the real mode bits and owner) with a cheap
// absolute name; errors name the file as given.
func metaStat(name string) (fs.FileInfo, error) {
	fi, err := cmd.Stat(absName(name))
	return fi, renameErr(err, name)
}

// metaLstat is cmd.Lstat like metaStat.
func metaLstat(name string) (fs.FileInfo, error) {
	fi, err := cmd.Lstat(absName(name))
	return fi, renameErr(err, name)
}

func renameErr(err error, name string) error {
	if pe, ok := err.(*fs.PathError); ok {
		pe.Path = name
	}
	return err
}
