package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// TestRunMemoryBudget: one run starts eight commands that each hold
// 16 MiB of touched memory (within their own 64 MiB limit) at the same
// time; the run's 128 MiB budget admits only some of them, and the others
// end with 137 and one line naming the run's budget. (Before, every
// command had only its own limit: the eight held together what they
// liked, 64 commands of 256 MiB reached 3.5 GB.)
func TestRunMemoryBudget(t *testing.T) {
	sb, err := New(context.Background(), WithLimits(Limits{
		Timeout: 60 * time.Second, MemoryPerCommand: 64 << 20, RunMemory: 128 << 20,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if err := sb.WriteFile("/tmp/hog", runtimetest.Guest(t, "hog"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Every hog holds its memory until /tmp/n has a line for each of
	// the eight (its own "allocated", or "refused" for one that was), so
	// that they all hold at once (the run's timeout is the watchdog).
	script := `for i in 1 2 3 4 5 6 7 8; do
  { /tmp/hog 16 hold /tmp/n 8 2>>/tmp/err || echo "refused $?" >> /tmp/n; } &
done
wait
sort /tmp/n | uniq -c; sort -u /tmp/err`
	res, err := sb.Run(context.Background(), script)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d %s\n%s%s", res.ExitCode, res.ErrorClass, res.Stdout, res.Stderr)
	if !strings.Contains(res.Stdout, "allocated 16 MiB") || !strings.Contains(res.Stdout, "refused 137") {
		t.Fatalf("want some hogs to hold and some refused by the run budget:\n%s", res.Stdout)
	}
	// The refusal says which budget, in one line.
	if !strings.HasSuffix(res.Stdout, "\nwasmbox: /tmp/hog: run memory budget (128 MiB) exceeded\n") {
		t.Errorf("stderr of the refused hogs is not the one line naming the run budget:\n%s", res.Stdout)
	}
}

// TestSandboxReservesMemory: a sandbox holds its VFS quota and its shell's
// limit in the process budget while it lives (a fork its own), a run its
// RunMemory while it runs; all of it comes back.
func TestSandboxReservesMemory(t *testing.T) {
	sb, err := New(context.Background(), WithLimits(Limits{VFSBytes: 32 << 20, ShellMemory: 64 << 20, RunMemory: 128 << 20}))
	if err != nil {
		t.Fatal(err)
	}
	if got := sb.mem.session.Used(); got != 96<<20 {
		t.Errorf("session holds %d, want 96 MiB", got)
	}
	if _, err := sb.Run(context.Background(), "true"); err != nil {
		t.Fatal(err)
	}
	if during := sb.mem.session.Used(); during != 96<<20 {
		t.Errorf("after a run the session holds %d, want 96 MiB", during)
	}
	f, err := sb.Fork()
	if err != nil {
		t.Fatal(err)
	}
	if got := f.mem.session.Used(); got != 96<<20 {
		t.Errorf("fork holds %d, want its own 96 MiB", got)
	}
	f.Close()
	sb.Close()
	if sb.mem.session.Used() != 0 || f.mem.session.Used() != 0 {
		t.Errorf("after Close: %d, %d", sb.mem.session.Used(), f.mem.session.Used())
	}
}

// TestProcessBudgetRefusesSandbox: an engine whose process budget cannot
// hold another sandbox refuses New (and a run that does not fit refuses
// Run) with ErrMemoryBudget before allocating anything; once others are
// closed, the same sandbox is admitted.
func TestProcessBudgetRefusesSandbox(t *testing.T) {
	eng, err := NewEngine(context.Background(), runtime.Config{MemoryBudget: 512 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	proc := eng.Runtime().Budget()
	lim := Limits{VFSBytes: 64 << 20, ShellMemory: 64 << 20, RunMemory: 32 << 20}
	a, err := New(context.Background(), WithEngine(eng), WithLimits(lim))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := New(context.Background(), WithEngine(eng), WithLimits(lim))
	if err != nil {
		t.Fatal(err)
	}
	// a and b hold 256 MiB: a sandbox of 264 MiB does not fit beside them.
	third := Limits{VFSBytes: 200 << 20, ShellMemory: 64 << 20, RunMemory: 32 << 20}
	c, err := New(context.Background(), WithEngine(eng), WithLimits(third))
	if !errors.Is(err, ErrMemoryBudget) {
		c.Close()
		t.Fatalf("third sandbox: %v, want ErrMemoryBudget", err)
	}
	if !strings.Contains(err.Error(), "process memory budget (512MiB) exceeded") {
		t.Errorf("message: %v", err)
	}
	t.Logf("refused: %v", err)
	if res, err := a.Run(context.Background(), "true"); err != nil || res.ExitCode != 0 {
		t.Fatalf("a run that fits: %v %+v", err, res)
	}
	b.Close()
	t.Logf("process budget after closing b: %d used", proc.Used())
	c, err = New(context.Background(), WithEngine(eng), WithLimits(third))
	if err != nil {
		t.Fatalf("third sandbox after b closed: %v", err)
	}
	c.Close()
	// A run whose budget does not fit is refused before it starts.
	d, err := New(context.Background(), WithEngine(eng), WithLimits(Limits{VFSBytes: 64 << 20, ShellMemory: 64 << 20, RunMemory: 400 << 20}))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, err = d.Run(context.Background(), "true")
	if !errors.Is(err, ErrMemoryBudget) {
		t.Fatalf("a run over the process budget: %v, want ErrMemoryBudget", err)
	}
	t.Logf("run refused: %v", err)
}
