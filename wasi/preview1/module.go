package preview1

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"
)

// ModuleName is the name guests import WASI preview1 from.
const ModuleName = "wasi_snapshot_preview1"

var le = binary.LittleEndian

const i32, i64 = api.ValueTypeI32, api.ValueTypeI64

// wasiFunc is the shape of every host function but proc_exit: it gets the
// State of the call and returns the errno.
type wasiFunc func(ctx context.Context, s *State, mem api.Memory, p []uint64) Errno

// Instantiate instantiates the host module "wasi_snapshot_preview1" into r,
// exporting every preview1 function with its wasip1 signature, so that Go,
// Rust (wasm32-wasip1), C (wasi-libc) and AssemblyScript guests link
// against it in place of wazero's imports/wasi_snapshot_preview1 (only one
// of the two can be instantiated in a runtime).
//
// The functions keep no state of their own: each call finds its State in
// the context of the guest call (see WithState). A call whose context has
// no State fails with ENOSYS (proc_exit still exits).
//
// Closing the result (or r) removes the module.
func Instantiate(ctx context.Context, r wazero.Runtime) (api.Closer, error) {
	b := r.NewHostModuleBuilder(ModuleName)
	exportAll(b)
	return b.Instantiate(ctx)
}

func export(b wazero.HostModuleBuilder, name string, fn wasiFunc, params ...api.ValueType) {
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		s := StateFrom(ctx)
		if s == nil {
			stack[0] = uint64(ErrnoNosys)
			return
		}
		s.ExitIfHalted()
		exitIfClosed(mod)
		s.tap.last.Store(nil)
		stack[0] = uint64(fn(ctx, s, mod.Memory(), stack))
	}), params, []api.ValueType{i32}).Export(name)
}

func exportAll(b wazero.HostModuleBuilder) {
	export(b, "args_get", argsGet, i32, i32)
	export(b, "args_sizes_get", argsSizesGet, i32, i32)
	export(b, "environ_get", environGet, i32, i32)
	export(b, "environ_sizes_get", environSizesGet, i32, i32)
	export(b, "clock_res_get", clockResGet, i32, i32)
	export(b, "clock_time_get", clockTimeGet, i32, i64, i32)
	export(b, "fd_advise", fdAdvise, i32, i64, i64, i32)
	export(b, "fd_allocate", fdAllocate, i32, i64, i64)
	export(b, "fd_close", fdClose, i32)
	export(b, "fd_datasync", fdDatasync, i32)
	export(b, "fd_fdstat_get", fdFdstatGet, i32, i32)
	export(b, "fd_fdstat_set_flags", fdFdstatSetFlags, i32, i32)
	export(b, "fd_fdstat_set_rights", fdFdstatSetRights, i32, i64, i64)
	export(b, "fd_filestat_get", fdFilestatGet, i32, i32)
	export(b, "fd_filestat_set_size", fdFilestatSetSize, i32, i64)
	export(b, "fd_filestat_set_times", fdFilestatSetTimes, i32, i64, i64, i32)
	export(b, "fd_pread", fdPread, i32, i32, i32, i64, i32)
	export(b, "fd_prestat_get", fdPrestatGet, i32, i32)
	export(b, "fd_prestat_dir_name", fdPrestatDirName, i32, i32, i32)
	export(b, "fd_pwrite", fdPwrite, i32, i32, i32, i64, i32)
	export(b, "fd_read", fdRead, i32, i32, i32, i32)
	export(b, "fd_readdir", fdReaddir, i32, i32, i32, i64, i32)
	export(b, "fd_renumber", fdRenumber, i32, i32)
	export(b, "fd_seek", fdSeek, i32, i64, i32, i32)
	export(b, "fd_sync", fdSync, i32)
	export(b, "fd_tell", fdTell, i32, i32)
	export(b, "fd_write", fdWrite, i32, i32, i32, i32)
	export(b, "path_create_directory", pathCreateDirectory, i32, i32, i32)
	export(b, "path_filestat_get", pathFilestatGet, i32, i32, i32, i32, i32)
	export(b, "path_filestat_set_times", pathFilestatSetTimes, i32, i32, i32, i32, i64, i64, i32)
	export(b, "path_link", pathLink, i32, i32, i32, i32, i32, i32, i32)
	export(b, "path_open", pathOpen, i32, i32, i32, i32, i32, i64, i64, i32, i32)
	export(b, "path_readlink", pathReadlink, i32, i32, i32, i32, i32, i32)
	export(b, "path_remove_directory", pathRemoveDirectory, i32, i32, i32)
	export(b, "path_rename", pathRename, i32, i32, i32, i32, i32, i32)
	export(b, "path_symlink", pathSymlink, i32, i32, i32, i32, i32)
	export(b, "path_unlink_file", pathUnlinkFile, i32, i32, i32)
	export(b, "poll_oneoff", pollOneoff, i32, i32, i32, i32)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(procExit), []api.ValueType{i32}, nil).Export("proc_exit")
	export(b, "proc_raise", procRaise, i32)
	export(b, "sched_yield", schedYield)
	export(b, "random_get", randomGet, i32, i32)
	export(b, "sock_accept", sockAccept, i32, i32, i32)
	export(b, "sock_recv", sockRecv, i32, i32, i32, i32, i32, i32)
	export(b, "sock_send", sockSend, i32, i32, i32, i32, i32)
	export(b, "sock_shutdown", sockShutdown, i32, i32)
}

