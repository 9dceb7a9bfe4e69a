package vfs_test

import (
	"errors"
	"io"
	"syscall"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

// TestRemoveAllThroughSymlinkToRoot: RemoveAll of a name that resolves to
// the root ("a/" with a -> /) fails with EBUSY and removes nothing, on
// every filesystem. The copy-on-write mount used to empty the root before
// it failed (found by FuzzMemVsHost).
func TestRemoveAllThroughSymlinkToRoot(t *testing.T) {
	rw, err := vfs.HostDir(t.TempDir(), vfs.ReadWrite)
	must(t, err)
	defer rw.(io.Closer).Close()
	cow, err := vfs.HostDir(t.TempDir(), vfs.CopyOnWrite)
	must(t, err)
	defer cow.(io.Closer).Close()
	cow2, err := vfs.HostDir(t.TempDir(), vfs.CopyOnWrite)
	must(t, err)
	defer cow2.(io.Closer).Close()
	for name, fsys := range map[string]vfs.FS{
		"memfs": vfs.NewMemFS(), "rw": rw, "cow": cow, "vfs over cow": vfs.New(cow2),
	} {
		target := "/"
		if name == "rw" {
			target = "." // a read-write host mount refuses absolute targets
		}
		must(t, fsys.SymlinkIfPossible(target, "/a"))
		f, err := fsys.OpenFile("/f", 0o101, 0o644) // O_WRONLY|O_CREATE
		must(t, err)
		f.Close()
		for _, p := range []string{"a/", "/a/.", "/a/f/.."} {
			if err := fsys.RemoveAll(p); !errors.Is(err, syscall.EBUSY) && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTDIR) {
				t.Errorf("%s: RemoveAll(%q) = %v, want EBUSY", name, p, err)
			}
		}
		for _, p := range []string{"/a", "/f"} {
			if _, _, err := fsys.LstatIfPossible(p); err != nil {
				t.Errorf("%s: %s is gone: %v", name, p, err)
			}
		}
	}
}
