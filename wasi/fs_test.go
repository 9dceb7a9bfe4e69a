package wasi

import (
	"io"
	"io/fs"
	"sort"
	"testing"
	"time"

	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/vfs"
)

// adapterFilesystems are the vfs implementations the adapter tests run
// over: the real MemFS and the host kernel (through osFS), so every
// expectation below is also checked against real POSIX behaviour.
var adapterFilesystems = []struct {
	name string
	new  func(t testing.TB) vfs.FS
}{
	{"memfs", func(t testing.TB) vfs.FS { return vfs.NewMemFS() }},
	{"kernel", func(t testing.TB) vfs.FS { return osFS{root: t.TempDir()} }},
}

func forEachFS(t *testing.T, f func(t *testing.T, fsys vfs.FS, a experimentalsys.FS)) {
	for _, impl := range adapterFilesystems {
		t.Run(impl.name, func(t *testing.T) {
			fsys := impl.new(t)
			f(t, fsys, NewFS(fsys))
		})
	}
}

func mustErrno(t *testing.T, what string, got, want experimentalsys.Errno) {
	t.Helper()
	if got != want {
		t.Errorf("%s: errno %v, want %v", what, got, want)
	}
}

func mustOpen(t *testing.T, a experimentalsys.FS, p string, flag experimentalsys.Oflag) experimentalsys.File {
	t.Helper()
	f, errno := a.OpenFile(p, flag, 0o644)
	if errno != 0 {
		t.Fatalf("OpenFile(%q, %v): %v", p, flag, errno)
	}
	return f
}

// setupTree creates: dir/ (with file "a" inside), file (content "hello"),
// link -> file, dirlink -> dir, dangling -> nowhere.
func setupTree(t *testing.T, a experimentalsys.FS) {
	t.Helper()
	mustErrno(t, "mkdir dir", a.Mkdir("dir", 0o755), 0)
	f := mustOpen(t, a, "file", experimentalsys.O_CREAT|experimentalsys.O_RDWR)
	if n, errno := f.Write([]byte("hello")); n != 5 || errno != 0 {
		t.Fatalf("write: %d %v", n, errno)
	}
	f.Close()
	mustOpen(t, a, "dir/a", experimentalsys.O_CREAT|experimentalsys.O_WRONLY).Close()
	mustErrno(t, "symlink link", a.Symlink("file", "link"), 0)
	mustErrno(t, "symlink dirlink", a.Symlink("dir", "dirlink"), 0)
	mustErrno(t, "symlink dangling", a.Symlink("nowhere", "dangling"), 0)
}

