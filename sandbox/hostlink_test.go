package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

// TestRWMountSymlinks: in a read-write host mount, ln -s of an absolute
// target or of one climbing out of the mount fails with "Operation not
// permitted" and leaves nothing on the host; mv of such a link from /tmp
// fails too; a relative link inside works and is on the host as written.
func TestRWMountSymlinks(t *testing.T) {
	host := t.TempDir()
	if err := os.MkdirAll(filepath.Join(host, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "f"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t, WithMount(vfs.MountSpec{Host: host, Guest: "/work", Mode: vfs.ReadWrite}))
	res := run(t, sb, `cd /work
ln -s /etc x; echo "abs $?"
ln -s /tmp/anything .git/COMMIT_EDITMSG; echo "editmsg $?"
ln -s ../../.. up; echo "up $?"
ln -s /etc /tmp/evil && mv /tmp/evil /work/evil; echo "mv $?"
mkdir -p d && ln -s ../f d/ok && cat d/ok; echo "ok $?"`)
	wantEqual(t, res.Stdout, "abs 1\neditmsg 1\nup 1\nmv 1\ndata\nok 0\n")
	wantContains(t, res.Stderr, "Operation not permitted")
	for _, name := range []string{"x", ".git/COMMIT_EDITMSG", "up", "evil"} {
		if _, err := os.Lstat(filepath.Join(host, name)); !os.IsNotExist(err) {
			t.Errorf("%s is on the host: %v", name, err)
		}
	}
	if got, err := os.Readlink(filepath.Join(host, "d/ok")); err != nil || got != "../f" {
		t.Errorf("d/ok on the host: %q %v", got, err)
	}
}
