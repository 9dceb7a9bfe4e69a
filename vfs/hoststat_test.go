//go:build unix

package vfs_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/vfs"
)

// TestHostStatFromHost: a host file's Stat carries the host's inode, link
// count and times, and its owner, the uid running wasmbox, shows as the
// sandbox user, on every Unix (the Stat_t field names differ between
// Linux and macOS/the BSDs). The group is not checked: on the BSDs a new
// file takes its directory's group.
func TestHostStatFromHost(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	must(t, os.WriteFile(p, []byte("x"), 0o644))
	must(t, os.Link(p, filepath.Join(dir, "g")))
	atime := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	mtime := time.Date(2002, 3, 4, 5, 6, 7, 0, time.UTC)
	must(t, os.Chtimes(p, atime, mtime))
	h, err := vfs.HostDir(dir, vfs.ReadWrite)
	must(t, err)
	defer h.(io.Closer).Close()
	for _, view := range []struct {
		name string
		fsys vfs.FS
	}{{"HostDir", h}, {"VFS", vfs.New(h)}} {
		fi, err := view.fsys.Stat("/f")
		must(t, err)
		st, ok := fi.Sys().(*vfs.Stat)
		if !ok {
			t.Fatalf("%s: Sys() is %T", view.name, fi.Sys())
		}
		if st.Ino == 0 || st.Nlink != 2 {
			t.Errorf("%s: ino %d nlink %d, want the host's (nonzero, 2)", view.name, st.Ino, st.Nlink)
		}
		if st.Uid != vfs.UserUID {
			t.Errorf("%s: uid %d, want the sandbox user %d", view.name, st.Uid, vfs.UserUID)
		}
		if !st.Atime.Equal(atime) || !st.Mtime.Equal(mtime) || !st.Ctime.After(mtime) {
			t.Errorf("%s: atime %v mtime %v ctime %v, want %v, %v and the time of the change", view.name, st.Atime, st.Mtime, st.Ctime, atime, mtime)
		}
	}
}
