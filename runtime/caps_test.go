package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// rss is the resident set of this process in bytes.
func rss(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// memWatch samples the process while f runs: it cancels f's context and
// fails the test when the RSS grows by more than 1 GiB (so that a
// regression fails instead of taking the machine down), and returns the
// largest growth of the Go heap in use seen.
func memWatch(t *testing.T, ctx context.Context, f func(ctx context.Context)) (heapGrowth uint64) {
	t.Helper()
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	base, baseRSS := ms.HeapInuse, rss(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var peak uint64
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			var m goruntime.MemStats
			goruntime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse-min(base, m.HeapInuse))
			if r := rss(t); r > baseRSS && r-baseRSS > 1<<30 {
				t.Errorf("RSS grew by %d MiB: cancelled", (r-baseRSS)>>20)
				cancel()
				return
			}
		}
	}()
	f(ctx)
	close(done)
	wg.Wait()
	return peak
}

// TestHostileModules: modules that ask the host for more than their
// memory limit allows end by their deadline, or are refused before they
// are compiled, and the host's heap grows by less than 512 MiB for each.
func TestHostileModules(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("measures /proc/self/statm")
	}
	rt := newRuntime(t, runtime.Config{DisableCache: true})
	const limit = 64 << 20
	tests := []struct {
		name    string
		bin     func() []byte
		refused string // the error of Compile, when refused
		exit    int    // else the exit status (-1: ended by its deadline)
	}{
		// 128 MiB of host memory per step without a cap: enough to pass
		// 512 MiB within the deadline, little enough that the watchdog
		// stops it soon after 1 GiB.
		{name: "table.grow forever", bin: func() []byte { return runtimetest.TableGrow(1<<24, -1) }, exit: -1},
		{name: "table.grow until -1", bin: func() []byte { return runtimetest.TableGrow(1<<24, 42) }, exit: 42},
		{name: "memory.grow until -1", bin: func() []byte { return runtimetest.MemoryGrow(16, 42) }, exit: 42},
		{name: "memory.grow forever", bin: func() []byte { return runtimetest.MemoryGrow(16, -1) }, exit: -1},
		{name: "50M locals", bin: func() []byte { return runtimetest.ManyLocals(50_000_000) },
			refused: "function 0 declares 50000000 locals (cap 50000)"},
		{name: "huge function body", bin: func() []byte { return runtimetest.BigFunction(2 << 20) },
			refused: "function 0 is 2097158 bytes (cap 1048576)"},
		{name: "huge data segment", bin: func() []byte { return runtimetest.BigData(40<<20, 1) },
			refused: "the data segments hold 41943040 bytes (cap 33554432)"},
		{name: "huge element segment", bin: func() []byte { return runtimetest.BigElem(1<<20, 1) },
			refused: "the element segments hold 1048576 entries (cap 262144)"},
		{name: "huge table", bin: func() []byte { return runtimetest.BigElem(1, 1<<30) },
			refused: "a table declares an initial size of 1073741824 entries (cap 262144)"},
		// 49 KB that any script can write: wazero's SSA builder gives
		// each loop header a parameter per local read inside it, 30
		// million values (several GB of heap, minutes of compile).
		{name: "3000 nested loops around 10000 locals", bin: func() []byte { return runtimetest.NestedLoops(3000, 10_000, false) },
			refused: "function 0 would make 30000000 SSA block parameters (branches × locals) (cap 600000)"},
		{name: "1000 nested loops changing 1000 locals", bin: func() []byte { return runtimetest.NestedLoops(1000, 1000, true) },
			refused: "function 0 would make 2000000 SSA block parameters (branches × locals) (cap 600000)"},
		{name: "element segment under the caps", bin: func() []byte { return runtimetest.BigElem(1000, 1000) }, exit: 0},
		{name: "many functions", bin: func() []byte { return runtimetest.ManyFunctions(200_000) },
			refused: "the module declares 200000 functions (cap 100000)"},
		{name: "truncated", bin: func() []byte { return runtimetest.TableGrow(1, 42)[:40] },
			refused: "malformed wasm module"},
		{name: "unknown opcode", bin: func() []byte {
			b := runtimetest.ManyLocals(1)
			return bytes.Replace(b, []byte{0x41, 0x00, 0x10, 0x00, 0x0b}, []byte{0x41, 0x00, 0x10, 0x00, 0xff}, 1)
		}, refused: "malformed wasm module: opcode 0xff"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err, cerr error
			growth := memWatch(t, context.Background(), func(ctx context.Context) {
				bin := tc.bin()
				var m *runtime.Module
				m, cerr = rt.Compile(ctx, tc.name, bin)
				if cerr != nil {
					return
				}
				rctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				_, err = rt.RunStats(rctx, m, wazero.NewModuleConfig(), runtime.RunOptions{MemoryLimit: limit})
			})
			t.Logf("heap growth %d MiB", growth>>20)
			if growth > 512<<20 {
				t.Errorf("the heap grew by %d MiB", growth>>20)
			}
			if tc.refused != "" {
				if !errors.Is(cerr, runtime.ErrModuleRefused) || !strings.Contains(cerr.Error(), tc.refused) ||
					strings.Contains(cerr.Error(), "\n") {
					t.Fatalf("Compile: %v, want ErrModuleRefused with %q on one line", cerr, tc.refused)
				}
				return
			}
			if cerr != nil {
				t.Fatalf("Compile: %v", cerr)
			}
			switch tc.exit {
			case -1:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Run: %v, want the deadline", err)
				}
			default:
				if got := exitCode(err); got != tc.exit {
					t.Fatalf("Run: %v (exit %d), want exit %d", err, got, tc.exit)
				}
			}
		})
	}
}