func TestAdapterErrno(t *testing.T) {
	const (
		rd   = experimentalsys.O_RDONLY
		wr   = experimentalsys.O_WRONLY
		rdwr = experimentalsys.O_RDWR
	)
	open := func(p string, flag experimentalsys.Oflag) func(experimentalsys.FS) experimentalsys.Errno {
		return func(a experimentalsys.FS) experimentalsys.Errno {
			f, errno := a.OpenFile(p, flag, 0o644)
			if errno == 0 {
				f.Close()
			}
			return errno
		}
	}
	tests := []struct {
		name string
		op   func(experimentalsys.FS) experimentalsys.Errno
		want experimentalsys.Errno
	}{
		{"open missing", open("missing", rd), experimentalsys.ENOENT},
		{"open in missing dir", open("missing/x", rd|experimentalsys.O_CREAT), experimentalsys.ENOENT},
		{"create exclusive existing", open("file", rdwr|experimentalsys.O_CREAT|experimentalsys.O_EXCL), experimentalsys.EEXIST},
		{"O_DIRECTORY on a file", open("file", rd|experimentalsys.O_DIRECTORY), experimentalsys.ENOTDIR},
		{"O_DIRECTORY through dir symlink", open("dirlink", rd|experimentalsys.O_DIRECTORY), 0},
		{"write-open a directory", open("dir", wr), experimentalsys.EISDIR},
		{"O_NOFOLLOW on a symlink", open("link", rd|experimentalsys.O_NOFOLLOW), experimentalsys.ELOOP},
		{"follow a symlink", open("link", rd), 0},
		{"follow a dangling symlink", open("dangling", rd), experimentalsys.ENOENT},
		{"create through a dangling symlink", open("dangling", wr|experimentalsys.O_CREAT), 0},
		{"trailing slash on a file", open("file/", rd), experimentalsys.ENOTDIR},
		{"trailing slash on a dir", open("dir/", rd), 0},
		{"file as a directory", open("file/x", rd), experimentalsys.ENOTDIR},
		{"mkdir existing", func(a experimentalsys.FS) experimentalsys.Errno { return a.Mkdir("dir", 0o755) }, experimentalsys.EEXIST},
		{"mkdir under a file", func(a experimentalsys.FS) experimentalsys.Errno { return a.Mkdir("file/x", 0o755) }, experimentalsys.ENOENT},
		{"rmdir a file", func(a experimentalsys.FS) experimentalsys.Errno { return a.Rmdir("file") }, experimentalsys.ENOTDIR},
		{"rmdir a dir symlink", func(a experimentalsys.FS) experimentalsys.Errno { return a.Rmdir("dirlink") }, experimentalsys.ENOTDIR},
		{"rmdir non-empty", func(a experimentalsys.FS) experimentalsys.Errno { return a.Rmdir("dir") }, experimentalsys.ENOTEMPTY},
		{"rmdir missing", func(a experimentalsys.FS) experimentalsys.Errno { return a.Rmdir("missing") }, experimentalsys.ENOENT},
		{"unlink a dir", func(a experimentalsys.FS) experimentalsys.Errno { return a.Unlink("dir") }, experimentalsys.EISDIR},
		{"unlink a file with trailing slash", func(a experimentalsys.FS) experimentalsys.Errno { return a.Unlink("file/") }, experimentalsys.ENOTDIR},
		{"unlink a dir symlink removes the link", func(a experimentalsys.FS) experimentalsys.Errno { return a.Unlink("dirlink") }, 0},
		{"unlink missing", func(a experimentalsys.FS) experimentalsys.Errno { return a.Unlink("missing") }, experimentalsys.ENOENT},
		{"symlink over existing", func(a experimentalsys.FS) experimentalsys.Errno { return a.Symlink("x", "file") }, experimentalsys.EEXIST},
		{"symlink absolute target", func(a experimentalsys.FS) experimentalsys.Errno { return a.Symlink("/etc", "abs") }, experimentalsys.EPERM},
		{"readlink a file", func(a experimentalsys.FS) experimentalsys.Errno { _, e := a.Readlink("file"); return e }, experimentalsys.EINVAL},
		{"link a directory", func(a experimentalsys.FS) experimentalsys.Errno { return a.Link("dir", "dir2") }, experimentalsys.EPERM},
		{"link over existing", func(a experimentalsys.FS) experimentalsys.Errno { return a.Link("file", "link") }, experimentalsys.EEXIST},
		{"rename dir over file", func(a experimentalsys.FS) experimentalsys.Errno { return a.Rename("dir", "file") }, experimentalsys.ENOTDIR},
		{"rename file over dir", func(a experimentalsys.FS) experimentalsys.Errno { return a.Rename("file", "dir") }, experimentalsys.EISDIR},
		{"rename missing", func(a experimentalsys.FS) experimentalsys.Errno { return a.Rename("missing", "x") }, experimentalsys.ENOENT},
		{"stat dangling", func(a experimentalsys.FS) experimentalsys.Errno { _, e := a.Stat("dangling"); return e }, experimentalsys.ENOENT},
		{"lstat dangling", func(a experimentalsys.FS) experimentalsys.Errno { _, e := a.Lstat("dangling"); return e }, 0},
		{"utimens missing", func(a experimentalsys.FS) experimentalsys.Errno {
			return a.Utimens("missing", experimentalsys.UTIME_OMIT, experimentalsys.UTIME_OMIT)
		}, experimentalsys.ENOENT},
	}
	for _, impl := range adapterFilesystems {
		t.Run(impl.name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					a := NewFS(impl.new(t)) // a fresh tree per case: some change it
					setupTree(t, a)
					mustErrno(t, tc.name, tc.op(a), tc.want)
				})
			}
		})
	}
}

