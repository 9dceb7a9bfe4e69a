// Package pool runs every job of wasmbox through a bounded set of execution
// slots split into two lanes, so that agent work can never starve
// maintenance work and a flood of submissions fails fast instead of piling
// up without bound.
//
// # Lanes
//
// [Interactive] is for agent work (every Run of a sandbox, every command an
// agent issues). Its concurrency is configurable (default 2, at most
// runtime.NumCPU()). [System] is for maintenance (health checks, git sync)
// and owns reserved slots (default 1) that interactive work can never take,
// so a system job starts even while the interactive lane and its queue are
// full.
//
// # Queueing
//
// When every slot of a lane is busy, a job waits in that lane's FIFO queue.
// The queue has a maximum depth (default 10); a submission beyond it fails at
// once with [ErrWorkerUnavailable], which callers may retry with [Retry].
// While a lane's queue is more than half full, the next job is chosen
// round-robin across sessions (the session served least recently goes
// first), so one chatty session cannot monopolise the lane. At or below half
// full the order is strict FIFO.
//
// Waiting in the queue watches the submitter's context: a cancelled or
// expired context takes the job out of the queue and Submit returns the
// context's error. A running job gets a context derived from the submitter's
// context; the pool cancels it on [Pool.Shutdown].
//
// The pool knows nothing about WebAssembly: a job is a plain
// func(ctx context.Context) error plus metadata.
package pool

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Lane selects which set of slots runs a job.
type Lane int

const (
	// Interactive is the lane for agent work. It is the zero value.
	Interactive Lane = iota
	// System is the lane for maintenance work; its slots are reserved.
	System
)

// String returns "interactive" or "system".
func (l Lane) String() string {
	switch l {
	case Interactive:
		return "interactive"
	case System:
		return "system"
	}
	return fmt.Sprintf("lane(%d)", int(l))
}

// ParseLane is the inverse of [Lane.String].
func ParseLane(s string) (Lane, error) {
	switch s {
	case "interactive", "":
		return Interactive, nil
	case "system":
		return System, nil
	}
	return 0, fmt.Errorf("pool: unknown lane %q", s)
}

// Mode is the operating mode of a pool; see [Pool.SetMode].
type Mode int

const (
	// Normal accepts jobs.
	Normal Mode = iota
	// Disabled rejects every submission at once with [ErrDisabled] while
	// the host process (health endpoints, dashboards) stays up. Jobs that
	// are already queued or running are not affected.
	Disabled
)

// String returns "normal" or "disabled".
func (m Mode) String() string {
	if m == Disabled {
		return "disabled"
	}
	return "normal"
}

// Sentinel errors. Every error the pool returns for these conditions
// answers errors.Is with one of them.
var (
	// ErrWorkerUnavailable: the lane's queue is full. The caller may retry
	// later, for example with [Retry].
	ErrWorkerUnavailable = errors.New("pool: worker unavailable (queue full)")
	// ErrShuttingDown: the pool is shutting down or shut down; queued jobs
	// are rejected with it and running jobs see it as their context's cause.
	ErrShuttingDown = errors.New("pool: shutting down")
	// ErrDisabled: the pool is in [Disabled] mode.
	ErrDisabled = errors.New("pool: disabled")
	// ErrJobPanicked: the job panicked; the panic was recovered and the
	// slot returned to the pool.
	ErrJobPanicked = errors.New("pool: job panicked")
	// ErrInvalidJob: the job has no Run function or an unknown lane.
	ErrInvalidJob = errors.New("pool: invalid job")
)

// Job is one unit of work.
type Job struct {
	// Run does the work. It must return soon after ctx is done.
	Run func(ctx context.Context) error
	// Session identifies the submitter for fairness; may be empty.
	Session string
	// Lane selects the slots; the zero value is [Interactive].
	Lane Lane
	// Label is a short human description ("run", "git status").
	Label string
	// Timeout, when positive, bounds the running time of the job (not its
	// time in the queue) on top of any deadline of the submitter's context.
	Timeout time.Duration
}

// Result describes how a job went through the pool.
type Result struct {
	// ID is the job's unique id (a random UUID).
	ID uuid.UUID
	// Lane and Slot say where it ran; Slot is in [0, lane concurrency).
	Lane Lane
	Slot int
	// Queued is the time spent waiting for a slot; Ran the running time.
	Queued time.Duration
	Ran    time.Duration
	// Started and Ended are wall-clock times of the run.
	Started, Ended time.Time
}

