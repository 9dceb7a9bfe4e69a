package pool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHammer submits from many goroutines to both lanes with random
// cancellations, timeouts and panics, flips the mode, and shuts down in the
// middle. Every Submit must return, with an error from the documented set,
// and the pool must end empty.
func TestHammer(t *testing.T) {
	p := New(Config{InteractiveWorkers: 2, SystemWorkers: 1, MaxQueue: 6})
	var wg sync.WaitGroup
	var ran atomic.Int64
	known := []error{ErrWorkerUnavailable, ErrShuttingDown, ErrDisabled, ErrJobPanicked, context.Canceled, context.DeadlineExceeded, errJob}
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := 0; i < 60; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(4000))*time.Microsecond)
				lane := Interactive
				if rng.IntN(5) == 0 {
					lane = System
				}
				mode := rng.IntN(10)
				_, err := p.Submit(ctx, Job{Lane: lane, Session: fmt.Sprint(g % 4), Run: func(ctx context.Context) error {
					ran.Add(1)
					switch mode {
					case 0:
						panic("hammer")
					case 1:
						return errJob
					case 2:
						<-ctx.Done()
						return ctx.Err()
					}
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(time.Duration(rng.IntN(300)) * time.Microsecond):
						return nil
					}
				}})
				cancel()
				if err != nil {
					ok := false
					for _, k := range known {
						ok = ok || errors.Is(err, k)
					}
					if !ok {
						t.Errorf("unexpected error %v", err)
					}
				}
			}
		}()
	}
	go func() {
		for i := 0; i < 20; i++ {
			time.Sleep(time.Millisecond)
			p.SetMode(Mode(i % 2))
		}
		p.SetMode(Normal)
	}()
	time.Sleep(80 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	wg.Wait()
	st := p.Stats()
	if st.Interactive.Active != 0 || st.Interactive.Queued != 0 || st.System.Active != 0 || st.System.Queued != 0 {
		t.Fatalf("pool not empty: %+v", st)
	}
	tot := st.Totals
	if got := int64(tot.Completed + tot.Failed + tot.TimedOut); got != ran.Load() {
		t.Fatalf("finished %d jobs, %d ran", got, ran.Load())
	}
	t.Logf("ran %d, totals %+v", ran.Load(), tot)
}

var errJob = errors.New("job failed")
