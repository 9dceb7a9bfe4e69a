package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental/logging"
	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/netpolicy"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/sandbox"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi"
)

func init() { subcommands = append(subcommands, newExecCmd) }

// outputCap bounds each captured stream of --json.
const outputCap = 1 << 20

// compileNotice is how long a first compile may take before a terminal
// user is told about it.
const compileNotice = 300 * time.Millisecond

type execFlags struct {
	mounts      []string
	env         []string
	timeout     time.Duration
	memory      string
	workdir     string
	hostlogging string
	json        bool
	noFS        bool
	memFS       bool
	workdirSet  bool
	net         netFlags
}

func newExecCmd(a *app) *cobra.Command {
	var f execFlags
	cmd := &cobra.Command{
		Use:   "exec [flags] FILE.wasm [--] [ARGS...]",
		Short: "Run a WebAssembly (WASI) module in the sandbox",
		Long: `Run a WebAssembly module (wasip1) from the host filesystem inside the
sandbox: a superset of "wazero run". The guest's argv is FILE.wasm and
ARGS (a "--" right after FILE.wasm is dropped); its environment is
exactly the --env given (plus PWD when --workdir is). As with "wazero
run", it has no filesystem (no preopened directory) unless --mount maps
host directories into it: they sit on an in-memory root with the default
layout (/bin, /usr/bin, /home/user, /tmp, /etc) unless one is mounted at
/. --memfs gives that in-memory root without any mount (and the embedded
tools in /bin and /usr/bin, for wasmbox.spawn). --no-fs is accepted for
compatibility: no filesystem is the default now.
The exit status is the guest's; 124 on timeout ("wasmbox: timed out
after D" on stderr), 137 when the memory limit was hit, 134 on a trap.`,
		Example: `  wasmbox exec prog.wasm -- -v input.txt
  wasmbox exec --mount .:/work:ro --env HOME=/work --timeout 5s prog.wasm
  wasmbox exec --json --memory 64MiB prog.wasm`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("exec: missing FILE.wasm")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f.workdirSet = cmd.Flags().Changed("workdir")
			return runExec(cmd.Context(), a, f, args)
		},
	}
	fl := cmd.Flags()
	fl.SetInterspersed(false) // everything after FILE.wasm belongs to the guest
	fl.StringArrayVar(&f.mounts, "mount", nil,
		"map a host directory or file into the guest, HOST:GUEST[:ro|:rw|:cow] (default ro; a file: ro or rw; repeatable; HOST:/ maps the root, a directory)")
	fl.StringArrayVar(&f.env, "env", nil, "set an environment variable of the guest, K=V (repeatable)")
	fl.DurationVar(&f.timeout, "timeout", 0, "kill the guest after this long, e.g. 500ms, 10s (exit 124)")
	fl.StringVar(&f.memory, "memory", "", "memory limit of the guest, e.g. 64MiB, 1G (default 256MiB)")
	fl.StringVar(&f.workdir, "workdir", "/", "working directory of the guest (a guest path; sets $PWD, which wasip1 programs read)")
	fl.BoolVar(&f.memFS, "memfs", false, "give the guest an in-memory filesystem with the default layout and the embedded tools, even without --mount")
	fl.BoolVar(&f.noFS, "no-fs", false, "no filesystem: the default without --mount (kept for compatibility; not with --mount or --memfs)")
	fl.StringVar(&f.hostlogging, "hostlogging", "",
		"log host calls on stderr: filesystem, clock, proc, poll, random, memory, sock or all (comma-separated)")
	f.net.register(fl)
	fl.BoolVar(&f.json, "json", false,
		`print one JSON object {"stdout","stderr","exit_code","error_class","truncated","duration_ms"} instead of the guest's output`)
	return cmd
}