// Config configures a [Pool]. The zero value gives the defaults.
type Config struct {
	// InteractiveWorkers is the interactive lane's concurrency: default 2,
	// clamped to [1, runtime.NumCPU()].
	InteractiveWorkers int
	// SystemWorkers is the number of reserved system slots: default 1.
	SystemWorkers int
	// MaxQueue is the maximum queue depth of each lane: default 10. A
	// negative value means no queue at all (reject when every slot is busy).
	MaxQueue int
	// ShutdownTimeout bounds [Pool.Shutdown] when its context has no
	// deadline: default 10s.
	ShutdownTimeout time.Duration
	// Mode is the initial mode.
	Mode Mode
}

func (c Config) withDefaults() Config {
	if c.InteractiveWorkers <= 0 {
		c.InteractiveWorkers = 2
	}
	if n := runtime.NumCPU(); c.InteractiveWorkers > n {
		c.InteractiveWorkers = n
	}
	if c.SystemWorkers <= 0 {
		c.SystemWorkers = 1
	}
	switch {
	case c.MaxQueue == 0:
		c.MaxQueue = 10
	case c.MaxQueue < 0:
		c.MaxQueue = 0
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 10 * time.Second
	}
	return c
}

// LaneStats is a snapshot of one lane.
type LaneStats struct {
	Workers int `json:"workers"`
	Active  int `json:"active"`
	Idle    int `json:"idle"`
	Queued  int `json:"queued"`
	// MaxQueue is the lane's queue depth limit.
	MaxQueue int `json:"max_queue"`
}

// Totals are counters over the pool's lifetime.
type Totals struct {
	// Completed jobs returned nil; Failed returned another error; TimedOut
	// returned an error matching context.DeadlineExceeded.
	Completed uint64 `json:"completed"`
	Failed    uint64 `json:"failed"`
	TimedOut  uint64 `json:"timed_out"`
	// Rejected submissions got ErrWorkerUnavailable; Cancelled ones left
	// the queue because their context ended or the pool shut down.
	Rejected  uint64 `json:"rejected"`
	Cancelled uint64 `json:"cancelled"`
	// AvgExecMs is the mean running time of finished jobs.
	AvgExecMs float64 `json:"avg_exec_ms"`
}

// Stats is a snapshot of the whole pool.
type Stats struct {
	Mode        string    `json:"mode"`
	Interactive LaneStats `json:"interactive"`
	System      LaneStats `json:"system"`
	Totals      Totals    `json:"totals"`
}

// RunningJob describes a job still running, as reported by
// [ShutdownError].
type RunningJob struct {
	ID      uuid.UUID
	Session string
	Lane    Lane
	Label   string
	Started time.Time
}

// ShutdownError is returned by [Pool.Shutdown] when jobs were still running
// at its deadline. It matches context.DeadlineExceeded with errors.Is.
type ShutdownError struct {
	Running []RunningJob
}

func (e *ShutdownError) Error() string {
	return fmt.Sprintf("pool: shutdown deadline passed with %d job(s) still running", len(e.Running))
}

// Is reports a match with context.DeadlineExceeded.
func (e *ShutdownError) Is(target error) bool { return target == context.DeadlineExceeded }

type task struct {
	job      Job
	id       uuid.UUID
	enqueued time.Time
	ctx      context.Context // submitter's context
	done     chan struct{}   // closed when the task leaves the pool
	// set before done is closed:
	res Result
	err error
	// while running:
	cancel  context.CancelCauseFunc
	started time.Time
	slot    int
	queued  bool
}

type lane struct {
	kind       Lane
	workers    int
	free       []int // free slot numbers (stack)
	queue      []*task
	lastServed map[string]uint64
}

// Pool is a two-lane job pool. It is safe for concurrent use. Create it with
// [New]; stop it with [Pool.Shutdown].
type Pool struct {
	cfg Config

	mu      sync.Mutex
	mode    Mode
	closing bool
	lanes   [2]*lane
	running map[uuid.UUID]*task
	served  uint64
	totals  Totals
	execSum time.Duration
	execN   uint64
	idle    chan struct{} // closed and replaced when running becomes empty
}

// New returns a running pool. Config values out of range are clamped to the
// documented bounds; New never fails.
func New(cfg Config) *Pool {
	cfg = cfg.withDefaults()
	p := &Pool{cfg: cfg, mode: cfg.Mode, running: make(map[uuid.UUID]*task)}
	p.lanes[Interactive] = newLane(Interactive, cfg.InteractiveWorkers)
	p.lanes[System] = newLane(System, cfg.SystemWorkers)
	return p
}

