// Package preview1 is wasmbox's own implementation of the
// wasi_snapshot_preview1 host module, an opt-in replacement for wazero's
// imports/wasi_snapshot_preview1 that passes all 72 cases of the
// WebAssembly wasi-testsuite over an in-memory vfs (wazero's passes 59).
//
// It owns the descriptor table, so it can do what wazero's module cannot:
//
//   - WASI rights: every descriptor carries base and inheriting rights;
//     path_open hands down at most the directory's inheriting rights,
//     fd_fdstat_set_rights drops rights (adding one is ENOTCAPABLE), and
//     every call checks the right it needs (ENOTCAPABLE).
//   - fd_renumber over stdio and preopens, refusing a closed target (EBADF).
//   - path_readlink truncating into a short buffer, path_link with
//     LOOKUP_SYMLINK_FOLLOW, path_filestat_set_times on a symlink itself
//     (vfs.Lchtimes), the SYNC fdflags reported by fd_fdstat_get,
//     fd_write subscriptions in poll_oneoff, absolute clock subscriptions,
//     sock_* on a file answering ENOTSOCK.
//   - Precise errnos: vfs errors reach the guest as ENOSPC, EFBIG, EXDEV,
//     EMLINK, EDQUOT, ... (wazero's errno set turns them into EIO), so a
//     guest over its quota reads "No space left on device". ErrnoOf is the
//     mapping.
//
// Files and directories go through the wasi package's adapter (wasi.NewFS)
// over the vfs, so path handling, symlinks, append mode, inode numbers and
// times are the ones the rest of wasmbox already relies on.
//
// # Running a guest
//
// The host functions find their per-run State in the context of the guest
// call: wazero gives a host function the context its exported function was
// called with (and, while start functions run during instantiation, the
// context of InstantiateModule). One host module per runtime therefore
// serves any number of concurrent guests.
//
//	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
//	preview1.Instantiate(ctx, r) // instead of wasi_snapshot_preview1.Instantiate
//	st, err := preview1.NewState(preview1.Config{FS: fsys, Args: args, Env: env,
//		Stdin: stdinR, Stdout: stdoutW, Stderr: stderrW})
//	defer st.Close()
//	ctx = preview1.WithState(ctx, st)
//	mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
//	// _start ran with ctx; err is a *sys.ExitError for a non-zero exit.
//
// Args, environment, stdio, clocks, randomness and the filesystem come from
// Config, not from the wazero.ModuleConfig (whose WithArgs, WithEnv,
// WithStdin, WithFSConfig, clocks... are not seen by this module).
//
// # Cancellation
//
// Whatever can block watches the context of the call: fd_read on a pipe
// stdin, fd_write to a full pipe, poll_oneoff (stdin and clocks) and
// sleeps. When it is done the guest ends at once with exit code
// sys.ExitCodeContextCanceled or sys.ExitCodeDeadlineExceeded (a panic of
// *sys.ExitError inside the host call, which wazero turns into the call's
// error, as proc_exit does); TestCancelBlockedGuest proves it returns within
// milliseconds and leaves no goroutine. A Stdin that is not a
// wasi.PipeReader (or another experimental/sys.Pollable whose reads honour
// the context) blocks in its Read and cannot be interrupted: copy it into a
// wasi.NewPipe.
//
// # Memory safety
//
// Every pointer and length from the guest is bounds-checked: out of range
// is EFAULT (sizes that overflow 32 bits are EINVAL), never a host panic.
// The only panic is the *sys.ExitError of proc_exit and of a cancelled
// call, which wazero expects.
package preview1
