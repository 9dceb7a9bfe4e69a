package vfs_test

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/wasmbox/wasmbox/vfs"
)

func TestIOFS(t *testing.T) {
	// Not NewDefault: fstest.TestFS reads every file to the end, and
	// /dev/zero has none.
	v := vfs.New(vfs.NewMemFS())
	must(t, v.MkdirAll("/etc", 0o755))
	writeFile(t, v, "/etc/passwd", "root:x:0:0::/:/bin/sh\n")
	data := vfs.NewMemFS()
	writeFile(t, data, "/inner", "mounted")
	must(t, v.Mount("/mnt/data", data))
	must(t, v.MkdirAll("/home/user/d/e", 0o755))
	writeFile(t, v, "/home/user/a.txt", "A")
	writeFile(t, v, "/home/user/d/e/b.txt", "B")
	must(t, v.SymlinkIfPossible("a.txt", "/home/user/link"))

	fsys := vfs.IOFS(v)
	if err := fstest.TestFS(fsys, "home/user/a.txt", "home/user/d/e/b.txt", "mnt/data/inner", "etc/passwd"); err != nil {
		t.Fatal(err)
	}
	b, err := fs.ReadFile(fsys, "home/user/link")
	if err != nil || string(b) != "A" {
		t.Fatalf("ReadFile through symlink: %q %v", b, err)
	}
	var walked []string
	must(t, fs.WalkDir(fsys, "home/user", func(p string, d fs.DirEntry, err error) error {
		walked = append(walked, p)
		return err
	}))
	if len(walked) != 6 {
		t.Fatalf("walked %v", walked)
	}
	if _, err := fsys.Open("/abs"); err == nil {
		t.Fatal("io/fs must reject rooted names")
	}
	if _, err := fsys.Open("home/../etc"); err == nil {
		t.Fatal("io/fs must reject ..")
	}
}
