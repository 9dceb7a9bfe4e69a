package runtime

import (
	"context"
	"errors"
	"testing"
)

// TestStopHaltsTheTreeFirst: stop marks the table (and every table of the
// runs below it) halted before it cancels any process, so that no process
// of the tree can act on another one's end while the cancels go round
// (see procTable.halted); the run's own cancel halts it too.
func TestStopHaltsTheTreeFirst(t *testing.T) {
	rctx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	ctx, stop := withProcs(rctx, 8, nil)
	top := tableOf(ctx)
	if err := top.halted(); err != nil {
		t.Fatalf("a running table is halted: %v", err)
	}
	// A run spawned under the table (a command a process execs), with a
	// table of its own.
	nctx, stopNested := withProcs(ctx, 0, nil)
	defer stopNested()
	nested := tableOf(nctx)
	if nested.parent != top || nested.count != top.count {
		t.Fatal("the nested table is not under its run's")
	}

	var seen []error
	for range 3 {
		p, _, pctx := top.admit(ctx)
		if p == nil {
			t.Fatal("admit refused")
		}
		cancel := p.cancel
		p.cancel = func() {
			// What any process of the tree sees when this one ends.
			seen = append(seen, nested.halted(), top.halted())
			cancel()
		}
		go func() {
			<-pctx.Done()
			top.done(p)
		}()
	}
	stop()
	if len(seen) != 6 {
		t.Fatalf("%d cancels seen, want 3", len(seen)/2)
	}
	for i, err := range seen {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancel %d: a process could still act (halted: %v)", i/2, err)
		}
	}

	// The run's cancel (its deadline, a limit of its tree) halts a
	// running table at once, before the cancel reaches each process.
	ctx2, stop2 := withProcs(rctx, 8, nil)
	defer stop2()
	cancelRun()
	if err := tableOf(ctx2).halted(); !errors.Is(err, context.Canceled) {
		t.Errorf("halted after the run's cancel: %v", err)
	}
}
