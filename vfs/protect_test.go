package vfs_test

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

func TestProtectNames(t *testing.T) {
	mem := vfs.NewMemFS()
	mem.MkdirAll("/repo/.git/refs", 0o755)
	v := vfs.New(vfs.NewMemFS())
	if err := v.Mount("/m", vfs.ProtectNames(mem, ".git")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		op   func() error
	}{
		{"create in .git", func() error { _, err := v.Create("/m/repo/.git/x"); return err }},
		{"mkdir in .git", func() error { return v.Mkdir("/m/repo/.git/d", 0o755) }},
		{"remove .git", func() error { return v.RemoveAll("/m/repo/.git") }},
		{"remove a tree holding .git", func() error { return v.RemoveAll("/m/repo") }},
		{"rename .git away", func() error { return v.Rename("/m/repo/.git", "/m/repo/g") }},
		{"rename into .git", func() error { return v.Rename("/m/repo/a", "/m/repo/.git/a") }},
		{"symlink to .git", func() error { return v.SymlinkIfPossible(".git", "/m/repo/g") }},
		{"symlink in .git", func() error { return v.SymlinkIfPossible("/etc", "/m/repo/.git/COMMIT_EDITMSG") }},
		{"hard link out of .git", func() error { return v.Link("/m/repo/.git/refs", "/m/repo/r") }},
		{"chmod in .git", func() error { return v.Chmod("/m/repo/.git/refs", 0o777) }},
		{"write through a symlink", func() error {
			if err := v.SymlinkIfPossible("repo", "/m/r2"); err != nil {
				return errors.New("setup: " + err.Error())
			}
			_, err := v.OpenFile("/m/r2/.git/HEAD", os.O_WRONLY|os.O_CREATE, 0o644)
			return err
		}},
	} {
		if err := tc.op(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", tc.name, err)
		}
	}
	// Everything else works.
	g, err := v.Create("/m/repo/a")
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if err := v.Rename("/m/repo/a", "/m/repo/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Stat("/m/repo/.git/refs"); err != nil {
		t.Fatal(err)
	}
}