func parseLogScopes(s string) (logging.LogScopes, error) {
	var scopes logging.LogScopes
	for _, name := range strings.Split(s, ",") {
		switch strings.TrimSpace(name) {
		case "all":
			scopes |= logging.LogScopeAll
		case "clock":
			scopes |= logging.LogScopeClock
		case "filesystem":
			scopes |= logging.LogScopeFilesystem
		case "memory":
			scopes |= logging.LogScopeMemory
		case "proc":
			scopes |= logging.LogScopeProc
		case "poll":
			scopes |= logging.LogScopePoll
		case "random":
			scopes |= logging.LogScopeRandom
		case "sock":
			scopes |= logging.LogScopeSock
		default:
			return 0, fmt.Errorf("--hostlogging: unknown scope %q (want filesystem, clock, proc, poll, random, memory, sock or all)", name)
		}
	}
	return scopes, nil
}

func runExec(ctx context.Context, a *app, f execFlags, args []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	file, guestArgs := args[0], args[1:]
	if len(guestArgs) > 0 && guestArgs[0] == "--" {
		// The separator of "exec FILE.wasm -- ARGS" is ours, not the
		// guest's (as with wazero run).
		guestArgs = guestArgs[1:]
	}

	// Flags first: usage errors (exit 2) before any work.
	var memLimit uint64
	if f.memory != "" {
		n, err := runtime.ParseBytes(f.memory)
		if err != nil {
			return fmt.Errorf("--memory: %w", err)
		}
		memLimit = n
	}
	if f.timeout < 0 {
		return fmt.Errorf("--timeout: negative duration %v", f.timeout)
	}
	for _, kv := range f.env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.ContainsRune(kv, 0) {
			return fmt.Errorf("--env %q: want K=V", kv)
		}
	}
	if !strings.HasPrefix(f.workdir, "/") {
		return fmt.Errorf("--workdir %q: want an absolute guest path", f.workdir)
	}
	if f.noFS && len(f.mounts) > 0 {
		return errors.New("--no-fs: not with --mount")
	}
	if f.noFS && f.memFS {
		return errors.New("--no-fs: not with --memfs")
	}
	var specs []vfs.MountSpec
	for _, m := range f.mounts {
		spec, err := vfs.ParseMountSpec(m)
		if err != nil {
			return fmt.Errorf("--mount: %w", err)
		}
		if err := sandbox.CheckMount(spec.Host, a.protected()); err != nil {
			return a.fail(err)
		}
		specs = append(specs, spec)
	}
	netPolicy, err := f.net.policy(a)
	if err != nil {
		return err
	}
	var scopes logging.LogScopes
	if f.hostlogging != "" {
		var err error
		if scopes, err = parseLogScopes(f.hostlogging); err != nil {
			return err
		}
	}

	bin, err := os.ReadFile(file)
	if err != nil {
		return a.fail(err)
	}
	if !runtime.IsWasm(bin) {
		return a.fail(fmt.Errorf("%s: %w", file, runtime.ErrNotWasm))
	}
	var fsys *vfs.VFS
	rootIsMem := false
	if f.memFS || len(specs) > 0 {
		if fsys, rootIsMem, err = buildFS(specs); err != nil {
			return a.fail(err)
		}
		defer closeFS(fsys)
	}

	cfg, err := a.runtimeConfig()
	if err != nil {
		return err
	}
	if scopes != 0 {
		cfg.HostLogging, cfg.HostLogScopes = a.stderr, scopes
	}
	rt, err := runtime.New(ctx, cfg)
	if err != nil {
		return a.fail(err)
	}
	defer rt.Close(ctx)

	// --timeout bounds the compile and the run together: a module that
	// takes long to compile ends at the deadline, as a run does.
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	mod, err := compileWithNotice(ctx, a, rt, file, bin)
	compileTimedOut := err != nil && f.timeout > 0 && errors.Is(err, context.DeadlineExceeded)
	if err != nil && !compileTimedOut {
		return a.fail(err)
	}

	ex := executor.New(rt)
	if rootIsMem {
		// Spawned commands (wasmbox.spawn) find the embedded tools.
		if err := ex.RegisterTools(); err != nil {
			return a.fail(err)
		}
		if err := ex.Install(fsys, "/bin", "/usr/bin"); err != nil {
			return a.fail(err)
		}
	}

	// The guest's connections (runtime.NetABI): none without --allow-net.
	broker := netpolicy.NewBroker(netPolicy, nil)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stdin, stopStdin := pumpStdin(runCtx, a.stdin)
	defer stopStdin()

	env := f.env
	if f.workdirSet && !hasEnv(env, "PWD") {
		env = append(env[:len(env):len(env)], "PWD="+f.workdir)
	}
	job := executor.Job{
		Argv:        append([]string{file}, guestArgs...),
		Env:         env,
		Plain:       true,
		Dir:         f.workdir,
		Stdin:       stdin,
		Stdout:      a.stdout,
		Stderr:      a.stderr,
		Timeout:     f.timeout,
		MemoryLimit: memLimit,
		Module:      mod,
	}
	if fsys != nil { // a nil *vfs.VFS must not become a non-nil vfs.FS
		job.FS = fsys
	}
	var out, errOut *cappedBuffer
	if f.json {
		out, errOut = &cappedBuffer{limit: outputCap}, &cappedBuffer{limit: outputCap}
		job.Stdout, job.Stderr = out, errOut
	}
	var res executor.Result
	if compileTimedOut {
		res = executor.Result{ExitCode: executor.ExitTimeout, Class: executor.ClassTimeout, Err: err}
	} else {
		res = ex.Run(runtime.WithNetwork(runCtx, broker), job)
	}
	a.exit = res.ExitCode
	switch {
	case res.Class == executor.ClassTimeout && f.timeout > 0:
		// One line, as run says it.
		fmt.Fprintf(job.Stderr, "wasmbox: timed out after %v\n", f.timeout)
	case res.Err != nil:
		fmt.Fprintf(job.Stderr, "wasmbox: %s\n", oneLine(res.Err))
	}
	if !f.json {
		return nil
	}
	enc := json.NewEncoder(a.stdout)
	return enc.Encode(struct {
		Stdout     string `json:"stdout"`
		Stderr     string `json:"stderr"`
		ExitCode   int    `json:"exit_code"`
		ErrorClass string `json:"error_class"`
		Truncated  bool   `json:"truncated"`
		DurationMS int64  `json:"duration_ms"`
		// Network is left out when the run made no request.
		Network []netpolicy.Record `json:"network,omitempty"`
	}{
		Stdout:     out.String(),
		Stderr:     errOut.String(),
		ExitCode:   res.ExitCode,
		ErrorClass: string(res.Class),
		Truncated:  out.truncated || errOut.truncated,
		DurationMS: res.Duration.Milliseconds(),
		Network:    broker.Records(),
	})
}

