package vfs_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"syscall"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

// TestQuotaStreamKeepsWhatFits: a 1 GiB stream of 1 MiB writes against the
// default byte quota fills the filesystem exactly (the write that crosses
// the quota is a short write), then every write fails with ENOSPC, as on a
// full disk. On the code before, the quota refused whole writes (so the
// file kept a multiple of the write size) and each write past 64 MiB copied
// the whole file: the stream took tens of seconds and gigabytes.
func TestQuotaStreamKeepsWhatFits(t *testing.T) {
	m := vfs.NewMemFS(vfs.WithQuota(vfs.Quota{Bytes: vfs.DefaultQuotaBytes}))
	const other = 12345 // something else already in use
	writeFile(t, m, "/other", string(make([]byte, other)))
	f, err := m.Create("/f")
	must(t, err)
	defer f.Close()
	chunk := bytes.Repeat([]byte{'z'}, 1<<20)
	var total int64
	var werr error
	for i := 0; i < 1024 && werr == nil; i++ {
		var n int
		n, werr = f.Write(chunk)
		total += int64(n)
		if werr == nil && n != len(chunk) {
			t.Fatalf("short write of %d bytes without an error", n)
		}
	}
	wantErrno(t, werr, syscall.ENOSPC)
	want := int64(vfs.DefaultQuotaBytes - other)
	if total != want {
		t.Fatalf("wrote %d bytes before ENOSPC, want %d (the quota minus what else is in use)", total, want)
	}
	// Full: nothing more lands, what was written stays.
	n, err := f.Write([]byte("x"))
	wantErrno(t, err, syscall.ENOSPC)
	if n != 0 {
		t.Fatalf("write on a full filesystem wrote %d bytes", n)
	}
	if fi, err := m.Stat("/f"); err != nil || fi.Size() != want {
		t.Fatalf("file: %v %v, want %d bytes", fi, err, want)
	}
	if used, _ := m.Usage(); used != vfs.DefaultQuotaBytes {
		t.Fatalf("usage %d, want the quota %d", used, vfs.DefaultQuotaBytes)
	}
	g, err := m.Open("/f")
	must(t, err)
	defer g.Close()
	_, err = g.Seek(want-3, io.SeekStart)
	must(t, err)
	tail, err := io.ReadAll(g)
	must(t, err)
	if string(tail) != "zzz" {
		t.Fatalf("end of the file %q", tail)
	}
	// Space freed elsewhere is usable again.
	must(t, m.Remove("/other"))
	n, err = f.Write(chunk[:other+1])
	wantErrno(t, err, syscall.ENOSPC)
	if n != other {
		t.Fatalf("after freeing %d bytes a write stored %d", other, n)
	}
}

// TestWriteAtShortPastFileSize: WriteAt past the largest file size stores
// the part below it.
func TestWriteAtShortPastFileSize(t *testing.T) {
	m := vfs.NewMemFS(vfs.WithQuota(vfs.Quota{FileSize: 10}))
	f, err := m.Create("/f")
	must(t, err)
	defer f.Close()
	n, err := f.WriteAt([]byte("abcdef"), 6)
	wantErrno(t, err, syscall.EFBIG)
	if n != 4 || readFile(t, m, "/f") != "\x00\x00\x00\x00\x00\x00abcd" {
		t.Fatalf("wrote %d, file %q", n, readFile(t, m, "/f"))
	}
}

// allocWatch returns a function reporting the bytes allocated on the Go
// heap since allocWatch was called.
func allocWatch() func() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.TotalAlloc
	return func() uint64 {
		runtime.ReadMemStats(&ms)
		return ms.TotalAlloc - base
	}
}

