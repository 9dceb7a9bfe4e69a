package pool

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// blocker is a job that runs until released or cancelled.
type blocker struct {
	started chan struct{}
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}), release: make(chan struct{})}
}

func (b *blocker) run(ctx context.Context) error {
	close(b.started)
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// waitFor polls cond for up to 5s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// occupy starts a blocking job on lane and waits until it runs.
func occupy(t *testing.T, p *Pool, lane Lane) (*blocker, chan error) {
	t.Helper()
	b := newBlocker()
	errc := make(chan error, 1)
	go func() {
		_, err := p.Submit(context.Background(), Job{Lane: lane, Session: "blocker", Run: b.run})
		errc <- err
	}()
	select {
	case <-b.started:
	case <-time.After(5 * time.Second):
		t.Fatal("blocking job did not start")
	}
	return b, errc
}

// enqueueInOrder submits jobs one after another, waiting until each is
// queued so the queue order is deterministic. Each job appends its name to
// order.
func enqueueInOrder(t *testing.T, p *Pool, lane Lane, sessions []string, order *[]string, mu *sync.Mutex) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	for i, s := range sessions {
		name := fmt.Sprintf("%s%d", s, i)
		want := p.laneStats(lane).Queued + 1
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.Submit(context.Background(), Job{Lane: lane, Session: s, Run: func(context.Context) error {
				mu.Lock()
				*order = append(*order, name)
				mu.Unlock()
				return nil
			}})
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}()
		waitFor(t, name+" queued", func() bool { return p.laneStats(lane).Queued == want })
	}
	return &wg
}

func (p *Pool) laneStats(l Lane) LaneStats {
	if l == System {
		return p.Stats().System
	}
	return p.Stats().Interactive
}

func TestSubmitRunsJob(t *testing.T) {
	p := New(Config{})
	defer p.Shutdown(context.Background())
	ran := false
	res, err := p.Submit(context.Background(), Job{Session: "s", Label: "x", Run: func(ctx context.Context) error {
		ran = true
		return nil
	}})
	if err != nil || !ran {
		t.Fatalf("Submit: err=%v ran=%v", err, ran)
	}
	if res.ID.String() == "00000000-0000-0000-0000-000000000000" || res.Lane != Interactive || res.Slot < 0 {
		t.Fatalf("bad result %+v", res)
	}
	want := errors.New("boom")
	if _, err := p.Submit(context.Background(), Job{Run: func(context.Context) error { return want }}); !errors.Is(err, want) {
		t.Fatalf("job error not returned: %v", err)
	}
	st := p.Stats()
	if st.Totals.Completed != 1 || st.Totals.Failed != 1 {
		t.Fatalf("totals %+v", st.Totals)
	}
}

func TestInvalidJob(t *testing.T) {
	p := New(Config{})
	defer p.Shutdown(context.Background())
	for _, j := range []Job{{}, {Lane: Lane(7), Run: func(context.Context) error { return nil }}} {
		if _, err := p.Submit(context.Background(), j); !errors.Is(err, ErrInvalidJob) {
			t.Errorf("%+v: got %v, want ErrInvalidJob", j, err)
		}
	}
}