// memory helpers: every guest pointer is bounds-checked (EFAULT), and a
// guest without memory gets EFAULT too.

func read(mem api.Memory, off, n uint32) ([]byte, bool) {
	if mem == nil {
		return nil, false
	}
	return mem.Read(off, n)
}

func putU32(mem api.Memory, off, v uint32) Errno {
	if mem == nil || !mem.WriteUint32Le(off, v) {
		return ErrnoFault
	}
	return 0
}

func putU64(mem api.Memory, off uint32, v uint64) Errno {
	if mem == nil || !mem.WriteUint64Le(off, v) {
		return ErrnoFault
	}
	return 0
}

// ---- args, environ ----

func argsGet(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	return writeStrings(mem, s.args, uint32(p[0]), uint32(p[1]))
}

func argsSizesGet(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	return writeSizes(mem, s.args, uint32(p[0]), uint32(p[1]))
}

func environGet(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	return writeStrings(mem, s.env, uint32(p[0]), uint32(p[1]))
}

func environSizesGet(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	return writeSizes(mem, s.env, uint32(p[0]), uint32(p[1]))
}

func stringsLen(v []string) uint64 {
	var n uint64
	for _, s := range v {
		n += uint64(len(s)) + 1
	}
	return n
}

func writeSizes(mem api.Memory, v []string, countPtr, lenPtr uint32) Errno {
	n := stringsLen(v)
	if n > 1<<32-1 {
		return Errno2big
	}
	if e := putU32(mem, countPtr, uint32(len(v))); e != 0 {
		return e
	}
	return putU32(mem, lenPtr, uint32(n))
}

func writeStrings(mem api.Memory, v []string, ptrs, buf uint32) Errno {
	n := stringsLen(v)
	if n > 1<<32-1 || uint64(len(v))*4 > 1<<32-1 {
		return Errno2big
	}
	pb, ok := read(mem, ptrs, uint32(len(v))*4)
	if !ok {
		return ErrnoFault
	}
	bb, ok := read(mem, buf, uint32(n))
	if !ok {
		return ErrnoFault
	}
	pos := uint32(0)
	for i, s := range v {
		le.PutUint32(pb[i*4:], buf+pos)
		copy(bb[pos:], s)
		pos += uint32(len(s))
		bb[pos] = 0
		pos++
	}
	return 0
}

// ---- clocks, random, sched, proc ----

func clockResGet(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	var res uint64
	switch uint32(p[0]) {
	case clockRealtime:
		res = 1000
	case clockMonotonic, clockProcess, clockThread:
		res = 1
	default:
		return ErrnoInval
	}
	return putU64(mem, uint32(p[1]), res)
}

