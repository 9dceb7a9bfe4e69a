package sandbox

import (
	"context"
	"fmt"
	"io"
	"testing"
)

// BenchmarkNew measures creating (and closing) a sandbox with the default
// layout and the tool entries installed, the engine already compiled.
func BenchmarkNew(b *testing.B) {
	ctx := context.Background()
	if _, err := DefaultEngine(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		sb, err := New(ctx)
		if err != nil {
			b.Fatal(err)
		}
		sb.Close()
	}
}

// BenchmarkRunBuiltins measures a small builtin-only script in a live
// sandbox (no wasm instance).
func BenchmarkRunBuiltins(b *testing.B) {
	ctx := context.Background()
	sb, err := New(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	for b.Loop() {
		if _, err := sb.Run(ctx, `x=1; for i in 1 2 3; do x=$((x+i)); done; echo $x`); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFind5000Files: find over 5,000 files in 50 directories below
// /tmp, as the sandbox user (every lookup checks the search permission of
// each directory on the way).
func BenchmarkFind5000Files(b *testing.B) {
	ctx := context.Background()
	sb, err := New(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	for d := 0; d < 50; d++ {
		dir := fmt.Sprintf("/tmp/tree/d%02d", d)
		if err := sb.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 100; f++ {
			if err := sb.WriteFile(fmt.Sprintf("%s/f%03d.txt", dir, f), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for b.Loop() {
		res, err := sb.Run(ctx, `find /tmp/tree -name '*.txt' | wc -l`)
		if err != nil || res.Stdout != "5000\n" {
			b.Fatalf("%v %q %q", err, res.Stdout, res.Stderr)
		}
	}
}

// BenchmarkFreshSandboxPipe is one warm `wasmbox run -c 'echo hi | cat'`
// in the resident engine: a new sandbox, the script (a shell instance and
// one coreutils instance), and Close.
func BenchmarkFreshSandboxPipe(b *testing.B) {
	ctx := context.Background()
	if _, err := DefaultEngine(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		sb, err := New(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if r, err := sb.Run(ctx, `echo hi | cat`); err != nil || r.Stdout != "hi\n" {
			b.Fatal(r, err)
		}
		sb.Close()
	}
}

// BenchmarkSnapshotParts measures the incremental snapshot after a run
// that changed one small file, of a sandbox holding 1 MiB in one file or
// in 1,000 files of 1 KiB (in 10 directories), against the full
// Snapshot of the same sandbox.
func BenchmarkSnapshotParts(b *testing.B) {
	ctx := context.Background()
	for _, files := range []int{1, 1000} {
		sb, err := New(ctx)
		if err != nil {
			b.Fatal(err)
		}
		size := (1 << 20) / files
		for i := range files {
			data := make([]byte, size)
			for j := range data {
				data[j] = byte(i*7 + j*13 + j>>8)
			}
			if err := sb.FS().MkdirAll(fmt.Sprintf("/home/user/d%d", i%10), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := sb.WriteFile(fmt.Sprintf("/home/user/d%d/f%d", i%10, i), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		// Once before: the first snapshot of a process lists /usr/lib,
		// which loads the Python standard library's lazy mount.
		if _, err := sb.SnapshotParts(); err != nil {
			b.Fatal(err)
		}
		i := 0
		change := func(b *testing.B) {
			b.StopTimer()
			i++
			if err := sb.WriteFile("/home/user/counter", []byte(fmt.Sprint(i)), 0o644); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.Run(fmt.Sprintf("parts/%d-files", files), func(b *testing.B) {
			for b.Loop() {
				change(b)
				if _, err := sb.SnapshotParts(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("full/%d-files", files), func(b *testing.B) {
			for b.Loop() {
				change(b)
				if err := sb.Snapshot(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
		sb.Close()
	}
}
