// Package sandbox is the API that programs embed to run untrusted bash
// scripts from AI agents: a Sandbox owns a virtual filesystem, a GNU bash
// session whose state persists across runs, and the WebAssembly tools
// (coreutils, grep, sed, awk, jq, ...) its commands run as. Nothing a script
// does reaches the host, except through host directories mounted on purpose
// and allowlisted native binaries (git).
//
//	sb, err := sandbox.New(ctx)
//	if err != nil { ... }
//	defer sb.Close()
//	res, err := sb.Run(ctx, `echo hello | tr a-z A-Z > /tmp/x; cat /tmp/x`)
//	fmt.Print(res.Stdout) // HELLO
//
// # Results
//
// Run returns a Result whenever the script ran, even if it failed, timed out
// or was cancelled: ExitCode is the script's status and ErrorClass says why
// it ended abnormally (TIMEOUT 124, CANCELLED 125, LIMIT_EXCEEDED, DENIED
// 126, NOT_FOUND 127). The error is reserved for a sandbox that cannot run at
// all (closed, or the pool refused the work).
//
// # Limits
//
// Every limit has a default and an option (see Limits): script size,
// output per stream, timeout, VFS bytes and files, memory per command,
// concurrent commands, nesting depth.
//
// # MCP
//
// Scripts call the host's MCP tools with the command mcp (mcp list, mcp
// call SERVER TOOL JSON) when the sandbox has servers (WithMCPServers) or
// Go tools (WithTool); each call is traced on the host (Result.ToolCalls,
// the audit log, OpenTelemetry spans: see WithTracerProvider).
//
// # Concurrency
//
// A Sandbox is safe for concurrent use; Runs are serialized (the shell
// state is one session). Fork gives an independent sandbox to run in
// parallel.
package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/wasmbox/wasmbox/audit"
	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/executor/pool"
	"github.com/wasmbox/wasmbox/netpolicy"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/shell/bashsession"
	"github.com/wasmbox/wasmbox/shell/session"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasm"
)

// ErrorClass says why a run ended abnormally; "" for a normal end (whatever
// the exit status).
type ErrorClass = executor.Class

// Error classes of a Result.
const (
	ClassNone          = executor.ClassNone
	ClassTimeout       = executor.ClassTimeout
	ClassCancelled     = executor.ClassCancelled
	ClassLimitExceeded = executor.ClassLimitExceeded
	ClassDenied        = executor.ClassDenied
	ClassNotFound      = executor.ClassNotFound
)

// Sentinel errors.
var (
	// ErrClosed is returned by every method of a closed Sandbox.
	ErrClosed = errors.New("sandbox: closed")
	// ErrBusy is returned by Restore while a Run is in progress.
	ErrBusy = errors.New("sandbox: a run is in progress")
	// ErrMemoryBudget is wrapped by the error of New, Fork and Run when
	// the process's memory budget (the engine runtime's Budget) has no
	// room for what they reserve (see Limits.RunMemory); a
	// *budget.ExceededError in the chain says how full it was. It is
	// transient: retry when other sandboxes or runs have ended.
	ErrMemoryBudget = runtime.ErrBudget
)

// Result is how a Run ended.
type Result struct {
	Stdout   string
	Stderr   string
	ExitCode int
	// ErrorClass is "" for a normal end, else TIMEOUT, CANCELLED,
	// LIMIT_EXCEEDED, DENIED or NOT_FOUND.
	ErrorClass ErrorClass
	// Truncated is set when output went past a limit and was dropped.
	Truncated bool
	Duration  time.Duration
	// Exited reports that the script ended with the exit builtin (the
	// shell state persists all the same; an interactive front end ends
	// its session).
	Exited bool
	// ToolCalls are the MCP tool calls the script made through the mcp
	// command, in order (see WithMCPServers).
	ToolCalls []ToolCall
	// Network are the requests (and refused connects) the script made,
	// in order (see WithNetwork).
	Network []netpolicy.Record
}

// ResultJSON is the JSON form of a Result that `wasmbox run --json` and the
// HTTP API print, field for field.
type ResultJSON struct {
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ExitCode   int    `json:"exit_code"`
	ErrorClass string `json:"error_class"`
	Truncated  bool   `json:"truncated"`
	DurationMS int64  `json:"duration_ms"`
	// ToolCalls is left out when the run made no MCP tool call.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Network is left out when the run made no request.
	Network []netpolicy.Record `json:"network,omitempty"`
}

