package main

// The CLI's side of the resident engine (internal/engine): `wasmbox run`
// hands its command line to the engine of its build and user, and
// `wasmbox engine` serves, reports and stops it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/wasmbox/wasmbox/internal/engine"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/sandbox"
)

func init() { subcommands = append(subcommands, newEngineCmd) }

// defaultCacheDir is the runtime's default compilation cache directory.
func defaultCacheDir() string {
	if base, err := os.UserCacheDir(); err == nil {
		return filepath.Join(base, "wasmbox", "compile")
	}
	return ""
}

// viaEngine runs the command line args in this user's engine for this
// build, starting the engine if none runs. ok is false when the command is
// not the engine's (not run, WASMBOX_ENGINE=off, flags the engine leaves to
// the process: --native, --mcp-config, --cachedir) or the engine cannot be
// reached: the caller then runs it itself, as nothing was read or written.
func viaEngine(args []string, stdin, stdout, stderr *os.File) (code int, ok bool) {
	if len(args) == 0 || args[0] != "run" {
		return 0, false
	}
	if !allUTF8(args) || !allUTF8(os.Environ()) {
		// The request is JSON, whose strings cannot carry bytes that
		// are not UTF-8 (they would become U+FFFD): a script (-c) or a
		// path that holds such bytes runs in this process, unchanged.
		return 0, false
	}
	switch os.Getenv(engine.Env) {
	case "0", "off", "false", "no":
		return 0, false
	}
	cache := defaultCacheDir()
	if cache == "" {
		return 0, false
	}
	sock, key, err := engine.Path(cache)
	if err != nil {
		return 0, false
	}
	if !engine.SocketFits(sock) {
		return 0, false // no engine could listen there
	}
	conn, err := engine.Dial(sock)
	if errors.Is(err, engine.ErrPeer) {
		// Not an engine of ours on our socket: tell nothing to it, and
		// start none (it holds the path).
		return 0, false
	}
	if err != nil {
		if exe, err := os.Executable(); err != nil || engine.GoRunBinary(exe) && os.Getenv(engine.Env) != "on" {
			return 0, false // `go run`'s binary: it would leave an engine per build
		}
		exited, err := engine.Spawn(sock, cache)
		if err != nil {
			return 0, false
		}
		if conn, err = engine.Wait(sock, 10*time.Second, exited); err != nil {
			return 0, false
		}
	}
	defer conn.Close()
	cwd, err := os.Getwd()
	if err != nil || !utf8.ValidString(cwd) {
		return 0, false
	}
	req := engine.Request{Op: "run", Key: key, Args: args, Dir: cwd, Env: os.Environ()}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	res, err := engine.Submit(conn, req, stdin, stdout, stderr, sigs)
	switch {
	case errors.Is(err, engine.ErrNotTaken):
		return 0, false
	case err != nil:
		fmt.Fprintf(stderr, "wasmbox: %v\n", err)
		return 1, true
	case res.SIGPIPE:
		// The engine met a closed pipe on our stdout or stderr, where
		// this process would have died of SIGPIPE.
		dieOfSignal(unix.SIGPIPE)
		return 128 + int(unix.SIGPIPE), true
	}
	return res.Exit, true
}

// dieOfSignal ends the process by sig with the default action, so that its
// parent sees the death by signal (not an exit status). Go's own handler
// ignores a SIGPIPE that no write to fd 1 or 2 raised, so the default
// action is put back first (as the runtime's dieFromSignal does).
func dieOfSignal(sig unix.Signal) {
	signal.Reset(sig)
	var sa struct { // the kernel's struct sigaction: SIG_DFL, no flags, empty mask
		handler, flags, restorer uintptr
		mask                     uint64
	}
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&sa)), 0, unsafe.Sizeof(sa.mask), 0, 0)
	unix.Kill(os.Getpid(), sig)
}

// engineHandler runs a client's command line in the engine as the client
// process would, with the client's streams, directory and environment.
func engineHandler(ctx context.Context, r *engine.Run) (int, string) {
	a := &app{stdin: r.Stdin, stdout: r.Stdout, stderr: r.Stderr, cwd: r.Dir, environ: r.Env, shared: r.Shared, later: r.Later}
	var fallback string
	a.admit = func(cmd *cobra.Command, f *sandboxFlags) error {
		switch {
		case len(f.native) > 0 || f.unjailed:
			fallback = "--native runs host programs: they belong to the calling process"
		case f.mcpConfig != "":
			fallback = "--mcp-config starts host programs: they belong to the calling process"
		case f.net.netCA != "":
			// A FIFO or device there would hang the engine's read.
			fallback = "--net-ca is a host file: the calling process reads it"
		case a.cacheDir != "" || a.noCache || a.cacheMax != "":
			fallback = "--cachedir, --nocache and --cachemax choose another runtime"
		}
		if fallback == "" {
			fallback = a.openClientFiles(cmd, f)
		}
		if fallback != "" {
			return errFallback{fallback}
		}
		r.Accept()
		return nil
	}
	code := a.main(ctx, r.Args)
	return code, fallback
}