func TestAdapterFileAccessModes(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, a experimentalsys.FS) {
		setupTree(t, a)
		buf := make([]byte, 8)

		ro := mustOpen(t, a, "file", experimentalsys.O_RDONLY)
		defer ro.Close()
		if _, errno := ro.Write([]byte("x")); errno != experimentalsys.EBADF {
			t.Errorf("write on read-only: %v", errno)
		}
		if _, errno := ro.Pwrite([]byte("x"), 0); errno != experimentalsys.EBADF {
			t.Errorf("pwrite on read-only: %v", errno)
		}
		if errno := ro.Truncate(0); errno != experimentalsys.EINVAL {
			t.Errorf("truncate on read-only: %v", errno)
		}

		wo := mustOpen(t, a, "file", experimentalsys.O_WRONLY)
		defer wo.Close()
		if _, errno := wo.Read(buf); errno != experimentalsys.EBADF {
			t.Errorf("read on write-only: %v", errno)
		}
		if _, errno := wo.Pread(buf, 0); errno != experimentalsys.EBADF {
			t.Errorf("pread on write-only: %v", errno)
		}

		d := mustOpen(t, a, "dir", experimentalsys.O_RDONLY)
		defer d.Close()
		if _, errno := d.Read(buf); errno != experimentalsys.EISDIR {
			t.Errorf("read on dir: %v", errno)
		}
		if _, errno := d.Write(buf); errno != experimentalsys.EBADF && errno != experimentalsys.EISDIR {
			t.Errorf("write on dir: %v", errno)
		}
		if _, errno := d.Seek(1, io.SeekStart); errno != experimentalsys.EISDIR {
			t.Errorf("seek 1 on dir: %v", errno)
		}
		if isDir, _ := d.IsDir(); !isDir {
			t.Error("IsDir false on a directory")
		}

		if errno := ro.Close(); errno != 0 {
			t.Errorf("close: %v", errno)
		}
		if errno := ro.Close(); errno != 0 {
			t.Errorf("second close: %v", errno)
		}
		if _, errno := ro.Read(buf); errno != experimentalsys.EBADF {
			t.Errorf("read after close: %v", errno)
		}
		if _, errno := ro.Stat(); errno != experimentalsys.EBADF {
			t.Errorf("stat after close: %v", errno)
		}
	})
}

func TestAdapterReadWriteSeek(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, a experimentalsys.FS) {
		f := mustOpen(t, a, "f", experimentalsys.O_CREAT|experimentalsys.O_RDWR)
		defer f.Close()
		f.Write([]byte("0123456789"))
		if off, errno := f.Seek(-3, io.SeekEnd); off != 7 || errno != 0 {
			t.Errorf("seek end-3 = %d %v", off, errno)
		}
		buf := make([]byte, 10)
		if n, errno := f.Read(buf); n != 3 || errno != 0 || string(buf[:n]) != "789" {
			t.Errorf("read = %d %v %q", n, errno, buf[:n])
		}
		if n, errno := f.Read(buf); n != 0 || errno != 0 {
			t.Errorf("read at EOF = %d %v, want 0, 0", n, errno)
		}
		if _, errno := f.Seek(-11, io.SeekEnd); errno != experimentalsys.EINVAL {
			t.Errorf("seek before start: %v", errno)
		}
		if _, errno := f.Seek(0, 3); errno != experimentalsys.EINVAL {
			t.Errorf("bad whence: %v", errno)
		}
		if n, errno := f.Pread(buf[:4], 2); n != 4 || errno != 0 || string(buf[:4]) != "2345" {
			t.Errorf("pread = %d %v %q", n, errno, buf[:4])
		}
		if _, errno := f.Pread(buf, -1); errno != experimentalsys.EINVAL {
			t.Errorf("pread negative: %v", errno)
		}
		if n, errno := f.Pwrite([]byte("ab"), 12); n != 2 || errno != 0 {
			t.Errorf("pwrite past end = %d %v", n, errno)
		}
		if st, _ := f.Stat(); st.Size != 14 {
			t.Errorf("size after sparse pwrite = %d", st.Size)
		}
		if off, _ := f.Seek(0, io.SeekCurrent); off != 10 {
			t.Errorf("pwrite moved the offset to %d", off)
		}
		if errno := f.Truncate(-1); errno != experimentalsys.EINVAL {
			t.Errorf("truncate negative: %v", errno)
		}
		if errno := f.Truncate(4); errno != 0 {
			t.Errorf("truncate: %v", errno)
		}
		if n, errno := f.Pread(buf, 0); n != 4 || errno != 0 || string(buf[:4]) != "0123" {
			t.Errorf("after truncate: %d %v %q", n, errno, buf[:n])
		}
		mustErrno(t, "sync", f.Sync(), 0)
		mustErrno(t, "datasync", f.Datasync(), 0)
	})
}