// TestBigSequentialWriteAllocatesLinearly: writing 200 MiB in 64 KiB
// pieces allocates less than 3 × 200 MiB in all (the file's buffer grows
// geometrically), and the file then holds less than twice its size of
// host memory. On the code before, each write past 64 MiB reallocated and
// copied the whole file: O(size²), some 200 GiB here. The loop stops as
// soon as the budget is passed, so a regression fails fast.
func TestBigSequentialWriteAllocatesLinearly(t *testing.T) {
	const size, piece = 200 << 20, 64 << 10
	for _, tc := range []struct {
		name string
		q    vfs.Quota
	}{
		{"no quota", vfs.Quota{}},
		{"default quota", vfs.Quota{Bytes: vfs.DefaultQuotaBytes, Files: vfs.DefaultQuotaFiles}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := vfs.NewMemFS(vfs.WithQuota(tc.q))
			f, err := m.Create("/f")
			must(t, err)
			buf := make([]byte, piece)
			runtime.GC()
			heap0 := heapInuse()
			allocated := allocWatch()
			const budget = 3 * size
			for done := 0; done < size; done += piece {
				if _, err := f.Write(buf); err != nil {
					t.Fatal(err)
				}
				if done%(16*piece) == 0 {
					if a := allocated(); a > budget {
						t.Fatalf("after %d MiB written, %d MiB allocated: more than %d MiB for a %d MiB file", done>>20, a>>20, budget>>20, size>>20)
					}
				}
			}
			a := allocated()
			t.Logf("%d MiB allocated to write %d MiB", a>>20, size>>20)
			if a > budget {
				t.Fatalf("%d MiB allocated to write %d MiB, want < %d MiB", a>>20, size>>20, budget>>20)
			}
			runtime.GC()
			if held := heapInuse() - heap0; held > 2*size {
				t.Errorf("a %d MiB file holds %d MiB of heap", size>>20, held>>20)
			}
			must(t, f.Close())
			must(t, m.Remove("/f"))
		})
	}
}

func heapInuse() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// TestTruncateGivesMemoryBack: a big file cut to a byte does not keep its
// buffer. Else files written big and truncated to a byte would hold host
// memory that the quota no longer counts, any number of times over.
func TestTruncateGivesMemoryBack(t *testing.T) {
	m := vfs.NewMemFS(vfs.WithQuota(vfs.Quota{Bytes: 64 << 20}))
	buf := make([]byte, 1<<20)
	runtime.GC()
	heap0 := heapInuse()
	const files = 8
	for i := range files {
		f, err := m.OpenFile("/f"+string(rune('a'+i)), os.O_RDWR|os.O_CREATE, 0o644)
		must(t, err)
		for range 48 {
			_, err := f.Write(buf)
			must(t, err)
		}
		must(t, f.Truncate(1))
		must(t, f.Close())
	}
	if used, _ := m.Usage(); used != files {
		t.Fatalf("usage %d, want %d", used, files)
	}
	runtime.GC()
	if held := heapInuse() - heap0; held > 16<<20 {
		t.Fatalf("%d files truncated to a byte hold %d MiB of heap", files, held>>20)
	}
	if got := readFile(t, m, "/fa"); got != "\x00" {
		t.Fatalf("truncated file %q", got)
	}
}

// TestForkAfterGrowth: a file with spare capacity shared by a fork is
// copied before either side writes, even when the write fits in the
// capacity.
func TestForkAfterGrowth(t *testing.T) {
	m := vfs.NewMemFS()
	f, err := m.Create("/f")
	must(t, err)
	for _, c := range "abcde" { // byte by byte: the buffer has room to spare
		_, err := f.Write([]byte(string(c)))
		must(t, err)
	}
	c := m.Fork()
	_, err = f.Write([]byte("P"))
	must(t, err)
	must(t, f.Close())
	g, err := c.OpenFile("/f", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = g.Write([]byte("C"))
	must(t, err)
	must(t, g.Close())
	if p, q := readFile(t, m, "/f"), readFile(t, c, "/f"); p != "abcdeP" || q != "abcdeC" {
		t.Fatalf("parent %q, fork %q", p, q)
	}
	d := c.Fork()
	h, err := d.OpenFile("/f", os.O_WRONLY, 0)
	must(t, err)
	defer h.Close()
	must(t, h.Truncate(2))
	if p, q, r := readFile(t, m, "/f"), readFile(t, c, "/f"), readFile(t, d, "/f"); p != "abcdeP" || q != "abcdeC" || r != "ab" {
		t.Fatalf("after truncate: parent %q, fork %q, its fork %q", p, q, r)
	}
	if !errors.Is(h.Truncate(-1), syscall.EINVAL) {
		t.Fatal("negative truncate")
	}
}
