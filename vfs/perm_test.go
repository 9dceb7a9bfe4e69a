package vfs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/vfs"
)

// The permission table: one operation per case, done by uid 1000 (group
// 1000, no supplementary groups) in a fresh copy of permTree, with the
// errno Linux gives. TestPermKernel checks the table against the kernel of
// the machine (as root, with setpriv); TestPermTable checks the user view
// of a VFS against it, by the plain path (the fast path) and through a
// symlink to the root (the general resolution).

type permNode struct {
	path     string
	mode     os.FileMode // with os.ModeDir, os.ModeSymlink, os.ModeSticky, os.ModeSetuid
	uid, gid int
	target   string // symlink target (relative)
}

var permTree = []permNode{
	{path: "/pub", mode: os.ModeDir | 0o755},
	{path: "/pub/file", mode: 0o644},
	{path: "/pub/sub", mode: os.ModeDir | 0o755},
	{path: "/pub/suid", mode: os.ModeSetuid | 0o777},
	{path: "/priv", mode: os.ModeDir | 0o700},
	{path: "/priv/file", mode: 0o644},
	{path: "/noread", mode: os.ModeDir | 0o711},
	{path: "/noread/file", mode: 0o644},
	{path: "/noexec", mode: os.ModeDir | 0o744},
	{path: "/noexec/file", mode: 0o644},
	{path: "/home", mode: os.ModeDir | 0o755},
	{path: "/home/u", mode: os.ModeDir | 0o755, uid: 1000, gid: 1000},
	{path: "/home/u/mine", mode: 0o644, uid: 1000, gid: 1000},
	{path: "/home/u/ro", mode: 0o444, uid: 1000, gid: 1000},
	{path: "/home/u/wo", mode: 0o200, uid: 1000, gid: 1000},
	{path: "/home/u/none", mode: 0o000, uid: 1000, gid: 1000},
	{path: "/home/u/grp", mode: 0o640, uid: 0, gid: 1000},
	{path: "/home/u/grponly", mode: 0o064, uid: 1000, gid: 1000}, // owner bits win: no read for the owner
	{path: "/home/u/rodir", mode: os.ModeDir | 0o555, uid: 1000, gid: 1000},
	{path: "/home/u/rodir/f", mode: 0o644, uid: 1000, gid: 1000},
	{path: "/home/u/sub", mode: os.ModeDir | 0o755, uid: 1000, gid: 1000},
	{path: "/home/u/l-pub", mode: os.ModeSymlink, uid: 1000, gid: 1000, target: "../../pub/file"},
	{path: "/home/u/l-priv", mode: os.ModeSymlink, uid: 1000, gid: 1000, target: "../../priv/file"},
	{path: "/home/u/l-noexec", mode: os.ModeSymlink, uid: 1000, gid: 1000, target: "../../noexec/file"},
	{path: "/tmp", mode: os.ModeDir | os.ModeSticky | 0o777},
	{path: "/tmp/rootf", mode: 0o666},
	{path: "/tmp/otherf", mode: 0o644, uid: 1001, gid: 1001},
	{path: "/tmp/mine", mode: 0o644, uid: 1000, gid: 1000},
	{path: "/tmp/minedir", mode: os.ModeDir | 0o755, uid: 1000, gid: 1000},
	{path: "/tmp/rootdir", mode: os.ModeDir | 0o777},
	{path: "/tmp/rootdir/rf", mode: 0o644},
	{path: "/ownsticky", mode: os.ModeDir | os.ModeSticky | 0o777, uid: 1000, gid: 1000},
	{path: "/ownsticky/rf", mode: 0o644},
	{path: "/via", mode: os.ModeSymlink, target: "."},
}

type permCase struct {
	Op   string // stat lstat open mkdir remove rename link symlink chmod chown chtimes readdir readlink
	A, B string
	Flag int
	UID  int
	GID  int
	Want syscall.Errno
}

const (
	rd = os.O_RDONLY
	wr = os.O_WRONLY
	rw = os.O_RDWR
)