// JSON returns r in its JSON form.
func (r Result) JSON() ResultJSON {
	return ResultJSON{
		Stdout:     r.Stdout,
		Stderr:     r.Stderr,
		ExitCode:   r.ExitCode,
		ErrorClass: string(r.ErrorClass),
		Truncated:  r.Truncated,
		DurationMS: r.Duration.Milliseconds(),
		ToolCalls:  r.ToolCalls,
		Network:    r.Network,
	}
}

// Sandbox is one isolated session: a VFS, a shell and its state.
type Sandbox struct {
	cfg    *config
	engine *Engine
	fs     *vfs.VFS
	// gfs is fs as the guest sees it: the view of the sandbox user
	// (guestCred), which checks permissions. The shell and every command
	// use it; the host-side API (FS, WriteFile, ReadFile, ..., snapshots,
	// the HTTP and MCP file operations) uses fs and is not restricted.
	gfs    *vfs.VFS
	mounts []vfs.MountSpec
	// hosts are the host directories mounted in fs, shared with forks:
	// the last sandbox to close them releases them.
	hosts *hostMounts

	sh *bashsession.Session

	runMu   sync.Mutex // serializes Run, Fork, Snapshot, Restore
	mu      sync.Mutex // guards the fields below
	env     map[string]string
	cancels map[int]context.CancelFunc
	nextRun int
	closed  bool

	inflight atomic.Int64 // external commands running now

	// parts is what the next SnapshotParts reuses; runMu guards it.
	parts *partCache

	bridge *bridge // MCP servers and tools; nil without any

	mem *memory // what the sandbox holds of the process budget
}

// memory is a sandbox's share of the process budget: its VFS quota and
// its shell's memory limit, reserved when it is made, and the budget each
// Run carves its RunMemory from.
type memory struct {
	session *runtime.Budget
	shell   *runtime.Budget // carved: the shell instance grows inside it
	vfs     uint64
	run     uint64
	once    sync.Once
}

// reserveMemory reserves a sandbox's memory in the engine's process
// budget.
func reserveMemory(eng *Engine, l Limits) (*memory, error) {
	proc := eng.rt.Budget()
	run := l.RunMemory
	if run == 0 {
		run = min(max(proc.Limit()/8, l.MemoryPerCommand), 1<<30)
	}
	m := &memory{vfs: uint64(l.VFSBytes), run: run}
	m.session = proc.Child("session", m.vfs+l.ShellMemory+run)
	if err := m.session.Reserve(m.vfs); err != nil {
		return nil, fmt.Errorf("sandbox: the filesystem's %s: %w", spacedBytes(m.vfs), err)
	}
	shell, err := m.session.Carve("shell", l.ShellMemory)
	if err != nil {
		m.session.Release(m.vfs)
		return nil, fmt.Errorf("sandbox: the shell's %s: %w", spacedBytes(l.ShellMemory), err)
	}
	m.shell = shell
	return m, nil
}

// release gives the sandbox's memory back; idempotent.
func (m *memory) release() {
	if m == nil {
		return
	}
	m.once.Do(func() {
		m.shell.Close()
		m.session.Release(m.vfs)
	})
}

