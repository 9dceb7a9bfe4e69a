package runtime

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"

	"github.com/wasmbox/wasmbox/wasi"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// ProcessABI documents the host calls through which a guest runs other
// commands concurrently with itself and talks to them through pipes: what
// a shell needs for pipelines and background jobs, where SpawnABI's spawn
// blocks until the child ends.
//
//	(import "wasmbox" "pipe"       (func (param $fds_ptr i32) (result i32)))
//	(import "wasmbox" "proc_spawn" (func (param $req_ptr i32) (param $req_len i32) (param $pfd_ptr i32) (result i32)))
//	(import "wasmbox" "proc_kill"  (func (param $pfd i32) (param $signal i32) (result i32)))
//
// pipe makes a pipe (64 KiB of buffer) and writes two little-endian u32 at
// fds_ptr: the descriptor of its read end, then of its write end. Both are
// non-blocking (FDFLAG_NONBLOCK): a read of an empty pipe and a write to a
// full one fail with EAGAIN, and poll_oneoff waits for them, so that one
// guest can drive any number of them from goroutines (Go's netpoller does);
// fd_fdstat_set_flags makes them blocking. A reader sees end of file once
// every descriptor of the write end is closed, in the guest and in every
// child it was lent to; a writer gets EPIPE once every descriptor of the
// read end is.
//
// proc_spawn starts a child and returns at once. The request at req_ptr
// (req_len bytes, at most 1 MiB) is UTF-8 JSON:
//
//	{"argv": ["cmd", "arg", ...],  // required, argv[0] non-empty
//	 "env": ["K=V", ...],          // null or absent: the caller's environment
//	 "dir": "/abs/cwd",            // "" or absent: the caller's working directory
//	 "stdin": 0, "stdout": 1, "stderr": 2}
//
// stdin, stdout and stderr are descriptors of the caller (a pipe end, an
// open file, its own standard streams), or -1 for none (empty input,
// discarded output); absent means 0, 1 and 2. The child reads and writes
// the same stream, or the same open file with its offset, as a forked
// process would, and holds it until it ends. The child is resolved, allowed
// and run exactly as a spawn child is (same filesystem, allow hook, limits,
// nesting depth, and the caller's context: the caller's deadline and
// cancel reach it).
//
// proc_spawn writes at pfd_ptr the descriptor of a process handle: it is
// non-blocking, and readable (poll_oneoff) once the child has ended; a read
// then gives 8 bytes, two little-endian u32: the exit status and the cause,
//
//	0 exited (the status is the child's own)   4 timeout (status 124)
//	1 not found (status 127)                   5 cancelled (status 125)
//	2 denied by policy (status 126)            6 could not run (status 126)
//	3 over a limit (status 126 or 137)         7 killed by proc_kill (status 128+signal)
//
// and end of file after them. Closing the handle does not stop the child.
//
// proc_kill stops the child of a process handle (signal 1..31 decides the
// status it reports, 128+signal); it is a no-op for a child that already
// ended.
//
// Every call returns a WASI errno: 0 success, 28 EINVAL (malformed request,
// bad signal), 8 EBADF (a stdio descriptor that is not open, or a handle
// that is not a process), 21 EFAULT (pointer out of memory), 2 EACCES (no
// spawner for this run), 6 EAGAIN (too many processes or streams at once),
// 52 ENOSYS (a run without wasmbox's WASI). When the call that started them
// returns, the children still running are stopped and waited for: a
// guest's processes never outlive the run (or, for an instance that lives
// across calls, the call) that spawned them.
const ProcessABI = "wasmbox.pipe/proc_spawn/proc_kill"

// Causes of a process handle's result (see ProcessABI).
const (
	CauseExited    uint32 = 0
	CauseNotFound  uint32 = 1
	CauseDenied    uint32 = 2
	CauseLimit     uint32 = 3
	CauseTimeout   uint32 = 4
	CauseCancelled uint32 = 5
	CauseFailed    uint32 = 6
	CauseKilled    uint32 = 7
)

// ErrSpawnLimit is what a Spawner returns (wrapped) for a child refused or
// ended over a limit; the process handle reports CauseLimit.
var ErrSpawnLimit = errors.New("limit exceeded")

// Stdio is the standard streams of a child of the process ABI (see
// SpawnRequest.Stdio): what the caller's descriptors refer to.
type Stdio struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Inherited are the caller's other descriptors the child inherits at
	// their numbers (SpawnABI's "inherit_fds"); only spawn sets them.
	Inherited []preview1.Inherited
}

