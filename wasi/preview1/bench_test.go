package preview1_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/imports/wasi_snapshot_preview1"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// The benchmarks run the same Go guest under this package's module
// ("own") and under wazero's imports/wasi_snapshot_preview1 with the wasi
// adapter ("wazero"), each in its own runtime.

const benchBytes = 8 << 20

func wazeroRuntime(b *testing.B) (wazero.Runtime, wazero.CompiledModule) {
	ctx := context.Background()
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(true)
	if d, err := os.UserCacheDir(); err == nil {
		if cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(d, "wasmbox-test", "wazero")); err == nil {
			rc = rc.WithCompilationCache(cache)
		}
	}
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	b.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	c, err := r.CompileModule(ctx, guestWasm(b, "probe"))
	if err != nil {
		b.Fatal(err)
	}
	return r, c
}

func runWazero(b *testing.B, r wazero.Runtime, c wazero.CompiledModule, stdin io.Reader, stdout io.Writer, args ...string) {
	ctx := context.Background()
	mc := wasi.Configure(ctx, wazero.NewModuleConfig().WithName("").WithArgs(append([]string{"probe"}, args...)...),
		vfs.NewMemFS(), wasi.Options{Stdin: stdin, Stdout: stdout, Stderr: io.Discard})
	mod, err := r.InstantiateModule(ctx, c, mc)
	var exitErr *sys.ExitError
	if err != nil && !(errors.As(err, &exitErr) && exitErr.ExitCode() == 0) {
		b.Fatal(err)
	}
	if mod != nil {
		mod.Close(ctx)
	}
}

func runOwn(b *testing.B, stdin io.Reader, stdout io.Writer, args ...string) {
	r, c := probe(b)
	code, err := run(context.Background(), r, c, preview1.Config{
		FS: vfs.NewMemFS(), Args: append([]string{"probe"}, args...), Stdin: stdin, Stdout: stdout,
	})
	if err != nil || code != 0 {
		b.Fatal(code, err)
	}
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

func BenchmarkWrite8MiB(b *testing.B) {
	b.Run("own", func(b *testing.B) {
		b.SetBytes(benchBytes)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var w countWriter
			runOwn(b, nil, &w, "write", "8388608")
			if w.n != benchBytes {
				b.Fatal(w.n)
			}
		}
	})
	b.Run("wazero", func(b *testing.B) {
		r, c := wazeroRuntime(b)
		b.SetBytes(benchBytes)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var w countWriter
			runWazero(b, r, c, nil, &w, "write", "8388608")
			if w.n != benchBytes {
				b.Fatal(w.n)
			}
		}
	})
}

func BenchmarkRead8MiB(b *testing.B) {
	data := bytes.Repeat([]byte("z"), benchBytes)
	b.Run("own", func(b *testing.B) {
		b.SetBytes(benchBytes)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			runOwn(b, bytes.NewReader(data), io.Discard, "read")
		}
	})
	b.Run("wazero", func(b *testing.B) {
		r, c := wazeroRuntime(b)
		b.SetBytes(benchBytes)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			runWazero(b, r, c, bytes.NewReader(data), io.Discard, "read")
		}
	})
}

// BenchmarkInstantiateRun: instantiate and run a trivial guest (prints its
// arguments and one variable).
func BenchmarkInstantiateRun(b *testing.B) {
	b.Run("own", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			runOwn(b, nil, io.Discard, "env", "x")
		}
	})
	b.Run("wazero", func(b *testing.B) {
		r, c := wazeroRuntime(b)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			runWazero(b, r, c, nil, io.Discard, "env", "x")
		}
	})
}