// New returns a sandbox with the default layout (/bin, /usr/bin,
// /home/user as HOME and working directory, /tmp, /etc, /dev), the embedded
// tools installed, and the options applied. ctx bounds the setup (the first
// sandbox of a process compiles the tool module, or loads it from the
// on-disk compilation cache).
func New(ctx context.Context, opts ...Option) (*Sandbox, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(cfg)
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	eng := cfg.engine
	if eng == nil {
		var err error
		if eng, err = DefaultEngine(ctx); err != nil {
			return nil, err
		}
	}
	mem, err := reserveMemory(eng, cfg.limits)
	if err != nil {
		return nil, err
	}
	created := false
	defer func() {
		if !created {
			mem.release()
		}
	}()
	// The root filesystem has the same device number in every sandbox
	// (and fork): GNU bash keeps stats (st_dev) in its memory, whose image
	// is a snapshot, the same bytes in a deterministic sandbox.
	vopts := []vfs.Option{vfs.WithQuota(vfs.Quota{Bytes: cfg.limits.VFSBytes, Files: cfg.limits.Files, FileSize: cfg.limits.VFSBytes}), vfs.WithDevice(rootDevice)}
	if cfg.deterministic != nil {
		d := cfg.deterministic
		vopts = append(vopts, vfs.WithClock(func() time.Time { return d.Walltime }), vfs.WithRandom(newSeededReader(d.Seed)))
	}
	v, err := vfs.NewDefault(vopts...)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	for _, dir := range []string{"/bin", "/usr/bin"} {
		if err := v.Mount(dir, eng.bin); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	if eng.pyLib != nil {
		// /usr/lib and the mount point belong to root, as on a real system.
		if err := v.MkdirAll(wasm.PythonStdlibDir, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		// site-packages (Debian's layout, which site.py follows) belongs to
		// the sandbox user: pip installs there.
		if err := v.MkdirAll(pythonSitePackages, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		for _, d := range []string{"/usr/lib", wasm.PythonStdlibDir, "/usr/local", "/usr/local/lib", "/usr/local/lib/python3.11"} {
			if err := v.Chown(d, 0, 0); err != nil {
				return nil, fmt.Errorf("sandbox: %w", err)
			}
		}
		if err := v.Mount(wasm.PythonStdlibDir, eng.pyLib); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	protected := cfg.protectedPaths(eng)
	for _, m := range cfg.mounts {
		if err := CheckMount(m.Host, protected); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	hosts := &hostMounts{}
	hosts.refs.Store(1)
	for _, m := range cfg.mounts {
		h, file, err := hostMount(m, vopts...)
		if err != nil {
			hosts.release()
			return nil, fmt.Errorf("sandbox: mount %s: %w", m.Host, err)
		}
		hosts.closers = append(hosts.closers, h.(io.Closer))
		if file {
			// A single file: mounted on a file (created if missing).
			if err := v.Mount(m.Guest, h); err != nil {
				hosts.release()
				return nil, fmt.Errorf("sandbox: mount %s at %s: %w", m.Host, m.Guest, err)
			}
			continue
		}
		if err := v.MkdirAll(m.Guest, 0o755); err != nil && m.Guest != "/" {
			hosts.release()
			return nil, fmt.Errorf("sandbox: mount point %s: %w", m.Guest, err)
		}
		mounted := h
		if cfg.native != nil && m.Mode == vfs.ReadWrite {
			// Only git, through the native lane, writes .git.
			mounted = vfs.ProtectNames(h, ".git")
		}
		if err := v.Mount(m.Guest, mounted); err != nil {
			hosts.release()
			return nil, fmt.Errorf("sandbox: mount %s at %s: %w", m.Host, m.Guest, err)
		}
	}
	s := &Sandbox{
		cfg:     cfg,
		engine:  eng,
		fs:      v,
		gfs:     v.AsUser(guestCred),
		mounts:  append([]vfs.MountSpec(nil), cfg.mounts...),
		hosts:   hosts,
		env:     map[string]string{},
		cancels: map[int]context.CancelFunc{},
		mem:     mem,
	}
	s.bridge = newBridge(s)
	for k, val := range defaultEnv() {
		s.env[k] = val
	}
	for k, val := range cfg.env {
		s.env[k] = val
		cfg.noteEnv(k, val)
	}
	if err := v.MkdirAll(cfg.workdir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: workdir %s: %w", cfg.workdir, err)
	}
	s.sh, err = s.newShell(ctx, cfg.workdir)
	if err != nil {
		hosts.release()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	created = true
	return s, nil
}

// guestCred is who the guest is: the sandbox user of the default layout,
// uid and gid 1000, as the shell's $UID says.
var guestCred = vfs.Cred{UID: vfs.UserUID, GID: vfs.UserGID}

func defaultEnv() map[string]string {
	return map[string]string{
		"HOME":    "/home/user",
		"USER":    "user",
		"LOGNAME": "user",
		"PATH":    "/bin:/usr/bin",
		"SHELL":   "/bin/sh",
		"PWD":     "/home/user",
		"TMPDIR":  "/tmp",
		"LANG":    "C",
		"LC_ALL":  "C",
		"TERM":    "dumb",
	}
}

// Run runs script (bash syntax) and returns how it ended. Its output is
// collected into the Result, each stream capped at Limits.OutputBytes.
func (s *Sandbox) Run(ctx context.Context, script string) (Result, error) {
	var stdout, stderr bytes.Buffer
	res, err := s.Stream(ctx, script, nil, &stdout, &stderr)
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	return res, err
}

// Stream runs script like Run, but reads standard input from stdin (nil:
// none) and writes its output to stdout and stderr as it is produced,
// capped at Limits.OutputBytes each. Result.Stdout and Result.Stderr stay
// empty. The writers are not used after Stream returns.
func (s *Sandbox) Stream(ctx context.Context, script string, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	start := time.Now()
	if len(script) > s.cfg.limits.ScriptBytes {
		msg := fmt.Sprintf("wasmbox: script is %d bytes, larger than the %d-byte limit\n", len(script), s.cfg.limits.ScriptBytes)
		io.WriteString(orDiscard(stderr), msg)
		return Result{ExitCode: 2, ErrorClass: ClassLimitExceeded, Duration: time.Since(start)}, nil
	}
	limit := s.runLimit(ctx)
	id, runCtx, cancel, err := s.beginRun(ctx)
	if err != nil {
		return Result{}, err
	}
	defer s.endRun(id, cancel)
	runCtx, endSpan := s.startRun(runCtx)

	s.cfg.noteScript(script)
	if r := s.cfg.redactor; r != nil {
		r = r.With(s.cfg.secrets.list()...)
		rout, rerr := r.NewWriter(orDiscard(stdout)), r.NewWriter(orDiscard(stderr))
		defer rout.Close()
		defer rerr.Close()
		stdout, stderr = rout, rerr
	}
	var res Result
	var runErr error
	work := func(ctx context.Context) error {
		res, runErr = s.run(ctx, script, stdin, stdout, stderr)
		return nil
	}
	ev := audit.Event{Kind: "run", Session: s.cfg.session, Script: script, Start: start, Slot: -1}
	if l := s.cfg.audit; l != nil {
		defer func() {
			ev.End = ev.Start.Add(res.Duration)
			ev.Exit, ev.Class, ev.Truncated = res.ExitCode, string(res.ErrorClass), res.Truncated
			if ev.JobID == "" {
				ev.JobID = uuid.NewString()
			}
			ev.Secrets = s.cfg.secrets.list()
			l.Log(context.WithoutCancel(ctx), ev)
		}()
	}
	if p := s.cfg.pool; p != nil {
		var pr pool.Result
		pr, err = p.Submit(runCtx, pool.Job{Run: work, Session: s.cfg.session, Label: "run", Lane: pool.Interactive})
		ev.JobID, ev.Lane, ev.Slot = pr.ID.String(), pr.Lane.String(), pr.Slot
		if err != nil && res.Duration == 0 {
			// The pool refused the job or the context ended in the queue.
			if c := classOfCtx(runCtx); c != ClassNone {
				if c == ClassTimeout {
					timedOut(stderr, limit)
				}
				return Result{ExitCode: exitFor(c), ErrorClass: c, Duration: time.Since(start)}, nil
			}
			return Result{}, fmt.Errorf("sandbox: %w", err)
		}
	} else {
		work(runCtx)
	}
	if runErr != nil {
		// The process had no room for the run: nothing ran.
		ev.Class, ev.Reason = string(ClassLimitExceeded), runErr.Error()
		return Result{}, runErr
	}
	if res.ErrorClass == ClassTimeout {
		timedOut(stderr, limit)
	}
	res.Duration = time.Since(start)
	endSpan(&res)
	return res, nil
}

// hostMount opens the host side of a mount: a directory (vfs.HostDir) or,
// when m.Host is a file, that single file (vfs.HostFile; file is true).
func hostMount(m vfs.MountSpec, opts ...vfs.Option) (fsys vfs.FS, file bool, err error) {
	if fi, err := os.Stat(m.Host); err == nil && !fi.IsDir() {
		if m.Guest == "/" {
			return nil, false, fmt.Errorf("vfs: mount source %s: a file cannot be mounted at /", m.Host)
		}
		fsys, err = vfs.HostFile(m.Host, m.Mode, opts...)
		return fsys, true, err
	}
	fsys, err = vfs.HostDir(m.Host, m.Mode, opts...)
	return fsys, false, err
}

// run executes a script on the calling goroutine. The error is the
// process budget's refusal of the run's memory: nothing ran.
func (s *Sandbox) run(ctx context.Context, script string, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	// The run's memory is admitted before it starts: all of it, so that
	// no other run or sandbox can take it while it runs.
	runMem, err := s.mem.session.Carve("run", s.mem.run)
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: the run's %s: %w", spacedBytes(s.mem.run), err)
	}
	defer runMem.Close()
	rs := &runStatus{mem: runMem}
	ctx = context.WithValue(ctx, runStatusKey{}, rs)
	out := newCapWriter(orDiscard(stdout), s.cfg.limits.OutputBytes)
	errOut := newCapWriter(orDiscard(stderr), s.cfg.limits.OutputBytes)
	if stdin == ScriptOnStdin {
		return s.runBashScript(ctx, rs, script, out, errOut), nil
	}
	// Once the run is killed, the shell may still run a few steps
	// before the kill reaches it (a command that the kill ended returns
	// first): none of its output gets out.
	if i := strings.IndexByte(script, 0); i >= 0 {
		// bash takes its script as a C string: it would run what comes
		// before the NUL and silently drop the rest.
		fmt.Fprintf(errOut, "bash: line %d: syntax error: NUL byte in the script\n", strings.Count(script[:i], "\n")+1)
		errOut.flush()
		return Result{ExitCode: 2, Truncated: out.Truncated() || errOut.Truncated()}, nil
	}
	errTail := &tailWriter{w: ctxWriter{ctx, errOut}}
	var shellErr io.Writer = errTail
	r, err := s.sh.Run(ctx, script, stdin, ctxWriter{ctx, out}, shellErr)
	out.flush()
	errOut.flush()
	if err != nil {
		fmt.Fprintf(errOut, "wasmbox: %v\n", err)
		return Result{ExitCode: 1, ErrorClass: ClassNone, Truncated: out.Truncated() || errOut.Truncated()}, nil
	}
	res := Result{ExitCode: r.Code, Truncated: out.Truncated() || errOut.Truncated(), Exited: r.Exited}
	var le *session.LimitError
	switch {
	case r.Err == nil && classOfCtx(ctx) != ClassNone:
		// The kill reached the script's commands first, and the script
		// ran to its end on what they left (a loop reading the output of
		// a killed command sees EOF): the run was still killed.
		c := classOfCtx(ctx)
		res.ErrorClass, res.ExitCode = c, exitFor(c)
	case r.Err == nil:
		// A script whose last command died writing past the output cap
		// (a closed pipe for it) ends with that command's status, 141,
		// as in bash with a reader that left; Truncated says why.
		res.ErrorClass = rs.classFor(r.Code)
		if res.ErrorClass == ClassNone && r.Code == executor.ExitNotFound && errTail.notFound() {
			// GNU bash looks commands up itself: one it did not find
			// never reaches the executor, and bash says so last.
			res.ErrorClass = ClassNotFound
		}
	case errors.Is(r.Err, context.DeadlineExceeded):
		res.ErrorClass, res.ExitCode = ClassTimeout, executor.ExitTimeout
	case errors.Is(r.Err, context.Canceled):
		res.ErrorClass, res.ExitCode = ClassCancelled, executor.ExitCancelled
	case errors.Is(r.Err, session.ErrMemoryLimit):
		res.ErrorClass, res.ExitCode = ClassLimitExceeded, executor.ExitLimitExceeded
	case errors.As(r.Err, &le):
		res.ErrorClass = ClassLimitExceeded
		if res.ExitCode == 0 {
			res.ExitCode = 1
		}
	default:
		// An internal error of the shell: the host survives, the script
		// fails, the session goes on from its last state.
		res.ExitCode = max(res.ExitCode, 1)
	}
	return res, nil
}

// tailWriter passes writes on and keeps the last bytes written.
type tailWriter struct {
	w    io.Writer
	mu   sync.Mutex
	tail []byte
}

const maxTail = 256

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.tail = append(t.tail, p[max(0, len(p)-maxTail):]...)
	if len(t.tail) > maxTail {
		t.tail = append(t.tail[:0], t.tail[len(t.tail)-maxTail:]...)
	}
	t.mu.Unlock()
	return t.w.Write(p)
}

// HostLines implements session.HostLiner for what t wraps.
func (t *tailWriter) HostLines() io.Writer { return session.HostLines(t.w) }

// notFound reports whether bash's last words were that a command was not
// found ("bash: line 1: NAME: command not found", with patch 0020's hint
// for git); false for nil.
func (t *tailWriter) notFound() bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	line, ok := bytes.CutSuffix(t.tail, []byte("\n"))
	if !ok {
		return false
	}
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	// (bash adds a hint for a command of the native lane: patch 0020.)
	return bytes.HasSuffix(line, []byte(": command not found")) || bytes.Contains(line, []byte(": command not found (git runs in the native lane"))
}

// rootDevice is the device number of a sandbox's root filesystem.
const rootDevice = vfs.FixedDeviceBase + 1

// ScriptOnStdin, given to Stream as stdin, says that the script itself
// arrived on standard input (`wasmbox run -`). GNU bash then reads the script from its standard input, as
// `bash < FILE` does (a script, not `bash -c`: bash keeps the status of
// background jobs that ended for a later `wait %N`, and set -u errors end
// it with status 1), and a command that reads standard input reads what
// follows in the script, as there. That run is a bash process of its
// own, not the session's shell: the files it writes stay, its variables,
// functions and working directory do not carry over to the next Run.
var ScriptOnStdin io.Reader = scriptOnStdin{}

type scriptOnStdin struct{}

func (scriptOnStdin) Read([]byte) (int, error) { return 0, io.EOF }

// runBashScript runs script as `bash < SCRIPT` with GNU bash through the
// executor (ScriptOnStdin), in the session
// shell's environment and working directory.
func (s *Sandbox) runBashScript(ctx context.Context, rs *runStatus, script string, out, errOut *capWriter) Result {
	dir := s.cfg.workdir
	env := slices.DeleteFunc(s.envLocked(), func(kv string) bool { return strings.HasPrefix(kv, "PWD=") || strings.HasPrefix(kv, "OLDPWD=") })
	env = append(env, "PWD="+dir)
	c := command{
		Argv:   []string{"bash"},
		Env:    env,
		Dir:    dir,
		Stdin:  strings.NewReader(script),
		Stdout: ctxWriter{ctx, out},
		Stderr: ctxWriter{ctx, errOut},
	}
	code, _ := (&commandRunner{s: s}).exec(ctx, c)
	out.flush()
	errOut.flush()
	res := Result{ExitCode: code, Truncated: out.Truncated() || errOut.Truncated(), Exited: true}
	if cl := classOfCtx(ctx); cl != ClassNone {
		res.ErrorClass, res.ExitCode = cl, exitFor(cl)
	} else {
		res.ErrorClass = rs.classFor(code)
	}
	return res
}

// runLimit is the time a run starting now has: Limits.Timeout, or less
// when ctx ends sooner (rounded up to the millisecond, for messages).
func (s *Sandbox) runLimit(ctx context.Context) time.Duration {
	limit := s.cfg.limits.Timeout
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < limit {
			limit = max(left, 0).Truncate(time.Millisecond)
			if limit < left {
				limit += time.Millisecond
			}
		}
	}
	return limit
}

// timedOut writes the one line that says a run was killed at its time
// limit. It goes past the output cap, like the status it explains.
func timedOut(stderr io.Writer, limit time.Duration) {
	fmt.Fprintf(orDiscard(stderr), "wasmbox: timed out after %v\n", limit)
}

func (s *Sandbox) beginRun(ctx context.Context) (int, context.Context, context.CancelFunc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, nil, nil, ErrClosed
	}
	runCtx, cancel := context.WithTimeout(ctx, s.cfg.limits.Timeout)
	s.nextRun++
	s.cancels[s.nextRun] = cancel
	return s.nextRun, runCtx, cancel, nil
}

func (s *Sandbox) endRun(id int, cancel context.CancelFunc) {
	cancel()
	s.mu.Lock()
	delete(s.cancels, id)
	s.mu.Unlock()
}

// Cancel cancels every Run in progress: each ends at once with exit status
// 125 and ErrorClass CANCELLED. The sandbox stays usable.
func (s *Sandbox) Cancel() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.cancels {
		c()
	}
}