func (s *State) now(id uint32) (int64, Errno) {
	switch id {
	case clockRealtime:
		return s.cfg.Walltime().UnixNano(), 0
	case clockMonotonic, clockProcess, clockThread:
		return s.nanotime(), 0
	}
	return 0, ErrnoInval
}

func clockTimeGet(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	t, e := s.now(uint32(p[0]))
	if e != 0 {
		return e
	}
	return putU64(mem, uint32(p[2]), uint64(t))
}

func randomGet(ctx context.Context, s *State, mem api.Memory, p []uint64) Errno {
	b, ok := read(mem, uint32(p[0]), uint32(p[1]))
	if !ok {
		return ErrnoFault
	}
	// A chunk at a time, ending the guest between two when its context
	// is done: crypto/rand makes ~256 MiB a second, and one call may ask
	// for all of the guest's memory, seconds that neither a kill nor the
	// guest's fuel would otherwise cut.
	for len(b) > 0 {
		n := min(len(b), randomChunk)
		if _, err := io.ReadFull(s.cfg.Rand, b[:n]); err != nil {
			return ErrnoIo
		}
		b = b[n:]
		if len(b) > 0 {
			exitIfDone(ctx)
			s.ExitIfHalted()
		}
	}
	return 0
}

// randomChunk is how much random_get writes between two looks at the
// context: ~4 ms of crypto/rand.
const randomChunk = 1 << 20

// schedYield yields the processor, and ends the guest when the call's
// context is done: the runtime makes guests call it every so many loop
// iterations (see internal/wasmbin.InstrumentLoops), which is how a guest
// that never calls the host otherwise is stopped.
func schedYield(ctx context.Context, _ *State, _ api.Memory, _ []uint64) Errno {
	exitIfDone(ctx)
	yield()
	return 0
}

func procRaise(context.Context, *State, api.Memory, []uint64) Errno { return ErrnoNosys }

// procExit ends the guest as wazero's proc_exit does: the module is closed
// with the exit code and a *sys.ExitError panic unwinds the guest (wazero
// recovers it and returns it from the guest call).
func procExit(ctx context.Context, mod api.Module, stack []uint64) {
	code := uint32(stack[0])
	_ = mod.CloseWithExitCode(ctx, code)
	panic(sys.NewExitError(code))
}

// exitIfClosed ends the guest when its module was closed during the call
// (Instance.Close or the runtime's Close from another goroutine), with the
// exit code it was closed with: a module closed under a metered guest
// stops at its next sched_yield, as one with wazero's termination check
// stops at its next loop. Its memory is released once the call returns
// (third_party/wazero patch 25).
func exitIfClosed(mod api.Module) {
	if mod.IsClosed() {
		if f, ok := mod.(interface{ FailIfClosed() error }); ok {
			if err := f.FailIfClosed(); err != nil {
				panic(err)
			}
		}
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	}
}

// exitIfDone ends the guest when ctx is done (from inside a host call):
// with sys.ExitCodeDeadlineExceeded or ExitCodeContextCanceled. Handing the
// guest an error instead could let it exit 0 before wazero's close lands.
func exitIfDone(ctx context.Context) {
	if err := ctx.Err(); err != nil {
		exitFor(err)
	}
}

