package vfs

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// TestReadShared: the content comes back without a copy and never changes
// after: every way of changing the file copies it first. No symlink is
// followed and only regular files are read.
func TestReadShared(t *testing.T) {
	m := NewMemFS()
	write := func(p, s string) {
		t.Helper()
		if err := writeFile(m, p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m.Mkdir("/d", 0o755)
	write("/d/f", "hello world")
	m.SymlinkIfPossible("/d", "/l")
	m.SymlinkIfPossible("/d/f", "/d/s")
	b, ino, err := m.ReadShared("/d/f")
	if err != nil || string(b) != "hello world" {
		t.Fatalf("ReadShared = %q, %v", b, err)
	}
	fi, _ := m.Stat("/d/f")
	if fi.Sys().(*Stat).Ino != ino {
		t.Fatal("wrong inode number")
	}
	changes := []func(){
		func() { f, _ := m.OpenFile("/d/f", os.O_WRONLY, 0); f.WriteAt([]byte("J"), 0); f.Close() },
		func() { f, _ := m.OpenFile("/d/f", os.O_WRONLY|os.O_APPEND, 0); f.Write([]byte("!")); f.Close() },
		func() { f, _ := m.OpenFile("/d/f", os.O_WRONLY, 0); f.Truncate(3); f.Close() },
		func() { f, _ := m.OpenFile("/d/f", os.O_WRONLY, 0); f.Truncate(40); f.Close() },
		func() {
			f, _ := m.OpenFile("/d/f", os.O_WRONLY|os.O_TRUNC, 0)
			f.Write([]byte("HELLO WORLD"))
			f.Close()
		},
	}
	for i, change := range changes {
		write("/d/f", "hello world")
		b, _, err := m.ReadShared("/d/f")
		if err != nil {
			t.Fatal(err)
		}
		change()
		if string(b) != "hello world" {
			t.Fatalf("change %d: the shared content became %q", i, b)
		}
	}
	for p, want := range map[string]error{"/l/f": syscall.ELOOP, "/d/s": syscall.EINVAL, "/d": syscall.EINVAL, "/nope": syscall.ENOENT} {
		if _, _, err := m.ReadShared(p); !errors.Is(err, want) {
			t.Errorf("ReadShared(%s) = %v, want %v", p, err, want)
		}
	}
	v := New(m)
	if b, _, err := v.ReadShared("/d/f"); err != nil || len(b) == 0 {
		t.Fatalf("VFS.ReadShared = %q, %v", b, err)
	}
	if _, _, err := v.ReadShared("d/../d/f"); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("VFS.ReadShared of an unclean path = %v", err)
	}
}