// MaxProcesses bounds the processes of one tree running at once: the
// children (forked or started through the process ABI) of a run or of one
// call of a live instance, together with the children of every command
// that tree spawns, at any depth (their runs share the count of the run
// that spawned them). A command that a child runs with the blocking spawn
// (exec) is not counted apart: its caller, which waits for it, is.
const MaxProcesses = 256

// ErrProcessLimit is the error given to InstanceOptions.OnForkLimit when a
// fork or a process ABI child was refused because MaxProcesses processes
// of the tree run.
var ErrProcessLimit = errors.New("process limit exceeded")

// procCount is the live processes of a tree of runs (see MaxProcesses).
type procCount struct {
	n   atomic.Int32
	max int32 // MaxProcesses or less (InstanceOptions.MaxProcesses)
	// onFull, when set, is told of a refusal (the root call's
	// InstanceOptions.OnForkLimit).
	onFull func(error)
}

// take counts one more process; false (after telling onFull) when
// MaxProcesses run.
func (c *procCount) take() bool {
	for {
		n := c.n.Load()
		if n >= c.max {
			if c.onFull != nil {
				c.onFull(fmt.Errorf("%w: %d processes run", ErrProcessLimit, n))
			}
			return false
		}
		if c.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (c *procCount) put() { c.n.Add(-1) }

// procTable is the children a run started through the process ABI.
type procTable struct {
	mu     sync.Mutex
	procs  map[*process]struct{}
	nets   map[*netSession]struct{} // connections of the network ABI
	closed bool                     // stop ran: no new connection
	wg     sync.WaitGroup
	pids   atomic.Uint32 // the last pid given (ForkABI); the run's instance is 1
	count  *procCount    // shared with the tables of the runs it spawned
	// root is the run's context (or the live instance's call's): its
	// deadline and cancel end every child of the table, whatever their
	// depth (see childContext).
	root context.Context
	// parent is the table of the run that spawned this one, if any.
	parent *procTable
	// stopping is set when stop begins, before any cancel (see halted).
	stopping atomic.Bool
}

// halted says why the processes of the table can no longer act, or nil:
// the table (or that of a run above it) has begun to stop, or the run's
// context is done. Every host call of those processes checks it
// (preview1.State.SetHalt), so a tree ends as one: stop cancels its
// processes one by one (and a reparented child's context hears the run's
// cancel only a moment later), and a process that saw another one end in
// between (its child's status, its pipe's end) would otherwise go on to
// write or spawn what the run no longer waits for.
func (t *procTable) halted() error {
	for ; t != nil; t = t.parent {
		if t.stopping.Load() {
			return context.Canceled
		}
		if err := t.root.Err(); err != nil {
			return err
		}
	}
	return nil
}

// halting wraps a host function of the runtime's own modules so that it
// first ends a guest whose process tree is being ended.
func halting(f api.GoModuleFunc) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		haltIfStopped(ctx)
		f(ctx, mod, stack)
	}
}

// haltIfStopped ends the guest of a host call of the runtime's own modules
// when its process tree is being ended (see procTable.halted).
func haltIfStopped(ctx context.Context) {
	if st := preview1.StateFrom(ctx); st != nil {
		st.ExitIfHalted()
	}
}

// childContext returns the context of a new child of a process whose
// context is ctx, and its cancel: the values of ctx (what the process
// runs under: its WASI state, spawner, limits), and the deadline and
// cancellation of the run, not of the process. A child outlives its
// parent, as under POSIX, where it is reparented to init: the
// double-fork idiom `( server & )` leaves the server running when the
// subshell ends. It lives until it ends or until the run does (stop), in
// the run's process count all along, so orphans are bounded as every
// other process is. A command a process runs with exec (the blocking
// spawn) is the process itself and still ends with it.
func (t *procTable) childContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(reparented{Context: t.root, values: ctx})
}

// reparented is a context with the values of one context and the
// deadline, done channel and error of another (its embedded Context).
type reparented struct {
	context.Context
	values context.Context
}

func (c reparented) Value(key any) any { return c.values.Value(key) }

// ending returns why the process whose context is ctx is being ended, or
// nil: its own context's error, or its tree's (procTable.halted). The
// run's cancel reaches the context of a reparented child a moment later
// (context's propagation goroutine), so a refused fork checks both before
// it reports EAGAIN to a process that the run's limit is ending anyway.
func ending(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if t := tableOf(ctx); t != nil {
		return t.halted()
	}
	return nil
}

