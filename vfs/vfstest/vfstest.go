// Package vfstest is the conformance suite that every vfs.FS
// implementation passes: the same POSIX behaviour tests run against the
// in-memory filesystem, the mount table, host mounts and copy-on-write
// mounts.
//
//	func TestConformance(t *testing.T) {
//		vfstest.Run(t, func(t *testing.T) vfs.FS { return vfs.NewMemFS() })
//	}
package vfstest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/vfs"
)

// Run runs every conformance test against filesystems made by newFS. Each
// subtest gets a fresh, empty, writable filesystem.
func Run(t *testing.T, newFS func(t *testing.T) vfs.FS) {
	RunOptions(t, newFS, Options{})
}

// Options describe the documented limits of a filesystem under test.
type Options struct {
	// RelativeSymlinksOnly: the filesystem refuses symlinks with an
	// absolute target with EPERM (a read-write host mount, see
	// vfs.HostDir). The suite checks the refusal and goes on with the
	// equivalent relative target.
	RelativeSymlinksOnly bool
}

// RunOptions is Run for a filesystem with the limits o.
func RunOptions(t *testing.T, newFS func(t *testing.T) vfs.FS, o Options) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newFS(t), o)
		})
	}
}

type testCase struct {
	name string
	fn   func(t *testing.T, fsys vfs.FS, o Options)
}

// symlink makes the symlink name -> target. Under RelativeSymlinksOnly an
// absolute target must be refused with EPERM, and the link is made with
// the relative target that means the same (name's directory has no
// symlinks in the suite).
func symlink(t *testing.T, fsys vfs.FS, o Options, target, name string) error {
	t.Helper()
	if o.RelativeSymlinksOnly && strings.HasPrefix(target, "/") {
		wantErrno(t, fsys.SymlinkIfPossible(target, name), syscall.EPERM)
		r, err := filepath.Rel(path.Dir(name), target)
		if err != nil {
			t.Fatal(err)
		}
		target = filepath.ToSlash(r)
	}
	return fsys.SymlinkIfPossible(target, name)
}

// Helpers.

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErrno(t *testing.T, err error, want syscall.Errno) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v (%d)", want, int(want))
	}
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
	var pe *os.PathError
	var le *os.LinkError
	if !errors.As(err, &pe) && !errors.As(err, &le) {
		t.Fatalf("error %v (%T) is neither *os.PathError nor *os.LinkError", err, err)
	}
}

func write(t *testing.T, fsys vfs.FS, name, data string) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	must(t, err)
	_, err = f.Write([]byte(data))
	must(t, err)
	must(t, f.Close())
}

func read(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	must(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	must(t, err)
	return string(b)
}

func exists(fsys vfs.FS, name string) bool {
	_, _, err := fsys.LstatIfPossible(name)
	return err == nil
}

func names(t *testing.T, fsys vfs.FS, dir string) string {
	t.Helper()
	f, err := fsys.Open(dir)
	must(t, err)
	defer f.Close()
	n, err := f.Readdirnames(-1)
	must(t, err)
	sort.Strings(n)
	return strings.Join(n, ",")
}

func sys(t *testing.T, fi os.FileInfo) *vfs.Stat {
	t.Helper()
	s, ok := fi.Sys().(*vfs.Stat)
	if !ok {
		t.Fatalf("Sys() of %s is %T, want *vfs.Stat", fi.Name(), fi.Sys())
	}
	return s
}

func mkdirs(t *testing.T, fsys vfs.FS, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		must(t, fsys.Mkdir(d, 0o755))
	}
}

