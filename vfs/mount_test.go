package vfs_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

func TestMountTable(t *testing.T) {
	v, err := vfs.NewDefault()
	must(t, err)
	data := vfs.NewMemFS()
	writeFile(t, data, "/x", "in data")
	must(t, data.Chmod("/", 0o700))
	must(t, v.Mount("/mnt/data", data))
	wantErrno(t, v.Mount("/mnt/data", vfs.NewMemFS()), syscall.EBUSY)

	// Paths through the mount, and ".." out of it.
	if readFile(t, v, "/mnt/data/x") != "in data" || readFile(t, v, "/mnt/data/../data/x") != "in data" {
		t.Fatal("read through mount")
	}
	must(t, v.Mkdir("/mnt/sibling", 0o755))
	if _, err := v.Stat("/mnt/data/../sibling"); err != nil {
		t.Fatalf(".. from a mount root: %v", err)
	}
	// A symlink in the root filesystem pointing into the mount, and one in
	// the mount pointing back out (absolute: resolved in the guest).
	must(t, v.SymlinkIfPossible("/mnt/data/x", "/home/user/link"))
	must(t, v.SymlinkIfPossible("/etc/passwd", "/mnt/data/pw"))
	must(t, v.SymlinkIfPossible("../../etc", "/mnt/data/etc"))
	if readFile(t, v, "/home/user/link") != "in data" {
		t.Fatal("symlink into a mount")
	}
	if b := readFile(t, v, "/mnt/data/pw"); b == "" || readFile(t, v, "/mnt/data/etc/group") == "" {
		t.Fatal("symlink out of a mount")
	}
	// The mounted filesystem itself knows nothing of the guest.
	// (Its /etc is the symlink "../../etc", which loops there.)
	if _, err := data.Stat("/pw"); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("inside the mounted fs /pw resolves: %v", err)
	}

	// Cross-mount rename and link are EXDEV.
	wantErrno(t, v.Rename("/mnt/data/x", "/tmp/x"), syscall.EXDEV)
	wantErrno(t, v.Rename("/home/user/link", "/mnt/data/l2"), syscall.EXDEV)
	wantErrno(t, v.Link("/mnt/data/x", "/tmp/x"), syscall.EXDEV)
	// Same-mount rename through the VFS works.
	must(t, v.Rename("/mnt/data/x", "/mnt/data/y"))
	if readFile(t, data, "/y") != "in data" {
		t.Fatal("rename inside a mount")
	}
	// Mount points and their parents are busy.
	wantErrno(t, v.Remove("/mnt/data"), syscall.EBUSY)
	wantErrno(t, v.Rename("/mnt/data", "/mnt/d2"), syscall.EBUSY)
	wantErrno(t, v.Rename("/mnt", "/mnt2"), syscall.EBUSY)
	wantErrno(t, v.Rename("/tmp", "/mnt/data"), syscall.EBUSY)
	wantErrno(t, v.RemoveAll("/mnt"), syscall.EBUSY)
	if n := names(t, data, "/"); n != "" {
		// RemoveAll emptied the mounted filesystem but kept the mount.
		t.Fatalf("RemoveAll through a mount point left %q", n)
	}
	if _, err := v.Stat("/mnt/data"); err != nil {
		t.Fatalf("mount point gone: %v", err)
	}

	// Listing the parent shows the mount point with the mounted root's mode.
	f, err := v.Open("/mnt")
	must(t, err)
	fis, err := f.Readdir(-1)
	must(t, err)
	f.Close()
	found := false
	for _, fi := range fis {
		if fi.Name() == "data" {
			found = true
			if fi.Mode() != os.ModeDir|0o700 {
				t.Fatalf("mount point listed with mode %v", fi.Mode())
			}
		}
	}
	if !found {
		t.Fatal("mount point not listed")
	}
	fi, err := v.Stat("/mnt/data")
	must(t, err)
	if fi.Name() != "data" || fi.Mode() != os.ModeDir|0o700 {
		t.Fatalf("stat of mount point: %s %v", fi.Name(), fi.Mode())
	}

	mps := v.Mounts()
	if len(mps) != 2 || mps[0].Path != "/" || mps[1].Path != "/mnt/data" {
		t.Fatalf("mounts %+v", mps)
	}
	must(t, v.Unmount("/mnt/data"))
	wantErrno(t, v.Unmount("/mnt/data"), syscall.EINVAL)
	wantErrno(t, v.Unmount("/"), syscall.EBUSY)
	if n := names(t, v, "/mnt/data"); n != "" {
		t.Fatalf("after unmount the mount point shows %q", n)
	}
	// A mount point through a symlink is refused.
	must(t, v.SymlinkIfPossible("/tmp", "/tlink"))
	wantErrno(t, v.Mount("/tlink/m", vfs.NewMemFS()), syscall.EINVAL)
	wantErrno(t, v.Mount("relative", vfs.NewMemFS()), syscall.EINVAL)
	writeFile(t, v, "/tmp/file", "")
	wantErrno(t, v.Mount("/tmp/file", vfs.NewMemFS()), syscall.ENOTDIR)
}

