package vfs_test

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/afero"
	"github.com/wasmbox/wasmbox/vfs"
)

// opaqueFS hides the concrete type of a filesystem, so that a VFS over it
// cannot take its MemFS fast path.
type opaqueFS struct{ vfs.FS }

// dump lists every path below root with type, mode, size and content.
func dump(fsys vfs.FS, root string) string {
	var out []string
	var walk func(p string)
	walk = func(p string) {
		fi, _, err := fsys.LstatIfPossible(p)
		if err != nil {
			out = append(out, p+" "+err.Error())
			return
		}
		line := fmt.Sprintf("%s %v %d", p, fi.Mode(), fi.Size())
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			t, _ := fsys.ReadlinkIfPossible(p)
			line += " -> " + t
		case fi.Mode().IsRegular():
			if f, err := fsys.Open(p); err == nil {
				b, _ := io.ReadAll(f)
				f.Close()
				line += " " + string(b)
			}
		case fi.IsDir():
			f, err := fsys.Open(p)
			if err != nil {
				break
			}
			names, _ := f.Readdirnames(-1)
			f.Close()
			sort.Strings(names)
			for _, n := range names {
				walk(strings.TrimSuffix(p, "/") + "/" + n)
			}
		}
		out = append(out, line)
	}
	walk(root)
	return strings.Join(out, "\n")
}

// FuzzFastSlow runs the same operations on a VFS over a MemFS (fast path)
// and on a VFS over the same kind of MemFS hidden behind an interface
// (general resolution), with a second MemFS and a host directory mounted
// in both. Every result
// and the final trees must be identical.
func FuzzFastSlow(f *testing.F) {
	f.Add([]byte("\x00\x02\x00\x01\x01\x06\x00\x07\x01\x02"))
	f.Add([]byte("\x05\x04\x04\x06\x0a\x02\x00\x03\x05\x04\x04\x06\x00"))
	f.Add([]byte("\x05\x01\x01\x07\x00\x00\x02\x01\x01\x01\x00\x04\x04\x01\x07\x00\x00"))
	// In the host mount: create /mnt/c/a, stat it, symlink /mnt/c/l to it,
	// list and read through the link, write at an offset.
	f.Add([]byte{1, 3, 0, 4, 4, 6, 0, 0, 7, 3, 0, 4, 4, 6, 0, 0, 5, 3, 3, 4, 4, 6, 7, 4, 4, 6, 0, 11, 3, 0, 4, 4, 6, 7, 0, 13, 3, 0, 4, 4, 6, 7, 0, 8, 3, 0, 4, 4, 6, 7, 0})
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 400 {
			prog = prog[:400]
		}
		mk := func(hide bool) vfs.FS {
			host, err := vfs.HostDir(t.TempDir(), vfs.ReadWrite)
			must(t, err)
			closer := host.(io.Closer)
			t.Cleanup(func() { closer.Close() })
			var root, sub vfs.FS = vfs.NewMemFS(), vfs.NewMemFS()
			if hide {
				root, sub, host = opaqueFS{root}, opaqueFS{sub}, opaqueFS{host}
			}
			v := vfs.New(root)
			must(t, v.Mount("/mnt/h", sub))
			must(t, v.Mount("/mnt/c", host))
			return v
		}
		fast, slow := mk(false), mk(true)
		for len(prog) >= 4 {
			op, n1, n2 := prog[0], int(prog[1])%6+1, int(prog[2])%6+1
			rest := prog[3:]
			n1 = min(n1, len(rest))
			p1 := fuzzPath(rest[:n1])
			rest = rest[n1:]
			n2 = min(n2, len(rest))
			p2 := fuzzPath(rest[:n2])
			prog = rest[n2:]
			res := [2]string{runOp(fast, op, p1, p2), runOp(slow, op, p1, p2)}
			if res[0] != res[1] {
				t.Fatalf("op %d %q %q: fast %q, slow %q", op%14, p1, p2, res[0], res[1])
			}
		}
		if a, b := dump(fast, "/"), dump(slow, "/"); a != b {
			t.Fatalf("trees differ:\nfast:\n%s\nslow:\n%s", a, b)
		}
	})
}