var tests = []testCase{
	{"CreateWriteRead", func(t *testing.T, fsys vfs.FS, _ Options) {
		write(t, fsys, "/a", "hello")
		if got := read(t, fsys, "/a"); got != "hello" {
			t.Fatalf("read %q", got)
		}
		fi, err := fsys.Stat("/a")
		must(t, err)
		if fi.Size() != 5 || !fi.Mode().IsRegular() || fi.Name() != "a" {
			t.Fatalf("stat: size %d mode %v name %q", fi.Size(), fi.Mode(), fi.Name())
		}
		if s := sys(t, fi); s.Ino == 0 || s.Nlink != 1 {
			t.Fatalf("stat: ino %d nlink %d", s.Ino, s.Nlink)
		}
		f, err := fsys.Create("/a")
		must(t, err)
		must(t, f.Close())
		if got := read(t, fsys, "/a"); got != "" {
			t.Fatalf("Create did not truncate: %q", got)
		}
		if got := read(t, fsys, "a"); got != "" {
			t.Fatalf("relative name: %q", got)
		}
	}},
	{"OpenErrors", func(t *testing.T, fsys vfs.FS, _ Options) {
		write(t, fsys, "/f", "x")
		mkdirs(t, fsys, "/d")
		cases := []struct {
			name string
			flag int
			want syscall.Errno
		}{
			{"/missing", os.O_RDONLY, syscall.ENOENT},
			{"/missing/x", os.O_RDWR | os.O_CREATE, syscall.ENOENT},
			{"/f/x", os.O_RDONLY, syscall.ENOTDIR},
			{"/f/x", os.O_RDWR | os.O_CREATE, syscall.ENOTDIR},
			{"/f/", os.O_RDONLY, syscall.ENOTDIR},
			{"/f", os.O_RDWR | os.O_CREATE | os.O_EXCL, syscall.EEXIST},
			{"/d", os.O_RDWR | os.O_CREATE | os.O_EXCL, syscall.EEXIST},
			{"/d", os.O_WRONLY, syscall.EISDIR},
			{"/d", os.O_RDWR, syscall.EISDIR},
			{"/f", os.O_RDONLY | syscall.O_DIRECTORY, syscall.ENOTDIR},
			{"/new/", os.O_RDWR | os.O_CREATE, syscall.EISDIR},
			{"/" + strings.Repeat("n", 256), os.O_RDWR | os.O_CREATE, syscall.ENAMETOOLONG},
			{"/" + strings.Repeat("d/", 2100), os.O_RDONLY, syscall.ENAMETOOLONG},
			{"/nul\x00name", os.O_RDWR | os.O_CREATE, syscall.EINVAL},
		}
		for _, c := range cases {
			f, err := fsys.OpenFile(c.name, c.flag, 0o644)
			if err == nil {
				f.Close()
			}
			t.Run(strings.ReplaceAll(fmt.Sprintf("%s_%#x", c.name, c.flag), "/", "_"), func(t *testing.T) {
				wantErrno(t, err, c.want)
			})
		}
		if exists(fsys, "/new") {
			t.Fatal("a failed create left /new behind")
		}
		f, err := fsys.OpenFile("/d", os.O_RDONLY|syscall.O_DIRECTORY, 0)
		must(t, err)
		must(t, f.Close())
	}},
	{"MkdirRemove", func(t *testing.T, fsys vfs.FS, _ Options) {
		wantErrno(t, fsys.Mkdir("/a/b", 0o755), syscall.ENOENT)
		mkdirs(t, fsys, "/a", "/a/b")
		wantErrno(t, fsys.Mkdir("/a", 0o755), syscall.EEXIST)
		write(t, fsys, "/f", "")
		wantErrno(t, fsys.Mkdir("/f/x", 0o755), syscall.ENOTDIR)
		wantErrno(t, fsys.Mkdir("/f", 0o755), syscall.EEXIST)
		wantErrno(t, fsys.Remove("/a"), syscall.ENOTEMPTY)
		wantErrno(t, fsys.Remove("/missing"), syscall.ENOENT)
		wantErrno(t, fsys.Remove("/f/"), syscall.ENOTDIR)
		must(t, fsys.Remove("/a/b"))
		must(t, fsys.Remove("/a"))
		must(t, fsys.Remove("/f"))
		if exists(fsys, "/a") || exists(fsys, "/f") {
			t.Fatal("still there after Remove")
		}
		must(t, fsys.Mkdir("/t/", 0o755))
		fi, err := fsys.Stat("/t/")
		must(t, err)
		if !fi.IsDir() {
			t.Fatal("Mkdir with trailing slash did not make a directory")
		}
		must(t, fsys.MkdirAll("/x/y/z", 0o755))
		must(t, fsys.MkdirAll("/x/y/z", 0o755))
		if !exists(fsys, "/x/y/z") {
			t.Fatal("MkdirAll")
		}
		must(t, fsys.MkdirAll("/t/../f2/q", 0o755))
		if !exists(fsys, "/f2/q") {
			t.Fatal("MkdirAll through ..")
		}
	}},
	{"RemoveAll", func(t *testing.T, fsys vfs.FS, o Options) {
		must(t, fsys.MkdirAll("/r/a/b", 0o755))
		write(t, fsys, "/r/a/b/f", "1")
		write(t, fsys, "/r/g", "2")
		write(t, fsys, "/keep", "3")
		must(t, symlink(t, fsys, o, "/keep", "/r/link"))
		must(t, fsys.RemoveAll("/r"))
		if exists(fsys, "/r") {
			t.Fatal("RemoveAll left /r")
		}
		if read(t, fsys, "/keep") != "3" {
			t.Fatal("RemoveAll followed a symlink")
		}
		must(t, fsys.RemoveAll("/r"))
		must(t, fsys.RemoveAll("/missing/deeper"))
	}},
	{"IndependentOffsets", func(t *testing.T, fsys vfs.FS, _ Options) {
		write(t, fsys, "/f", "0123456789")
		a, err := fsys.Open("/f")
		must(t, err)
		defer a.Close()
		b, err := fsys.Open("/f")
		must(t, err)
		defer b.Close()
		buf := make([]byte, 4)
		_, err = io.ReadFull(a, buf)
		must(t, err)
		if string(buf) != "0123" {
			t.Fatalf("a read %q", buf)
		}
		_, err = io.ReadFull(b, buf[:2])
		must(t, err)
		if string(buf[:2]) != "01" {
			t.Fatalf("b read %q", buf[:2])
		}
		_, err = io.ReadFull(a, buf)
		must(t, err)
		if string(buf) != "4567" {
			t.Fatalf("a second read %q", buf)
		}
		n, err := a.Read(buf)
		if n != 2 || string(buf[:2]) != "89" {
			t.Fatalf("a tail: %d %q %v", n, buf[:n], err)
		}
		if n, err := a.Read(buf); n != 0 || err != io.EOF {
			t.Fatalf("at end: %d %v", n, err)
		}
	}},
	{"Append", func(t *testing.T, fsys vfs.FS, _ Options) {
		write(t, fsys, "/f", "ab")
		ap, err := fsys.OpenFile("/f", os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		defer ap.Close()
		other, err := fsys.OpenFile("/f", os.O_WRONLY, 0)
		must(t, err)
		defer other.Close()
		_, err = ap.Write([]byte("cd"))
		must(t, err)
		_, err = other.Seek(0, io.SeekEnd)
		must(t, err)
		_, err = other.Write([]byte("EF"))
		must(t, err)
		_, err = ap.Seek(0, io.SeekStart)
		must(t, err)
		_, err = ap.Write([]byte("gh"))
		must(t, err)
		if got := read(t, fsys, "/f"); got != "abcdEFgh" {
			t.Fatalf("got %q, want abcdEFgh", got)
		}
	}},
	{"ReadAtWriteAt", func(t *testing.T, fsys vfs.FS, _ Options) {
		f, err := fsys.OpenFile("/f", os.O_RDWR|os.O_CREATE, 0o644)
		must(t, err)
		defer f.Close()
		_, err = f.Write([]byte("hello world"))
		must(t, err)
		_, err = f.WriteAt([]byte("W"), 6)
		must(t, err)
		buf := make([]byte, 5)
		_, err = f.ReadAt(buf, 6)
		must(t, err)
		if string(buf) != "World" {
			t.Fatalf("ReadAt %q", buf)
		}
		if pos, _ := f.Seek(0, io.SeekCurrent); pos != 11 {
			t.Fatalf("offset moved to %d", pos)
		}
		if n, err := f.ReadAt(buf, 8); n != 3 || err != io.EOF {
			t.Fatalf("short ReadAt: %d %v", n, err)
		}
		_, err = f.WriteAt([]byte("!"), 13)
		must(t, err)
		if got := read(t, fsys, "/f"); got != "hello World\x00\x00!" {
			t.Fatalf("sparse WriteAt: %q", got)
		}
	}},
	{"Truncate", func(t *testing.T, fsys vfs.FS, _ Options) {
		f, err := fsys.OpenFile("/f", os.O_RDWR|os.O_CREATE, 0o644)
		must(t, err)
		defer f.Close()
		_, err = f.Write([]byte("abcdefgh"))
		must(t, err)
		must(t, f.Truncate(3))
		must(t, f.Truncate(6))
		if got := read(t, fsys, "/f"); got != "abc\x00\x00\x00" {
			t.Fatalf("truncate shrink+grow: %q", got)
		}
		_, err = f.Write([]byte("Z")) // offset 8, past the end
		must(t, err)
		if got := read(t, fsys, "/f"); got != "abc\x00\x00\x00\x00\x00Z" {
			t.Fatalf("write past end: %q", got)
		}
		wantErrno(t, f.Truncate(-1), syscall.EINVAL)
		r, err := fsys.Open("/f")
		must(t, err)
		defer r.Close()
		if r.Truncate(0) == nil {
			t.Fatal("Truncate on a read-only handle succeeded")
		}
		g, err := fsys.OpenFile("/f", os.O_WRONLY|os.O_TRUNC, 0)
		must(t, err)
		must(t, g.Close())
		if fi, _ := fsys.Stat("/f"); fi.Size() != 0 {
			t.Fatalf("O_TRUNC left %d bytes", fi.Size())
		}
	}},
	{"Readdir", func(t *testing.T, fsys vfs.FS, _ Options) {
		mkdirs(t, fsys, "/d", "/d/sub")
		for _, n := range []string{"c", "a", "b"} {
			write(t, fsys, "/d/"+n, n)
		}
		if got := names(t, fsys, "/d"); got != "a,b,c,sub" {
			t.Fatalf("names %q", got)
		}
		f, err := fsys.Open("/d")
		must(t, err)
		defer f.Close()
		var got []string
		for {
			fis, err := f.Readdir(1)
			if err == io.EOF {
				break
			}
			must(t, err)
			if len(fis) != 1 {
				t.Fatalf("Readdir(1) returned %d", len(fis))
			}
			if fis[0].Name() == "sub" && !fis[0].IsDir() {
				t.Fatal("sub is not a dir")
			}
			sys(t, fis[0])
			got = append(got, fis[0].Name())
		}
		if len(got) != 4 {
			t.Fatalf("resumable Readdir got %v", got)
		}
		if fis, err := f.Readdir(-1); err != nil || len(fis) != 0 {
			t.Fatalf("Readdir(-1) at end: %d %v", len(fis), err)
		}
		write(t, fsys, "/d/new", "")
		_, err = f.Seek(0, io.SeekStart)
		must(t, err)
		fis, err := f.Readdir(-1)
		must(t, err)
		if len(fis) != 5 {
			t.Fatalf("after rewind Readdir got %d entries, want 5 (with the new one)", len(fis))
		}
		for _, fi := range fis {
			li, _, err := fsys.LstatIfPossible("/d/" + fi.Name())
			must(t, err)
			if sys(t, fi).Ino != sys(t, li).Ino || fi.Mode() != li.Mode() {
				t.Fatalf("%s: Readdir says ino %d mode %v, Lstat %d %v", fi.Name(), sys(t, fi).Ino, fi.Mode(), sys(t, li).Ino, li.Mode())
			}
		}
		n, err := f.Readdirnames(2)
		if err != io.EOF || len(n) != 0 {
			t.Fatalf("Readdirnames at end: %v %v", n, err)
		}
		if _, err := f.Read(make([]byte, 1)); err == nil {
			t.Fatal("Read on a directory succeeded")
		}
		r, err := fsys.Open("/d/a")
		must(t, err)
		defer r.Close()
		if _, err := r.Readdir(-1); err == nil {
			t.Fatal("Readdir on a file succeeded")
		}
	}},
	{"Rename", func(t *testing.T, fsys vfs.FS, _ Options) {
		write(t, fsys, "/a", "A")
		write(t, fsys, "/b", "B")
		old, err := fsys.Open("/b")
		must(t, err)
		defer old.Close()
		must(t, fsys.Rename("/a", "/b"))
		if exists(fsys, "/a") || read(t, fsys, "/b") != "A" {
			t.Fatal("rename over a file")
		}
		if b, _ := io.ReadAll(old); string(b) != "B" {
			t.Fatalf("replaced file, still open, reads %q", b)
		}
		mkdirs(t, fsys, "/d", "/d/in", "/e", "/full")
		write(t, fsys, "/full/x", "")
		write(t, fsys, "/d/in/f", "F")
		wantErrno(t, fsys.Rename("/d", "/full"), syscall.ENOTEMPTY)
		wantErrno(t, fsys.Rename("/d", "/d/in/deeper"), syscall.EINVAL)
		wantErrno(t, fsys.Rename("/d", "/d/in"), syscall.EINVAL)
		wantErrno(t, fsys.Rename("/b", "/e"), syscall.EISDIR)
		wantErrno(t, fsys.Rename("/d", "/b"), syscall.ENOTDIR)
		wantErrno(t, fsys.Rename("/missing", "/z"), syscall.ENOENT)
		wantErrno(t, fsys.Rename("/b", "/nodir/z"), syscall.ENOENT)
		wantErrno(t, fsys.Rename("/b/", "/z"), syscall.ENOTDIR)
		must(t, fsys.Rename("/d", "/e"))
		if exists(fsys, "/d") || read(t, fsys, "/e/in/f") != "F" {
			t.Fatal("rename dir over empty dir")
		}
		must(t, fsys.Rename("/e", "/e2/"))
		must(t, fsys.Rename("/b", "/b"))
		if read(t, fsys, "/b") != "A" {
			t.Fatal("rename onto itself")
		}
		must(t, fsys.Rename("/e2/in/f", "/e2/f"))
		if names(t, fsys, "/e2") != "f,in" {
			t.Fatalf("names %q", names(t, fsys, "/e2"))
		}
	}},
	{"Symlinks", func(t *testing.T, fsys vfs.FS, o Options) {
		mkdirs(t, fsys, "/d", "/d/sub")
		write(t, fsys, "/d/sub/f", "data")
		must(t, fsys.SymlinkIfPossible("sub/f", "/d/rel"))
		must(t, symlink(t, fsys, o, "/d/sub", "/abs"))
		must(t, fsys.SymlinkIfPossible("..", "/d/sub/up"))
		must(t, symlink(t, fsys, o, "/nowhere", "/dangling"))
		if read(t, fsys, "/d/rel") != "data" || read(t, fsys, "/abs/f") != "data" || read(t, fsys, "/d/sub/up/sub/up/rel") != "data" {
			t.Fatal("following symlinks")
		}
		fi, err := fsys.Stat("/abs")
		must(t, err)
		if !fi.IsDir() {
			t.Fatal("Stat did not follow")
		}
		fi, _, err = fsys.LstatIfPossible("/abs")
		must(t, err)
		if fi.Mode()&os.ModeSymlink == 0 {
			t.Fatal("Lstat followed")
		}
		fi, _, err = fsys.LstatIfPossible("/abs/")
		must(t, err)
		if !fi.IsDir() {
			t.Fatal("Lstat with trailing slash must follow")
		}
		target, err := fsys.ReadlinkIfPossible("/d/rel")
		must(t, err)
		if target != "sub/f" {
			t.Fatalf("readlink %q", target)
		}
		_, err = fsys.ReadlinkIfPossible("/d/sub/f")
		wantErrno(t, err, syscall.EINVAL)
		_, err = fsys.Stat("/dangling")
		wantErrno(t, err, syscall.ENOENT)
		_, _, err = fsys.LstatIfPossible("/dangling")
		must(t, err)
		wantErrno(t, fsys.SymlinkIfPossible("x", "/d/rel"), syscall.EEXIST)
		wantErrno(t, fsys.SymlinkIfPossible("nul\x00", "/d/nul"), syscall.EINVAL)
		wantErrno(t, fsys.SymlinkIfPossible("", "/d/empty"), syscall.ENOENT)
		_, err = fsys.OpenFile("/d/rel", os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		wantErrno(t, err, syscall.ELOOP)
		_, err = fsys.OpenFile("/dangling", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		wantErrno(t, err, syscall.EEXIST)
		must(t, symlink(t, fsys, o, "/d/created", "/d/tocreate"))
		write(t, fsys, "/d/tocreate", "via link")
		if read(t, fsys, "/d/created") != "via link" {
			t.Fatal("O_CREATE through a dangling symlink must create the target")
		}
		must(t, symlink(t, fsys, o, "/loop2", "/loop1"))
		must(t, symlink(t, fsys, o, "/loop1", "/loop2"))
		_, err = fsys.Stat("/loop1")
		wantErrno(t, err, syscall.ELOOP)
		_, err = fsys.Open("/loop1/x")
		wantErrno(t, err, syscall.ELOOP)
		must(t, fsys.SymlinkIfPossible("self", "/self"))
		_, err = fsys.Stat("/self")
		wantErrno(t, err, syscall.ELOOP)
		must(t, fsys.Remove("/abs"))
		if !exists(fsys, "/d/sub/f") {
			t.Fatal("removing a symlink removed its target")
		}
		must(t, fsys.Rename("/d/rel", "/rel2"))
		// A relative target is resolved from the link's new directory.
		_, err = fsys.Stat("/rel2")
		wantErrno(t, err, syscall.ENOENT)
		must(t, fsys.Chmod("/d/tocreate", 0o600))
		if fi, _ := fsys.Stat("/d/created"); fi.Mode().Perm() != 0o600 {
			t.Fatalf("Chmod through a symlink: %v", fi.Mode())
		}
		write(t, fsys, "/plain", "p")
		_, err = fsys.Stat("/d/tocreate/")
		wantErrno(t, err, syscall.ENOTDIR)
		// O_DIRECTORY follows a symlink to a directory.
		must(t, fsys.SymlinkIfPossible("sub", "/d/dirlink"))
		f, err := fsys.OpenFile("/d/dirlink", os.O_RDONLY|syscall.O_DIRECTORY, 0)
		must(t, err)
		must(t, f.Close())
	}},
	{"HardLinks", func(t *testing.T, fsys vfs.FS, _ Options) {
		write(t, fsys, "/a", "one")
		must(t, fsys.Link("/a", "/b"))
		fa, err := fsys.Stat("/a")
		must(t, err)
		fb, err := fsys.Stat("/b")
		must(t, err)
		sa, sb := sys(t, fa), sys(t, fb)
		if sa.Ino != sb.Ino || sa.Nlink != 2 || sb.Nlink != 2 {
			t.Fatalf("ino %d/%d nlink %d/%d", sa.Ino, sb.Ino, sa.Nlink, sb.Nlink)
		}
		f, err := fsys.OpenFile("/b", os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		_, err = f.Write([]byte("two"))
		must(t, err)
		must(t, f.Close())
		if read(t, fsys, "/a") != "onetwo" {
			t.Fatal("write through a hard link not visible")
		}
		must(t, fsys.Remove("/a"))
		if read(t, fsys, "/b") != "onetwo" {
			t.Fatal("remove of one link lost the data")
		}
		fb, err = fsys.Stat("/b")
		must(t, err)
		if sys(t, fb).Nlink != 1 {
			t.Fatalf("nlink after remove: %d", sys(t, fb).Nlink)
		}
		mkdirs(t, fsys, "/d")
		wantErrno(t, fsys.Link("/d", "/d2"), syscall.EPERM)
		write(t, fsys, "/c", "")
		wantErrno(t, fsys.Link("/b", "/c"), syscall.EEXIST)
		wantErrno(t, fsys.Link("/missing", "/e"), syscall.ENOENT)
		// A new name with a trailing slash names a directory: link(2)
		// refuses it.
		wantErrno(t, fsys.Link("/b", "/slash/"), syscall.ENOENT)
		if exists(fsys, "/slash") {
			t.Fatal("link with a trailing slash created the name")
		}
		fd, err := fsys.Stat("/d")
		must(t, err)
		if sys(t, fd).Nlink != 2 {
			t.Fatalf("empty dir nlink %d, want 2", sys(t, fd).Nlink)
		}
	}},
	{"UnlinkedOpenFile", func(t *testing.T, fsys vfs.FS, _ Options) {
		write(t, fsys, "/f", "still here")
		f, err := fsys.OpenFile("/f", os.O_RDWR, 0)
		must(t, err)
		must(t, fsys.Remove("/f"))
		if exists(fsys, "/f") {
			t.Fatal("name still exists")
		}
		b, err := io.ReadAll(f)
		must(t, err)
		if string(b) != "still here" {
			t.Fatalf("read %q", b)
		}
		_, err = f.Write([]byte("!"))
		must(t, err)
		fi, err := f.Stat()
		must(t, err)
		if fi.Size() != 11 {
			t.Fatalf("size %d", fi.Size())
		}
		must(t, f.Close())
		if err := f.Close(); err == nil {
			t.Fatal("second Close succeeded")
		}
		if _, err := f.Read(make([]byte, 1)); err == nil {
			t.Fatal("Read after Close succeeded")
		}
	}},
	{"DotDot", func(t *testing.T, fsys vfs.FS, _ Options) {
		must(t, fsys.MkdirAll("/a/b", 0o755))
		write(t, fsys, "/a/f", "f")
		if read(t, fsys, "/a/b/../f") != "f" || read(t, fsys, "/../../a/./f") != "f" || read(t, fsys, "a//b/..//f") != "f" {
			t.Fatal("dot-dot resolution")
		}
		if fsys.Remove("/a/b/.") == nil || fsys.Remove("/a/b/..") == nil || fsys.Remove("/") == nil {
			t.Fatal("removing . or .. or / succeeded")
		}
		if !exists(fsys, "/a/b") || !exists(fsys, "/a") {
			t.Fatal("a failed remove of . or .. removed something")
		}
		fi, err := fsys.Stat("/")
		must(t, err)
		if !fi.IsDir() {
			t.Fatal("root is not a directory")
		}
		_, err = fsys.Stat("/a/f/..")
		wantErrno(t, err, syscall.ENOTDIR)
	}},
	{"ChmodChtimes", func(t *testing.T, fsys vfs.FS, _ Options) {
		write(t, fsys, "/f", "x")
		must(t, fsys.Chmod("/f", 0o751))
		fi, err := fsys.Stat("/f")
		must(t, err)
		if fi.Mode().Perm() != 0o751 || !fi.Mode().IsRegular() {
			t.Fatalf("mode %v", fi.Mode())
		}
		mt := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
		at := time.Date(2002, 2, 3, 4, 5, 6, 0, time.UTC)
		must(t, fsys.Chtimes("/f", at, mt))
		fi, err = fsys.Stat("/f")
		must(t, err)
		if !fi.ModTime().Equal(mt) || !sys(t, fi).Atime.Equal(at) || !sys(t, fi).Mtime.Equal(mt) {
			t.Fatalf("times %v %v", fi.ModTime(), sys(t, fi).Atime)
		}
		f, err := fsys.OpenFile("/f", os.O_WRONLY, 0)
		must(t, err)
		_, err = f.Write([]byte("y"))
		must(t, err)
		must(t, f.Close())
		fi, err = fsys.Stat("/f")
		must(t, err)
		if !fi.ModTime().After(mt) {
			t.Fatalf("write did not move mtime: %v", fi.ModTime())
		}
		must(t, fsys.SymlinkIfPossible("f", "/l"))
		lt := time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)
		must(t, vfs.Lchtimes(fsys, "/l", lt, lt))
		if li, _, err := fsys.LstatIfPossible("/l"); err != nil || !li.ModTime().Equal(lt) {
			t.Fatalf("Lchtimes on the link: %v %v", li.ModTime(), err)
		}
		if fi, _ := fsys.Stat("/f"); fi.ModTime().Equal(lt) {
			t.Fatal("Lchtimes followed the link")
		}
		wantErrno(t, vfs.Lchtimes(fsys, "/nope", lt, lt), syscall.ENOENT)
		wantErrno(t, fsys.Chmod("/missing", 0o644), syscall.ENOENT)
		must(t, fsys.Chown("/f", -1, -1))
		wantErrno(t, fsys.Chown("/missing", -1, -1), syscall.ENOENT)
		wantErrno(t, fsys.Chtimes("/missing", at, mt), syscall.ENOENT)
		mkdirs(t, fsys, "/d")
		must(t, fsys.Chmod("/d", 0o700))
		if fi, _ := fsys.Stat("/d"); fi.Mode() != os.ModeDir|0o700 {
			t.Fatalf("dir mode %v", fi.Mode())
		}
	}},
	{"ClosedHandle", func(t *testing.T, fsys vfs.FS, _ Options) {
		f, err := fsys.Create("/f")
		must(t, err)
		must(t, f.Close())
		for name, err := range map[string]error{
			"write": func() error { _, err := f.Write([]byte("x")); return err }(),
			"stat":  func() error { _, err := f.Stat(); return err }(),
			"seek":  func() error { _, err := f.Seek(0, 0); return err }(),
		} {
			if vfs.Errno(err) != syscall.EBADF {
				t.Errorf("%s after close: %v, want EBADF", name, err)
			}
		}
		r, err := fsys.Open("/f")
		must(t, err)
		defer r.Close()
		if _, err := r.Write([]byte("x")); err == nil {
			t.Fatal("Write on a read-only handle succeeded")
		}
	}},
	{"Concurrent", func(t *testing.T, fsys vfs.FS, _ Options) {
		mkdirs(t, fsys, "/c")
		const workers, rounds = 8, 25
		ap, err := fsys.OpenFile("/c/log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		must(t, err)
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < rounds; i++ {
					name := fmt.Sprintf("/c/w%d-%d", w, i)
					f, err := fsys.Create(name)
					if err == nil {
						_, err = f.Write([]byte(name))
						f.Close()
					}
					if err == nil {
						_, err = ap.Write([]byte("0123456789"))
					}
					if err == nil {
						_, err = fsys.Stat(name)
					}
					if err == nil && i%2 == 0 {
						err = fsys.Rename(name, name+".r")
					}
					if err == nil && i%3 == 0 {
						err = fsys.RemoveAll(name + ".r")
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		must(t, ap.Close())
		fi, err := fsys.Stat("/c/log")
		must(t, err)
		if fi.Size() != workers*rounds*10 {
			t.Fatalf("appended %d bytes, want %d", fi.Size(), workers*rounds*10)
		}
	}},
}