type procTableKey struct{}

// tableOf returns the process table ctx carries (withProcs), or nil.
func tableOf(ctx context.Context) *procTable {
	t, _ := ctx.Value(procTableKey{}).(*procTable)
	return t
}

// withProcs returns ctx carrying a new process table, and the func that
// stops and waits for whatever it still runs. The table counts its
// processes in the count of the table ctx already carries (the run that
// spawned this one), if any, else in a count of its own, of at most max
// processes (0: MaxProcesses), that tells onFull of a refusal.
func withProcs(ctx context.Context, max int, onFull func(error)) (context.Context, func()) {
	t := &procTable{procs: map[*process]struct{}{}, nets: map[*netSession]struct{}{}}
	parent := tableOf(ctx)
	t.parent = parent
	if parent != nil && parent.count != nil {
		t.count = parent.count
	} else {
		if max <= 0 || max > MaxProcesses {
			max = MaxProcesses
		}
		t.count = &procCount{max: int32(max), onFull: onFull}
	}
	t.pids.Store(1)
	t.root = ctx
	return context.WithValue(ctx, procTableKey{}, t), t.stop
}

// admit registers a new forked child under ctx, with a pid of its own and
// a context that its cancel ends; nil when MaxProcesses processes of the
// tree run or the table was stopped. Its goroutine calls done when it has
// ended.
func (t *procTable) admit(ctx context.Context) (*process, uint32, context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || !t.count.take() {
		return nil, 0, nil
	}
	pctx, cancel := t.childContext(ctx)
	p := &process{cancel: cancel, exited: make(chan struct{})}
	t.procs[p] = struct{}{}
	t.wg.Add(1)
	return p, t.pids.Add(1), pctx
}

// done unregisters a child that admit registered.
func (t *procTable) done(p *process) {
	t.mu.Lock()
	delete(t.procs, p)
	t.mu.Unlock()
	t.count.put()
	t.wg.Done()
}

func (t *procTable) stop() {
	t.stopping.Store(true)
	t.mu.Lock()
	t.closed = true
	for p := range t.procs {
		p.cancel()
	}
	for s := range t.nets {
		s.stop()
	}
	t.mu.Unlock()
	t.wg.Wait()
}

// addNet adds a connection whose goroutine stop waits for; false once
// stop ran.
func (t *procTable) addNet(s *netSession) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.nets[s] = struct{}{}
	t.wg.Add(1)
	return true
}

func (t *procTable) doneNet(s *netSession) {
	t.mu.Lock()
	delete(t.nets, s)
	t.mu.Unlock()
	t.wg.Done()
}

// process is a child of the process ABI; the guest reads its result from
// the descriptor of its handle.
type process struct {
	cancel context.CancelFunc
	wakers wasi.Wakers

	mu     sync.Mutex
	done   bool
	killed uint32 // the signal of proc_kill, 0 if none
	result [8]byte
	off    int // bytes of result read
	exited chan struct{}
}

func (p *process) finish(status, cause uint32) {
	p.mu.Lock()
	if p.killed != 0 && cause != CauseExited {
		status, cause = 128+p.killed, CauseKilled
	}
	binary.LittleEndian.PutUint32(p.result[0:], status)
	binary.LittleEndian.PutUint32(p.result[4:], cause)
	p.done = true
	close(p.exited)
	p.mu.Unlock()
	p.wakers.Wake()
}

// TryRead gives the result once the child has ended, wasi.ErrWouldBlock
// before.
func (p *process) TryRead(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done {
		return 0, wasi.ErrWouldBlock
	}
	if p.off == len(p.result) {
		return 0, io.EOF
	}
	n := copy(b, p.result[p.off:])
	p.off += n
	return n, nil
}

// Read is TryRead that waits for the child (a guest that made the handle
// blocking).
func (p *process) Read(b []byte) (int, error) {
	<-p.exited
	return p.TryRead(b)
}

