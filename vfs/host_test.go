package vfs_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/vfs"
)

// hostTree builds, under a temp dir:
//
//	outside/secret.txt     "SECRET"
//	outside/dir/           (a directory outside the mount)
//	root/                  (the mount source)
//	root/file.txt          "inside"
//	root/sub/deep.txt      "deep"
//	root/up       -> ../outside
//	root/abs      -> /
//	root/abssecret-> <absolute path of outside/secret.txt>
//	root/dirlink  -> ../outside/dir
//	root/pw       -> /etc/passwd
//
// and returns the temp dir and root.
func hostTree(t *testing.T) (base, root string) {
	t.Helper()
	base = t.TempDir()
	root = filepath.Join(base, "root")
	for _, d := range []string{"outside/dir", "root/sub"} {
		must(t, os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	for name, data := range map[string]string{
		"outside/secret.txt": "SECRET",
		"root/file.txt":      "inside",
		"root/sub/deep.txt":  "deep",
	} {
		must(t, os.WriteFile(filepath.Join(base, name), []byte(data), 0o644))
	}
	for name, target := range map[string]string{
		"up":        "../outside",
		"abs":       "/",
		"abssecret": filepath.Join(base, "outside/secret.txt"),
		"dirlink":   "../outside/dir",
		"pw":        "/etc/passwd",
	} {
		must(t, os.Symlink(target, filepath.Join(root, name)))
	}
	return base, root
}

// snapshot hashes every name, mode and content under dir.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %d\n", strings.TrimPrefix(p, dir), fi.Mode(), fi.Size())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			io.WriteString(h, l)
		}
		return nil
	})
	must(t, err)
	return fmt.Sprintf("%x", h.Sum(nil))
}

func TestHostDirErrors(t *testing.T) {
	_, err := vfs.HostDir(filepath.Join(t.TempDir(), "missing"), vfs.ReadOnly)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing source: %v", err)
	}
	f := filepath.Join(t.TempDir(), "file")
	must(t, os.WriteFile(f, nil, 0o644))
	_, err = vfs.HostDir(f, vfs.ReadOnly)
	if !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("file source: %v", err)
	}
	_, err = vfs.HostDir(t.TempDir(), vfs.MountMode(9))
	if err == nil {
		t.Fatal("bad mode accepted")
	}
}

