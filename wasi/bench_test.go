package wasi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental/sysfs"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/vfs"
)

const benchFileSize = 8 << 20

// benchGuestIO runs the probe guest once per iteration (args as given)
// against the filesystem mc mounts, and reports benchFileSize bytes per op.
func benchGuestIO(b *testing.B, mc func() wazero.ModuleConfig, args ...string) {
	r, compiled := probe(b)
	ctx := context.Background()
	b.SetBytes(benchFileSize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var out bytes.Buffer
		cfg := mc().WithName("").WithArgs(append([]string{"probe"}, args...)...).WithStdout(&out).WithStderr(&out)
		mod, err := r.InstantiateModule(ctx, compiled, cfg)
		if mod != nil {
			mod.Close(ctx)
		}
		var exit *sys.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 0) {
			b.Fatalf("%v: %s", err, out.String())
		}
		if args[0] == "readfile" && out.String() != strconv.Itoa(benchFileSize)+"\n" {
			b.Fatalf("read %q", out.String())
		}
	}
}

func writeBenchFile(b *testing.B, fsys vfs.FS) {
	f, err := fsys.OpenFile("/big", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Write(make([]byte, benchFileSize)); err != nil {
		b.Fatal(err)
	}
	f.Close()
}

// BenchmarkGuestRead: a guest reads an 8 MiB file in 32 KiB fd_reads,
// through the adapter over MemFS, through the adapter over host files, and
// through wazero's own DirFS (the os-file baseline). Includes instantiation.
func BenchmarkGuestRead(b *testing.B) {
	b.Run("adapter-memfs", func(b *testing.B) {
		fsys := vfs.NewMemFS()
		writeBenchFile(b, fsys)
		benchGuestIO(b, func() wazero.ModuleConfig {
			return Configure(context.Background(), wazero.NewModuleConfig(), fsys, Options{})
		}, "readfile", "/big")
	})
	b.Run("adapter-osfs", func(b *testing.B) {
		fsys := osFS{root: b.TempDir()}
		writeBenchFile(b, fsys)
		benchGuestIO(b, func() wazero.ModuleConfig {
			return Configure(context.Background(), wazero.NewModuleConfig(), fsys, Options{})
		}, "readfile", "/big")
	})
	b.Run("wazero-dirfs", func(b *testing.B) {
		dir := b.TempDir()
		writeBenchFile(b, osFS{root: dir})
		benchGuestIO(b, func() wazero.ModuleConfig {
			return wazero.NewModuleConfig().WithFSConfig(wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(sysfs.DirFS(dir), "/"))
		}, "readfile", "/big")
	})
}

// BenchmarkGuestWrite: a guest writes an 8 MiB file in 32 KiB fd_writes.
func BenchmarkGuestWrite(b *testing.B) {
	size := strconv.Itoa(benchFileSize)
	b.Run("adapter-memfs", func(b *testing.B) {
		fsys := vfs.NewMemFS()
		benchGuestIO(b, func() wazero.ModuleConfig {
			return Configure(context.Background(), wazero.NewModuleConfig(), fsys, Options{})
		}, "writefile", "/big", size)
	})
	b.Run("adapter-osfs", func(b *testing.B) {
		fsys := osFS{root: b.TempDir()}
		benchGuestIO(b, func() wazero.ModuleConfig {
			return Configure(context.Background(), wazero.NewModuleConfig(), fsys, Options{})
		}, "writefile", "/big", size)
	})
	b.Run("wazero-dirfs", func(b *testing.B) {
		dir := b.TempDir()
		benchGuestIO(b, func() wazero.ModuleConfig {
			return wazero.NewModuleConfig().WithFSConfig(wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(sysfs.DirFS(dir), "/"))
		}, "writefile", "/big", size)
	})
}

// BenchmarkGuestStdoutPipe: a guest writes 8 MiB to stdout, a NewPipe
// drained by the host.
func BenchmarkGuestStdoutPipe(b *testing.B) {
	ctx := context.Background()
	fsys := vfs.NewMemFS()
	benchGuestIOPipe := func(b *testing.B) {
		r, compiled := probe(b)
		b.SetBytes(benchFileSize)
		for i := 0; i < b.N; i++ {
			pr, pw := NewPipe(ctx)
			done := make(chan int64)
			go func() {
				n, _ := io.Copy(io.Discard, pr)
				done <- n
			}()
			cfg := Configure(ctx, wazero.NewModuleConfig().WithName("").
				WithArgs("probe", "flood", strconv.Itoa(benchFileSize)).WithStdout(pw), fsys, Options{})
			mod, err := r.InstantiateModule(ctx, compiled, cfg)
			if mod != nil {
				mod.Close(ctx)
			}
			pw.Close()
			var exit *sys.ExitError
			if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 0) {
				b.Fatal(err)
			}
			if n := <-done; n != benchFileSize {
				b.Fatalf("drained %d bytes", n)
			}
		}
	}
	benchGuestIOPipe(b)
}

// BenchmarkPipe measures host-to-host throughput of NewPipe with 32 KiB
// writes and reads, against io.Pipe (unbuffered) and an os.Pipe.
func BenchmarkPipe(b *testing.B) {
	const chunk = 32 << 10
	run := func(b *testing.B, r io.Reader, w io.WriteCloser) {
		buf := make([]byte, chunk)
		b.SetBytes(chunk)
		done := make(chan struct{})
		go func() {
			rb := make([]byte, chunk)
			for {
				if _, err := r.Read(rb); err != nil {
					close(done)
					return
				}
			}
		}()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := w.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		w.Close()
		<-done
	}
	b.Run("wasi.NewPipe", func(b *testing.B) {
		r, w := NewPipe(context.Background())
		run(b, r, w)
	})
	b.Run("io.Pipe", func(b *testing.B) {
		r, w := io.Pipe()
		run(b, r, w)
	})
	b.Run("os.Pipe", func(b *testing.B) {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		run(b, r, w)
	})
}

// BenchmarkAdapterRead measures the adapter alone (no guest): 32 KiB
// File.Read calls over MemFS and over an os file, against os.File.Read.
func BenchmarkAdapterRead(b *testing.B) {
	const chunk = 32 << 10
	bench := func(b *testing.B, read func([]byte) (int, error), rewind func()) {
		buf := make([]byte, chunk)
		b.SetBytes(chunk)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			n, err := read(buf)
			if err != nil {
				b.Fatal(err)
			}
			if n < chunk {
				rewind()
			}
		}
	}
	adapter := func(b *testing.B, fsys vfs.FS) {
		writeBenchFile(b, fsys)
		f, errno := NewFS(fsys).OpenFile("big", 0, 0)
		if errno != 0 {
			b.Fatal(errno)
		}
		defer f.Close()
		bench(b, func(p []byte) (int, error) {
			n, errno := f.Read(p)
			if errno != 0 {
				return n, errno
			}
			return n, nil
		}, func() { f.Seek(0, io.SeekStart) })
	}
	b.Run("adapter-memfs", func(b *testing.B) { adapter(b, vfs.NewMemFS()) })
	b.Run("adapter-osfs", func(b *testing.B) { adapter(b, osFS{root: b.TempDir()}) })
	b.Run("os.File", func(b *testing.B) {
		dir := b.TempDir()
		writeBenchFile(b, osFS{root: dir})
		f, err := os.Open(filepath.Join(dir, "big"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		bench(b, func(p []byte) (int, error) {
			n, err := f.Read(p)
			if err == io.EOF {
				err = nil
			}
			return n, err
		}, func() { f.Seek(0, io.SeekStart) })
	})
}
