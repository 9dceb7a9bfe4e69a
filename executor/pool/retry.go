package pool

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Backoff describes an exponential backoff. The zero value gives the
// defaults: first wait 100ms, doubling up to 5s, at most 8 attempts.
type Backoff struct {
	// Initial is the first wait (default 100ms).
	Initial time.Duration
	// Max caps every wait (default 5s).
	Max time.Duration
	// Attempts is the total number of calls, the first included
	// (default 8).
	Attempts int
}

// Retry calls f until it returns an error other than [ErrWorkerUnavailable]
// (nil included), the attempts are used up, or ctx ends. Between attempts
// it waits with exponential backoff and full jitter (a random wait in
// [d/2, d]). It returns f's last error, or ctx's error (wrapping the last
// error of f as well) when ctx ends while waiting.
//
//	err := pool.Retry(ctx, pool.Backoff{}, func(ctx context.Context) error {
//		_, err := p.Submit(ctx, job)
//		return err
//	})
func Retry(ctx context.Context, b Backoff, f func(ctx context.Context) error) error {
	if b.Initial <= 0 {
		b.Initial = 100 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 5 * time.Second
	}
	if b.Attempts <= 0 {
		b.Attempts = 8
	}
	d := b.Initial
	var err error
	for i := 0; i < b.Attempts; i++ {
		if i > 0 {
			wait := d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return errors.Join(context.Cause(ctx), err)
			case <-t.C:
			}
			d = min(2*d, b.Max)
		}
		if err = f(ctx); !errors.Is(err, ErrWorkerUnavailable) {
			return err
		}
	}
	return err
}