var permCases = []permCase{
	// Search permission on every directory of the path.
	{Op: "stat", A: "/priv", Want: 0},
	{Op: "stat", A: "/priv/file", Want: syscall.EACCES},
	{Op: "stat", A: "/priv/nothing", Want: syscall.EACCES},
	{Op: "stat", A: "/noexec/file", Want: syscall.EACCES},
	{Op: "stat", A: "/noread/file", Want: 0},
	{Op: "stat", A: "/noexec/../pub/file", Want: syscall.EACCES},
	{Op: "lstat", A: "/home/u/l-priv", Want: 0},
	{Op: "readlink", A: "/home/u/l-priv", Want: 0},
	{Op: "stat", A: "/home/u/l-priv", Want: syscall.EACCES},
	{Op: "stat", A: "/home/u/l-noexec", Want: syscall.EACCES},
	{Op: "stat", A: "/home/u/l-pub", Want: 0},
	{Op: "readlink", A: "/priv/l", Want: syscall.EACCES},
	// Open: read, write, truncate.
	{Op: "open", A: "/pub/file", Flag: rd, Want: 0},
	{Op: "open", A: "/pub/file", Flag: wr, Want: syscall.EACCES},
	{Op: "open", A: "/pub/file", Flag: rw, Want: syscall.EACCES},
	{Op: "open", A: "/pub/file", Flag: rd | os.O_TRUNC, Want: syscall.EACCES},
	{Op: "open", A: "/pub/file", Flag: wr | os.O_APPEND, Want: syscall.EACCES},
	{Op: "open", A: "/home/u/l-pub", Flag: rd, Want: 0},
	{Op: "open", A: "/home/u/l-pub", Flag: wr, Want: syscall.EACCES},
	{Op: "open", A: "/home/u/none", Flag: rd, Want: syscall.EACCES},
	{Op: "open", A: "/home/u/none", Flag: wr, Want: syscall.EACCES},
	{Op: "open", A: "/home/u/wo", Flag: wr, Want: 0},
	{Op: "open", A: "/home/u/wo", Flag: rd, Want: syscall.EACCES},
	{Op: "open", A: "/home/u/ro", Flag: rd, Want: 0},
	{Op: "open", A: "/home/u/ro", Flag: wr | os.O_CREATE, Want: syscall.EACCES},
	{Op: "open", A: "/home/u/grp", Flag: rd, Want: 0},
	{Op: "open", A: "/home/u/grp", Flag: wr, Want: syscall.EACCES},
	{Op: "open", A: "/home/u/grponly", Flag: rd, Want: syscall.EACCES},
	{Op: "open", A: "/home/u/mine", Flag: rw | os.O_TRUNC, Want: 0},
	{Op: "open", A: "/home/u/rodir/f", Flag: wr | os.O_CREATE | os.O_TRUNC, Want: 0},
	{Op: "open", A: "/tmp/rootf", Flag: rw, Want: 0},
	{Op: "open", A: "/pub/file", Flag: wr | os.O_CREATE | os.O_EXCL, Want: syscall.EEXIST},
	{Op: "open", A: "/priv", Flag: rd, Want: syscall.EACCES},
	{Op: "open", A: "/pub/sub", Flag: wr, Want: syscall.EISDIR},
	{Op: "readdir", A: "/noread", Want: syscall.EACCES},
	{Op: "readdir", A: "/noexec", Want: 0},
	{Op: "readdir", A: "/pub", Want: 0},
	// Create: write and search on the directory.
	{Op: "open", A: "/pub/new", Flag: wr | os.O_CREATE, Want: syscall.EACCES},
	{Op: "open", A: "/home/u/new", Flag: wr | os.O_CREATE, Want: 0},
	{Op: "open", A: "/home/u/new", Flag: rd | os.O_CREATE, Want: 0},
	{Op: "open", A: "/home/u/rodir/new", Flag: wr | os.O_CREATE, Want: syscall.EACCES},
	{Op: "open", A: "/tmp/new", Flag: wr | os.O_CREATE | os.O_EXCL, Want: 0},
	{Op: "open", A: "/priv/new", Flag: wr | os.O_CREATE, Want: syscall.EACCES},
	{Op: "mkdir", A: "/pub/d", Want: syscall.EACCES},
	{Op: "mkdir", A: "/pub/sub", Want: syscall.EEXIST},
	{Op: "mkdir", A: "/home/u/d", Want: 0},
	{Op: "mkdir", A: "/home/u/rodir/d", Want: syscall.EACCES},
	{Op: "mkdir", A: "/priv/d", Want: syscall.EACCES},
	{Op: "mkdir", A: "/tmp/d", Want: 0},
	{Op: "symlink", A: "x", B: "/pub/sl", Want: syscall.EACCES},
	{Op: "symlink", A: "x", B: "/pub/file", Want: syscall.EEXIST},
	{Op: "symlink", A: "/priv/file", B: "/home/u/sl", Want: 0},
	// Unlink and rmdir: write and search on the directory, the sticky bit.
	{Op: "remove", A: "/pub/file", Want: syscall.EACCES},
	{Op: "remove", A: "/pub/none", Want: syscall.ENOENT},
	{Op: "remove", A: "/pub/sub", Want: syscall.EACCES},
	{Op: "remove", A: "/home/u/rodir/f", Want: syscall.EACCES},
	{Op: "remove", A: "/home/u/mine", Want: 0},
	{Op: "remove", A: "/home/u/none", Want: 0},
	{Op: "remove", A: "/home/u/grp", Want: 0},
	{Op: "remove", A: "/home/u/l-priv", Want: 0},
	{Op: "remove", A: "/home/u/sub", Want: 0},
	{Op: "remove", A: "/tmp/rootf", Want: syscall.EPERM},
	{Op: "remove", A: "/tmp/otherf", Want: syscall.EPERM},
	{Op: "remove", A: "/tmp/mine", Want: 0},
	{Op: "remove", A: "/tmp/rootdir", Want: syscall.EPERM},
	{Op: "remove", A: "/tmp/rootdir/rf", Want: 0},
	{Op: "remove", A: "/ownsticky/rf", Want: 0},
	{Op: "remove", A: "/priv/file", Want: syscall.EACCES},
	// Rename: both directories, the sticky bit, a directory's "..".
	{Op: "rename", A: "/tmp/rootf", B: "/tmp/x", Want: syscall.EPERM},
	{Op: "rename", A: "/tmp/mine", B: "/tmp/x", Want: 0},
	{Op: "rename", A: "/tmp/mine", B: "/tmp/rootf", Want: syscall.EPERM},
	{Op: "rename", A: "/tmp/mine", B: "/tmp/otherf", Want: syscall.EPERM},
	{Op: "rename", A: "/home/u/mine", B: "/tmp/mine2", Want: 0},
	{Op: "rename", A: "/home/u/mine", B: "/pub/x", Want: syscall.EACCES},
	{Op: "rename", A: "/home/u/mine", B: "/pub/file", Want: syscall.EACCES},
	{Op: "rename", A: "/pub/file", B: "/home/u/x", Want: syscall.EACCES},
	{Op: "rename", A: "/home/u/mine", B: "/home/u/rodir/x", Want: syscall.EACCES},
	{Op: "rename", A: "/home/u/rodir", B: "/home/u/rodir2", Want: 0},
	{Op: "rename", A: "/home/u/rodir", B: "/tmp/rodir", Want: syscall.EACCES},
	{Op: "rename", A: "/home/u/sub", B: "/tmp/sub", Want: 0},
	{Op: "rename", A: "/tmp/minedir", B: "/home/u/minedir", Want: 0},
	{Op: "rename", A: "/tmp/mine", B: "/tmp/mine", Want: 0},
	// Hard links: the directory, and fs.protected_hardlinks.
	{Op: "link", A: "/tmp/rootf", B: "/tmp/lnk", Want: 0},
	{Op: "link", A: "/tmp/otherf", B: "/tmp/lnk", Want: syscall.EPERM},
	{Op: "link", A: "/pub/file", B: "/home/u/lnk", Want: syscall.EPERM},
	{Op: "link", A: "/pub/suid", B: "/tmp/lnk", Want: syscall.EPERM},
	{Op: "link", A: "/home/u/mine", B: "/pub/lnk", Want: syscall.EACCES},
	{Op: "link", A: "/home/u/mine", B: "/home/u/lnk", Want: 0},
	{Op: "link", A: "/home/u/none", B: "/tmp/lnk", Want: 0},
	{Op: "link", A: "/home/u/mine", B: "/pub/file", Want: syscall.EEXIST},
	// Metadata: the owner only.
	{Op: "chmod", A: "/pub/file", Flag: 0o777, Want: syscall.EPERM},
	{Op: "chmod", A: "/home/u/mine", Flag: 0o600, Want: 0},
	{Op: "chmod", A: "/home/u/none", Flag: 0o600, Want: 0},
	{Op: "chmod", A: "/home/u/l-pub", Flag: 0o600, Want: syscall.EPERM},
	{Op: "chmod", A: "/priv/file", Flag: 0o600, Want: syscall.EACCES},
	{Op: "chmod", A: "/tmp", Flag: 0o777, Want: syscall.EPERM},
	{Op: "chown", A: "/home/u/mine", UID: 0, GID: -1, Want: syscall.EPERM},
	{Op: "chown", A: "/home/u/mine", UID: 1000, GID: 1000, Want: 0},
	{Op: "chown", A: "/home/u/mine", UID: -1, GID: 0, Want: syscall.EPERM},
	{Op: "chown", A: "/home/u/mine", UID: -1, GID: -1, Want: 0},
	{Op: "chown", A: "/pub/file", UID: -1, GID: -1, Want: 0},
	{Op: "chown", A: "/pub/file", UID: 0, GID: -1, Want: syscall.EPERM},
	{Op: "chown", A: "/home/u/grp", UID: -1, GID: 1000, Want: syscall.EPERM},
	{Op: "chown", A: "/tmp/otherf", UID: 1000, GID: -1, Want: syscall.EPERM},
	{Op: "chtimes", A: "/pub/file", Want: syscall.EPERM},
	{Op: "chtimes", A: "/tmp/rootf", Want: syscall.EPERM},
	{Op: "chtimes", A: "/home/u/mine", Want: 0},
	{Op: "chtimes", A: "/home/u/none", Want: 0},
	{Op: "chtimes", A: "/priv/file", Want: syscall.EACCES},
}

