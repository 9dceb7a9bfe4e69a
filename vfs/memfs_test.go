package vfs_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/vfs"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErrno(t testing.TB, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
}

func writeFile(t testing.TB, fsys vfs.FS, name, data string) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	must(t, err)
	_, err = f.Write([]byte(data))
	must(t, err)
	must(t, f.Close())
}

func readFile(t testing.TB, fsys vfs.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	must(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	must(t, err)
	return string(b)
}

func stat(t testing.TB, fsys vfs.FS, name string) *vfs.Stat {
	t.Helper()
	fi, err := fsys.Stat(name)
	must(t, err)
	return fi.Sys().(*vfs.Stat)
}

// stepClock returns a clock that advances one second per call.
func stepClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func TestQuotaBytes(t *testing.T) {
	m := vfs.NewMemFS(vfs.WithQuota(vfs.Quota{Bytes: 100}))
	writeFile(t, m, "/a", strings.Repeat("a", 60))
	f, err := m.OpenFile("/b", os.O_RDWR|os.O_CREATE, 0o644)
	must(t, err)
	defer f.Close()
	_, err = f.Write([]byte(strings.Repeat("b", 30)))
	must(t, err)
	// 60 + 30 + 20 > 100: the write stores the 10 bytes that fit and
	// says ENOSPC (a short write, as on a full disk).
	n, err := f.Write([]byte(strings.Repeat("c", 20)))
	wantErrno(t, err, syscall.ENOSPC)
	if n != 10 {
		t.Fatalf("short write of %d bytes, want 10", n)
	}
	// Full: the next write stores nothing.
	n, err = f.Write([]byte("d"))
	wantErrno(t, err, syscall.ENOSPC)
	if n != 0 {
		t.Fatalf("write on a full filesystem wrote %d bytes", n)
	}
	if got := readFile(t, m, "/b"); got != strings.Repeat("b", 30)+strings.Repeat("c", 10) {
		t.Fatalf("data after ENOSPC: %q", got)
	}
	if used, _ := m.Usage(); used != 100 {
		t.Fatalf("usage %d, want 100", used)
	}
	must(t, f.Truncate(30))
	// A truncate is all or nothing.
	wantErrno(t, f.Truncate(50), syscall.ENOSPC)
	if used, _ := m.Usage(); used != 90 {
		t.Fatalf("usage %d, want 90", used)
	}
	// A write past the end whose hole takes all the room left writes
	// nothing.
	n, err = f.WriteAt([]byte("x"), 1000)
	wantErrno(t, err, syscall.ENOSPC)
	if n != 0 {
		t.Fatalf("sparse write past the quota wrote %d bytes", n)
	}
	// One whose hole leaves room writes what fits after it.
	n, err = f.WriteAt([]byte("xyz"), 38)
	wantErrno(t, err, syscall.ENOSPC)
	if n != 2 || readFile(t, m, "/b") != strings.Repeat("b", 30)+"\x00\x00\x00\x00\x00\x00\x00\x00xy" {
		t.Fatalf("sparse short write: %d bytes, file %q", n, readFile(t, m, "/b"))
	}
	must(t, f.Truncate(30))
	if used, _ := m.Usage(); used != 90 {
		t.Fatalf("usage %d, want 90", used)
	}
	// Overwriting in place needs no new space.
	_, err = f.WriteAt([]byte("BBBB"), 0)
	must(t, err)
	// Removing gives space back.
	must(t, m.Remove("/a"))
	_, err = f.Seek(0, io.SeekEnd)
	must(t, err)
	_, err = f.Write([]byte(strings.Repeat("c", 20)))
	must(t, err)
	if used, _ := m.Usage(); used != 50 {
		t.Fatalf("usage %d, want 50", used)
	}
	// Symlink targets count.
	wantErrno(t, m.SymlinkIfPossible(strings.Repeat("t", 60), "/l"), syscall.ENOSPC)
}

func TestQuotaUnlinkedOpenFileKeepsSpace(t *testing.T) {
	m := vfs.NewMemFS(vfs.WithQuota(vfs.Quota{Bytes: 10}))
	writeFile(t, m, "/a", "0123456789")
	f, err := m.Open("/a")
	must(t, err)
	must(t, m.Remove("/a"))
	if used, files := m.Usage(); used != 10 || files != 2 {
		t.Fatalf("while open: %d bytes %d files", used, files)
	}
	must(t, f.Close())
	if used, files := m.Usage(); used != 0 || files != 1 {
		t.Fatalf("after close: %d bytes %d files", used, files)
	}
}

func TestQuotaFilesAndFileSize(t *testing.T) {
	m := vfs.NewMemFS(vfs.WithQuota(vfs.Quota{Files: 3, FileSize: 8}))
	must(t, m.Mkdir("/d", 0o755))   // 2 inodes with the root
	writeFile(t, m, "/d/f", "1234") // 3
	_, err := m.Create("/d/g")
	wantErrno(t, err, syscall.ENOSPC)
	wantErrno(t, m.Mkdir("/e", 0o755), syscall.ENOSPC)
	wantErrno(t, m.SymlinkIfPossible("x", "/s"), syscall.ENOSPC)
	if _, err := m.Stat("/d/g"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("failed create left an entry: %v", err)
	}
	must(t, m.Link("/d/f", "/d/h")) // a hard link is no new inode
	f, err := m.OpenFile("/d/f", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	defer f.Close()
	// Past the largest file size a write stores what fits (a short write)
	// and fails with EFBIG; the next one stores nothing.
	n, err := f.Write([]byte("56789"))
	wantErrno(t, err, syscall.EFBIG)
	if n != 4 {
		t.Fatalf("short write of %d bytes, want 4", n)
	}
	n, err = f.Write([]byte("9"))
	wantErrno(t, err, syscall.EFBIG)
	if n != 0 {
		t.Fatalf("write at the largest size wrote %d bytes", n)
	}
	wantErrno(t, f.Truncate(9), syscall.EFBIG)
	if got := readFile(t, m, "/d/h"); got != "12345678" {
		t.Fatalf("got %q", got)
	}
}

func TestHugeSparseWriteIsRefused(t *testing.T) {
	m := vfs.NewMemFS()
	f, err := m.Create("/f")
	must(t, err)
	defer f.Close()
	_, err = f.WriteAt([]byte("x"), 1<<62)
	wantErrno(t, err, syscall.EFBIG)
	wantErrno(t, f.Truncate(1<<62), syscall.EFBIG)
	_, err = f.Seek(1<<62, io.SeekStart)
	must(t, err)
	_, err = f.Write([]byte("x"))
	wantErrno(t, err, syscall.EFBIG)
}

func TestClockAndTimes(t *testing.T) {
	clock := stepClock()
	m := vfs.NewMemFS(vfs.WithClock(clock))
	must(t, m.Mkdir("/d", 0o755))
	d1 := stat(t, m, "/d")
	writeFile(t, m, "/d/f", "x")
	d2 := stat(t, m, "/d")
	if !d2.Mtime.After(d1.Mtime) || !d2.Ctime.After(d1.Ctime) {
		t.Fatal("creating an entry did not move the directory's mtime/ctime")
	}
	f1 := stat(t, m, "/d/f")
	readFile(t, m, "/d/f")
	f2 := stat(t, m, "/d/f")
	if !f2.Atime.After(f1.Atime) || !f2.Mtime.Equal(f1.Mtime) {
		t.Fatal("read must move atime only")
	}
	must(t, m.Chmod("/d/f", 0o600))
	f3 := stat(t, m, "/d/f")
	if !f3.Ctime.After(f2.Ctime) || !f3.Mtime.Equal(f1.Mtime) {
		t.Fatal("chmod must move ctime only")
	}
	// Two filesystems with the same clock sequence have the same times.
	a, b := vfs.NewMemFS(vfs.WithClock(stepClock())), vfs.NewMemFS(vfs.WithClock(stepClock()))
	writeFile(t, a, "/x", "1")
	writeFile(t, b, "/x", "1")
	if !stat(t, a, "/x").Mtime.Equal(stat(t, b, "/x").Mtime) {
		t.Fatal("deterministic clock gave different mtimes")
	}
}

func TestChown(t *testing.T) {
	m := vfs.NewMemFS(vfs.WithOwner(1000, 1000))
	writeFile(t, m, "/f", "")
	if s := stat(t, m, "/f"); s.Uid != 1000 || s.Gid != 1000 {
		t.Fatalf("owner %d:%d", s.Uid, s.Gid)
	}
	must(t, m.Chown("/f", 0, -1))
	if s := stat(t, m, "/f"); s.Uid != 0 || s.Gid != 1000 {
		t.Fatalf("owner %d:%d", s.Uid, s.Gid)
	}
}

func TestDevices(t *testing.T) {
	v, err := vfs.NewDefault(vfs.WithRandom(bytes.NewReader(bytes.Repeat([]byte{7}, 64))))
	must(t, err)
	f, err := v.OpenFile("/dev/null", os.O_RDWR|os.O_TRUNC, 0)
	must(t, err)
	n, err := f.Write([]byte("gone"))
	if n != 4 || err != nil {
		t.Fatalf("write /dev/null: %d %v", n, err)
	}
	if n, err := f.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("read /dev/null: %d %v", n, err)
	}
	f.Close()
	z, err := v.Open("/dev/zero")
	must(t, err)
	buf := []byte("xxxx")
	_, err = io.ReadFull(z, buf)
	must(t, err)
	if !bytes.Equal(buf, make([]byte, 4)) {
		t.Fatalf("zero: %v", buf)
	}
	z.Close()
	r, err := v.Open("/dev/urandom")
	must(t, err)
	_, err = io.ReadFull(r, buf)
	must(t, err)
	if !bytes.Equal(buf, []byte{7, 7, 7, 7}) {
		t.Fatalf("seeded random: %v", buf)
	}
	r.Close()
	fi, err := v.Stat("/dev/null")
	must(t, err)
	if fi.Mode()&os.ModeCharDevice == 0 || fi.Mode().Perm() != 0o666 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

func TestForkIsIndependent(t *testing.T) {
	m := vfs.NewMemFS(vfs.WithQuota(vfs.Quota{Bytes: 1 << 20}))
	must(t, m.MkdirAll("/a/b", 0o755))
	writeFile(t, m, "/a/b/f", "original")
	must(t, m.Link("/a/b/f", "/a/hard"))
	must(t, m.SymlinkIfPossible("b/f", "/a/sym"))
	ino := stat(t, m, "/a/b/f").Ino

	c := m.Fork()
	if readFile(t, c, "/a/sym") != "original" || stat(t, c, "/a/b/f").Ino != ino {
		t.Fatal("fork lost content or inode numbers")
	}
	// Writes on either side stay on that side.
	f, err := c.OpenFile("/a/b/f", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.Write([]byte("+child"))
	must(t, err)
	must(t, f.Close())
	writeFile(t, m, "/a/new", "parent only")
	if readFile(t, m, "/a/b/f") != "original" {
		t.Fatal("child write leaked into the parent")
	}
	if readFile(t, c, "/a/hard") != "original+child" {
		t.Fatal("hard link not preserved in the fork")
	}
	if _, err := c.Stat("/a/new"); !errors.Is(err, syscall.ENOENT) {
		t.Fatal("parent create leaked into the child")
	}
	// In-place overwrite (no growth) of shared data must also copy.
	g, err := m.OpenFile("/a/b/f", os.O_WRONLY, 0)
	must(t, err)
	_, err = g.WriteAt([]byte("O"), 0)
	must(t, err)
	must(t, g.Close())
	if readFile(t, c, "/a/b/f") != "original+child" || readFile(t, m, "/a/b/f") != "Original" {
		t.Fatal("in-place write on shared data")
	}
	if q := c.Quota(); q.Bytes != 1<<20 {
		t.Fatalf("fork quota %+v", q)
	}
	used, _ := c.Usage()
	if want := int64(len("original+child") + len("b/f")); used != want {
		t.Fatalf("fork usage %d, want %d", used, want)
	}
}

func TestForkConcurrentWithWrites(t *testing.T) {
	m := vfs.NewMemFS()
	writeFile(t, m, "/f", "")
	f, err := m.OpenFile("/f", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	defer f.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			f.Write([]byte("0123456789"))
		}
	}()
	var forks []*vfs.MemFS
	for i := 0; i < 20; i++ {
		forks = append(forks, m.Fork())
	}
	<-done
	for _, c := range forks {
		got := readFile(t, c, "/f")
		if len(got)%10 != 0 || strings.Trim(got, "0123456789") != "" {
			t.Fatalf("fork saw a torn write: %d bytes", len(got))
		}
	}
}

func TestSeekErrors(t *testing.T) {
	m := vfs.NewMemFS()
	writeFile(t, m, "/f", "abc")
	f, err := m.Open("/f")
	must(t, err)
	defer f.Close()
	_, err = f.Seek(-1, io.SeekStart)
	wantErrno(t, err, syscall.EINVAL)
	_, err = f.Seek(0, 42)
	wantErrno(t, err, syscall.EINVAL)
	pos, err := f.Seek(-1, io.SeekEnd)
	must(t, err)
	if pos != 2 {
		t.Fatalf("pos %d", pos)
	}
}

// Many goroutines hammer one directory: creates, renames over each other,
// links, removes and listings. Run with -race.
func TestHammerNamespace(t *testing.T) {
	m := vfs.NewMemFS()
	must(t, m.Mkdir("/h", 0o755))
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			names := []string{"/h/a", "/h/b", "/h/c", "/h/d"}
			for i := 0; i < 300; i++ {
				a, b := names[(i+w)%4], names[(i*7+w)%4]
				switch i % 6 {
				case 0:
					if f, err := m.Create(a); err == nil {
						f.Write([]byte("x"))
						f.Close()
					}
				case 1:
					m.Rename(a, b)
				case 2:
					m.Link(a, b)
				case 3:
					m.Remove(a)
				case 4:
					if f, err := m.Open("/h"); err == nil {
						f.Readdir(-1)
						f.Close()
					}
				case 5:
					m.Mkdir(a, 0o755)
				}
			}
		}(w)
	}
	wg.Wait()
	// Every entry left is consistent: link counts match the namespace.
	f, err := m.Open("/h")
	must(t, err)
	fis, err := f.Readdir(-1)
	must(t, err)
	f.Close()
	count := map[uint64]uint64{}
	for _, fi := range fis {
		if !fi.IsDir() {
			count[fi.Sys().(*vfs.Stat).Ino]++
		}
	}
	for _, fi := range fis {
		s := fi.Sys().(*vfs.Stat)
		if !fi.IsDir() && s.Nlink != count[s.Ino] {
			t.Fatalf("%s: nlink %d but %d names", fi.Name(), s.Nlink, count[s.Ino])
		}
	}
}