func TestMountReadOnlyHost(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("host"), 0o644))
	h, err := vfs.HostDir(dir, vfs.ReadOnly)
	must(t, err)
	defer h.(io.Closer).Close()
	v, err := vfs.NewDefault()
	must(t, err)
	must(t, v.Mount("/work", h))
	if readFile(t, v, "/work/f") != "host" {
		t.Fatal("read")
	}
	_, err = v.Create("/work/g")
	wantErrno(t, err, syscall.EROFS)
	wantErrno(t, v.Remove("/work/f"), syscall.EROFS)
	// The rest of the namespace stays writable.
	writeFile(t, v, "/tmp/ok", "ok")
}

func TestVFSFork(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("host"), 0o644))
	rw, err := vfs.HostDir(dir, vfs.ReadWrite)
	must(t, err)
	defer rw.(io.Closer).Close()
	cow, err := vfs.HostDir(dir, vfs.CopyOnWrite)
	must(t, err)
	defer cow.(io.Closer).Close()
	v, err := vfs.NewDefault()
	must(t, err)
	must(t, v.Mount("/rw", rw))
	must(t, v.Mount("/cow", cow))
	writeFile(t, v, "/home/user/a", "parent")

	c := v.Fork()
	writeFile(t, c, "/home/user/a", "child")
	writeFile(t, c, "/cow/f", "child cow")
	writeFile(t, c, "/rw/shared", "child rw")
	if readFile(t, v, "/home/user/a") != "parent" || readFile(t, v, "/cow/f") != "host" {
		t.Fatal("fork not independent")
	}
	if readFile(t, v, "/rw/shared") != "child rw" {
		t.Fatal("rw host mounts are shared by a fork")
	}
	if len(c.Mounts()) != 3 {
		t.Fatalf("fork mounts %+v", c.Mounts())
	}
}

