package vfs_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

// rwMount returns a read-write host mount of a fresh directory, either
// alone or mounted at /mnt of a default namespace, with the prefix of its
// paths, and the host directory.
func rwMount(t *testing.T, mounted bool) (fsys vfs.FS, pre, root string) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "root")
	must(t, os.MkdirAll(filepath.Join(root, "sub/deeper"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, ".git"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "file.txt"), []byte("inside"), 0o644))
	h, err := vfs.HostDir(root, vfs.ReadWrite)
	must(t, err)
	t.Cleanup(func() { h.(io.Closer).Close() })
	if !mounted {
		return h, "", root
	}
	v, err := vfs.NewDefault()
	must(t, err)
	must(t, v.Mount("/mnt", h))
	return v, "/mnt", root
}

// TestHostRWSymlinkTargets: in a read-write host mount a guest symlink
// whose target is absolute, or relative but leaving the mount, is EPERM
// and nothing lands on the host: a host tool would follow it on the host
// (`ln -s /tmp/x .git/COMMIT_EDITMSG` let a native git write any host
// file). Relative links that stay inside are stored as they are.
func TestHostRWSymlinkTargets(t *testing.T) {
	canary := filepath.Join(t.TempDir(), "canary")
	must(t, os.WriteFile(canary, []byte("CANARY"), 0o644))
	for _, mounted := range []bool{false, true} {
		t.Run(fmt.Sprintf("mounted=%v", mounted), func(t *testing.T) {
			fsys, pre, root := rwMount(t, mounted)
			for _, tc := range []struct {
				target, link string
				ok           bool
			}{
				{"/etc", "/x", false},
				{canary, "/.git/COMMIT_EDITMSG", false},
				{"/", "/sub/r", false},
				{"..", "/up", false},
				{"../root/file.txt", "/up2", false}, // back in, but through the host's parent
				{"../..", "/sub/up", false},
				{"../../../x", "/sub/deeper/up", false},
				{"sub/../../x", "/s1", false},
				{"sub/deeper/../../file.txt", "/s2", false}, // ".." after a name
				{"./../x", "/s3", false},
				{"file.txt", "/ok1", true},
				{"./sub//deeper/", "/ok2", true},
				{"../file.txt", "/sub/ok3", true},
				{"../../file.txt", "/sub/deeper/ok4", true},
				{"..", "/sub/ok5", true},
				{"../../sub/../file.txt", "/sub/deeper/s4", false},
				{"nowhere/yet", "/ok7", true},
			} {
				err := fsys.SymlinkIfPossible(tc.target, pre+tc.link)
				host := filepath.Join(root, tc.link)
				got, lerr := os.Readlink(host)
				if tc.ok {
					if err != nil || lerr != nil || got != tc.target {
						t.Errorf("symlink %s -> %q: %v; on the host %q %v", tc.link, tc.target, err, got, lerr)
					}
					continue
				}
				if !errors.Is(err, syscall.EPERM) {
					t.Errorf("symlink %s -> %q: %v, want EPERM", tc.link, tc.target, err)
				}
				if lerr == nil {
					t.Errorf("symlink %s -> %q reached the host: %q", tc.link, tc.target, got)
				}
			}
			// The links kept work in the guest.
			if b, err := readAll(fsys, pre+"/sub/deeper/ok4"); err != nil || b != "inside" {
				t.Errorf("read through a kept link: %q %v", b, err)
			}
			if b, err := os.ReadFile(canary); err != nil || string(b) != "CANARY" {
				t.Fatalf("canary: %q %v", b, err)
			}
		})
	}
}

// TestHostRWSymlinkMoves: a link allowed where it was made cannot be moved
// (rename, hard link, rename of a directory above it) to a place from
// where it leaves the mount, and host links with absolute targets are not
// moved at all. A link made in the in-memory part of the namespace cannot
// be renamed or linked into the mount (EXDEV).
func TestHostRWSymlinkMoves(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside")
	must(t, os.MkdirAll(outside, 0o755))
	for _, mounted := range []bool{false, true} {
		t.Run(fmt.Sprintf("mounted=%v", mounted), func(t *testing.T) {
			fsys, pre, root := rwMount(t, mounted)
			must(t, fsys.SymlinkIfPossible("../../file.txt", pre+"/sub/deeper/l"))
			// A host-made link with an absolute target.
			must(t, os.Symlink(outside, filepath.Join(root, "sub/hostabs")))
			before := snapshot(t, root)
			for _, tc := range []struct{ op, from, to string }{
				{"rename", "/sub/deeper/l", "/l"},
				{"rename", "/sub/deeper/l", "/sub/l"},
				{"link", "/sub/deeper/l", "/l"},
				{"rename", "/sub/deeper", "/deeper"}, // l would climb out
				{"rename", "/sub", "/.git/sub"},      // hostabs would move
				{"rename", "/sub/hostabs", "/.git/COMMIT_EDITMSG"},
				{"link", "/sub/hostabs", "/.git/COMMIT_EDITMSG"},
			} {
				var err error
				if tc.op == "rename" {
					err = fsys.Rename(pre+tc.from, pre+tc.to)
				} else {
					err = fsys.Link(pre+tc.from, pre+tc.to)
				}
				if !errors.Is(err, syscall.EPERM) {
					t.Errorf("%s %s %s: %v, want EPERM", tc.op, tc.from, tc.to, err)
				}
			}
			if snapshot(t, root) != before {
				t.Fatal("a refused move changed the host")
			}
			// Moves that keep it inside are fine.
			must(t, os.Remove(filepath.Join(root, "sub/hostabs")))
			must(t, fsys.Mkdir(pre+"/sub/other", 0o755))
			must(t, fsys.Rename(pre+"/sub/deeper/l", pre+"/sub/other/l"))
			must(t, fsys.Link(pre+"/sub/other/l", pre+"/sub/deeper/l2"))
			must(t, fsys.Rename(pre+"/sub/deeper", pre+"/sub/other/deeper")) // deeper: fine
			must(t, fsys.Rename(pre+"/sub", pre+"/.git/sub"))
			if got, err := os.Readlink(filepath.Join(root, ".git/sub/other/deeper/l2")); err != nil || got != "../../file.txt" {
				t.Fatalf("moved link: %q %v", got, err)
			}
			// One that stays inside only at its new depth is refused.
			wantErrno(t, fsys.Rename(pre+"/.git/sub/other/deeper", pre+"/deeper"), syscall.EPERM)

			if !mounted {
				return
			}
			// From the in-memory part of the namespace: EXDEV, and mv's
			// fallback (a new symlink) is EPERM.
			must(t, fsys.SymlinkIfPossible(outside, "/tmp/evil"))
			wantErrno(t, fsys.Rename("/tmp/evil", "/mnt/evil"), syscall.EXDEV)
			wantErrno(t, fsys.Link("/tmp/evil", "/mnt/evil"), syscall.EXDEV)
			wantErrno(t, fsys.SymlinkIfPossible(outside, "/mnt/evil"), syscall.EPERM)
			if _, err := os.Lstat(filepath.Join(root, "evil")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the host has evil: %v", err)
			}
		})
	}
}