// Close cancels any Run in progress and releases the sandbox. It is
// idempotent; every later call of another method returns ErrClosed.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for _, c := range s.cancels {
		c()
	}
	s.mu.Unlock()
	// Wait for a Run in progress to notice, so that nothing of this
	// sandbox is still running when Close returns.
	s.runMu.Lock()
	defer s.runMu.Unlock()
	s.sh.Close()
	s.mem.release()
	return errors.Join(s.bridge.close(), s.hosts.release())
}

// hostMounts counts the sandboxes (an original and its forks) that use a
// set of host directories.
type hostMounts struct {
	refs    atomic.Int32
	closers []io.Closer
}

func (h *hostMounts) acquire() *hostMounts {
	h.refs.Add(1)
	return h
}

func (h *hostMounts) release() error {
	if h.refs.Add(-1) != 0 {
		return nil
	}
	var errs []error
	for _, c := range h.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

func (s *Sandbox) checkOpen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// ReservedMemory is what the sandbox holds of the process's memory budget
// while it lives: its VFS quota and its shell's memory limit (a Run
// reserves Limits.RunMemory besides, while it runs).
func (s *Sandbox) ReservedMemory() uint64 {
	return s.mem.vfs + s.mem.shell.Limit()
}

// FS returns the sandbox's filesystem (the guest namespace) for direct use.
// It is the host operator's view: unlike the guest, which acts as the
// sandbox user (uid 1000) and meets permission checks, it may read and
// change anything, as do WriteFile, ReadFile, ReadDir, Stat, MkdirAll and
// Remove. Files it creates belong to the sandbox user.
func (s *Sandbox) FS() vfs.FS { return s.fs }

// IOFS returns the sandbox's filesystem as an io/fs.FS rooted at "/".
func (s *Sandbox) IOFS() fs.FS { return vfs.IOFS(s.fs) }

// Dir returns the shell's current working directory.
func (s *Sandbox) Dir() string { return s.sh.Dir() }

func (s *Sandbox) abs(name string) string {
	if !path.IsAbs(name) {
		name = path.Join(s.sh.Dir(), name)
	}
	return path.Clean(name)
}

// WriteFile writes data to the guest file name (relative names are taken
// from the working directory), creating or truncating it.
func (s *Sandbox) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	f, err := s.fs.OpenFile(s.abs(name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	return errors.Join(werr, f.Close())
}

// ReadFile returns the content of the guest file name.
func (s *Sandbox) ReadFile(name string) ([]byte, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	f, err := s.fs.Open(s.abs(name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EINVAL}
	}
	return io.ReadAll(f)
}

// ReadDir lists the guest directory name, sorted by name.
func (s *Sandbox) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	p := strings.TrimPrefix(s.abs(name), "/")
	if p == "" {
		p = "."
	}
	return fs.ReadDir(vfs.IOFS(s.fs), p)
}

// Stat describes the guest file name, following symlinks.
func (s *Sandbox) Stat(name string) (fs.FileInfo, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	return s.fs.Stat(s.abs(name))
}

// MkdirAll creates the guest directory name and any missing parents.
func (s *Sandbox) MkdirAll(name string, perm fs.FileMode) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.fs.MkdirAll(s.abs(name), perm)
}

