package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// ForkABI documents the host calls that give a C guest fork(2), dup(2)
// and its process identity (build/posix is the guest side: a library
// over binaryen's Asyncify):
//
//	(import "wasmbox" "fork"      (func (param $ret_ptr i32) (result i32)))
//	(import "wasmbox" "proc_self" (func (param $ret_ptr i32) (result i32)))
//	(import "wasmbox" "fd_dup"    (func (param $fd i32) (param $min_fd i32) (param $ret_ptr i32) (result i32)))
//	(import "wasmbox" "fd_dup2"   (func (param $old_fd i32) (param $new_fd i32) (result i32)))
//
// fork makes a child of the calling instance: a new instance of the same
// compiled module whose linear memory is a copy of the caller's (its size
// and bytes) and whose exported global __stack_pointer is the caller's
// (link with -Wl,--export=__stack_pointer), with a copy of the caller's
// WASI state in which every descriptor refers to what the caller's does,
// as after fork(2) (the same stream, or the same open file and offset;
// the same arguments, environment and clocks). The host then calls the
// child's export wasmbox_fork_child on a goroutine of its own, concurrently
// with the caller: the guest calls fork with its stack unwound (Asyncify),
// so that both rewind the same frames from the copied memory, and the host
// never drives Asyncify itself. fork writes at ret_ptr two little-endian
// u32: the child's pid and the descriptor of its process handle, exactly
// as proc_spawn's (see ProcessABI): readable when the child ends, 8 bytes
// of status and cause; a child killed by proc_kill reports cause 7 and
// status 128+signal. A child ends with its exit status (proc_exit, or 0
// when wasmbox_fork_child returns); one that traps reports status 134 and
// cause 6, one over its memory limit status 137 and cause 3, after a
// message on its standard error.
//
// A child runs under the caller's run: its context (the run's deadline
// and cancel, and proc_kill's), the same memory limit per instance, the
// same memory budget (its memory counts against it from the fork on), the
// same spawner (its spawn and proc_spawn calls go through the executor),
// and the same process table: MaxProcesses bounds the children of a run,
// spawned and forked, its whole tree together (the runs of the commands
// the tree spawns count in it too). A fork refused memory, a forked child
// refused memory, or a fork refused a process slot ends the whole run
// with that limit's error (runtime.Run; a live instance's call tells
// InstanceOptions.OnForkLimit, which ends it); a fork of a child that is
// being killed ends that child. When the run (or the call of a live
// instance) ends, every child still running is stopped and waited for,
// its instance closed and its descriptors released. A child's own
// children outlive it, as orphans do under POSIX (reparented to the run:
// see procTable.childContext), until they end or the run does.
//
// Pids are small numbers of the run: the instance the run started is 1
// (its parent 0), the children 2, 3, ... in the order they were forked. No
// host pid reaches the guest. proc_self writes two little-endian u32 at
// ret_ptr: the caller's pid and its parent's.
//
// fd_dup writes at ret_ptr a new descriptor, the lowest free one not
// below min_fd, that refers to what fd refers to (one open file
// description: a shared offset), as fcntl(F_DUPFD). fd_dup2 makes new_fd
// refer to what old_fd refers to, closing new_fd first if it was open, as
// dup2(2); old_fd == new_fd does nothing. Descriptor flags are per
// descriptor.
//
// Every call returns a WASI errno: 0 success, 6 EAGAIN (MaxProcesses
// children running), 48 ENOMEM (the copy does not fit in the memory limit
// or budget), 8 EBADF (a descriptor that is not open; a new_fd past
// 65535), 28 EINVAL (a min_fd past 65535), 76 EMFILE (the table is full),
// 21 EFAULT (ret_ptr out of memory), 52 ENOSYS (a run without wasmbox's
// WASI, or a module that does not export __stack_pointer and
// wasmbox_fork_child).
//
// The process ABI's spawn gives the child the caller's current
// descriptors 0, 1 and 2 (after fd_dup2), which is what exec does.
const ForkABI = "wasmbox.fork/proc_self/fd_dup/fd_dup2"

