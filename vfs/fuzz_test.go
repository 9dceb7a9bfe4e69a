package vfs_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

// Components the fuzzer builds paths from: names that exist, "..", ".",
// mount points, symlink names, and a too-long name.
var fuzzComps = []string{"a", "b", "..", ".", "mnt", "h", "c", "l", "", "x", "../..", strings.Repeat("n", 300)}

func fuzzPath(b []byte) string {
	if len(b) == 0 {
		return "/"
	}
	var sb strings.Builder
	if b[0]&1 == 0 {
		sb.WriteByte('/')
	}
	n := int(b[0]>>1)%4 + 1
	for i := 1; i <= n && i < len(b); i++ {
		if i > 1 {
			sb.WriteByte('/')
		}
		sb.WriteString(fuzzComps[int(b[i])%len(fuzzComps)])
	}
	if b[0]&0x80 != 0 {
		sb.WriteByte('/')
	}
	return sb.String()
}

// FuzzPathOps runs random sequences of path operations against a VFS with a
// host read-write mount, a copy-on-write mount and a read-only mount. No
// sequence may panic, every error must carry an Errno, and the host outside
// the mounts (and the host below the cow and ro mounts) must never change.
//
//	go test -fuzz=FuzzPathOps ./vfs
func FuzzPathOps(f *testing.F) {
	f.Add([]byte("\x00\x02\x00\x01\x01\x06\x00\x07\x01\x02"))
	f.Add([]byte("\x05\x04\x04\x06\x0a\x02\x00\x03\x05\x04\x04\x06\x00"))
	f.Add([]byte("\x07\x06\x0a\x0a\x0a\x01\x00\x04\x05\x04"))
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 400 {
			prog = prog[:400]
		}
		base := t.TempDir()
		for _, d := range []string{"outside", "rw/a", "cow/a", "ro/a"} {
			must(t, os.MkdirAll(filepath.Join(base, d), 0o755))
		}
		must(t, os.WriteFile(filepath.Join(base, "outside/secret"), []byte("S"), 0o644))
		for _, d := range []string{"rw", "cow", "ro"} {
			must(t, os.WriteFile(filepath.Join(base, d, "a/f"), []byte("F"), 0o644))
			must(t, os.Symlink("../../outside", filepath.Join(base, d, "l")))
		}
		outside, cowSnap, roSnap := snapshot(t, filepath.Join(base, "outside")), snapshot(t, filepath.Join(base, "cow")), snapshot(t, filepath.Join(base, "ro"))

		v := vfs.New(vfs.NewMemFS(vfs.WithQuota(vfs.Quota{Bytes: 1 << 16, Files: 200})))
		for _, m := range []struct {
			dir   string
			mode  vfs.MountMode
			guest string
		}{{"rw", vfs.ReadWrite, "/mnt/h"}, {"cow", vfs.CopyOnWrite, "/mnt/c"}, {"ro", vfs.ReadOnly, "/a/ro"}} {
			h, err := vfs.HostDir(filepath.Join(base, m.dir), m.mode)
			must(t, err)
			defer h.(io.Closer).Close()
			must(t, v.Mount(m.guest, h))
		}
		var fsys vfs.FS = v
		var open []interface{ Close() error }
		defer func() {
			for _, f := range open {
				f.Close()
			}
		}()
		for len(prog) >= 4 {
			op, n1, n2 := prog[0], int(prog[1])%6+1, int(prog[2])%6+1
			rest := prog[3:]
			if n1 > len(rest) {
				n1 = len(rest)
			}
			p1 := fuzzPath(rest[:n1])
			rest = rest[n1:]
			if n2 > len(rest) {
				n2 = len(rest)
			}
			p2 := fuzzPath(rest[:n2])
			prog = rest[n2:]
			var err error
			switch op % 16 {
			case 0:
				err = fsys.Mkdir(p1, 0o755)
			case 1:
				var f interface{ Close() error }
				f, err = fsys.OpenFile(p1, os.O_RDWR|os.O_CREATE|pick(op>>4, os.O_EXCL, os.O_TRUNC, os.O_APPEND), 0o644)
				if err == nil {
					open = append(open, f)
					if w, ok := f.(io.Writer); ok {
						w.Write([]byte(p2))
					}
				}
			case 2:
				err = fsys.Remove(p1)
			case 3:
				err = fsys.RemoveAll(p1)
			case 4:
				err = fsys.Rename(p1, p2)
			case 5:
				err = fsys.SymlinkIfPossible(p2, p1)
			case 6:
				err = fsys.Link(p1, p2)
			case 7:
				_, err = fsys.Stat(p1)
			case 8:
				_, _, err = fsys.LstatIfPossible(p1)
			case 9:
				_, err = fsys.ReadlinkIfPossible(p1)
			case 10:
				var f interface {
					io.Reader
					Close() error
					Readdir(int) ([]os.FileInfo, error)
				}
				f, err = fsys.Open(p1)
				if err == nil {
					io.Copy(io.Discard, f)
					f.Readdir(-1)
					f.Close()
				}
			case 11:
				err = fsys.Chmod(p1, os.FileMode(op)|0o400)
			case 12:
				err = fsys.MkdirAll(p1, 0o755)
			case 13:
				fsys = vfs.Fork(fsys)
			case 14:
				var f interface{ Close() error }
				f, err = fsys.OpenFile(p1, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
				if err == nil {
					f.Close()
				}
			case 15:
				err = fsys.Chtimes(p1, fsysTime, fsysTime)
			}
			if err != nil && vfs.Errno(err) == syscall.EIO {
				t.Fatalf("op %d %q %q: unclassified error %v", op%16, p1, p2, err)
			}
			var pe *os.PathError
			var le *os.LinkError
			if err != nil && !errors.As(err, &pe) && !errors.As(err, &le) {
				t.Fatalf("op %d %q %q: error %T %v", op%16, p1, p2, err, err)
			}
		}
		if snapshot(t, filepath.Join(base, "outside")) != outside {
			t.Fatal("the host outside the mounts changed")
		}
		if snapshot(t, filepath.Join(base, "cow")) != cowSnap {
			t.Fatal("the host below a copy-on-write mount changed")
		}
		if snapshot(t, filepath.Join(base, "ro")) != roSnap {
			t.Fatal("the host below a read-only mount changed")
		}
	})
}
