package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// BenchmarkRunTrivial: instantiate + run + close of a module whose
// _start returns at once, compiled beforehand (the warm path of every
// command).
func BenchmarkRunTrivial(b *testing.B) {
	rt := newRuntime(b, runtime.Config{})
	m := compile(b, rt, "trivial", runtimetest.Trivial())
	ctx := context.Background()
	mc := wazero.NewModuleConfig()
	b.ReportAllocs()
	for b.Loop() {
		if err := rt.Run(ctx, m, mc, runtime.RunOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunGoGuest: the same for a real Go wasip1 program (args, ~2.5
// MB), whose runtime initialisation dominates.
func BenchmarkRunGoGuest(b *testing.B) {
	rt := newRuntime(b, runtime.Config{WASI: runtime.WASIWazero})
	m := compile(b, rt, "args", runtimetest.Guest(b, "args"))
	ctx := context.Background()
	mc := wazero.NewModuleConfig().WithArgs("args")
	for b.Loop() {
		if err := rt.Run(ctx, m, mc, runtime.RunOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileCold compiles a ~4 MB Go guest without any cache, with
// 1 and 2 compilation workers.
func BenchmarkCompileCold(b *testing.B) {
	bin := runtimetest.Guest(b, "big")
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for b.Loop() {
				rt, err := runtime.New(context.Background(), runtime.Config{DisableCache: true, CompilationWorkers: workers})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := rt.Compile(context.Background(), "big", bin); err != nil {
					b.Fatal(err)
				}
				rt.Close(context.Background())
			}
			b.ReportMetric(float64(len(bin))/1e6, "MB")
		})
	}
}

// BenchmarkCompileDiskCache: a fresh runtime compiling the same guest with
// the on-disk cache warm (a new process running a known module).
func BenchmarkCompileDiskCache(b *testing.B) {
	bin := runtimetest.Guest(b, "big")
	dir := b.TempDir()
	warm, err := runtime.New(context.Background(), runtime.Config{CacheDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := warm.Compile(context.Background(), "big", bin); err != nil {
		b.Fatal(err)
	}
	warm.Close(context.Background())
	for b.Loop() {
		rt, err := runtime.New(context.Background(), runtime.Config{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rt.Compile(context.Background(), "big", bin); err != nil {
			b.Fatal(err)
		}
		rt.Close(context.Background())
	}
}

// BenchmarkKillLatency measures the time from cancel to Run returning for
// a guest spinning in a loop without host calls.
func BenchmarkKillLatency(b *testing.B) {
	rt := newRuntime(b, runtime.Config{})
	m := compile(b, rt, "spin", runtimetest.Spin())
	var total time.Duration
	var worst time.Duration
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		var at time.Time
		time.AfterFunc(2*time.Millisecond, func() { at = time.Now(); cancel() })
		rt.Run(ctx, m, wazero.NewModuleConfig(), runtime.RunOptions{})
		d := time.Since(at)
		total += d
		worst = max(worst, d)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/kill")
	b.ReportMetric(float64(worst.Microseconds()), "µs-worst")
}