// openClientFiles opens the run's script FILE (into a.script) and checks
// its audit log, the host files the engine itself opens for the client,
// and returns why the client must run the command itself, if it must: a
// FIFO (opening or reading it waits for a writer that may never come,
// and the engine with it), a device, or a path through /proc's magic
// links (/dev/stdin, /proc/self/fd/N name the engine's descriptors, not
// the client's). The script is opened non-blocking and used as opened;
// in-process, the same path reads as usual.
func (a *app) openClientFiles(cmd *cobra.Command, f *sandboxFlags) string {
	if args := cmd.Flags().Args(); len(args) == 1 && args[0] != "-" && !cmd.Flags().Changed("command") {
		p := a.hostPath(args[0])
		fh, err := openClientFile(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
		switch {
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EACCES), errors.Is(err, unix.ENOTDIR):
			a.scriptErr = &os.PathError{Op: "open", Path: p, Err: err} // as os.Open says it
		case err != nil:
			return fmt.Sprintf("the script %s: %v: the calling process reads it", args[0], err)
		}
		a.script = fh
	}
	if f.auditLog != "" {
		fh, err := openClientFile(a.hostPath(f.auditLog), unix.O_PATH)
		switch {
		case err == nil:
			fh.Close()
		case !errors.Is(err, unix.ENOENT):
			if a.script != nil {
				a.script.Close()
				a.script = nil
			}
			return fmt.Sprintf("the audit log %s: %v: the calling process writes it", f.auditLog, err)
		}
	}
	return ""
}

// openClientFile opens the regular file p with flags, refusing /proc's
// magic links on the way and any other kind of file.
func openClientFile(p string, flags int) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, errors.New("not a regular file")
	}
	return os.NewFile(uintptr(fd), p), nil
}

// serveEngine runs an engine on sock until it is stopped or idle.
func serveEngine(ctx context.Context, sock, cacheDir string, noCache bool, idle, trim time.Duration) error {
	key, err := engine.Key(cacheDir)
	if err != nil {
		return err
	}
	return engine.Serve(ctx, engine.Config{
		Socket: sock, Key: key, Idle: idle, Trim: trim, Handler: engineHandler,
		Shared: func(ctx context.Context) (*sandbox.Engine, error) {
			return sandbox.NewEngine(ctx, runtime.Config{CacheDir: cacheDir, DisableCache: noCache})
		},
	})
}

func newEngineCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "The resident engine that makes warm `wasmbox run` fast",
		Long: `wasmbox run hands its command line to a resident engine of the same build,
user and umask, started on first use: the engine keeps the tools compiled, and
every run is still a new sandbox. The engine listens on a socket in
$XDG_RUNTIME_DIR/wasmbox (else $TMPDIR/wasmbox-UID), a directory only
its user may enter, and serves only processes that may read and do what
it may: same uid, gids, capabilities, security label, root and namespaces
(a client with capabilities dropped, or in a mount namespace of its own,
runs in-process). After a minute without a run it gives the memory of
compiled tools and snapshots back (WASMBOX_ENGINE_TRIM), and it exits after
10 minutes without a run (WASMBOX_ENGINE_IDLE=30s changes that). A binary
that "go run" built starts no engine (unless WASMBOX_ENGINE=on).

The run's work is done, and its CPU and memory counted, in the engine:
set WASMBOX_ENGINE=off to run in the wasmbox process itself (for a
cgroup, ulimit or nice of its own). Runs with --native or --mcp-config,
which start host programs, always run in the wasmbox process.`,
	}
	var (
		sock       string
		idle, trim time.Duration
	)
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Run an engine in the foreground (wasmbox run starts one itself)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if idle <= 0 {
				return fmt.Errorf("--idle must be positive, got %v", idle)
			}
			cache := a.cacheDir
			if cache == "" {
				cache = defaultCacheDir()
			}
			if sock == "" {
				p, _, err := engine.Path(cache)
				if err != nil {
					return a.fail(err)
				}
				sock = p
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			sandbox.KeepHostResponsive()
			err := serveEngine(ctx, sock, cache, a.noCache, idle, trim)
			if errors.Is(err, engine.ErrRunning) {
				return nil
			}
			if err != nil {
				return a.fail(err)
			}
			return nil
		},
	}
	serve.Flags().StringVar(&sock, "socket", "", "the socket to listen on (default: this build's, in the engine directory)")
	serve.Flags().DurationVar(&idle, "idle", engine.DefaultIdle, "exit after this long without a run")
	serve.Flags().DurationVar(&trim, "trim", engine.DefaultTrim, "give the memory of compiled tools and snapshots back after this long without a run (0: never)")
	status := &cobra.Command{
		Use:   "status",
		Short: "Print the running engine of this build as JSON, or exit 1",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := engineCall(a, "status")
			if err != nil {
				return a.fail(err)
			}
			enc := json.NewEncoder(a.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(rep.Status)
		},
	}
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop the engine of this build once its runs end, and say which it stopped",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := engineCall(a, "stop")
			switch {
			case errors.Is(err, engine.ErrNoEngine):
				fmt.Fprintln(a.stdout, "wasmbox: no engine of this build is running")
				return nil
			case err != nil:
				return a.fail(err)
			case rep.Status == nil:
				return a.fail(errors.New("engine: stop: the engine did not say what it is"))
			}
			st := rep.Status
			fmt.Fprintf(a.stdout, "wasmbox: stopped the engine pid %d (socket %s, build %s, %d runs, %s resident, %d runs still active)\n",
				st.PID, st.Socket, st.Build, st.Runs, formatMiB(st.RSS), st.Active)
			return nil
		},
	}
	cmd.AddCommand(serve, status, stop)
	return cmd
}

// formatMiB formats n bytes in MiB.
func formatMiB(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

// engineCall sends op to this build's engine and returns its reply.
func engineCall(a *app, op string) (engine.Reply, error) {
	cache := a.cacheDir
	if cache == "" {
		cache = defaultCacheDir()
	}
	sock, _, err := engine.Path(cache)
	if err != nil {
		return engine.Reply{}, err
	}
	return engine.Op(sock, op)
}

// allUTF8 reports whether every string of ss is valid UTF-8.
func allUTF8(ss []string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}