func TestDefaultLayout(t *testing.T) {
	v, err := vfs.NewDefault()
	must(t, err)
	for _, c := range []struct {
		path string
		mode os.FileMode
		uid  uint32
	}{
		{"/bin", os.ModeDir | 0o755, 0},
		{"/usr/bin", os.ModeDir | 0o755, 0},
		{"/home/user", os.ModeDir | 0o755, 1000},
		{"/tmp", os.ModeDir | os.ModeSticky | 0o777, 0},
		{"/etc/passwd", 0o644, 0},
		{"/etc/group", 0o644, 0},
		{"/dev/null", os.ModeDevice | os.ModeCharDevice | 0o666, 0},
		{"/dev/random", os.ModeDevice | os.ModeCharDevice | 0o666, 0},
	} {
		fi, err := v.Stat(c.path)
		must(t, err)
		if fi.Mode() != c.mode || fi.Sys().(*vfs.Stat).Uid != c.uid {
			t.Errorf("%s: mode %v uid %d, want %v %d", c.path, fi.Mode(), fi.Sys().(*vfs.Stat).Uid, c.mode, c.uid)
		}
	}
	if got := readFile(t, v, "/etc/passwd"); got != "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:sandbox user:/home/user:/bin/sh\n" {
		t.Fatalf("passwd %q", got)
	}
	writeFile(t, v, "/home/user/mine", "")
	if s := stat(t, v, "/home/user/mine"); s.Uid != vfs.UserUID || s.Gid != vfs.UserGID {
		t.Fatalf("new files owned by %d:%d", s.Uid, s.Gid)
	}
	must(t, vfs.InstallCommand(v, "ls"))
	must(t, vfs.InstallCommand(v, "ls")) // replacing is fine
	for _, p := range []string{"/bin/ls", "/usr/bin/ls"} {
		fi, err := v.Stat(p)
		must(t, err)
		if fi.Mode() != 0o755 {
			t.Fatalf("%s mode %v", p, fi.Mode())
		}
		if name, ok := vfs.CommandName(v, p); !ok || name != "ls" {
			t.Fatalf("CommandName(%s) = %q %v", p, name, ok)
		}
	}
	if _, ok := vfs.CommandName(v, "/etc/passwd"); ok {
		t.Fatal("passwd is no command")
	}
	wantErrno(t, vfs.InstallCommand(v, "../evil"), syscall.EINVAL)
	wantErrno(t, vfs.InstallCommand(v, ""), syscall.EINVAL)

	// Default quotas.
	small, err := vfs.NewDefault(vfs.WithQuota(vfs.Quota{Bytes: 1000}))
	must(t, err)
	f, err := small.Create("/tmp/big")
	must(t, err)
	_, err = f.Write(make([]byte, 2000))
	wantErrno(t, err, syscall.ENOSPC)
	f.Close()
	_, err = vfs.NewDefault(vfs.WithQuota(vfs.Quota{Files: 3}))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("layout under a tiny quota: %v", err)
	}
}

// Goroutines use the namespace across mounts while others mount, unmount
// and fork it. Run with -race.
func TestHammerVFS(t *testing.T) {
	v, err := vfs.NewDefault()
	must(t, err)
	cow, err := vfs.HostDir(t.TempDir(), vfs.CopyOnWrite)
	must(t, err)
	defer cow.(io.Closer).Close()
	must(t, v.Mount("/cow", cow))
	must(t, v.SymlinkIfPossible("/cow", "/home/user/c"))
	done := make(chan struct{})
	errs := make(chan error, 16)
	for w := 0; w < 6; w++ {
		go func(w int) {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 150; i++ {
				dir := []string{"/tmp", "/home/user/c", "/mnt/x"}[(w+i)%3]
				name := dir + "/f" + string(rune('a'+w))
				f, err := v.Create(name)
				if err == nil {
					f.Write([]byte("data"))
					f.Close()
					if _, err := v.Stat(name); err != nil && !errors.Is(err, syscall.ENOENT) {
						errs <- err
						return
					}
					v.Rename(name, name+"2")
					v.Remove(name + "2")
				}
				if w == 0 && i%10 == 0 {
					v.Mount("/mnt/x", vfs.NewMemFS())
				}
				if w == 1 && i%10 == 5 {
					v.Unmount("/mnt/x")
				}
				if w == 2 && i%25 == 0 {
					c := v.Fork()
					if _, err := c.Stat("/etc/passwd"); err != nil {
						errs <- err
						return
					}
				}
				if f, err := v.Open(dir); err == nil {
					f.Readdir(-1)
					f.Close()
				}
			}
		}(w)
	}
	for w := 0; w < 6; w++ {
		<-done
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