// ReadContext is Read that gives up when ctx is done (a blocking read of a
// guest that its run's end kills).
func (p *process) ReadContext(ctx context.Context, b []byte) (int, error) {
	select {
	case <-p.exited:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return p.TryRead(b)
}

// Ready implements wasi.Waitable.
func (p *process) Ready(write bool) bool {
	if write {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Wakers implements wasi.Waitable.
func (p *process) Wakers() *wasi.Wakers { return &p.wakers }

func newProcessFunctions(b wazero.HostModuleBuilder) wazero.HostModuleBuilder {
	i32 := api.ValueTypeI32
	return b.
		NewFunctionBuilder().
		WithGoModuleFunction(halting(hostPipe), []api.ValueType{i32}, []api.ValueType{i32}).
		WithParameterNames("fds_ptr").WithResultNames("errno").
		Export("pipe").
		NewFunctionBuilder().
		WithGoModuleFunction(halting(hostProcSpawn), []api.ValueType{i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("req_ptr", "req_len", "pfd_ptr").WithResultNames("errno").
		Export("proc_spawn").
		NewFunctionBuilder().
		WithGoModuleFunction(halting(hostProcKill), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("pfd", "signal").WithResultNames("errno").
		Export("proc_kill")
}

// Errno values of the process calls besides those of spawn.
const (
	ErrnoBadf uint32 = 8
)

func hostPipe(ctx context.Context, mod api.Module, stack []uint64) {
	stack[0] = uint64(pipeCall(ctx, mod, uint32(stack[0])))
}

func pipeCall(ctx context.Context, mod api.Module, fdsPtr uint32) uint32 {
	st := preview1.StateFrom(ctx)
	if st == nil {
		return ErrnoNosys
	}
	mem := mod.Memory()
	if mem == nil || uint64(fdsPtr)+8 > uint64(mem.Size()) {
		return ErrnoFault
	}
	r, w := wasi.NewPipe(context.Background())
	rfd, err := st.AddStream(r, nil, r.Close, true)
	if err != nil {
		return ErrnoAgain
	}
	wfd, err := st.AddStream(nil, w, w.Close, true)
	if err != nil {
		r.Close()
		_ = st.CloseFd(rfd)
		return ErrnoAgain
	}
	mem.WriteUint32Le(fdsPtr, rfd)
	mem.WriteUint32Le(fdsPtr+4, wfd)
	return ErrnoSuccess
}

type procWire struct {
	Argv   []string  `json:"argv"`
	Env    *[]string `json:"env"`
	Dir    string    `json:"dir"`
	Stdin  *int64    `json:"stdin"`
	Stdout *int64    `json:"stdout"`
	Stderr *int64    `json:"stderr"`
}

// ProcRequest is a decoded, validated proc_spawn request.
type ProcRequest struct {
	SpawnRequest
	// Fds are the caller's descriptors for stdin, stdout and stderr; -1
	// for none.
	Fds [3]int64
}

// ParseProcRequest decodes and validates a proc_spawn request.
func ParseProcRequest(b []byte) (ProcRequest, error) {
	var req ProcRequest
	if len(b) > MaxSpawnRequest {
		return req, fmt.Errorf("proc_spawn request of %d bytes exceeds %d", len(b), MaxSpawnRequest)
	}
	if !utf8.Valid(b) {
		return req, errors.New("proc_spawn request is not UTF-8")
	}
	var w procWire
	if err := json.Unmarshal(b, &w); err != nil {
		return req, fmt.Errorf("proc_spawn request: %w", err)
	}
	if len(w.Argv) == 0 || w.Argv[0] == "" {
		return req, errors.New("proc_spawn request: argv is empty")
	}
	if w.Dir != "" && w.Dir[0] != '/' {
		return req, fmt.Errorf("proc_spawn request: dir %q is not absolute", w.Dir)
	}
	for i, p := range []*int64{w.Stdin, w.Stdout, w.Stderr} {
		req.Fds[i] = int64(i)
		if p != nil {
			if *p < -1 || *p > 1<<31-1 {
				return req, fmt.Errorf("proc_spawn request: bad descriptor %d", *p)
			}
			req.Fds[i] = *p
		}
	}
	req.Argv = w.Argv
	req.Dir = w.Dir
	if w.Env == nil {
		req.InheritEnv = true
	} else {
		req.Env = *w.Env
		if req.Env == nil {
			req.Env = []string{}
		}
	}
	for _, a := range req.Argv {
		if containsNUL(a) {
			return req, errors.New("proc_spawn request: NUL byte in argv")
		}
	}
	for _, e := range req.Env {
		if containsNUL(e) {
			return req, errors.New("proc_spawn request: NUL byte in env")
		}
	}
	return req, nil
}

func hostProcSpawn(ctx context.Context, mod api.Module, stack []uint64) {
	stack[0] = uint64(procSpawnCall(ctx, mod, uint32(stack[0]), uint32(stack[1]), uint32(stack[2])))
}

func procSpawnCall(ctx context.Context, mod api.Module, reqPtr, reqLen, pfdPtr uint32) uint32 {
	st := preview1.StateFrom(ctx)
	if st == nil {
		return ErrnoNosys
	}
	mem := mod.Memory()
	if mem == nil || uint64(pfdPtr)+4 > uint64(mem.Size()) {
		return ErrnoFault
	}
	if reqLen > MaxSpawnRequest {
		return ErrnoInval
	}
	raw, ok := mem.Read(reqPtr, reqLen)
	if !ok {
		return ErrnoFault
	}
	req, err := ParseProcRequest(append([]byte(nil), raw...))
	if err != nil {
		return ErrnoInval
	}
	sp, _ := ctx.Value(spawnerKey{}).(Spawner)
	table, _ := ctx.Value(procTableKey{}).(*procTable)
	if sp == nil || table == nil {
		return ErrnoAcces
	}
	if !table.count.take() {
		return ErrnoAgain
	}
	counted := true
	defer func() {
		if counted {
			table.count.put()
		}
	}()
	// The child's streams: what the caller's descriptors refer to.
	stdio := &Stdio{}
	var releases []func()
	releaseAll := func() {
		for _, r := range releases {
			r()
		}
	}
	for i, fd := range req.Fds {
		if fd < 0 {
			continue
		}
		var rel func()
		var err error
		if i == 0 {
			stdio.Stdin, rel, err = st.LendReader(uint32(fd))
		} else {
			var w io.Writer
			w, rel, err = st.LendWriter(uint32(fd))
			if i == 1 {
				stdio.Stdout = w
			} else {
				stdio.Stderr = w
			}
		}
		if err != nil {
			releaseAll()
			return ErrnoBadf
		}
		releases = append(releases, rel)
	}
	req.Stdio = stdio
	pctx, cancel := table.childContext(ctx)
	p := &process{cancel: cancel, exited: make(chan struct{})}
	pfd, err := st.AddStream(p, nil, nil, true)
	if err != nil {
		cancel()
		releaseAll()
		return ErrnoAgain
	}
	table.mu.Lock()
	table.procs[p] = struct{}{}
	table.wg.Add(1)
	table.mu.Unlock()
	counted = false // the child's goroutine gives it back
	go func() {
		defer table.wg.Done()
		status, cause := runChild(pctx, sp, req.SpawnRequest)
		releaseAll()
		cancel()
		p.finish(status, cause)
		table.mu.Lock()
		delete(table.procs, p)
		table.mu.Unlock()
		table.count.put()
	}()
	mem.WriteUint32Le(pfdPtr, pfd)
	return ErrnoSuccess
}

// runChild runs one child of the process ABI and says how it ended.
func runChild(ctx context.Context, sp Spawner, req SpawnRequest) (status, cause uint32) {
	defer func() {
		if v := recover(); v != nil {
			status, cause = 126, CauseFailed
		}
	}()
	status, err := sp.Spawn(ctx, req)
	switch {
	case err == nil:
		return status, CauseExited
	case errors.Is(err, ErrSpawnNotFound):
		return 127, CauseNotFound
	case errors.Is(err, ErrSpawnDenied):
		return 126, CauseDenied
	case errors.Is(err, ErrSpawnLimit):
		if status == 0 {
			status = 126
		}
		return status, CauseLimit
	case errors.Is(err, context.DeadlineExceeded):
		return 124, CauseTimeout
	case errors.Is(err, context.Canceled):
		return 125, CauseCancelled
	case errors.Is(err, ErrSpawnDepth):
		return 126, CauseFailed
	}
	if status == 0 {
		status = 126
	}
	return status, CauseFailed
}

func hostProcKill(ctx context.Context, mod api.Module, stack []uint64) {
	stack[0] = uint64(procKillCall(ctx, uint32(stack[0]), uint32(stack[1])))
}

func procKillCall(ctx context.Context, pfd, signal uint32) uint32 {
	st := preview1.StateFrom(ctx)
	if st == nil {
		return ErrnoNosys
	}
	if signal < 1 || signal > 31 {
		return ErrnoInval
	}
	r, err := st.StreamReader(pfd)
	if err != nil {
		return ErrnoBadf
	}
	p, ok := r.(*process)
	if !ok {
		return ErrnoBadf
	}
	p.mu.Lock()
	if !p.done && p.killed == 0 {
		p.killed = signal
	}
	p.mu.Unlock()
	p.cancel()
	return ErrnoSuccess
}
