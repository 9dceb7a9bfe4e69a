package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestHostRWLinkParentSwapped: the VFS resolves a path before the raw
// host filesystem acts on it; if a directory on the path has meanwhile
// become a symlink (here to ".", one level up), the host would put the
// new link one level higher than checked, and "../../x", inside at
// /a/b, would leave the mount from /b. The raw filesystem rechecks the
// path under its lock and refuses.
func TestHostRWLinkParentSwapped(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	for _, d := range []string{"a/b", "b", "c/d"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h, err := HostDir(root, ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer h.(*HostFS).Close()
	hr := h.(*HostFS).raw.(*hostRaw)
	if err := hr.SymlinkIfPossible("../../x", "/c/d/l"); err != nil {
		t.Fatal(err)
	}
	// What a guest would do between the resolution and the act.
	if err := os.Rename(filepath.Join(root, "a"), filepath.Join(root, "a.real")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"symlink": hr.SymlinkIfPossible("../../x", "/a/b/l"),
		"rename":  hr.Rename("/c/d/l", "/a/b/l"),
		"link":    hr.Link("/c/d/l", "/a/b/l"),
	} {
		if !errors.Is(err, syscall.ENOENT) {
			t.Errorf("%s through a swapped directory: %v, want ENOENT", name, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "b/l")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a link landed in /b: %v", err)
	}
}

func TestHostLinkOK(t *testing.T) {
	for _, tc := range []struct {
		dir, target string
		ok          bool
	}{
		{"/", "a", true},
		{"/", "", false},
		{"/", "/a", false},
		{"/", "..", false},
		{"/", ".", true},
		{"/a", "..", true},
		{"/a", "../..", false},
		{"/a/b", "../../c/d", true},
		{"/a/b", "./.././../c", true},
		{"/a/b", "c/..", false},
		{"/a/b", "../../../c", false},
		{"/a/b", "..//..//c//", true},
	} {
		if got := hostLinkOK(tc.dir, tc.target); got != tc.ok {
			t.Errorf("hostLinkOK(%q, %q) = %v, want %v", tc.dir, tc.target, got, tc.ok)
		}
	}
}