func TestAdapterAppend(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, a experimentalsys.FS) {
		f := mustOpen(t, a, "log", experimentalsys.O_CREAT|experimentalsys.O_RDWR|experimentalsys.O_APPEND)
		defer f.Close()
		if !f.IsAppend() {
			t.Fatal("IsAppend false after O_APPEND")
		}
		f.Write([]byte("ab"))
		f.Seek(0, io.SeekStart)
		f.Write([]byte("cd"))
		// POSIX pwrite writes at the offset even in append mode and leaves
		// the file offset alone (wasi-testsuite accepts this or Linux's).
		if n, errno := f.Pwrite([]byte("X"), 0); n != 1 || errno != 0 {
			t.Fatalf("pwrite in append mode: %d %v", n, errno)
		}
		if got := readAll(t, a, "log"); got != "Xbcd" {
			t.Errorf("content %q, want Xbcd", got)
		}
		mustErrno(t, "SetAppend(false)", f.SetAppend(false), 0)
		if f.IsAppend() {
			t.Error("IsAppend after SetAppend(false)")
		}
		f.Seek(1, io.SeekStart)
		f.Write([]byte("Y"))
		if got := readAll(t, a, "log"); got != "XYcd" {
			t.Errorf("content %q, want XYcd", got)
		}
		mustErrno(t, "SetAppend(true)", f.SetAppend(true), 0)
		f.Seek(0, io.SeekStart)
		f.Write([]byte("Z"))
		if got := readAll(t, a, "log"); got != "XYcdZ" {
			t.Errorf("content %q, want XYcdZ", got)
		}
		d := mustOpen(t, a, ".", experimentalsys.O_RDONLY)
		defer d.Close()
		mustErrno(t, "SetAppend on dir", d.SetAppend(true), experimentalsys.EISDIR)
	})
}

func readAll(t *testing.T, a experimentalsys.FS, p string) string {
	t.Helper()
	f := mustOpen(t, a, p, experimentalsys.O_RDONLY)
	defer f.Close()
	var out []byte
	buf := make([]byte, 64)
	for {
		n, errno := f.Read(buf)
		if errno != 0 {
			t.Fatalf("read %s: %v", p, errno)
		}
		if n == 0 {
			return string(out)
		}
		out = append(out, buf[:n]...)
	}
}

func TestAdapterStatAndReaddir(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, a experimentalsys.FS) {
		setupTree(t, a)
		mustErrno(t, "link", a.Link("file", "hard"), 0)

		st, errno := a.Stat("file")
		if errno != 0 || st.Ino == 0 || st.Nlink != 2 || st.Size != 5 || !st.Mode.IsRegular() {
			t.Errorf("stat file = %+v %v, want ino != 0, nlink 2, size 5, regular", st, errno)
		}
		hard, _ := a.Stat("hard")
		if hard.Ino != st.Ino || hard.Dev != st.Dev {
			t.Errorf("hard link ino/dev %d/%d, file %d/%d", hard.Ino, hard.Dev, st.Ino, st.Dev)
		}
		lst, _ := a.Lstat("link")
		if lst.Mode.Type() != fs.ModeSymlink || lst.Ino == st.Ino {
			t.Errorf("lstat link = %v ino %d", lst.Mode, lst.Ino)
		}
		if target, errno := a.Readlink("link"); target != "file" || errno != 0 {
			t.Errorf("readlink = %q %v", target, errno)
		}
		f := mustOpen(t, a, "link", experimentalsys.O_RDONLY)
		defer f.Close()
		if ino, _ := f.Ino(); ino != st.Ino {
			t.Errorf("File.Ino = %d, want %d", ino, st.Ino)
		}
		if dev, _ := f.Dev(); dev != st.Dev {
			t.Errorf("File.Dev = %d, want %d", dev, st.Dev)
		}

		d := mustOpen(t, a, ".", experimentalsys.O_RDONLY)
		defer d.Close()
		first, errno := d.Readdir(2)
		if errno != 0 || len(first) != 2 {
			t.Fatalf("Readdir(2) = %d entries, %v", len(first), errno)
		}
		rest, errno := d.Readdir(100)
		if errno != 0 {
			t.Fatal(errno)
		}
		all := append(first, rest...)
		if more, errno := d.Readdir(10); len(more) != 0 || errno != 0 {
			t.Errorf("Readdir at end = %d, %v", len(more), errno)
		}
		got := map[string]experimentalsys.Dirent{}
		var names []string
		for _, e := range all {
			got[e.Name] = e
			names = append(names, e.Name)
		}
		sort.Strings(names)
		want := []string{"dangling", "dir", "dirlink", "file", "hard", "link"}
		if len(names) != len(want) {
			t.Fatalf("entries %v, want %v", names, want)
		}
		for i := range want {
			if names[i] != want[i] {
				t.Fatalf("entries %v, want %v", names, want)
			}
		}
		if e := got["file"]; e.Ino != st.Ino || e.Type != 0 {
			t.Errorf("dirent file = %v", e.String())
		}
		if e := got["dir"]; !e.IsDir() {
			t.Errorf("dirent dir = %v", e.String())
		}
		if e := got["link"]; e.Type != fs.ModeSymlink || e.Ino != lst.Ino {
			t.Errorf("dirent link = %v", e.String())
		}
		// Rewind and see a new entry.
		mustOpen(t, a, "new", experimentalsys.O_CREAT|experimentalsys.O_WRONLY).Close()
		if _, errno := d.Seek(0, io.SeekStart); errno != 0 {
			t.Fatal(errno)
		}
		again, _ := d.Readdir(-1)
		if len(again) != len(all)+1 {
			t.Errorf("after rewind: %d entries, want %d", len(again), len(all)+1)
		}
		if _, errno := f.Readdir(1); errno != experimentalsys.ENOTDIR {
			t.Errorf("Readdir on a file: %v", errno)
		}
	})
}