// Remove removes the guest file or empty directory name.
func (s *Sandbox) Remove(name string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.fs.Remove(s.abs(name))
}

// SetEnv sets (and exports) an environment variable for the following
// Runs. An empty key or one containing '=' or NUL is an error.
func (s *Sandbox) SetEnv(key, value string) error {
	if key == "" || strings.ContainsAny(key, "=\x00") || strings.ContainsRune(value, 0) {
		return fmt.Errorf("sandbox: bad environment variable %q", key)
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	s.cfg.noteEnv(key, value)
	s.runMu.Lock()
	defer s.runMu.Unlock()
	ctx := context.Background()
	if err := s.sh.SetEnv(ctx, key, value); err != nil {
		if errors.Is(err, bashsession.ErrReadOnly) {
			return fmt.Errorf("sandbox: %s is read-only", key)
		}
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

// Env returns the exported environment of the shell, "K=V" sorted.
func (s *Sandbox) Env() []string {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	return s.envLocked()
}

// envLocked is Env with runMu held.
func (s *Sandbox) envLocked() []string {
	return bashEnv(s.sh)
}

// Fork returns an independent copy of the sandbox: the filesystem (copy on
// write: cheap for any size), the shell state (working directory,
// variables, functions, aliases, options) and the options. Host mounts are
// shared (a read-write host mount is the same host directory); copy-on-write
// mounts are forked.
func (s *Sandbox) Fork() (*Sandbox, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	mem, err := reserveMemory(s.engine, s.cfg.limits)
	if err != nil {
		return nil, err
	}
	c := &Sandbox{
		mem:     mem,
		cfg:     s.cfg,
		engine:  s.engine,
		fs:      s.fs.Fork(),
		mounts:  s.mounts,
		hosts:   s.hosts.acquire(),
		env:     s.env,
		cancels: map[int]context.CancelFunc{},
	}
	c.gfs = c.fs.AsUser(guestCred)
	c.bridge = newBridge(c)
	sh, err := s.sh.ForkBudget(context.Background(), c.gfs, &commandRunner{s: c}, mem.shell)
	if err != nil {
		c.hosts.release()
		mem.release()
		return nil, fmt.Errorf("sandbox: fork: %w", err)
	}
	c.sh = sh
	return c, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func classOfCtx(ctx context.Context) ErrorClass {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return ClassTimeout
	case errors.Is(ctx.Err(), context.Canceled):
		return ClassCancelled
	}
	return ClassNone
}

func exitFor(c ErrorClass) int {
	switch c {
	case ClassTimeout:
		return executor.ExitTimeout
	case ClassCancelled:
		return executor.ExitCancelled
	case ClassDenied:
		return executor.ExitDenied
	case ClassNotFound:
		return executor.ExitNotFound
	}
	return 1
}

// runStatus collects, during one Run, how external commands ended, so
// that the Result can say why the script failed.
type runStatus struct {
	mem       *runtime.Budget // the run's memory budget
	mu        sync.Mutex
	lastCode  int
	lastClass ErrorClass
}

type runStatusKey struct{}

func (r *runStatus) note(code int, c ErrorClass) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastCode, r.lastClass = code, c
}

// classFor returns the class of the script's end: the class of the last
// external command that ended abnormally, if the script's exit status is
// that command's status.
func (r *runStatus) classFor(code int) ErrorClass {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastClass != ClassNone && r.lastCode == code {
		return r.lastClass
	}
	return ClassNone
}

// newSeededReader returns a deterministic byte stream for /dev/random.
func newSeededReader(seed int64) io.Reader {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], uint64(seed))
	return rand.NewChaCha8(key)
}

