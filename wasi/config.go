package wasi

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"io"
	mrand "math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental/sysfs"

	"github.com/wasmbox/wasmbox/vfs"
)

// Options tune Configure. The zero value gives real clocks, real randomness
// and the VFS mounted at "/".
type Options struct {
	// Deterministic, when non-nil, replaces the clocks and the random source
	// with reproducible ones: the same program with the same input then
	// produces the same output on every run.
	Deterministic *Deterministic

	// AbsoluteSymlinks lets the guest create symlinks whose target is an
	// absolute path. They resolve from the vfs root (the guest's "/"), so
	// they cannot escape, but WASI forbids them and wasi-testsuite checks
	// that they fail with EPERM, so the default is off.
	AbsoluteSymlinks bool

	// Stdin, Stdout and Stderr, when non-nil, become the guest's stdio
	// (use them instead of ModuleConfig.WithStdin and friends). Configure
	// wraps them so that a read, write or poll that fails because ctx is
	// done ends the run at once with exit code sys.ExitCodeContextCanceled
	// or sys.ExitCodeDeadlineExceeded, instead of handing the guest an
	// error it might survive and exit 0 with; a write whose reader closed
	// (an error wrapping syscall.EPIPE, as from a PipeWriter) ends it with
	// ExitCodeBrokenPipe. A Stdin that implements experimental/sys.Pollable
	// (a PipeReader does) keeps serving poll_oneoff.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Deterministic describes the reproducible clocks and randomness of a run.
// Zero fields take the defaults noted on each.
type Deterministic struct {
	// Walltime is what the realtime clock always reads (it does not
	// advance). Zero means 2000-01-01T00:00:00Z.
	Walltime time.Time
	// Seed seeds the random source (random_get). Zero means 1.
	Seed int64
	// NanotimeStep is how far the monotonic clock advances on every read
	// (it starts at 0). Sleeping advances it by the time slept too. Zero
	// means 1ms.
	NanotimeStep time.Duration
}

// Defaults of Deterministic.
var (
	DefaultWalltime     = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	DefaultSeed         = int64(1)
	DefaultNanotimeStep = time.Millisecond
)

func (d Deterministic) withDefaults() Deterministic {
	if d.Walltime.IsZero() {
		d.Walltime = DefaultWalltime
	}
	if d.Seed == 0 {
		d.Seed = DefaultSeed
	}
	if d.NanotimeStep <= 0 {
		d.NanotimeStep = DefaultNanotimeStep
	}
	return d
}

// Configure returns mc set up to run one guest against fsys:
//
//   - fsys is mounted at the guest's "/" (through NewFS), so a guest
//     opening "/etc/x" or, from the initial working directory, "x" reaches
//     the vfs path "/etc/x" or "/x". A nil fsys gives the guest no
//     preopened directory.
//   - walltime and nanotime are the host clocks, or the fixed/stepping
//     clocks of opts.Deterministic.
//   - random_get reads crypto/rand, or a ChaCha8 stream seeded by
//     opts.Deterministic.Seed.
//   - sleeping (poll_oneoff with a clock subscription, which is how
//     wasip1 programs sleep) waits on a timer and on ctx.Done(), and a
//     cancel ends the run right there with exit code
//     sys.ExitCodeContextCanceled (or ExitCodeDeadlineExceeded): wazero's
//     own WithSysNanosleep ignores the context.
//   - opts.Stdin, Stdout and Stderr become the guest's stdio, with the same
//     guarantee (see Options).
//   - sched_yield yields the Go scheduler.
//
// ctx must be the context the module runs under (the one passed to
// InstantiateModule): the sleep and the stdio watch it. Configure never
// fails; arguments and environment are left to the caller. Use NewPipe
// (with the same ctx) for stdio that honours ctx.
//
// # Notes
//
//   - The runtime must be built with
//     wazero.NewRuntimeConfig().WithCloseOnContextDone(true) for a cancel
//     to stop a guest that is computing rather than waiting.
//   - A ModuleConfig made by Configure belongs to one run (its clocks keep
//     state and its sleep watches ctx); make a new one per instantiation.
func Configure(ctx context.Context, mc wazero.ModuleConfig, fsys vfs.FS, opts Options) wazero.ModuleConfig {
	if ctx == nil {
		ctx = context.Background()
	}
	if fsys != nil { // nil: no preopened directory
		fsc := wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(newFS(fsys, opts), "/")
		mc = mc.WithFSConfig(fsc)
	}
	mc = mc.WithOsyield(runtime.Gosched)
	if opts.Stdin != nil {
		mc = mc.WithStdin(&guestReader{ctx: ctx, r: opts.Stdin})
	}
	if opts.Stdout != nil {
		mc = mc.WithStdout(&guestWriter{ctx: ctx, w: opts.Stdout})
	}
	if opts.Stderr != nil {
		mc = mc.WithStderr(&guestWriter{ctx: ctx, w: opts.Stderr})
	}

	if opts.Deterministic == nil {
		return mc.WithSysWalltime().
			WithSysNanotime().
			WithNanosleep(contextSleep(ctx, nil)).
			WithRandSource(rand.Reader)
	}

	d := opts.Deterministic.withDefaults()
	clock := &stepClock{step: int64(d.NanotimeStep)}
	sec, nsec := d.Walltime.Unix(), int32(d.Walltime.Nanosecond())
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(d.Seed))
	return mc.
		WithWalltime(func() (int64, int32) { return sec, nsec }, 1).
		WithNanotime(clock.read, 1).
		WithNanosleep(contextSleep(ctx, clock)).
		WithRandSource(&lockedReader{r: mrand.NewChaCha8(seed)})
}

