package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// TestProcessBudgetRefusesGrowth: the runtime's budget bounds the sum of
// its instances' memory: a guest whose own limit is far above it is
// refused growth at the budget, with an error that names it.
func TestProcessBudgetRefusesGrowth(t *testing.T) {
	rt := newRuntime(t, runtime.Config{MemoryBudget: 8 << 20})
	hog := compile(t, rt, "hog", runtimetest.Hog())
	st, err := rt.RunStats(context.Background(), hog, wazero.NewModuleConfig(), runtime.RunOptions{MemoryLimit: 64 << 20})
	if !errors.Is(err, runtime.ErrMemoryLimit) || !errors.Is(err, runtime.ErrBudget) {
		t.Fatalf("err = %v, want a memory limit refused by the budget", err)
	}
	if !strings.Contains(err.Error(), "process memory budget (8MiB) exceeded") {
		t.Errorf("message %q does not name the process budget", err)
	}
	if st.PeakMemory > 8<<20 {
		t.Errorf("peak %d past the 8 MiB budget", st.PeakMemory)
	}
	if u := rt.Budget().Used(); u != 0 {
		t.Errorf("budget holds %d after the run", u)
	}
}

// TestRunBudgetAcrossCommands: two command trees of one run (each with
// its own 4 MiB limit) share the run's 3 MiB budget: what one holds, the
// other cannot take, and the refusal names the run's budget.
func TestRunBudgetAcrossCommands(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	ctx := context.Background()
	run := rt.Budget().Child("run", 3<<20)
	big := compile(t, rt, "big", runtimetest.BigMemory(32)) // 2 MiB
	st, err := preview1.NewState(preview1.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	in, err := rt.Instantiate(ctx, big, runtime.InstanceOptions{MemoryLimit: 4 << 20, WASI: st, Budget: run.Child("command", 4<<20)})
	if err != nil {
		t.Fatal(err)
	}
	if run.Used() != 2<<20 || rt.Budget().Used() < 2<<20 {
		t.Fatalf("a live instance of 2 MiB: run budget %d, process %d", run.Used(), rt.Budget().Used())
	}
	hog := compile(t, rt, "hog", runtimetest.Hog())
	stats, err := rt.RunStats(ctx, hog, wazero.NewModuleConfig(), runtime.RunOptions{MemoryLimit: 4 << 20, Budget: run.Child("command", 4<<20)})
	if !errors.Is(err, runtime.ErrBudget) || !strings.Contains(err.Error(), "run memory budget (3MiB) exceeded") {
		t.Fatalf("hog: %v, want the run budget to refuse it", err)
	}
	if stats.PeakMemory != 1<<20 {
		t.Errorf("hog peak %d, want the 1 MiB the instance left", stats.PeakMemory)
	}
	// An instance whose initial memory does not fit is refused before
	// it is made.
	_, err = rt.Instantiate(ctx, big, runtime.InstanceOptions{MemoryLimit: 4 << 20, WASI: st, Budget: run.Child("command", 4<<20)})
	if !errors.Is(err, runtime.ErrBudget) || !errors.Is(err, runtime.ErrMemoryLimit) {
		t.Fatalf("second instance: %v, want refused by the budget", err)
	}
	in.Close(ctx)
	if run.Used() != 0 || rt.Budget().Used() != 0 {
		t.Fatalf("after close: run %d process %d", run.Used(), rt.Budget().Used())
	}
}

// TestSnapshotCounted: a snapshot's image is reserved in the runtime's
// budget for what it holds, for as long as it lives, and a budget with no
// room for it leaves the runs without a snapshot rather than over budget.
func TestSnapshotCounted(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, runtime.Config{DisableCache: true, Spares: -1})
	m := compile(t, rt, "grow", runtimetest.GrowingReactor(16))
	if err := rt.Run(ctx, m, wazero.NewModuleConfig(), runtime.RunOptions{MemoryLimit: 8 << 20}); err != nil {
		t.Fatal(err)
	}
	want := uint64(17 * 64 << 10) // every page was written
	if got := rt.SnapshotBytes(); got != want {
		t.Fatalf("SnapshotBytes = %d, want %d", got, want)
	}
	if got := rt.Budget().Used(); got != want {
		t.Fatalf("budget holds %d with no run alive, want the snapshot's %d", got, want)
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if rt.SnapshotBytes() != 0 || rt.Budget().Used() != 0 {
		t.Fatalf("after Close: snapshots %d, budget %d", rt.SnapshotBytes(), rt.Budget().Used())
	}

	// 1.5 MiB: room for the instance that initializes (1088 KiB), not
	// for an image of it besides.
	small := newRuntime(t, runtime.Config{DisableCache: true, Spares: -1, MemoryBudget: 1536 << 10})
	m = compile(t, small, "grow", runtimetest.GrowingReactor(16))
	if err := small.Run(ctx, m, wazero.NewModuleConfig(), runtime.RunOptions{MemoryLimit: 8 << 20}); err != nil {
		t.Fatal(err)
	}
	if small.SnapshotBytes() != 0 || small.Budget().Used() != 0 {
		t.Fatalf("a snapshot over budget was kept: %d, budget %d", small.SnapshotBytes(), small.Budget().Used())
	}
}

// TestReserveCompile: a compile's estimate is reserved before it starts
// and refused when the budget has no room.
func TestReserveCompile(t *testing.T) {
	rt := newRuntime(t, runtime.Config{MemoryBudget: 64 << 20})
	release, err := rt.ReserveCompile(nil, 48<<20)
	if err != nil {
		t.Fatal(err)
	}
	if rt.Budget().Used() != 48<<20 {
		t.Fatalf("reserved %d", rt.Budget().Used())
	}
	run := rt.Budget().Child("run", 32<<20)
	if _, err := rt.ReserveCompile(run, 32<<20); !errors.Is(err, runtime.ErrBudget) || !strings.Contains(err.Error(), "process memory budget (64MiB) exceeded") {
		t.Fatalf("second compile: %v, want the process budget to refuse it", err)
	}
	release()
	release()
	if rt.Budget().Used() != 0 {
		t.Fatalf("after release: %d", rt.Budget().Used())
	}
}
