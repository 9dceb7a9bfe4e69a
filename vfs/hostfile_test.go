package vfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

// TestHostFile: a single host file mounted on a guest file is that file
// and nothing more: its siblings are unreachable, paths below it are
// ENOTDIR, and the mount point cannot be removed, renamed over, linked or
// replaced by a symlink (EBUSY or EEXIST); ro refuses writes (EROFS).
func TestHostFile(t *testing.T) {
	host := t.TempDir()
	file := filepath.Join(host, "f")
	if err := os.WriteFile(file, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "canary"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := vfs.HostFile(host, vfs.ReadOnly); err == nil {
		t.Fatal("HostFile took a directory")
	}
	if _, err := vfs.HostFile(file, vfs.CopyOnWrite); err == nil {
		t.Fatal("HostFile took copy-on-write")
	}
	for _, mode := range []vfs.MountMode{vfs.ReadOnly, vfs.ReadWrite} {
		h, err := vfs.HostFile(file, mode)
		if err != nil {
			t.Fatal(err)
		}
		defer h.(interface{ Close() error }).Close()
		v := vfs.New(vfs.NewMemFS())
		if err := v.Mount("/work/f", h); err != nil {
			t.Fatal(err)
		}
		if err := v.Mount("/work", h); err == nil {
			t.Fatal("a file mounted on a directory")
		}
		if b, err := readSmall(v, "/work/f"); err != nil || string(b) != "data" {
			t.Fatalf("%v: read %q %v", mode, b, err)
		}
		is := func(what string, err error, want ...syscall.Errno) {
			t.Helper()
			for _, w := range want {
				if errors.Is(err, w) {
					return
				}
			}
			t.Errorf("%v: %s: %v, want %v", mode, what, err, want)
		}
		_, err = v.Stat("/work/f/x")
		is("stat below", err, syscall.ENOTDIR)
		_, err = v.Stat("/work/f/../canary")
		is("sibling", err, syscall.ENOTDIR, syscall.ENOENT)
		_, err = v.OpenFile("/work/f/x", os.O_CREATE|os.O_WRONLY, 0o644)
		is("create below", err, syscall.ENOTDIR)
		is("remove", v.Remove("/work/f"), syscall.EBUSY)
		is("rename away", v.Rename("/work/f", "/work/g"), syscall.EBUSY)
		if err := v.MkdirAll("/tmp", 0o777); err != nil {
			t.Fatal(err)
		}
		if err := writeString(v, "/tmp/o", "other"); err != nil {
			t.Fatal(err)
		}
		is("rename over", v.Rename("/tmp/o", "/work/f"), syscall.EBUSY)
		is("link", v.Link("/work/f", "/work/h"), syscall.EXDEV, syscall.EBUSY)
		is("symlink over", v.SymlinkIfPossible("/etc/passwd", "/work/f"), syscall.EEXIST, syscall.EBUSY)
		_, err = v.OpenFile("/work/f", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		is("exclusive create", err, syscall.EEXIST)
		werr := writeString(v, "/work/f", "new")
		if mode == vfs.ReadOnly {
			is("write", werr, syscall.EROFS)
		} else if b, _ := os.ReadFile(file); werr != nil || string(b) != "new" {
			t.Errorf("rw write: %v, host %q", werr, b)
		}
		if b, _ := os.ReadFile(filepath.Join(host, "canary")); string(b) != "secret" {
			t.Fatalf("canary %q", b)
		}
		if ents, _ := os.ReadDir(host); len(ents) != 2 {
			t.Fatalf("host directory changed: %v", ents)
		}
		os.WriteFile(file, []byte("data"), 0o644)
	}
}

func readSmall(v *vfs.VFS, name string) ([]byte, error) {
	f, err := v.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 100)
	n, _ := f.Read(b)
	return b[:n], nil
}

func writeString(v *vfs.VFS, name, data string) error {
	f, err := v.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(data))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
