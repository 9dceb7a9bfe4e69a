//go:build !wasip1

package fileutils

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sysStat takes the access and change times from the host's stat (whose
// field names differ between Linux and the BSDs/macOS), not from the
// modification time.
func TestSysStatTimes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	atime := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	mtime := time.Date(2002, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := os.Chtimes(p, atime, mtime); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := sysStat(fi)
	if !st.atime.Equal(atime) {
		t.Errorf("atime = %v, want %v", st.atime, atime)
	}
	if !st.mtime.Equal(mtime) {
		t.Errorf("mtime = %v, want %v", st.mtime, mtime)
	}
	// The change time is when Chtimes ran: after the times it set.
	if !st.ctime.After(mtime) {
		t.Errorf("ctime = %v, want the time of the change (after %v)", st.ctime, mtime)
	}
	if st.ino == 0 || st.nlink != 1 {
		t.Errorf("ino = %d, nlink = %d: want the host's values", st.ino, st.nlink)
	}
}