func TestParseMountSpec(t *testing.T) {
	cases := []struct {
		in   string
		want vfs.MountSpec
		bad  bool
	}{
		{in: "/src:/work", want: vfs.MountSpec{Host: "/src", Guest: "/work", Mode: vfs.ReadOnly}},
		{in: "./src:/work/:rw", want: vfs.MountSpec{Host: "./src", Guest: "/work", Mode: vfs.ReadWrite}},
		{in: "/src:/a/../w:cow", want: vfs.MountSpec{Host: "/src", Guest: "/w", Mode: vfs.CopyOnWrite}},
		{in: "/src:/work:ro", want: vfs.MountSpec{Host: "/src", Guest: "/work", Mode: vfs.ReadOnly}},
		{in: "/src", bad: true},
		{in: "/src:work", bad: true},
		{in: ":/work", bad: true},
		{in: "/src:/work:xx", bad: true},
		{in: "/a:/b:rw:x", bad: true},
	}
	for _, c := range cases {
		got, err := vfs.ParseMountSpec(c.in)
		if c.bad {
			if !errors.Is(err, vfs.ErrBadMountSpec) {
				t.Errorf("%q: got %v, want ErrBadMountSpec", c.in, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %+v %v, want %+v", c.in, got, err, c.want)
		}
	}
}

func TestHostReadOnly(t *testing.T) {
	_, root := hostTree(t)
	h, err := vfs.HostDir(root, vfs.ReadOnly)
	must(t, err)
	defer h.(io.Closer).Close()
	if readFile(t, h, "/sub/deep.txt") != "deep" {
		t.Fatal("read")
	}
	before := snapshot(t, root)
	_, err = h.OpenFile("/file.txt", os.O_WRONLY, 0)
	wantErrno(t, err, syscall.EROFS)
	_, err = h.Create("/new")
	wantErrno(t, err, syscall.EROFS)
	wantErrno(t, h.Mkdir("/d", 0o755), syscall.EROFS)
	wantErrno(t, h.Remove("/file.txt"), syscall.EROFS)
	wantErrno(t, h.RemoveAll("/sub"), syscall.EROFS)
	wantErrno(t, h.Rename("/file.txt", "/x"), syscall.EROFS)
	wantErrno(t, h.Chmod("/file.txt", 0o777), syscall.EROFS)
	wantErrno(t, h.SymlinkIfPossible("x", "/l"), syscall.EROFS)
	wantErrno(t, h.Link("/file.txt", "/l"), syscall.EROFS)
	if snapshot(t, root) != before {
		t.Fatal("read-only mount changed the host")
	}
	fi, err := h.Stat("/file.txt")
	must(t, err)
	if s := fi.Sys().(*vfs.Stat); s.Ino == 0 || s.Nlink != 1 || s.Mtime.IsZero() {
		t.Fatalf("host stat %+v", s)
	}
}

// Nothing outside the mount root can be read, written, listed, linked or
// chmodded through "..", absolute or relative symlinks, symlinked
// directories or renamed symlinks, standalone or mounted in a VFS.
func TestHostEscape(t *testing.T) {
	for _, mode := range []vfs.MountMode{vfs.ReadWrite, vfs.CopyOnWrite, vfs.ReadOnly} {
		for _, mounted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/mounted=%v", mode, mounted), func(t *testing.T) {
				base, root := hostTree(t)
				outside := filepath.Join(base, "outside")
				before := snapshot(t, outside)
				h, err := vfs.HostDir(root, mode)
				must(t, err)
				defer h.(io.Closer).Close()
				fsys, pre := h, ""
				if mounted {
					v, err := vfs.NewDefault()
					must(t, err)
					must(t, v.Mount("/mnt", h))
					fsys, pre = v, "/mnt"
				}
				for _, p := range []string{
					"/../outside/secret.txt", "/../../../../outside/secret.txt",
					"/up/secret.txt", "/abssecret", "/abs" + outside + "/secret.txt",
					"/dirlink/../secret.txt", "/sub/../../outside/secret.txt",
				} {
					if f, err := fsys.Open(pre + p); err == nil {
						b, _ := io.ReadAll(f)
						f.Close()
						if strings.Contains(string(b), "SECRET") {
							t.Fatalf("read the host secret through %s", p)
						}
					}
				}
				// Attempts to write outside.
				fsys.Mkdir(pre+"/dirlink/sub", 0o755)
				fsys.Mkdir(pre+"/up/made", 0o755)
				if f, err := fsys.Create(pre + "/up/new.txt"); err == nil {
					f.Close()
				}
				if f, err := fsys.OpenFile(pre+"/abssecret", os.O_WRONLY|os.O_TRUNC, 0); err == nil {
					f.Write([]byte("pwned"))
					f.Close()
				}
				fsys.Chmod(pre+"/abssecret", 0o777)
				fsys.Chmod(pre+"/up/secret.txt", 0o777)
				fsys.Chtimes(pre+"/up/secret.txt", fsysTime, fsysTime)
				fsys.Link(pre+"/up/secret.txt", pre+"/stolen")
				fsys.SymlinkIfPossible("../../outside/secret.txt", pre+"/evil")
				if f, err := fsys.OpenFile(pre+"/evil", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644); err == nil {
					f.Write([]byte("pwned"))
					f.Close()
				}
				if b, err := readAll(fsys, pre+"/evil"); err == nil && strings.Contains(b, "SECRET") {
					t.Fatal("read the secret through a new symlink")
				}
				fsys.Rename(pre+"/up", pre+"/up2")
				if b, err := readAll(fsys, pre+"/up2/secret.txt"); err == nil && strings.Contains(b, "SECRET") {
					t.Fatal("read the secret through a renamed symlink")
				}
				fsys.RemoveAll(pre + "/dirlink")
				fsys.RemoveAll(pre + "/up2")
				fsys.Rename(pre+"/file.txt", pre+"/../outside/moved")
				if mounted {
					// The guest's own /etc/passwd, not the host's.
					b, err := readAll(fsys, "/mnt/pw")
					must(t, err)
					if !strings.Contains(b, "user:x:1000:1000") {
						t.Fatalf("/mnt/pw -> /etc/passwd read %q", b)
					}
				}
				if snapshot(t, outside) != before {
					t.Fatal("the host outside the mount changed")
				}
				// Control: the mount itself works.
				if b, err := readAll(fsys, pre+"/sub/deep.txt"); err != nil || b != "deep" {
					t.Fatalf("control read: %q %v", b, err)
				}
				err = writeErr(fsys, pre+"/sub/ctl")
				_, serr := os.Stat(filepath.Join(root, "sub/ctl"))
				switch mode {
				case vfs.ReadWrite:
					if err != nil || serr != nil {
						t.Fatalf("control write: %v %v", err, serr)
					}
				case vfs.CopyOnWrite:
					if err != nil || serr == nil {
						t.Fatalf("control cow write: %v, on host: %v", err, serr)
					}
				case vfs.ReadOnly:
					if !errors.Is(err, syscall.EROFS) {
						t.Fatalf("control ro write: %v", err)
					}
				}
			})
		}
	}
}