func (c permCase) String() string {
	s := c.Op + " " + c.A
	if c.B != "" {
		s += " " + c.B
	}
	switch c.Op {
	case "open":
		s += fmt.Sprintf(" flag=%#x", c.Flag)
	case "chown":
		s += fmt.Sprintf(" %d:%d", c.UID, c.GID)
	}
	return s
}

var permTime = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

// permDo runs c on fsys (paths made absolute by at) and returns the errno.
func permDo(c permCase, fsys vfs.FS, at func(string) string) syscall.Errno {
	a, b := at(c.A), ""
	if c.B != "" {
		b = at(c.B)
	}
	var err error
	switch c.Op {
	case "stat":
		_, err = fsys.Stat(a)
	case "lstat":
		_, _, err = fsys.LstatIfPossible(a)
	case "readlink":
		_, err = fsys.ReadlinkIfPossible(a)
	case "open":
		var f io.Closer
		if f, err = fsys.OpenFile(a, c.Flag, 0o644); err == nil {
			f.Close()
		}
	case "readdir":
		f, oerr := fsys.Open(a)
		if err = oerr; err == nil {
			_, err = f.Readdirnames(-1)
			f.Close()
		}
	case "mkdir":
		err = fsys.Mkdir(a, 0o755)
	case "remove":
		err = fsys.Remove(a)
	case "rename":
		err = fsys.Rename(a, b)
	case "link":
		err = fsys.Link(a, b)
	case "symlink":
		err = fsys.SymlinkIfPossible(c.A, b)
	case "chmod":
		err = fsys.Chmod(a, os.FileMode(c.Flag))
	case "chown":
		err = fsys.Chown(a, c.UID, c.GID)
	case "chtimes":
		err = fsys.Chtimes(a, permTime, permTime)
	default:
		panic(c.Op)
	}
	return vfs.Errno(err)
}

