package vfs_test

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

func benchTargets(b *testing.B) map[string]vfs.FS {
	v, err := vfs.NewDefault(vfs.WithQuota(vfs.Quota{}))
	must(b, err)
	m := vfs.NewMemFS()
	must(b, m.MkdirAll("/home/user", 0o755))
	u, err := vfs.NewDefault(vfs.WithQuota(vfs.Quota{}))
	must(b, err)
	return map[string]vfs.FS{"MemFS": m, "VFS": v, "VFSUser": u.AsUser(vfs.Cred{UID: vfs.UserUID, GID: vfs.UserGID})}
}

func BenchmarkCreateWriteClose(b *testing.B) {
	data := make([]byte, 100)
	for name, fsys := range benchTargets(b) {
		names := make([]string, 1000)
		for i := range names {
			names[i] = fmt.Sprintf("/home/user/f%d", i)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				f, err := fsys.OpenFile(names[i%len(names)], os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				f.Write(data)
				f.Close()
			}
		})
	}
}

func BenchmarkOpenRead(b *testing.B) {
	buf := make([]byte, 4096)
	for name, fsys := range benchTargets(b) {
		writeFile(b, fsys, "/home/user/f", strings.Repeat("x", 1024))
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				f, err := fsys.Open("/home/user/f")
				if err != nil {
					b.Fatal(err)
				}
				if n, _ := f.Read(buf); n != 1024 {
					b.Fatal(n)
				}
				f.Close()
			}
		})
	}
}

func BenchmarkStatDeep(b *testing.B) {
	deep := "/home/user/a/b/c/d/e/f/g/h"
	for name, fsys := range benchTargets(b) {
		must(b, fsys.MkdirAll(deep, 0o755))
		writeFile(b, fsys, deep+"/file", "x")
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := fsys.Stat(deep + "/file"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A 10 MB tree: 100 directories of 10 files of 10 KiB.
func BenchmarkFork10MB(b *testing.B) {
	chunk := make([]byte, 10<<10)
	for name, fsys := range benchTargets(b) {
		for d := 0; d < 100; d++ {
			dir := fmt.Sprintf("/home/user/d%d", d)
			must(b, fsys.Mkdir(dir, 0o755))
			for f := 0; f < 10; f++ {
				w, err := fsys.Create(fmt.Sprintf("%s/f%d", dir, f))
				must(b, err)
				w.Write(chunk)
				w.Close()
			}
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				vfs.Fork(fsys)
			}
		})
	}
}

func BenchmarkForkSmall(b *testing.B) {
	v, err := vfs.NewDefault()
	must(b, err)
	for i := 0; i < 20; i++ {
		writeFile(b, v, fmt.Sprintf("/home/user/f%d", i), "small file")
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		v.Fork()
	}
}

func BenchmarkParallelReadWrite(b *testing.B) {
	v, err := vfs.NewDefault(vfs.WithQuota(vfs.Quota{}))
	must(b, err)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 512)
		i := 0
		for pb.Next() {
			name := fmt.Sprintf("/tmp/p%d", i%64)
			i++
			f, err := v.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			f.Write(buf)
			f.Seek(0, io.SeekStart)
			f.Read(buf)
			f.Close()
		}
	})
}

// The largest tree the default quota allows: 10,000 inodes.
func BenchmarkFork10kFiles(b *testing.B) {
	m := vfs.NewMemFS()
	for d := 0; d < 100; d++ {
		dir := fmt.Sprintf("/d%d", d)
		must(b, m.Mkdir(dir, 0o755))
		for f := 0; f < 98; f++ {
			writeFile(b, m, fmt.Sprintf("%s/f%d", dir, f), "x")
		}
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m.Fork()
	}
}

func BenchmarkHostStatDeep(b *testing.B) {
	deep := "/a/b/c/d/e/f/g/h"
	for _, mode := range []vfs.MountMode{vfs.ReadWrite, vfs.CopyOnWrite} {
		h, err := vfs.HostDir(b.TempDir(), mode)
		must(b, err)
		must(b, h.MkdirAll(deep, 0o755))
		writeFile(b, h, deep+"/file", "x")
		v, err := vfs.NewDefault()
		must(b, err)
		must(b, v.Mount("/work", h))
		for _, as := range []struct {
			name string
			fs   vfs.FS
		}{{mode.String(), v}, {mode.String() + "User", v.AsUser(vfs.Cred{UID: vfs.UserUID, GID: vfs.UserGID})}} {
			b.Run(as.name, func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := as.fs.Stat("/work" + deep + "/file"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		h.(interface{ Close() error }).Close()
	}
}

// BenchmarkBigSequentialWrite: one file written from empty in pieces, as
// `head -c 200M /dev/zero > f` does, under the default quota. Before the
// buffer grew geometrically, each write past 64 MiB copied the whole file.
func BenchmarkBigSequentialWrite(b *testing.B) {
	for _, tc := range []struct{ size, piece int }{
		{16 << 20, 64 << 10},
		{200 << 20, 64 << 10},
		{200 << 20, 1 << 20},
	} {
		b.Run(fmt.Sprintf("%dMiB-in-%dKiB", tc.size>>20, tc.piece>>10), func(b *testing.B) {
			buf := make([]byte, tc.piece)
			b.SetBytes(int64(tc.size))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				m := vfs.NewMemFS(vfs.WithQuota(vfs.Quota{Bytes: vfs.DefaultQuotaBytes}))
				f, err := m.Create("/f")
				if err != nil {
					b.Fatal(err)
				}
				for done := 0; done < tc.size; done += tc.piece {
					if _, err := f.Write(buf); err != nil {
						b.Fatal(err)
					}
				}
				f.Close()
			}
		})
	}
}