// Exports of a module that forks (see ForkABI).
const (
	ForkChildExport    = "wasmbox_fork_child"
	StackPointerExport = "__stack_pointer"
)

// Errno values of the fork calls besides those of spawn and the process
// ABI.
const (
	ErrnoNomem uint32 = 48
	ErrnoMfile uint32 = 76
)

// forkEnv is what fork needs of the run: how to make another instance of
// its module, and under which limits.
type forkEnv struct {
	r      *Runtime
	m      *Module
	limit  uint64
	budget *Budget
	// onLimit is InstanceOptions.OnForkLimit (nil for a run).
	onLimit func(error)
}

// refused tells onLimit that a fork or a forked child was refused memory.
func (e *forkEnv) refused(alloc *limitAllocator, err error) {
	if e.onLimit == nil {
		return
	}
	if b := alloc.refusal.Load(); b != nil {
		e.onLimit(fmt.Errorf("%w: %w", ErrMemoryLimit, b))
		return
	}
	if err == nil {
		err = fmt.Errorf("%w: a process asked for more than %s", ErrMemoryLimit, FormatBytes(e.limit))
	}
	e.onLimit(err)
}

type forkEnvKey struct{}

// procSelf is the identity of an instance within its run's process tree.
type procSelf struct{ pid, ppid uint32 }

type procSelfKey struct{}

func selfOf(ctx context.Context) procSelf {
	if s, ok := ctx.Value(procSelfKey{}).(procSelf); ok {
		return s
	}
	return procSelf{pid: 1}
}