// buildPermTree makes permTree in a fresh MemFS and returns its namespace.
func buildPermTree(t testing.TB) *vfs.VFS {
	t.Helper()
	m := vfs.NewMemFS()
	for _, n := range permTree {
		var err error
		switch {
		case n.mode&os.ModeSymlink != 0:
			err = m.SymlinkIfPossible(n.target, n.path)
		case n.mode.IsDir():
			err = m.Mkdir(n.path, 0o755)
		default:
			var f io.Closer
			f, err = m.Create(n.path)
			if err == nil {
				err = f.Close()
			}
		}
		if err == nil && n.mode&os.ModeSymlink == 0 {
			err = m.Chmod(n.path, n.mode&(os.ModePerm|os.ModeSticky|os.ModeSetuid|os.ModeSetgid))
		}
		if err == nil && n.mode&os.ModeSymlink == 0 {
			err = m.Chown(n.path, n.uid, n.gid)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return vfs.New(m)
}

func TestPermTable(t *testing.T) {
	user := vfs.Cred{UID: 1000, GID: 1000}
	for _, via := range []string{"", "/via/via"} {
		for _, c := range permCases {
			v := buildPermTree(t).AsUser(user)
			got := permDo(c, v, func(p string) string { return via + p })
			if got != c.Want {
				t.Errorf("%s (prefix %q): errno %v (%d), want %v (%d)", c, via, got, int(got), c.Want, int(c.Want))
			}
		}
	}
}

// TestPermRoot: uid 0 and the unrestricted VFS pass every check of the
// table but the ones that are not about permissions.
func TestPermRoot(t *testing.T) {
	for _, c := range permCases {
		for _, v := range []*vfs.VFS{buildPermTree(t), buildPermTree(t).AsUser(vfs.Cred{})} {
			got := permDo(c, v, func(p string) string { return p })
			if got == syscall.EACCES || got == syscall.EPERM && c.Op != "link" {
				t.Errorf("%s as root: %v", c, got)
			}
		}
	}
}

// TestPermKernel runs the table as uid 1000 against the kernel, in a copy
// of permTree per case under t.TempDir(). It needs root and setpriv(1).
func TestPermKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a helper process as uid 1000 (a few seconds)")
	}
	if os.Getuid() != 0 {
		t.Skip("needs root, to build the trees with their owners")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv")
	}
	if b, err := os.ReadFile("/proc/sys/fs/protected_hardlinks"); err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Skip("needs fs.protected_hardlinks=1")
	}
	dir := t.TempDir()
	// The helper runs as uid 1000: the test's directories must let it in.
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "helper.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range permCases {
		root := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range permTree {
			p := filepath.Join(root, n.path)
			switch {
			case n.mode&os.ModeSymlink != 0:
				err = os.Symlink(n.target, p)
				if err == nil {
					err = os.Lchown(p, n.uid, n.gid)
				}
			case n.mode.IsDir():
				err = os.Mkdir(p, 0o755)
			default:
				err = os.WriteFile(p, nil, 0o644)
			}
			if err == nil && n.mode&os.ModeSymlink == 0 {
				if err = os.Chown(p, n.uid, n.gid); err == nil {
					// Chown clears set-id bits: chmod after.
					err = os.Chmod(p, n.mode&(os.ModePerm|os.ModeSticky|os.ModeSetuid|os.ModeSetgid))
				}
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	cases, _ := json.Marshal(permCases)
	cmd := exec.Command(setpriv, "--reuid=1000", "--regid=1000", "--clear-groups", bin, "-test.run=^TestPermKernelHelper$")
	cmd.Env = append(os.Environ(), "WASMBOX_PERM_HELPER="+dir, "WASMBOX_PERM_CASES="+string(cases))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	i := strings.Index(string(out), "RESULTS ")
	if i < 0 {
		t.Fatalf("helper printed no results:\n%s", out)
	}
	line, _, _ := strings.Cut(string(out[i+len("RESULTS "):]), "\n")
	var got []int
	if err := json.Unmarshal([]byte(line), &got); err != nil || len(got) != len(permCases) {
		t.Fatalf("helper results %q: %v", line, err)
	}
	for i, c := range permCases {
		if syscall.Errno(got[i]) != c.Want {
			t.Errorf("kernel: %s: errno %v (%d), table says %v (%d)", c, syscall.Errno(got[i]), got[i], c.Want, int(c.Want))
		}
	}
}

// TestPermKernelHelper is the process TestPermKernel runs as uid 1000.
func TestPermKernelHelper(t *testing.T) {
	dir := os.Getenv("WASMBOX_PERM_HELPER")
	if dir == "" {
		t.Skip("run by TestPermKernel")
	}
	var cases []permCase
	if err := json.Unmarshal([]byte(os.Getenv("WASMBOX_PERM_CASES")), &cases); err != nil {
		t.Fatal(err)
	}
	res := make([]int, len(cases))
	for i, c := range cases {
		root := filepath.Join(dir, fmt.Sprint(i))
		res[i] = int(kernelDo(c, func(p string) string { return root + p }))
	}
	b, _ := json.Marshal(res)
	fmt.Printf("RESULTS %s\n", b)
}

// kernelDo is permDo with the system calls of the host.
func kernelDo(c permCase, at func(string) string) syscall.Errno {
	a, b := at(c.A), ""
	if c.B != "" {
		b = at(c.B)
	}
	var err error
	switch c.Op {
	case "stat":
		_, err = os.Stat(a)
	case "lstat":
		_, err = os.Lstat(a)
	case "readlink":
		_, err = os.Readlink(a)
	case "open":
		var f *os.File
		if f, err = os.OpenFile(a, c.Flag, 0o644); err == nil {
			f.Close()
		}
	case "readdir":
		var f *os.File
		if f, err = os.Open(a); err == nil {
			_, err = f.Readdirnames(-1)
			f.Close()
		}
	case "mkdir":
		err = syscall.Mkdir(a, 0o755)
	case "remove":
		var fi os.FileInfo
		if fi, err = os.Lstat(a); err == nil {
			if fi.IsDir() {
				err = syscall.Rmdir(a)
			} else {
				err = syscall.Unlink(a)
			}
		}
	case "rename":
		err = syscall.Rename(a, b)
	case "link":
		err = syscall.Link(a, b)
	case "symlink":
		err = syscall.Symlink(c.A, b)
	case "chmod":
		err = syscall.Chmod(a, uint32(c.Flag))
	case "chown":
		err = syscall.Chown(a, c.UID, c.GID)
	case "chtimes":
		err = os.Chtimes(a, permTime, permTime)
	}
	var errno syscall.Errno
	if err != nil && !errors.As(err, &errno) {
		return syscall.EIO
	}
	return errno
}

// TestPermHostMount: a host directory mounted read-write is the sandbox
// user's (its files are presented as uid 1000), and its mode bits are
// enforced like the MemFS's, by the fast path and the general
// resolution; a mount point below a directory the user cannot search
// cannot be reached.
func TestPermHostMount(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, "ro"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "ro", "f"), []byte("x"), 0o400))
	must(os.Chmod(filepath.Join(dir, "ro"), 0o500))
	must(os.Mkdir(filepath.Join(dir, "closed"), 0o000))
	t.Cleanup(func() {
		os.Chmod(filepath.Join(dir, "ro"), 0o755)
		os.Chmod(filepath.Join(dir, "closed"), 0o755)
	})
	h, err := vfs.HostDir(dir, vfs.ReadWrite)
	must(err)
	t.Cleanup(func() { h.(io.Closer).Close() })
	m := vfs.NewMemFS()
	must(m.Mkdir("/priv", 0o700))
	must(m.Mkdir("/via", 0o755))
	must(m.SymlinkIfPossible("..", "/via/up"))
	v := vfs.New(m)
	must(v.Mount("/mnt", h))
	must(v.Mount("/priv/mnt", h))
	u := v.AsUser(vfs.Cred{UID: 1000, GID: 1000})
	for _, via := range []string{"", "/via/up"} {
		cases := []permCase{
			{Op: "open", A: "/mnt/ro/f", Flag: rd},
			{Op: "open", A: "/mnt/ro/f", Flag: wr, Want: syscall.EACCES},
			{Op: "open", A: "/mnt/ro/new", Flag: wr | os.O_CREATE, Want: syscall.EACCES},
			{Op: "mkdir", A: "/mnt/ro/d", Want: syscall.EACCES},
			{Op: "remove", A: "/mnt/ro/f", Want: syscall.EACCES},
			{Op: "stat", A: "/mnt/closed/x", Want: syscall.EACCES},
			{Op: "readdir", A: "/mnt/closed", Want: syscall.EACCES},
			{Op: "stat", A: "/priv/mnt/ro", Want: syscall.EACCES},
			{Op: "open", A: "/priv/mnt/ro/f", Flag: rd, Want: syscall.EACCES},
			{Op: "open", A: "/mnt/new", Flag: wr | os.O_CREATE},
			{Op: "chown", A: "/mnt/ro", UID: -1, GID: -1},
		}
		for _, c := range cases {
			if got := permDo(c, u, func(p string) string { return via + p }); got != c.Want {
				t.Errorf("%s (prefix %q): %v, want %v", c, via, got, c.Want)
			}
		}
	}
	// A read-only mount answers EROFS before the permission bits, as
	// Linux does.
	ro, err := vfs.HostDir(dir, vfs.ReadOnly)
	must(err)
	t.Cleanup(func() { ro.(io.Closer).Close() })
	must(v.Mount("/romnt", ro))
	for _, via := range []string{"", "/via/up"} {
		for _, c := range []permCase{
			{Op: "open", A: "/romnt/ro/new", Flag: wr | os.O_CREATE, Want: syscall.EROFS},
			{Op: "open", A: "/romnt/ro/f", Flag: wr, Want: syscall.EROFS},
			{Op: "mkdir", A: "/romnt/ro/d", Want: syscall.EROFS},
			{Op: "remove", A: "/romnt/ro/f", Want: syscall.EROFS},
			{Op: "symlink", A: "x", B: "/romnt/ro/f", Want: syscall.EROFS},
			{Op: "chmod", A: "/romnt/ro", Flag: 0o700, Want: syscall.EROFS},
			{Op: "open", A: "/romnt/closed", Flag: rd, Want: syscall.EACCES},
		} {
			if got := permDo(c, u, func(p string) string { return via + p }); got != c.Want {
				t.Errorf("%s (prefix %q): %v, want %v", c, via, got, c.Want)
			}
		}
	}
	// The owner may open the directory up, and then write in it.
	must(u.Chmod("/mnt/ro", 0o700))
	f, err := u.OpenFile("/mnt/ro/new", os.O_WRONLY|os.O_CREATE, 0o644)
	must(err)
	f.Close()
	must(u.Chmod("/mnt/ro/f", 0o600))
	f, err = u.OpenFile("/mnt/ro/f", os.O_WRONLY, 0)
	must(err)
	f.Close()
}

// TestPermConcurrentChmod: lookups of a user view read the modes of the
// directories they cross while another goroutine changes them (run with
// -race); each lookup sees the mode before or after a change.
func TestPermConcurrentChmod(t *testing.T) {
	v := buildPermTree(t)
	u := v.AsUser(vfs.Cred{UID: 1000, GID: 1000})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 2000; i++ {
			mode := os.FileMode(0o755)
			if i%2 == 1 {
				mode = 0o700
			}
			if err := u.Chmod("/home/u/sub", mode); err != nil {
				t.Error(err)
				return
			}
			if err := v.Chown("/home/u/sub", 1000, i%2*1000); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 2000; i++ {
		if _, err := u.Stat("/home/u/sub/x"); vfs.Errno(err) != syscall.ENOENT {
			t.Fatalf("stat: %v", err)
		}
		if _, err := u.Stat("/via/home/u/sub/x"); vfs.Errno(err) != syscall.ENOENT {
			t.Fatalf("stat: %v", err)
		}
	}
	<-done
}