func newLane(kind Lane, n int) *lane {
	l := &lane{kind: kind, workers: n, lastServed: make(map[string]uint64)}
	for i := n - 1; i >= 0; i-- {
		l.free = append(l.free, i)
	}
	return l
}

// SetMode switches between [Normal] and [Disabled] at run time.
func (p *Pool) SetMode(m Mode) {
	p.mu.Lock()
	p.mode = m
	p.mu.Unlock()
}

// Mode returns the current mode.
func (p *Pool) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Submit runs job through the pool and waits for it.
//
// It returns at once with ErrDisabled, ErrShuttingDown, ErrInvalidJob or
// ErrWorkerUnavailable (wrapped; use errors.Is) when the job cannot be
// accepted. While the job is queued, Submit watches ctx and returns
// ctx.Err() (wrapped) when it ends. Once the job runs, Submit waits for it
// to return and returns its error; the job's context is cancelled when ctx
// ends or the pool shuts down. The Result is filled in as far as the job
// got (its ID is always set).
func (p *Pool) Submit(ctx context.Context, job Job) (Result, error) {
	t, err := p.enqueue(ctx, job)
	if err != nil {
		return Result{ID: t.id, Lane: job.Lane}, err
	}
	select {
	case <-t.done:
		return t.res, t.err
	case <-ctx.Done():
	}
	p.mu.Lock()
	if t.queued {
		p.removeQueued(t)
		p.totals.Cancelled++
		p.mu.Unlock()
		return Result{ID: t.id, Lane: job.Lane, Queued: time.Since(t.enqueued)},
			fmt.Errorf("pool: job %s left the queue: %w", t.id, context.Cause(ctx))
	}
	p.mu.Unlock()
	// Running (its context is derived from ctx, so it is being
	// cancelled) or already finished.
	<-t.done
	return t.res, t.err
}

func (p *Pool) enqueue(ctx context.Context, job Job) (*task, error) {
	t := &task{job: job, id: uuid.New(), ctx: ctx, done: make(chan struct{}), slot: -1}
	if job.Run == nil {
		return t, fmt.Errorf("%w: nil Run", ErrInvalidJob)
	}
	if job.Lane != Interactive && job.Lane != System {
		return t, fmt.Errorf("%w: %v", ErrInvalidJob, job.Lane)
	}
	if err := ctx.Err(); err != nil {
		return t, fmt.Errorf("pool: %w", context.Cause(ctx))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closing:
		return t, ErrShuttingDown
	case p.mode == Disabled:
		return t, ErrDisabled
	}
	l := p.lanes[job.Lane]
	t.enqueued = time.Now()
	if len(l.free) > 0 && len(l.queue) == 0 {
		p.start(l, t)
		return t, nil
	}
	if len(l.queue) >= p.cfg.MaxQueue {
		p.totals.Rejected++
		return t, fmt.Errorf("%w: %s lane has %d running and %d queued", ErrWorkerUnavailable, l.kind, l.workers, len(l.queue))
	}
	t.queued = true
	l.queue = append(l.queue, t)
	return t, nil
}

// removeQueued takes t out of its lane's queue. p.mu is held.
func (p *Pool) removeQueued(t *task) {
	l := p.lanes[t.job.Lane]
	for i, q := range l.queue {
		if q == t {
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			break
		}
	}
	t.queued = false
}

// next picks the next queued task of l: FIFO, or round-robin across sessions
// while the queue is more than half full. p.mu is held.
func (p *Pool) next(l *lane) *task {
	if len(l.queue) == 0 {
		return nil
	}
	i := 0
	if 2*len(l.queue) > p.cfg.MaxQueue {
		best := l.lastServed[l.queue[0].job.Session]
		for j, t := range l.queue[1:] {
			if s := l.lastServed[t.job.Session]; s < best {
				best, i = s, j+1
			}
		}
	}
	t := l.queue[i]
	l.queue = append(l.queue[:i], l.queue[i+1:]...)
	t.queued = false
	return t
}