func TestAdapterUtimens(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, a experimentalsys.FS) {
		setupTree(t, a)
		at := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC).UnixNano()
		mt := time.Date(2002, 2, 3, 4, 5, 6, 8000, time.UTC).UnixNano()
		mustErrno(t, "utimens", a.Utimens("link", at, mt), 0)
		st, _ := a.Stat("file")
		if st.Atim != at || st.Mtim != mt {
			t.Errorf("times through symlink = %d/%d, want %d/%d", st.Atim, st.Mtim, at, mt)
		}
		mt2 := mt + 1000
		mustErrno(t, "utimens omit atime", a.Utimens("file", experimentalsys.UTIME_OMIT, mt2), 0)
		st, _ = a.Stat("file")
		if st.Atim != at || st.Mtim != mt2 {
			t.Errorf("after UTIME_OMIT atime: %d/%d, want %d/%d", st.Atim, st.Mtim, at, mt2)
		}
		f := mustOpen(t, a, "file", experimentalsys.O_RDONLY)
		defer f.Close()
		mustErrno(t, "File.Utimens omit mtime", f.Utimens(at+1000, experimentalsys.UTIME_OMIT), 0)
		st, _ = f.Stat()
		if st.Atim != at+1000 || st.Mtim != mt2 {
			t.Errorf("after File.Utimens: %d/%d, want %d/%d", st.Atim, st.Mtim, at+1000, mt2)
		}
		mustErrno(t, "chmod", a.Chmod("file", 0o600), 0)
		if st, _ := a.Stat("file"); st.Mode.Perm() != 0o600 {
			t.Errorf("mode after chmod = %v", st.Mode)
		}
	})
}

// TestToStat checks the mapping of *vfs.Stat, including the fallbacks for
// missing times and link counts.
func TestToStat(t *testing.T) {
	mod := time.Unix(100, 5)
	tests := []struct {
		name string
		sys  any
		want sys.Stat_t
	}{
		{"full", &vfs.Stat{Dev: 3, Ino: 42, Nlink: 2, Atime: time.Unix(1, 1), Mtime: time.Unix(2, 2), Ctime: time.Unix(3, 3)},
			sys.Stat_t{Dev: 3, Ino: 42, Nlink: 2, Atim: 1e9 + 1, Mtim: 2e9 + 2, Ctim: 3e9 + 3, Mode: 0o644, Size: 9}},
		{"zero times and nlink", &vfs.Stat{Ino: 7},
			sys.Stat_t{Ino: 7, Nlink: 1, Atim: mod.UnixNano(), Mtim: mod.UnixNano(), Ctim: mod.UnixNano(), Mode: 0o644, Size: 9}},
		{"value", vfs.Stat{Ino: 8, Nlink: 1, Atime: mod, Mtime: mod, Ctime: mod},
			sys.Stat_t{Ino: 8, Nlink: 1, Atim: mod.UnixNano(), Mtim: mod.UnixNano(), Ctim: mod.UnixNano(), Mode: 0o644, Size: 9}},
		{"no sys", nil,
			sys.Stat_t{Nlink: 1, Atim: mod.UnixNano(), Mtim: mod.UnixNano(), Ctim: mod.UnixNano(), Mode: 0o644, Size: 9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := toStat(fakeInfo{sys: tc.sys, mod: mod})
			if got != tc.want {
				t.Errorf("toStat = %+v\nwant     %+v", got, tc.want)
			}
		})
	}
}

type fakeInfo struct {
	sys any
	mod time.Time
}

func (f fakeInfo) Name() string       { return "x" }
func (f fakeInfo) Size() int64        { return 9 }
func (f fakeInfo) Mode() fs.FileMode  { return 0o644 }
func (f fakeInfo) ModTime() time.Time { return f.mod }
func (f fakeInfo) IsDir() bool        { return false }
func (f fakeInfo) Sys() any           { return f.sys }