// runOp applies operation op to fsys and describes the outcome.
func runOp(fsys vfs.FS, op byte, p1, p2 string) string {
	var err error
	var extra string
	switch op % 14 {
	case 0:
		err = fsys.Mkdir(p1, 0o755)
	case 1:
		var fh interface {
			io.Writer
			Close() error
		}
		fh, err = fsys.OpenFile(p1, os.O_RDWR|os.O_CREATE|pick(op>>4, os.O_EXCL, os.O_TRUNC, os.O_APPEND), 0o644)
		if err == nil {
			fh.Write([]byte(p2))
			fh.Close()
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
		var fi os.FileInfo
		fi, err = fsys.Stat(p1)
		if err == nil {
			extra = fmt.Sprint(fi.Name(), fi.Mode(), fi.Size())
		}
	case 8:
		var fi os.FileInfo
		fi, _, err = fsys.LstatIfPossible(p1)
		if err == nil {
			extra = fmt.Sprint(fi.Name(), fi.Mode(), fi.Size())
		}
	case 9:
		extra, err = fsys.ReadlinkIfPossible(p1)
	case 10:
		err = fsys.Chmod(p1, os.FileMode(op)|0o400)
	case 11:
		var fh interface {
			Close() error
			Readdirnames(int) ([]string, error)
			Name() string
		}
		fh, err = fsys.OpenFile(p1, os.O_RDONLY|pick(op>>4, syscall.O_NOFOLLOW, syscall.O_DIRECTORY), 0)
		if err == nil {
			names, _ := fh.Readdirnames(-1)
			sort.Strings(names)
			extra = fh.Name() + " " + strings.Join(names, ",")
			fh.Close()
		}
	case 12:
		var fh afero.File
		fh, err = fsys.OpenFile(p1, os.O_RDWR, 0)
		if err == nil {
			err = fh.Truncate(int64(op>>4) * 3)
			fh.Close()
		}
	case 13:
		var fh afero.File
		fh, err = fsys.OpenFile(p1, os.O_RDWR|pick(op>>4, os.O_APPEND), 0)
		if err == nil {
			if _, err = fh.Seek(int64(op>>5), io.SeekStart); err == nil {
				_, err = fh.Write([]byte(p2))
			}
			if err == nil {
				buf := make([]byte, 64)
				n, _ := fh.ReadAt(buf, 1)
				extra = string(buf[:n])
			}
			fh.Close()
		}
	}
	return fmt.Sprintf("%v %s", vfs.Errno(err), extra)
}

// pick ORs flags[i] for every bit i set in bits.
func pick(bits byte, flags ...int) int {
	f := 0
	for i, fl := range flags {
		if bits&(1<<i) != 0 {
			f |= fl
		}
	}
	return f
}

// FuzzMemVsHost runs the same operations on a MemFS, on a read-write host
// directory (the Linux kernel as the oracle, under our resolver) and on a
// copy-on-write mount of a host directory. Every result and the final trees
// must be identical.
//
//	go test -fuzz=FuzzMemVsHost ./vfs
func FuzzMemVsHost(f *testing.F) {
	f.Add([]byte("\x00\x02\x00\x01\x01\x06\x00\x07\x01\x02"))
	f.Add([]byte("\x05\x04\x04\x06\x0a\x02\x00\x03\x05\x04\x04\x06\x00"))
	f.Add([]byte("\x05\x01\x01\x07\x00\x00\x02\x01\x01\x01\x00\x04\x04\x01\x07\x00\x00"))
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 200 {
			prog = prog[:200]
		}
		rw, err := vfs.HostDir(t.TempDir(), vfs.ReadWrite)
		must(t, err)
		defer rw.(io.Closer).Close()
		cow, err := vfs.HostDir(t.TempDir(), vfs.CopyOnWrite)
		must(t, err)
		defer cow.(io.Closer).Close()
		fss := []vfs.FS{vfs.NewMemFS(), rw, cow}
		for len(prog) >= 4 {
			op, n1, n2 := prog[0], int(prog[1])%6+1, int(prog[2])%6+1
			rest := prog[3:]
			n1 = min(n1, len(rest))
			p1 := fuzzPath(rest[:n1])
			rest = rest[n1:]
			n2 = min(n2, len(rest))
			p2 := fuzzPath(rest[:n2])
			prog = rest[n2:]
			want := runOp(fss[0], op, p1, p2)
			for i, fsys := range fss[1:] {
				if fsys == nil {
					continue
				}
				got := runOp(fsys, op, p1, p2)
				if k := op % 14; fsys == rw && k >= 4 && k <= 6 && got != want && strings.HasPrefix(got, "operation not permitted ") {
					// Rename, symlink, link: the read-write host mount
					// refuses to put a symlink that leaves it (an
					// absolute target, or too many ".."); MemFS has no
					// such rule. The trees differ from here on: compare
					// the others.
					fss[i+1] = nil
					continue
				}
				if got != want {
					t.Fatalf("op %d %q %q: MemFS %q, %d %q", op%14, p1, p2, want, i+1, got)
				}
			}
		}
		want := dump(fss[0], "/")
		for i, fsys := range fss[1:] {
			if fsys == nil {
				continue
			}
			if got := dump(fsys, "/"); got != want {
				t.Fatalf("trees differ:\nMemFS:\n%s\n%d:\n%s", want, i+1, got)
			}
		}
	})
}