var fsysTime = time.Unix(1, 0)

func readAll(fsys vfs.FS, name string) (string, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

// A host process swaps a directory for a symlink to the outside while the
// guest writes through that path: os.Root keeps every access inside.
func TestHostEscapeRace(t *testing.T) {
	base, root := hostTree(t)
	outside := filepath.Join(base, "outside")
	before := snapshot(t, outside)
	h, err := vfs.HostDir(root, vfs.ReadWrite)
	must(t, err)
	defer h.(io.Closer).Close()
	must(t, os.Mkdir(filepath.Join(root, "swap"), 0o755))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sw := filepath.Join(root, "swap")
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.RemoveAll(sw)
			os.Symlink(filepath.Join(base, "outside"), sw)
			os.Remove(sw)
			os.Mkdir(sw, 0o755)
		}
	}()
	v, err := vfs.NewDefault()
	must(t, err)
	must(t, v.Mount("/work", h))
	for i := 0; i < 2000; i++ {
		// Reads through the VFS take the host fast path.
		for _, fsys := range []vfs.FS{h, v} {
			name := "/swap/secret.txt"
			if fsys == v {
				name = "/work" + name
			}
			if b, err := readAll(fsys, name); err == nil && strings.Contains(b, "SECRET") {
				t.Fatalf("read the host secret through a racing symlink (%T)", fsys)
			}
			if fi, err := fsys.Stat(name); err == nil && fi.Size() == int64(len("SECRET")) && !strings.Contains(name, "x") {
				if b, _ := readAll(fsys, name); b == "SECRET" {
					t.Fatal("stat and read reached the outside")
				}
			}
		}
		if f, err := h.OpenFile("/swap/secret.txt", os.O_RDWR|os.O_CREATE, 0o644); err == nil {
			f.Write([]byte("pwned"))
			f.Close()
		}
		h.Mkdir("/swap/dir/x", 0o755)
		h.Remove("/swap/secret.txt")
	}
	close(stop)
	wg.Wait()
	if snapshot(t, outside) != before {
		t.Fatal("a racing symlink let a write escape the mount")
	}
}