// stepClock is the deterministic monotonic clock: every read advances it by
// step.
type stepClock struct {
	now  atomic.Int64
	step int64
}

func (c *stepClock) read() int64 { return c.now.Add(c.step) - c.step }

// contextSleep returns a nanosleep that ends the guest (see exitIfDone)
// as soon as ctx is done. When clock is non-nil the slept duration is added
// to it.
func contextSleep(ctx context.Context, clock *stepClock) func(ns int64) {
	return func(ns int64) {
		if clock != nil && ns > 0 {
			clock.now.Add(ns)
		}
		if Sleep(ctx, time.Duration(ns)) != nil {
			exitIfDone(ctx)
		}
	}
}

// Sleep waits for d or until ctx is done, whichever comes first, and
// reports ctx.Err() in the latter case. It leaves no timer or goroutine
// behind.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lockedReader serialises reads of a random source that is not safe for
// concurrent use.
type lockedReader struct {
	mu sync.Mutex
	r  *mrand.ChaCha8
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}

// Sources are the clocks, randomness and sleep of a run, as the wasmbox
// WASI module (package wasi/preview1) takes them: real by default, or the
// deterministic ones of Options.Deterministic (the same as Configure
// gives wazero's module).
type Sources struct {
	Walltime func() time.Time
	Nanotime func() int64
	Rand     io.Reader
	Sleep    func(ctx context.Context, d time.Duration) error
}

// NewSources returns the sources for opts.
func NewSources(opts Options) Sources {
	if opts.Deterministic == nil {
		start := time.Now()
		return Sources{
			Walltime: time.Now,
			Nanotime: func() int64 { return int64(time.Since(start)) },
			Rand:     rand.Reader,
			Sleep:    Sleep,
		}
	}
	d := opts.Deterministic.withDefaults()
	clock := &stepClock{step: int64(d.NanotimeStep)}
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(d.Seed))
	wall := d.Walltime
	return Sources{
		Walltime: func() time.Time { return wall },
		Nanotime: clock.read,
		Rand:     &lockedReader{r: mrand.NewChaCha8(seed)},
		Sleep: func(ctx context.Context, dur time.Duration) error {
			if dur > 0 {
				clock.now.Add(int64(dur))
			}
			return Sleep(ctx, dur)
		},
	}
}