// hasEnv reports whether env sets the variable key.
func hasEnv(env []string, key string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			return true
		}
	}
	return false
}

// compileWithNotice compiles bin, telling a terminal user when a first
// compile takes a while.
func compileWithNotice(ctx context.Context, a *app, rt *runtime.Runtime, file string, bin []byte) (*runtime.Module, error) {
	if rt.Cached(bin) || !a.stderrIsTerminal() {
		return rt.Compile(ctx, file, bin)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTimer(compileNotice)
		defer t.Stop()
		select {
		case <-t.C:
			fmt.Fprintf(a.stderr, "compiling %s (%.1f MB)...\n", filepath.Base(file), float64(len(bin))/1e6)
		case <-done:
		}
	}()
	mod, err := rt.Compile(ctx, file, bin)
	close(done)
	wg.Wait()
	return mod, err
}

// buildFS makes the guest's filesystem: the default layout in memory, or a
// host directory at "/" when a mount says so, with the other mounts on
// top. rootIsMem reports the former.
func buildFS(specs []vfs.MountSpec) (fsys *vfs.VFS, rootIsMem bool, err error) {
	var rest []vfs.MountSpec
	var root vfs.FS
	for _, s := range specs {
		if s.Guest == "/" {
			if root != nil {
				return nil, false, errors.New("--mount: two mounts at /")
			}
			if root, err = hostDir(s); err != nil {
				return nil, false, err
			}
			continue
		}
		rest = append(rest, s)
	}
	if root != nil {
		fsys = vfs.New(root)
	} else {
		if fsys, err = vfs.NewDefault(); err != nil {
			return nil, false, err
		}
		rootIsMem = true
	}
	for _, s := range rest {
		h, err := hostDir(s)
		if err != nil {
			closeFS(fsys)
			return nil, false, err
		}
		if err := fsys.Mount(s.Guest, h); err != nil {
			closeFS(fsys)
			return nil, false, fmt.Errorf("--mount %s:%s: %w", s.Host, s.Guest, err)
		}
	}
	return fsys, rootIsMem, nil
}

