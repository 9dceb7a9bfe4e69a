package vfs_test

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/spf13/afero"

	"github.com/wasmbox/wasmbox/vfs"
)

func TestReadOnlyView(t *testing.T) {
	mem := vfs.NewMemFS()
	if err := afero.WriteFile(mem, "/f", []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := mem.Mkdir("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	ro := vfs.ReadOnlyView(mem)
	if b, err := afero.ReadFile(ro, "/f"); err != nil || string(b) != "data" {
		t.Fatalf("read: %q %v", b, err)
	}
	changes := map[string]func() error{
		"create":    func() error { _, err := ro.Create("/g"); return err },
		"write":     func() error { _, err := ro.OpenFile("/f", os.O_WRONLY, 0); return err },
		"trunc":     func() error { _, err := ro.OpenFile("/f", os.O_RDONLY|os.O_TRUNC, 0); return err },
		"mkdir":     func() error { return ro.Mkdir("/e", 0o755) },
		"mkdirall":  func() error { return ro.MkdirAll("/e/f", 0o755) },
		"remove":    func() error { return ro.Remove("/f") },
		"removeall": func() error { return ro.RemoveAll("/d") },
		"rename":    func() error { return ro.Rename("/f", "/g") },
		"chmod":     func() error { return ro.Chmod("/f", 0o777) },
		"chown":     func() error { return ro.Chown("/f", 0, 0) },
		"symlink":   func() error { return ro.SymlinkIfPossible("f", "/l") },
		"link":      func() error { return ro.Link("/f", "/h") },
	}
	for name, change := range changes {
		if err := change(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", name, err)
		}
	}
	if err := ro.MkdirAll("/d", 0o755); err != nil {
		t.Errorf("MkdirAll of an existing directory: %v", err)
	}
	if b, _ := afero.ReadFile(mem, "/f"); string(b) != "data" {
		t.Fatalf("the view changed the filesystem: %q", b)
	}
	// Mounted in a namespace, the view answers EROFS there too.
	v := vfs.New(vfs.NewMemFS())
	if err := v.Mkdir("/bin", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := v.Mount("/bin", ro); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Create("/bin/x"); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("create in the mounted view: %v", err)
	}
	if b, err := afero.ReadFile(v, "/bin/f"); err != nil || string(b) != "data" {
		t.Fatalf("read through the mount: %q %v", b, err)
	}
}