func addForkFunctions(b wazero.HostModuleBuilder) wazero.HostModuleBuilder {
	i32 := api.ValueTypeI32
	return b.
		NewFunctionBuilder().
		WithGoModuleFunction(halting(hostFork), []api.ValueType{i32}, []api.ValueType{i32}).
		WithParameterNames("ret_ptr").WithResultNames("errno").
		Export("fork").
		NewFunctionBuilder().
		WithGoModuleFunction(halting(hostProcSelf), []api.ValueType{i32}, []api.ValueType{i32}).
		WithParameterNames("ret_ptr").WithResultNames("errno").
		Export("proc_self").
		NewFunctionBuilder().
		WithGoModuleFunction(halting(hostFdDup), []api.ValueType{i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("fd", "min_fd", "ret_ptr").WithResultNames("errno").
		Export("fd_dup").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostFdDup2), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("old_fd", "new_fd").WithResultNames("errno").
		Export("fd_dup2")
}

func hostProcSelf(ctx context.Context, mod api.Module, stack []uint64) {
	self := selfOf(ctx)
	mem := mod.Memory()
	ptr := uint32(stack[0])
	if mem == nil || !mem.WriteUint32Le(ptr, self.pid) || !mem.WriteUint32Le(ptr+4, self.ppid) {
		stack[0] = uint64(ErrnoFault)
		return
	}
	stack[0] = uint64(ErrnoSuccess)
}

// preview1Errno maps an error of preview1's State to its errno.
func preview1Errno(err error) uint32 {
	var e preview1.Errno
	if errors.As(err, &e) {
		return uint32(e)
	}
	return ErrnoBadf
}

func hostFdDup(ctx context.Context, mod api.Module, stack []uint64) {
	fd, min, ptr := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	st := preview1.StateFrom(ctx)
	if st == nil {
		stack[0] = uint64(ErrnoNosys)
		return
	}
	mem := mod.Memory()
	if mem == nil || uint64(ptr)+4 > uint64(mem.Size()) {
		stack[0] = uint64(ErrnoFault)
		return
	}
	nfd, err := st.Dup(fd, min)
	if err != nil {
		stack[0] = uint64(preview1Errno(err))
		return
	}
	mem.WriteUint32Le(ptr, nfd)
	stack[0] = uint64(ErrnoSuccess)
}

func hostFdDup2(ctx context.Context, _ api.Module, stack []uint64) {
	st := preview1.StateFrom(ctx)
	if st == nil {
		stack[0] = uint64(ErrnoNosys)
		return
	}
	if err := st.Dup2(uint32(stack[0]), uint32(stack[1])); err != nil {
		stack[0] = uint64(preview1Errno(err))
		return
	}
	stack[0] = uint64(ErrnoSuccess)
}

func hostFork(ctx context.Context, mod api.Module, stack []uint64) {
	errno := forkCall(ctx, mod, uint32(stack[0]))
	if errno == ErrnoSuccess {
		stack[0] = uint64(errno)
		return
	}
	if cerr := ending(ctx); cerr != nil {
		// The caller is being killed (its run's deadline or cancel,
		// proc_kill, its parent's end): it ends here, as at spawn, rather
		// than see EAGAIN and retry (bash's "fork: retry: Resource
		// temporarily unavailable", from every process of an ending tree).
		code := sys.ExitCodeContextCanceled
		if errors.Is(cerr, context.DeadlineExceeded) {
			code = sys.ExitCodeDeadlineExceeded
		}
		_ = mod.CloseWithExitCode(ctx, code)
		panic(sys.NewExitError(code))
	}
	stack[0] = uint64(errno)
}

func forkCall(ctx context.Context, mod api.Module, retPtr uint32) uint32 {
	st := preview1.StateFrom(ctx)
	env, _ := ctx.Value(forkEnvKey{}).(*forkEnv)
	table, _ := ctx.Value(procTableKey{}).(*procTable)
	if st == nil || env == nil || table == nil {
		return ErrnoNosys
	}
	mem := mod.Memory()
	if mem == nil || uint64(retPtr)+8 > uint64(mem.Size()) {
		return ErrnoFault
	}
	sp, ok := mod.ExportedGlobal(StackPointerExport).(api.MutableGlobal)
	if !ok || mod.ExportedFunction(ForkChildExport) == nil {
		return ErrnoNosys
	}
	if err := ctx.Err(); err != nil {
		return ErrnoAgain
	}
	p, pid, pctx := table.admit(ctx)
	if p == nil {
		return ErrnoAgain
	}
	parent := selfOf(ctx)
	size := mem.Size()
	r, m := env.r, env.m
	alloc := &limitAllocator{limit: env.limit, budget: env.budget, live: &r.liveMem}
	fail := func(errno uint32) uint32 {
		alloc.release()
		p.cancel()
		table.done(p)
		return errno
	}
	if uint64(size) > env.limit {
		env.refused(alloc, nil)
		return fail(ErrnoNomem)
	}
	if err := alloc.prepay(uint64(size)); err != nil {
		env.refused(alloc, nil)
		return fail(ErrnoNomem)
	}
	if env.onLimit != nil {
		// The child's growth refused is the tree's limit too.
		alloc.setOnHit(func() { env.refused(alloc, nil) })
	}
	if !m.acquire() {
		return fail(ErrnoNosys)
	}
	// The child's context: the caller's (the run's deadline and cancel
	// reach it), its own cancel (proc_kill, the run's end), its WASI
	// state and identity.
	childSt := st.Fork()
	cctx := preview1.WithState(pctx, childSt)
	cctx = context.WithValue(cctx, procSelfKey{}, procSelf{pid: pid, ppid: parent.pid})
	var counted atomic.Bool
	counted.Store(true)
	r.live.Add(1)
	notify := experimental.CloseNotifyFunc(func(context.Context, uint32) {
		if counted.CompareAndSwap(true, false) {
			r.live.Add(-1)
		}
	})
	ictx := experimental.WithMemoryAllocator(cctx, alloc)
	ictx = experimental.WithCloseNotifier(ictx, notify)
	// The child's memory: the caller's, put in a sealed memfd that the
	// child maps copy-on-write (its pages of zeros and the dead stack
	// below the caller's __stack_pointer are not even written), instead
	// of a new zeroed memory the whole of the caller's is copied into.
	src, ok := mem.Read(0, size)
	var im *image
	if ok {
		var lo, hi uint64
		if low, spv := m.stackLow.Load(), sp.Get(); low != 0 && low < spv && spv <= uint64(size) {
			lo, hi = low, spv
		}
		im, _ = newSparseImage(uint64(size), memoryRuns(src, lo, hi), env.budget)
	}
	if im != nil {
		alloc.image = im
		ictx = experimental.WithoutActiveData(ictx)
	}
	child, err := m.instantiate(ictx, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if im != nil {
		im.close() // the child's mapping keeps what it maps
	}
	abort := func(errno uint32) uint32 {
		if child != nil {
			_ = child.Close(context.WithoutCancel(ctx))
		}
		if counted.CompareAndSwap(true, false) {
			r.live.Add(-1)
		}
		_ = childSt.Close()
		m.release(ctx)
		return fail(errno)
	}
	if err != nil || !ok || alloc.imageErr != nil {
		return abort(ErrnoNomem)
	}
	// The child's memory is written here, before any call of it runs:
	// pinned, so that a Close of the runtime meanwhile releases it after.
	unpin, perr := pin(child)
	if perr != nil {
		return abort(ErrnoAgain)
	}
	defer unpin()
	if im != nil {
		if errno := growTo(child.Memory(), size); errno != ErrnoSuccess {
			return abort(errno)
		}
		if errno := setStackPointer(child, sp.Get()); errno != ErrnoSuccess {
			return abort(errno)
		}
	} else if errno := loadMemory(child, src, sp.Get()); errno != ErrnoSuccess {
		return abort(errno)
	}
	pfd, err := st.AddStream(p, nil, nil, true)
	if err != nil {
		return abort(ErrnoAgain)
	}
	mem.WriteUint32Le(retPtr, pid)
	mem.WriteUint32Le(retPtr+4, pfd)
	checked := m.rt == r.rt
	go func() {
		status, cause := runForked(cctx, child, checked, alloc, pid, childSt)
		_ = child.Close(context.WithoutCancel(ctx))
		if counted.CompareAndSwap(true, false) {
			r.live.Add(-1)
		}
		_ = childSt.Close()
		alloc.release()
		m.release(ctx)
		p.cancel()
		p.finish(status, cause)
		table.done(p)
	}()
	return ErrnoSuccess
}

// runForked runs a forked child to its end and says how it ended.
func runForked(ctx context.Context, child api.Module, checked bool, alloc *limitAllocator, pid uint32, st *preview1.State) (status, cause uint32) {
	_, err := callGuest(ctx, child, child.ExportedFunction(ForkChildExport))
	if checked && child.IsClosed() && ctx.Err() != nil {
		// Closed by wazero's context watcher: free what it left (see
		// RunStats).
		releaseClosed(ctx, child)
	}
	var ee *sys.ExitError
	switch {
	case err == nil:
		return 0, CauseExited
	case ctx.Err() != nil:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return 124, CauseTimeout
		}
		return 125, CauseCancelled
	case errors.As(err, &ee):
		return ee.ExitCode(), CauseExited
	}
	status, cause = 134, CauseFailed
	what := err.Error()
	if alloc.hit.Load() {
		status, cause = 137, CauseLimit
		what = fmt.Sprintf("%v: the guest asked for more than %s of memory", ErrMemoryLimit, FormatBytes(alloc.limit))
		if b := alloc.refusal.Load(); b != nil {
			what = fmt.Sprintf("%v: %v", ErrMemoryLimit, b)
		}
	}
	if w, release, lerr := st.LendWriter(2); lerr == nil {
		fmt.Fprintf(w, "wasmbox: forked process %d: %s\n", pid, what)
		release()
	}
	return status, cause
}