func hostDir(s vfs.MountSpec) (vfs.FS, error) {
	fi, err := os.Stat(s.Host)
	if err != nil {
		return nil, fmt.Errorf("--mount %s:%s: %w", s.Host, s.Guest, err)
	}
	if !fi.IsDir() {
		if s.Guest == "/" {
			return nil, fmt.Errorf("--mount %s:%s: %s is not a directory", s.Host, s.Guest, s.Host)
		}
		// A single file, mounted on a file (vfs.HostFile).
		h, err := vfs.HostFile(s.Host, s.Mode)
		if err != nil {
			return nil, fmt.Errorf("--mount %s:%s: %w", s.Host, s.Guest, err)
		}
		return h, nil
	}
	h, err := vfs.HostDir(s.Host, s.Mode)
	if err != nil {
		return nil, fmt.Errorf("--mount %s:%s: %w", s.Host, s.Guest, err)
	}
	return h, nil
}

// closeFS releases host mounts that hold resources.
func closeFS(fsys *vfs.VFS) {
	if fsys == nil {
		return
	}
	for _, m := range fsys.Mounts() {
		if c, ok := m.FS.(io.Closer); ok {
			_ = c.Close()
		}
	}
}

// pumpStdin hands the guest a context-aware pipe fed from r, started on
// the guest's first read, so that a guest blocked on stdin dies with its
// deadline and a guest that never reads leaves r alone. stop closes the
// pipe; a pump goroutine blocked in r.Read ends when r does (at the end of
// input, or when the process exits).
func pumpStdin(ctx context.Context, r io.Reader) (io.Reader, func()) {
	if r == nil {
		return bytes.NewReader(nil), func() {}
	}
	pr, pw := wasi.NewPipe(ctx)
	var once sync.Once
	start := func() {
		once.Do(func() {
			go func() {
				_, err := io.Copy(pw, r)
				pw.CloseWithError(err)
			}()
		})
	}
	return &lazyReader{PipeReader: pr, start: start}, func() { pr.Close() }
}

// lazyReader starts its pump on the first read or wait of any kind: every
// method the WASI layer reads or waits with (a C guest reads through
// ReadContext and TryRead, and waits with Ready and Wakers; only Read
// started the pump, so it read an empty pipe until its deadline).
type lazyReader struct {
	*wasi.PipeReader
	start func()
}

func (l *lazyReader) Read(p []byte) (int, error) {
	l.start()
	return l.PipeReader.Read(p)
}

func (l *lazyReader) ReadContext(ctx context.Context, p []byte) (int, error) {
	l.start()
	return l.PipeReader.ReadContext(ctx, p)
}

func (l *lazyReader) TryRead(p []byte) (int, error) {
	l.start()
	return l.PipeReader.TryRead(p)
}

func (l *lazyReader) Ready(write bool) bool {
	l.start()
	return l.PipeReader.Ready(write)
}

func (l *lazyReader) Wakers() *wasi.Wakers {
	l.start()
	return l.PipeReader.Wakers()
}

// Poll implements experimental/sys.Pollable for wazero's poll_oneoff.
func (l *lazyReader) Poll(flag experimentalsys.Pflag, timeoutMillis int32) (bool, experimentalsys.Errno) {
	l.start()
	return l.PipeReader.Poll(flag, timeoutMillis)
}

// cappedBuffer keeps the first limit bytes written to it and counts the
// rest as written, so a flood of output never grows memory past the cap.
type cappedBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	limit     int
	truncated bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.limit - c.buf.Len()
	if len(p) > room {
		c.buf.Write(p[:max(room, 0)])
		c.truncated = true
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