func TestCopyOnWrite(t *testing.T) {
	_, root := hostTree(t)
	before := snapshot(t, root)
	h, err := vfs.HostDir(root, vfs.CopyOnWrite, vfs.WithQuota(vfs.Quota{Bytes: 1 << 20}))
	must(t, err)
	defer h.(io.Closer).Close()

	// Write copies up; the guest sees the change.
	f, err := h.OpenFile("/file.txt", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.Write([]byte("+guest"))
	must(t, err)
	must(t, f.Close())
	if readFile(t, h, "/file.txt") != "inside+guest" {
		t.Fatal("copy-up write")
	}
	// chmod and truncate copy up too.
	must(t, h.Chmod("/sub/deep.txt", 0o600))
	fi, err := h.Stat("/sub/deep.txt")
	must(t, err)
	if fi.Mode().Perm() != 0o600 || readFile(t, h, "/sub/deep.txt") != "deep" {
		t.Fatalf("chmod copy-up: %v", fi.Mode())
	}
	// Deleting a host file hides it; recreating it starts empty.
	must(t, h.Remove("/sub/deep.txt"))
	if _, err := h.Stat("/sub/deep.txt"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("whiteout: %v", err)
	}
	writeFile(t, h, "/sub/deep.txt", "new")
	if readFile(t, h, "/sub/deep.txt") != "new" {
		t.Fatal("recreate after whiteout")
	}
	// rm -rf of a host directory, then mkdir: the new one is empty.
	must(t, h.RemoveAll("/sub"))
	must(t, h.Mkdir("/sub", 0o755))
	if n := names(t, h, "/sub"); n != "" {
		t.Fatalf("opaque dir shows %q", n)
	}
	// Merged listing of the root.
	writeFile(t, h, "/added", "a")
	if n := names(t, h, "/"); n != "abs,abssecret,added,dirlink,file.txt,pw,sub,up" {
		t.Fatalf("merged root %q", n)
	}
	// Rename a host directory with content.
	must(t, os.MkdirAll(filepath.Join(root, "tree/a"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "tree/a/x"), []byte("X"), 0o644))
	before = snapshot(t, root)
	must(t, h.Rename("/tree", "/moved"))
	if readFile(t, h, "/moved/a/x") != "X" {
		t.Fatal("renamed dir lost content")
	}
	if _, err := h.Stat("/tree"); !errors.Is(err, syscall.ENOENT) {
		t.Fatal("old name still visible")
	}
	must(t, h.Link("/moved/a/x", "/xlink"))
	if snapshot(t, root) != before {
		t.Fatal("copy-on-write mount changed the host")
	}

	// A fork of the cow mount is independent; the host is shared.
	c := vfs.Fork(h)
	writeFile(t, c, "/moved/a/x", "child")
	if readFile(t, h, "/moved/a/x") != "X" {
		t.Fatal("fork of cow upper is not independent")
	}
}

func names(t *testing.T, fsys vfs.FS, dir string) string {
	t.Helper()
	f, err := fsys.Open(dir)
	must(t, err)
	defer f.Close()
	n, err := f.Readdirnames(-1)
	must(t, err)
	sort.Strings(n)
	return strings.Join(n, ",")
}

func writeErr(fsys vfs.FS, name string) error {
	f, err := fsys.Create(name)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte("ctl"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func TestHostNoPrivilegeBits(t *testing.T) {
	dir := t.TempDir()
	h, err := vfs.HostDir(dir, vfs.ReadWrite)
	must(t, err)
	defer h.(io.Closer).Close()
	writeFile(t, h, "/x", "#!/bin/sh\n")
	must(t, h.Chmod("/x", 0o755|os.ModeSetuid|os.ModeSetgid))
	fi, err := os.Stat(filepath.Join(dir, "x"))
	must(t, err)
	if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || fi.Mode().Perm() != 0o755 {
		t.Fatalf("host mode %v", fi.Mode())
	}
	wantErrno(t, h.Chown("/x", 4242, 4242), syscall.EPERM)
	must(t, h.Chown("/x", -1, -1))
}

// A FIFO in a host directory must not block the guest (nothing could
// cancel the wait for a writer): opening it is refused at once.
func TestHostFIFORefused(t *testing.T) {
	dir := t.TempDir()
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	h, err := vfs.HostDir(dir, vfs.ReadWrite)
	must(t, err)
	defer h.(io.Closer).Close()
	v, err := vfs.NewDefault()
	must(t, err)
	must(t, v.Mount("/work", h))
	done := make(chan error, 3)
	go func() {
		_, err := h.Open("/fifo")
		done <- err
		_, err = v.Open("/work/fifo")
		done <- err
		_, err = v.OpenFile("/work/fifo", os.O_WRONLY, 0)
		done <- err
	}()
	for i := 0; i < 3; i++ {
		select {
		case err := <-done:
			// A write open without a reader fails in the kernel first.
			if e := vfs.Errno(err); e != syscall.EACCES && !(i == 2 && e == syscall.ENXIO) {
				t.Fatalf("open %d: %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("opening a host FIFO blocked")
		}
	}
	fi, err := v.Stat("/work/fifo")
	must(t, err)
	if fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("mode %v", fi.Mode())
	}
}