// exitFor ends the guest for err, a context error: with
// sys.ExitCodeDeadlineExceeded for a deadline, else
// sys.ExitCodeContextCanceled.
func exitFor(err error) {
	if errors.Is(err, context.DeadlineExceeded) {
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	}
	panic(sys.NewExitError(sys.ExitCodeContextCanceled))
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// exitOnCtxErr ends the guest for an error that says a context is done:
// the call's, or the one of the pipe the error came from.
func exitOnCtxErr(ctx context.Context, err error) {
	exitIfDone(ctx)
	exitFor(err)
}

// ---- sockets: there are none; a valid descriptor is ENOTSOCK ----

func notSock(s *State, fd uint32) Errno {
	if _, e := s.lookup(fd); e != 0 {
		return e
	}
	return ErrnoNotsock
}

func sockAccept(_ context.Context, s *State, _ api.Memory, p []uint64) Errno {
	return notSock(s, uint32(p[0]))
}
func sockRecv(_ context.Context, s *State, _ api.Memory, p []uint64) Errno {
	return notSock(s, uint32(p[0]))
}
func sockSend(_ context.Context, s *State, _ api.Memory, p []uint64) Errno {
	return notSock(s, uint32(p[0]))
}
func sockShutdown(_ context.Context, s *State, _ api.Memory, p []uint64) Errno {
	return notSock(s, uint32(p[0]))
}

// ---- descriptors ----

func need(e *entry, rights uint64) Errno {
	if e.base&rights != rights {
		return ErrnoNotcapable
	}
	return 0
}

func fdAdvise(_ context.Context, s *State, _ api.Memory, p []uint64) Errno {
	e, errno := s.lookup(uint32(p[0]))
	if errno != 0 {
		return errno
	}
	if e.kind == kindDir {
		return ErrnoBadf
	}
	if errno := need(e, rightFdAdvise); errno != 0 {
		return errno
	}
	if uint32(p[3]) > 5 {
		return ErrnoInval
	}
	return 0
}

func fdAllocate(_ context.Context, s *State, _ api.Memory, p []uint64) Errno {
	e, errno := s.lookup(uint32(p[0]))
	if errno != 0 {
		return errno
	}
	if e.kind == kindDir {
		return ErrnoIsdir
	}
	if errno := need(e, rightFdAllocate); errno != 0 {
		return errno
	}
	if e.kind != kindFile {
		return ErrnoSpipe
	}
	tail := int64(p[1] + p[2])
	if tail < 0 || p[1]+p[2] < p[1] {
		return ErrnoFbig
	}
	st, xe := e.file.Stat()
	if xe != 0 {
		return s.errno(xe)
	}
	if st.Size >= tail {
		return 0
	}
	return s.errno(e.file.Truncate(tail))
}

func fdClose(_ context.Context, s *State, _ api.Memory, p []uint64) Errno {
	fd := uint32(p[0])
	e, errno := s.lookup(fd)
	if errno != 0 {
		return errno
	}
	s.files[fd] = nil
	return s.errno(e.close())
}

func fdDatasync(_ context.Context, s *State, _ api.Memory, p []uint64) Errno {
	return fdSyncRights(s, uint32(p[0]), rightFdDatasync)
}

func fdSync(_ context.Context, s *State, _ api.Memory, p []uint64) Errno {
	return fdSyncRights(s, uint32(p[0]), rightFdSync)
}

func fdSyncRights(s *State, fd uint32, r uint64) Errno {
	e, errno := s.lookup(fd)
	if errno != 0 {
		return errno
	}
	if errno := need(e, r); errno != 0 {
		return errno
	}
	if e.file == nil {
		return ErrnoInval
	}
	return s.errno(e.file.Sync())
}

func (e *entry) flags() uint16 {
	f := e.fdflags
	if e.file != nil && e.file.IsAppend() {
		f |= fdflagAppend
	}
	return f
}

func fdFdstatGet(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	e, errno := s.lookup(uint32(p[0]))
	if errno != 0 {
		return errno
	}
	b, ok := read(mem, uint32(p[1]), fdstatSize)
	if !ok {
		return ErrnoFault
	}
	le.PutUint16(b[0:], uint16(e.ftype))
	le.PutUint16(b[2:], e.flags())
	le.PutUint32(b[4:], 0)
	le.PutUint64(b[8:], e.base)
	le.PutUint64(b[16:], e.inh)
	return 0
}

func fdFdstatSetFlags(_ context.Context, s *State, _ api.Memory, p []uint64) Errno {
	e, errno := s.lookup(uint32(p[0]))
	if errno != 0 {
		return errno
	}
	flags := uint16(p[1])
	if flags&^(fdflagAppend|fdflagDsync|fdflagNonblock|fdflagRsync|fdflagSync) != 0 {
		return ErrnoInval
	}
	if errno := need(e, rightFdFdstatSetFlags); errno != 0 {
		return errno
	}
	if flags&(fdflagDsync|fdflagRsync|fdflagSync) != 0 {
		// As wazero and Linux: the sync flags can only be given at open.
		return ErrnoInval
	}
	switch e.kind {
	case kindDir:
		return ErrnoIsdir
	case kindFile:
		if errno := s.errno(e.file.SetAppend(flags&fdflagAppend != 0)); errno != 0 {
			return errno
		}
	}
	e.fdflags = e.fdflags&^fdflagNonblock | flags&fdflagNonblock
	return 0
}

func fdFdstatSetRights(_ context.Context, s *State, _ api.Memory, p []uint64) Errno {
	e, errno := s.lookup(uint32(p[0]))
	if errno != 0 {
		return errno
	}
	base, inh := p[1], p[2]
	if base&^e.base != 0 || inh&^e.inh != 0 {
		return ErrnoNotcapable // rights can only be dropped
	}
	e.base, e.inh = base, inh
	return 0
}

func writeFilestat(b []byte, st *sys.Stat_t, ftype uint8) {
	le.PutUint64(b, st.Dev)
	le.PutUint64(b[8:], st.Ino)
	le.PutUint64(b[16:], uint64(ftype))
	le.PutUint64(b[24:], st.Nlink)
	le.PutUint64(b[32:], uint64(st.Size))
	le.PutUint64(b[40:], uint64(st.Atim))
	le.PutUint64(b[48:], uint64(st.Mtim))
	le.PutUint64(b[56:], uint64(st.Ctim))
}

func filetype(m fs.FileMode) uint8 {
	switch {
	case m.IsRegular():
		return filetypeRegularFile
	case m.IsDir():
		return filetypeDirectory
	case m&fs.ModeSymlink != 0:
		return filetypeSymbolicLink
	case m&fs.ModeCharDevice != 0:
		return filetypeCharDevice
	case m&fs.ModeDevice != 0:
		return filetypeBlockDevice
	}
	return filetypeUnknown
}

func fdFilestatGet(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	e, errno := s.lookup(uint32(p[0]))
	if errno != 0 {
		return errno
	}
	if errno := need(e, rightFdFilestatGet); errno != 0 {
		return errno
	}
	b, ok := read(mem, uint32(p[1]), filestatSize)
	if !ok {
		return ErrnoFault
	}
	return s.entryFilestat(e, b)
}

// entryFilestat writes the filestat of what descriptor e refers to into b:
// its file's, or for a stream a character device's with one link.
func (s *State) entryFilestat(e *entry, b []byte) Errno {
	var st sys.Stat_t
	ftype := e.ftype
	if e.file != nil {
		var xe experimentalsys.Errno
		if st, xe = e.file.Stat(); xe != 0 {
			return s.errno(xe)
		}
		ftype = filetype(st.Mode)
	} else {
		st.Nlink = 1
	}
	writeFilestat(b, &st, ftype)
	return 0
}

func fdFilestatSetSize(_ context.Context, s *State, _ api.Memory, p []uint64) Errno {
	e, errno := s.lookup(uint32(p[0]))
	if errno != 0 {
		return errno
	}
	if e.kind == kindDir {
		return ErrnoIsdir
	}
	if errno := need(e, rightFdFilestatSetSize); errno != 0 {
		return errno
	}
	if e.kind != kindFile {
		return ErrnoInval
	}
	if int64(p[1]) < 0 {
		return ErrnoInval
	}
	return s.errno(e.file.Truncate(int64(p[1])))
}

// toTimes turns the (atim, mtim, fst_flags) of the filestat_set_times
// calls into nanoseconds, experimentalsys.UTIME_OMIT for "leave as is".
func (s *State) toTimes(atim, mtim int64, flags uint16) (int64, int64, Errno) {
	if flags&^(fstAtim|fstAtimNow|fstMtim|fstMtimNow) != 0 ||
		flags&(fstAtim|fstAtimNow) == fstAtim|fstAtimNow ||
		flags&(fstMtim|fstMtimNow) == fstMtim|fstMtimNow {
		return 0, 0, ErrnoInval
	}
	var now int64
	if flags&(fstAtimNow|fstMtimNow) != 0 {
		now = s.cfg.Walltime().UnixNano()
	}
	switch {
	case flags&fstAtimNow != 0:
		atim = now
	case flags&fstAtim == 0:
		atim = experimentalsys.UTIME_OMIT
	}
	switch {
	case flags&fstMtimNow != 0:
		mtim = now
	case flags&fstMtim == 0:
		mtim = experimentalsys.UTIME_OMIT
	}
	return atim, mtim, 0
}

func fdFilestatSetTimes(_ context.Context, s *State, _ api.Memory, p []uint64) Errno {
	e, errno := s.lookup(uint32(p[0]))
	if errno != 0 {
		return errno
	}
	if errno := need(e, rightFdFilestatSetTimes); errno != 0 {
		return errno
	}
	atim, mtim, errno := s.toTimes(int64(p[1]), int64(p[2]), uint16(p[3]))
	if errno != 0 {
		return errno
	}
	if e.file == nil {
		return ErrnoNotsup
	}
	return s.errno(e.file.Utimens(atim, mtim))
}

func fdPrestatGet(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	e, errno := s.lookup(uint32(p[0]))
	if errno != 0 {
		return errno
	}
	if e.preopen == "" {
		return ErrnoBadf
	}
	// prestat: tag u8 (0 = dir), then u32 pr_name_len at offset 4.
	return putU64(mem, uint32(p[1]), uint64(len(e.preopen))<<32)
}

func fdPrestatDirName(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	e, errno := s.lookup(uint32(p[0]))
	if errno != 0 {
		return errno
	}
	if e.preopen == "" {
		return ErrnoBadf
	}
	n := uint32(p[2])
	if n < uint32(len(e.preopen)) {
		return ErrnoNametoolong
	}
	b, ok := read(mem, uint32(p[1]), uint32(len(e.preopen)))
	if !ok {
		return ErrnoFault
	}
	copy(b, e.preopen)
	return 0
}

func fdRenumber(_ context.Context, s *State, _ api.Memory, p []uint64) Errno {
	from, to := uint32(p[0]), uint32(p[1])
	e, errno := s.lookup(from)
	if errno != 0 {
		return errno
	}
	old, errno := s.lookup(to)
	if errno != 0 {
		return errno
	}
	if from == to {
		return 0
	}
	_ = old.close()
	s.files[to], s.files[from] = e, nil
	return 0
}

func fdSeek(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	return s.seek(mem, uint32(p[0]), int64(p[1]), uint32(p[2]), uint32(p[3]))
}

func fdTell(_ context.Context, s *State, mem api.Memory, p []uint64) Errno {
	return s.seek(mem, uint32(p[0]), 0, uint32(io.SeekCurrent), uint32(p[1]))
}

func (s *State) seek(mem api.Memory, fd uint32, off int64, whence uint32, result uint32) Errno {
	e, errno := s.lookup(fd)
	if errno != 0 {
		return errno
	}
	if e.kind == kindDir {
		return ErrnoIsdir // POSIX allows it, wasi-testsuite does not
	}
	r := rightFdSeek
	if off == 0 && whence == uint32(io.SeekCurrent) {
		r = rightFdTell
	}
	if e.base&(r|rightFdSeek) == 0 {
		return ErrnoNotcapable
	}
	if whence > 2 {
		return ErrnoInval
	}
	if e.kind != kindFile {
		return ErrnoSpipe
	}
	n, xe := e.file.Seek(off, int(whence))
	if xe != 0 {
		return s.errno(xe)
	}
	return putU64(mem, result, uint64(n))
}