// ErrOutputLimit is what a write past Limits.OutputBytes gets: it wraps
// syscall.EPIPE, so a command writing it ends as on a closed pipe (status
// 141) and the shell's own writes fail with EPIPE.
var ErrOutputLimit = fmt.Errorf("output limit reached: %w", syscall.EPIPE)

// capWriter forwards at most max bytes to w and fails every write after.
// The output is cut at a line boundary where one exists: the write that
// goes past the cap is cut after its last newline within the cap (when it
// has none, at the cap unless the output already ends a line), and the
// unfinished last line of a write that fills the cap exactly is held
// back until it is known whether more follows (flush writes it). From the
// cut on, every write fails with ErrOutputLimit (the stream is closed,
// like a pipe whose reader left). It is safe for concurrent use (the
// shell and its commands write at once).
type capWriter struct {
	mu        sync.Mutex
	w         io.Writer
	max, n    int64
	lastNL    bool   // the output so far ends with a newline
	held      []byte // the unfinished line of a write that filled the cap
	truncated bool
}

func newCapWriter(w io.Writer, max int64) *capWriter { return &capWriter{w: w, max: max} }

func (c *capWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.truncated {
		return 0, ErrOutputLimit
	}
	if len(p) == 0 {
		return 0, nil
	}
	room := c.max - c.n - int64(len(c.held))
	if int64(len(p)) < room || (int64(len(p)) == room && p[len(p)-1] == '\n') {
		return c.pass(p)
	}
	if int64(len(p)) == room {
		// Fills the cap: hold back the unfinished line, if a line
		// boundary precedes it.
		i := bytes.LastIndexByte(p, '\n')
		if i < 0 && (c.n == 0 || !c.lastNL) {
			return c.pass(p)
		}
		if n, err := c.pass(p[:i+1]); err != nil {
			return n, err
		}
		c.held = append([]byte(nil), p[i+1:]...)
		return len(p), nil
	}
	c.truncated = true
	c.held = nil
	cut := p[:max(room, 0)]
	if i := bytes.LastIndexByte(cut, '\n'); i >= 0 {
		cut = cut[:i+1]
	} else if c.n > 0 && c.lastNL {
		cut = nil
	}
	n := 0
	if len(cut) > 0 {
		n, _ = c.pass(cut)
	}
	return n, ErrOutputLimit
}

// pass writes p to w.
func (c *capWriter) pass(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	if n > 0 {
		c.lastNL = p[n-1] == '\n'
	}
	return n, err
}

// flush writes the line held back by a write that filled the cap: no more
// output came, so nothing was cut.
func (c *capWriter) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.truncated && len(c.held) > 0 {
		_, _ = c.pass(c.held)
	}
	c.held = nil
}

// Truncated reports that output was dropped.
func (c *capWriter) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.truncated
}

// ctxWriter refuses writes once ctx is done, with ctx's error.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

// HostLines implements session.HostLiner: the shell's own line about how
// the run ended gets out even once ctx is done.
func (c ctxWriter) HostLines() io.Writer { return c.w }

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