// start runs t on a free slot of l. p.mu is held.
func (p *Pool) start(l *lane, t *task) {
	slot := l.free[len(l.free)-1]
	l.free = l.free[:len(l.free)-1]
	p.served++
	l.lastServed[t.job.Session] = p.served
	if len(l.lastServed) > 4096 {
		p.pruneServed(l)
	}
	ctx, cancel := context.WithCancelCause(t.ctx)
	t.cancel = cancel
	t.slot = slot
	t.started = time.Now()
	if len(p.running) == 0 {
		p.idle = make(chan struct{})
	}
	p.running[t.id] = t
	go p.run(ctx, l, t)
}

// pruneServed forgets sessions that have nothing queued. p.mu is held.
func (p *Pool) pruneServed(l *lane) {
	keep := make(map[string]bool, len(l.queue))
	for _, t := range l.queue {
		keep[t.job.Session] = true
	}
	for s := range l.lastServed {
		if !keep[s] {
			delete(l.lastServed, s)
		}
	}
}

func (p *Pool) run(ctx context.Context, l *lane, t *task) {
	if t.job.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.job.Timeout)
		defer cancel()
	}
	err := safeRun(ctx, t.job.Run)
	ended := time.Now()
	t.cancel(nil)

	p.mu.Lock()
	ran := ended.Sub(t.started)
	p.execSum += ran
	p.execN++
	switch {
	case err == nil:
		p.totals.Completed++
	case errors.Is(err, context.DeadlineExceeded):
		p.totals.TimedOut++
	default:
		p.totals.Failed++
	}
	t.res = Result{ID: t.id, Lane: l.kind, Slot: t.slot, Queued: t.started.Sub(t.enqueued), Ran: ran, Started: t.started, Ended: ended}
	t.err = err
	delete(p.running, t.id)
	l.free = append(l.free, t.slot)
	for n := p.next(l); n != nil; n = p.next(l) {
		if err := n.ctx.Err(); err != nil {
			// Its submitter gave up while it waited: do not start it.
			n.err = fmt.Errorf("pool: job %s left the queue: %w", n.id, context.Cause(n.ctx))
			n.res = Result{ID: n.id, Lane: l.kind, Slot: -1, Queued: ended.Sub(n.enqueued)}
			p.totals.Cancelled++
			close(n.done)
			continue
		}
		p.start(l, n)
		break
	}
	if len(p.running) == 0 && p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
	p.mu.Unlock()
	close(t.done)
}

func safeRun(ctx context.Context, f func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrJobPanicked, r)
		}
	}()
	return f(ctx)
}

// Stats returns a snapshot of the pool's lanes and counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	ls := func(l *lane) LaneStats {
		active := l.workers - len(l.free)
		return LaneStats{Workers: l.workers, Active: active, Idle: len(l.free), Queued: len(l.queue), MaxQueue: p.cfg.MaxQueue}
	}
	s := Stats{Mode: p.mode.String(), Interactive: ls(p.lanes[Interactive]), System: ls(p.lanes[System]), Totals: p.totals}
	if p.closing {
		s.Mode = "shutting_down"
	}
	if p.execN > 0 {
		s.Totals.AvgExecMs = float64(p.execSum.Microseconds()) / 1000 / float64(p.execN)
	}
	return s
}

// Shutdown stops the pool: new submissions fail with ErrShuttingDown,
// queued jobs are rejected with ErrShuttingDown, and running jobs have
// their context cancelled with cause ErrShuttingDown. It then waits for the
// running jobs until ctx ends, or for Config.ShutdownTimeout when ctx has no
// deadline. It returns nil when every job has returned, or a
// *[ShutdownError] naming the jobs still running (they keep their slots;
// their goroutines end when the jobs return). Calling Shutdown again waits
// again.
func (p *Pool) Shutdown(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.ShutdownTimeout)
		defer cancel()
	}
	p.mu.Lock()
	p.closing = true
	for _, l := range p.lanes {
		for _, t := range l.queue {
			t.queued = false
			t.err = fmt.Errorf("pool: job %s rejected: %w", t.id, ErrShuttingDown)
			t.res = Result{ID: t.id, Lane: l.kind, Slot: -1, Queued: time.Since(t.enqueued)}
			p.totals.Cancelled++
			close(t.done)
		}
		l.queue = nil
	}
	for _, t := range p.running {
		t.cancel(ErrShuttingDown)
	}
	idle := p.idle
	p.mu.Unlock()

	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.running) == 0 {
		return nil
	}
	e := &ShutdownError{}
	for _, t := range p.running {
		e.Running = append(e.Running, RunningJob{ID: t.id, Session: t.job.Session, Lane: t.job.Lane, Label: t.job.Label, Started: t.started})
	}
	return e
}
