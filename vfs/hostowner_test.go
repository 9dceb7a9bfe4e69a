//go:build linux

package vfs_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

// TestHostOwnerIsTheUser: a mount belongs to the user who mounts it. The
// files of the uid running wasmbox (here: everything the test creates)
// are the sandbox user's in every view of them: Stat, Lstat, Readdir, an
// open file's Stat and the VFS fast path; chown to the sandbox user is a
// no-op, chmod works and never sets setuid or setgid on the host.
func TestHostOwnerIsTheUser(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "priv"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "priv", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := vfs.HostDir(dir, vfs.ReadWrite)
	must(t, err)
	defer h.(io.Closer).Close()
	for _, view := range []struct {
		name string
		fsys vfs.FS
	}{{"HostDir", h}, {"VFS", vfs.New(h)}} {
		fsys := view.fsys
		check := func(what string, fi os.FileInfo, err error) {
			t.Helper()
			must(t, err)
			st, ok := fi.Sys().(*vfs.Stat)
			if !ok || st.Uid != vfs.UserUID || st.Gid != vfs.UserGID {
				t.Errorf("%s: %s: owner %+v, want %d:%d", view.name, what, fi.Sys(), vfs.UserUID, vfs.UserGID)
			}
		}
		fi, err := fsys.Stat("/priv")
		check("stat dir", fi, err)
		fi, err = fsys.Stat("/priv/f")
		check("stat", fi, err)
		fi, _, err = fsys.LstatIfPossible("/priv/f")
		check("lstat", fi, err)
		d, err := fsys.Open("/priv")
		must(t, err)
		fis, err := d.Readdir(-1)
		d.Close()
		if len(fis) != 1 {
			t.Fatalf("readdir: %v %v", fis, err)
		}
		check("readdir", fis[0], err)
		f, err := fsys.Open("/priv/f")
		must(t, err)
		fi, err = f.Stat()
		f.Close()
		check("fstat", fi, err)
		must(t, fsys.Chown("/priv/f", vfs.UserUID, vfs.UserGID))
		must(t, fsys.Chmod("/priv/f", 0o640|os.ModeSetuid|os.ModeSetgid))
		host, err := os.Stat(filepath.Join(dir, "priv", "f"))
		must(t, err)
		if host.Mode() != 0o640 {
			t.Errorf("%s: host mode %v, want -rw-r-----", view.name, host.Mode())
		}
	}
}