func TestUniqueIDs(t *testing.T) {
	p := New(Config{})
	defer p.Shutdown(context.Background())
	seen := map[string]bool{}
	for range 50 {
		res, err := p.Submit(context.Background(), Job{Run: func(context.Context) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		if seen[res.ID.String()] {
			t.Fatalf("duplicate id %s", res.ID)
		}
		seen[res.ID.String()] = true
	}
}

// A system job runs while the interactive lane and its queue are full.
func TestLaneIsolation(t *testing.T) {
	p := New(Config{InteractiveWorkers: 1, MaxQueue: 2})
	defer p.Shutdown(context.Background())
	b, _ := occupy(t, p, Interactive)
	var mu sync.Mutex
	var order []string
	wg := enqueueInOrder(t, p, Interactive, []string{"a", "a"}, &order, &mu)

	_, err := p.Submit(context.Background(), Job{Run: func(context.Context) error { return nil }})
	if !errors.Is(err, ErrWorkerUnavailable) {
		t.Fatalf("overflow: got %v, want ErrWorkerUnavailable", err)
	}
	// The interactive jobs never end by themselves: a system job queued
	// behind them would run into this watchdog.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := p.Submit(ctx, Job{Lane: System, Label: "health", Run: func(context.Context) error { return nil }})
	if err != nil {
		t.Fatalf("system job while interactive full: %v", err)
	}
	if res.Lane != System {
		t.Fatalf("system job result %+v", res)
	}
	if st := p.Stats(); st.Interactive.Active != 1 || st.Interactive.Queued != 2 || st.Totals.Rejected != 1 {
		t.Fatalf("stats %+v", st)
	}
	close(b.release)
	wg.Wait()
}

// Interactive work never takes the system slot, even when it is idle.
func TestSystemSlotReserved(t *testing.T) {
	p := New(Config{InteractiveWorkers: 1, MaxQueue: -1})
	defer p.Shutdown(context.Background())
	b, _ := occupy(t, p, Interactive)
	defer close(b.release)
	if _, err := p.Submit(context.Background(), Job{Run: func(context.Context) error { return nil }}); !errors.Is(err, ErrWorkerUnavailable) {
		t.Fatalf("got %v, want ErrWorkerUnavailable with the system slot idle", err)
	}
	if st := p.Stats(); st.System.Active != 0 || st.System.Idle != 1 {
		t.Fatalf("system lane %+v", st.System)
	}
}

func TestFIFO(t *testing.T) {
	p := New(Config{InteractiveWorkers: 1, MaxQueue: 10})
	defer p.Shutdown(context.Background())
	b, _ := occupy(t, p, Interactive)
	var mu sync.Mutex
	var order []string
	// 5 queued is not more than half of 10: strict FIFO even across sessions.
	wg := enqueueInOrder(t, p, Interactive, []string{"a", "a", "a", "b", "c"}, &order, &mu)
	close(b.release)
	wg.Wait()
	want := "[a0 a1 a2 b3 c4]"
	if got := fmt.Sprint(order); got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
}

func TestFairnessWhenMoreThanHalfFull(t *testing.T) {
	p := New(Config{InteractiveWorkers: 1, MaxQueue: 10})
	defer p.Shutdown(context.Background())
	b, _ := occupy(t, p, Interactive)
	var mu sync.Mutex
	var order []string
	sessions := []string{"a", "a", "a", "a", "a", "a", "a", "b", "b", "c"}
	wg := enqueueInOrder(t, p, Interactive, sessions, &order, &mu)
	close(b.release)
	wg.Wait()
	// Queue lengths at each pick: 10,9,8,7,6 (round-robin), then 5..1 (FIFO).
	want := "[a0 b7 c9 a1 b8 a2 a3 a4 a5 a6]"
	if got := fmt.Sprint(order); got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
}

func TestQueueWaitWatchesContext(t *testing.T) {
	p := New(Config{InteractiveWorkers: 1})
	defer p.Shutdown(context.Background())
	b, _ := occupy(t, p, Interactive)
	defer close(b.release)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	ran := false
	start := time.Now()
	_, err := p.Submit(ctx, Job{Run: func(context.Context) error { ran = true; return nil }})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Submit returned after %v", d)
	}
	if st := p.Stats(); st.Interactive.Queued != 0 || st.Totals.Cancelled != 1 {
		t.Fatalf("stats after cancel %+v", st)
	}
	if ran {
		t.Fatal("cancelled job ran")
	}
}

func TestRunningJobSeesSubmitterCancel(t *testing.T) {
	p := New(Config{})
	defer p.Shutdown(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	b := newBlocker()
	go func() { <-b.started; cancel() }()
	_, err := p.Submit(ctx, Job{Run: b.run})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want Canceled", err)
	}
}

func TestJobTimeoutCounted(t *testing.T) {
	p := New(Config{})
	defer p.Shutdown(context.Background())
	_, err := p.Submit(context.Background(), Job{Timeout: 10 * time.Millisecond, Run: func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if st := p.Stats(); st.Totals.TimedOut != 1 || st.Totals.AvgExecMs < 5 {
		t.Fatalf("totals %+v", st.Totals)
	}
}

func TestPanicIsContained(t *testing.T) {
	p := New(Config{InteractiveWorkers: 1})
	defer p.Shutdown(context.Background())
	_, err := p.Submit(context.Background(), Job{Run: func(context.Context) error { panic("kaboom") }})
	if !errors.Is(err, ErrJobPanicked) {
		t.Fatalf("got %v, want ErrJobPanicked", err)
	}
	// The slot came back.
	if _, err := p.Submit(context.Background(), Job{Run: func(context.Context) error { return nil }}); err != nil {
		t.Fatal(err)
	}
}

func TestDisabledMode(t *testing.T) {
	p := New(Config{Mode: Disabled})
	defer p.Shutdown(context.Background())
	for _, lane := range []Lane{Interactive, System} {
		if _, err := p.Submit(context.Background(), Job{Lane: lane, Run: func(context.Context) error { return nil }}); !errors.Is(err, ErrDisabled) {
			t.Fatalf("%v: got %v, want ErrDisabled", lane, err)
		}
	}
	if p.Stats().Mode != "disabled" {
		t.Fatal("mode not reported")
	}
	p.SetMode(Normal)
	if _, err := p.Submit(context.Background(), Job{Run: func(context.Context) error { return nil }}); err != nil {
		t.Fatal(err)
	}
}

func TestShutdown(t *testing.T) {
	p := New(Config{InteractiveWorkers: 1})
	b, runErr := occupy(t, p, Interactive)
	_ = b
	queuedErr := make(chan error, 1)
	go func() {
		_, err := p.Submit(context.Background(), Job{Run: func(context.Context) error { return nil }})
		queuedErr <- err
	}()
	waitFor(t, "queued", func() bool { return p.Stats().Interactive.Queued == 1 })

	start := time.Now()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Shutdown took %v", d)
	}
	if err := <-queuedErr; !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("queued job: %v, want ErrShuttingDown", err)
	}
	if err := <-runErr; !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("running job: %v, want cause ErrShuttingDown", err)
	}
	if _, err := p.Submit(context.Background(), Job{Run: func(context.Context) error { return nil }}); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("after shutdown: %v", err)
	}
}

