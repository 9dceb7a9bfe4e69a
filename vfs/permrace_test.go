package vfs_test

import (
	"io"
	"os"
	"sync"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

// TestPermSymlinkSwap: a guest that swaps a directory of its own for a
// symlink to a directory it may not write, while another of its
// processes creates a file through a path that takes the general
// resolution (a symlink on the way), never creates anything there: the
// checks and the change are one step.
func TestPermSymlinkSwap(t *testing.T) {
	v, err := vfs.NewDefault()
	if err != nil {
		t.Fatal(err)
	}
	u := v.AsUser(vfs.Cred{UID: vfs.UserUID, GID: vfs.UserGID})
	must := func(err error) {
		if err != nil {
			t.Error(err)
		}
	}
	must(u.Mkdir("/tmp/w", 0o755))
	must(u.SymlinkIfPossible(".", "/tmp/w/l"))
	must(u.Mkdir("/tmp/w/real", 0o755))
	must(u.SymlinkIfPossible("/etc", "/tmp/w/evil"))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			// a is a directory of the user's, then a symlink to /etc.
			u.Rename("/tmp/w/real", "/tmp/w/a")
			u.Rename("/tmp/w/a", "/tmp/w/real")
			u.Rename("/tmp/w/evil", "/tmp/w/a")
			u.Rename("/tmp/w/a", "/tmp/w/evil")
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			if f, err := u.OpenFile("/tmp/w/l/a/x", os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
				f.(io.Closer).Close()
			}
			u.Mkdir("/tmp/w/l/a/d", 0o755)
			u.Remove("/tmp/w/l/a/x")
			u.Remove("/tmp/w/l/a/d")
		}
	}()
	wg.Wait()
	for _, p := range []string{"/etc/x", "/etc/d"} {
		if _, err := v.Stat(p); err == nil {
			t.Errorf("the user created %s", p)
		}
	}
}