func TestErrno(t *testing.T) {
	cases := []struct {
		err  error
		want syscall.Errno
	}{
		{nil, 0},
		{&os.PathError{Op: "open", Path: "/x", Err: syscall.ELOOP}, syscall.ELOOP},
		{&os.LinkError{Op: "rename", Old: "a", New: "b", Err: syscall.EXDEV}, syscall.EXDEV},
		{os.ErrNotExist, syscall.ENOENT},
		{os.ErrClosed, syscall.EBADF},
		{&os.PathError{Op: "openat", Path: "x", Err: errors.New("path escapes from parent")}, syscall.EACCES},
		{&os.PathError{Op: "writeat", Path: "x", Err: errors.New("os: invalid use of WriteAt on file opened with O_APPEND")}, syscall.EINVAL},
		{errors.New("something else"), syscall.EIO},
	}
	for _, c := range cases {
		if got := vfs.Errno(c.err); got != c.want {
			t.Errorf("Errno(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestDirLinkCounts(t *testing.T) {
	m := vfs.NewMemFS()
	must(t, m.MkdirAll("/p1/d/sub", 0o755))
	must(t, m.Mkdir("/p2", 0o755))
	nl := func(p string) uint64 { return stat(t, m, p).Nlink }
	if nl("/") != 4 || nl("/p1") != 3 || nl("/p1/d") != 3 || nl("/p2") != 2 {
		t.Fatalf("nlink / %d /p1 %d /p1/d %d /p2 %d", nl("/"), nl("/p1"), nl("/p1/d"), nl("/p2"))
	}
	must(t, m.Rename("/p1/d", "/p2/d"))
	if nl("/p1") != 2 || nl("/p2") != 3 || nl("/p2/d") != 3 {
		t.Fatalf("after rename: /p1 %d /p2 %d /p2/d %d", nl("/p1"), nl("/p2"), nl("/p2/d"))
	}
	// ".." of the moved directory is its new parent.
	writeFile(t, m, "/p2/marker", "here")
	if readFile(t, m, "/p2/d/sub/../../marker") != "here" {
		t.Fatal(".. after rename")
	}
	must(t, m.RemoveAll("/p2/d"))
	if nl("/p2") != 2 {
		t.Fatalf("after RemoveAll: /p2 %d", nl("/p2"))
	}
}

// TestWithDevice: a MemFS made WithDevice has that device number, and so
// do its forks; without it, every MemFS and fork has a new one.
func TestWithDevice(t *testing.T) {
	dev := func(m *vfs.MemFS) uint64 {
		fi, err := m.Stat("/")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*vfs.Stat).Dev
	}
	const fixed = vfs.FixedDeviceBase + 7
	a, b := vfs.NewMemFS(vfs.WithDevice(fixed)), vfs.NewMemFS(vfs.WithDevice(fixed))
	if dev(a) != fixed || dev(b) != fixed || dev(a.Fork()) != fixed {
		t.Fatalf("devices %d %d %d, want %d", dev(a), dev(b), dev(a.Fork()), fixed)
	}
	c := vfs.NewMemFS()
	if d := dev(c); d == dev(vfs.NewMemFS()) || d == dev(c.Fork()) || d >= vfs.FixedDeviceBase {
		t.Fatalf("counter devices are not new: %d", d)
	}
}