func TestShutdownDeadlineReportsStuckJobs(t *testing.T) {
	p := New(Config{})
	release := make(chan struct{})
	started := make(chan struct{})
	go p.Submit(context.Background(), Job{Session: "s1", Label: "stubborn", Run: func(context.Context) error {
		close(started)
		<-release // ignores its context
		return nil
	}})
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := p.Shutdown(ctx)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Shutdown took %v, deadline was 50ms", d)
	}
	var se *ShutdownError
	if !errors.As(err, &se) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want *ShutdownError", err)
	}
	if len(se.Running) != 1 || se.Running[0].Label != "stubborn" || se.Running[0].Session != "s1" {
		t.Fatalf("running %+v", se.Running)
	}
	close(release)
}

func TestShutdownDefaultTimeout(t *testing.T) {
	p := New(Config{ShutdownTimeout: 30 * time.Millisecond})
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	go p.Submit(context.Background(), Job{Run: func(context.Context) error { close(started); <-release; return nil }})
	<-started
	start := time.Now()
	if err := p.Shutdown(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	// The job never ends by itself: the upper bound is a watchdog.
	if d := time.Since(start); d < 25*time.Millisecond || d > 30*time.Second {
		t.Fatalf("Shutdown took %v, want about 30ms", d)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	p := New(Config{InteractiveWorkers: 2, MaxQueue: 50})
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%5)*time.Millisecond)
			defer cancel()
			p.Submit(ctx, Job{Session: fmt.Sprint(i % 3), Run: func(ctx context.Context) error {
				select {
				case <-ctx.Done():
				case <-time.After(time.Millisecond):
				}
				return nil
			}})
		}()
	}
	wg.Wait()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
	st := p.Stats()
	if st.Interactive.Active != 0 || st.Interactive.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestConcurrencyBound(t *testing.T) {
	p := New(Config{InteractiveWorkers: 2, MaxQueue: 100})
	defer p.Shutdown(context.Background())
	var mu sync.Mutex
	cur, peak := 0, 0
	var wg sync.WaitGroup
	for range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.Submit(context.Background(), Job{Run: func(context.Context) error {
				mu.Lock()
				cur++
				peak = max(peak, cur)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				cur--
				mu.Unlock()
				return nil
			}})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	want := min(2, runtime.NumCPU())
	if peak != want {
		t.Fatalf("peak concurrency %d, want %d", peak, want)
	}
}

func TestRetry(t *testing.T) {
	p := New(Config{InteractiveWorkers: 1, MaxQueue: -1})
	defer p.Shutdown(context.Background())
	b, _ := occupy(t, p, Interactive)
	time.AfterFunc(30*time.Millisecond, func() { close(b.release) })
	calls := 0
	err := Retry(context.Background(), Backoff{Initial: 5 * time.Millisecond, Attempts: 100}, func(ctx context.Context) error {
		calls++
		_, err := p.Submit(ctx, Job{Run: func(context.Context) error { return nil }})
		return err
	})
	if err != nil || calls < 2 {
		t.Fatalf("err=%v calls=%d", err, calls)
	}
}

func TestRetryHonoursContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	// A backoff of an hour: Retry returning at all shows that it
	// honoured ctx (the bound is a watchdog, not a speed limit).
	err := Retry(ctx, Backoff{Initial: time.Hour}, func(context.Context) error { return ErrWorkerUnavailable })
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrWorkerUnavailable) {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("Retry took %v after ctx expired", d)
	}
	other := errors.New("other")
	n := 0
	if err := Retry(context.Background(), Backoff{}, func(context.Context) error { n++; return other }); err != other || n != 1 {
		t.Fatalf("non-retryable error: %v after %d calls", err, n)
	}
}

func BenchmarkSubmit(b *testing.B) {
	p := New(Config{})
	defer p.Shutdown(context.Background())
	job := Job{Session: "bench", Run: func(context.Context) error { return nil }}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Submit(ctx, job); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSubmitParallel(b *testing.B) {
	p := New(Config{MaxQueue: 1000})
	defer p.Shutdown(context.Background())
	job := Job{Session: "bench", Run: func(context.Context) error { return nil }}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := p.Submit(context.Background(), job); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
