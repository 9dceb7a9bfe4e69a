package sandbox

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/wasmbox/wasmbox/audit"
	"github.com/wasmbox/wasmbox/executor/native"
	"github.com/wasmbox/wasmbox/executor/pool"
	"github.com/wasmbox/wasmbox/netpolicy"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi"
	"github.com/wasmbox/wasmbox/wasm"
)

// Limits bound what a sandbox may consume. A zero field takes its default.
type Limits struct {
	// ScriptBytes bounds the script text of one Run, checked before
	// parsing (default 64 KiB).
	ScriptBytes int
	// OutputBytes caps stdout and stderr of one Run, each, enforced while
	// writing: further output is dropped and Result.Truncated is set
	// (default 1 MiB).
	OutputBytes int64
	// Timeout bounds one Run (default 30 s); the context of Run may end it
	// sooner.
	Timeout time.Duration
	// VFSBytes bounds the bytes of the in-memory filesystem (default
	// 256 MiB); Files bounds its number of files (default 10,000).
	VFSBytes int64
	Files    int64
	// MemoryPerCommand bounds the linear memory of each command (default
	// 256 MiB).
	MemoryPerCommand uint64
	// ConcurrentCommands bounds the external commands and background jobs
	// running at once (default 64): a fork-bomb guard.
	ConcurrentCommands int64
	// NestingDepth bounds function calls, subshells and command
	// substitutions alive at once (default 1000), and SpawnDepth the
	// nesting of commands started by commands (xargs, find -exec;
	// default 16).
	NestingDepth int64
	SpawnDepth   int
	// ShellMemory bounds the linear memory of the sandbox's shell (default
	// 256 MiB): a Run whose expansions want more ends with exit status 137
	// and LIMIT_EXCEEDED, and the shell's state is what it was before the
	// Run. Under GNU bash (WithShell(ShellBash)) it bounds the shell and
	// its forks together — subshells, pipeline stages, $(...), background
	// jobs — each of which holds a copy of the shell's memory: a fork
	// that does not fit ends the Run the same way.
	ShellMemory uint64
	// Processes bounds the processes of one Run of GNU bash alive at
	// once: the shell's forks and the commands they start, at any depth
	// (default and most: 256, runtime.MaxProcesses). A Run that meets it
	// ends with LIMIT_EXCEEDED and "wasmbox: process limit (N at once)
	// exceeded", and the shell's state is what it was before the Run.
	Processes int
	// RunMemory bounds the linear memory of all the commands of one Run
	// together, each command still within MemoryPerCommand (default: an
	// eighth of the process budget, at most 1 GiB and at least
	// MemoryPerCommand). A command refused memory past it ends with 137
	// and LIMIT_EXCEEDED ("run memory budget (N) exceeded").
	//
	// Memory budgets: a sandbox reserves its VFSBytes and ShellMemory in
	// the engine's process budget (runtime.Runtime.Budget) when it is
	// made, and each Run its RunMemory when it starts; New, Fork and Run
	// fail with an error wrapping ErrMemoryBudget when the process has no
	// room, before anything is allocated. What is admitted can always
	// reach its limits: no other sandbox can take it.
	RunMemory uint64
}

// DefaultLimits are the limits of a sandbox built without WithLimits.
var DefaultLimits = Limits{
	ScriptBytes:        64 << 10,
	OutputBytes:        1 << 20,
	Timeout:            30 * time.Second,
	VFSBytes:           256 << 20,
	Files:              10_000,
	MemoryPerCommand:   256 << 20,
	ConcurrentCommands: 64,
	NestingDepth:       1000,
	SpawnDepth:         16,
	ShellMemory:        256 << 20,
	Processes:          256,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	return Limits{
		ScriptBytes:        orDefault(l.ScriptBytes, d.ScriptBytes),
		OutputBytes:        orDefault(l.OutputBytes, d.OutputBytes),
		Timeout:            orDefault(l.Timeout, d.Timeout),
		VFSBytes:           orDefault(l.VFSBytes, d.VFSBytes),
		Files:              orDefault(l.Files, d.Files),
		MemoryPerCommand:   orDefault(l.MemoryPerCommand, d.MemoryPerCommand),
		ConcurrentCommands: orDefault(l.ConcurrentCommands, d.ConcurrentCommands),
		NestingDepth:       orDefault(l.NestingDepth, d.NestingDepth),
		SpawnDepth:         orDefault(l.SpawnDepth, d.SpawnDepth),
		ShellMemory:        orDefault(l.ShellMemory, d.ShellMemory),
		Processes:          min(orDefault(l.Processes, d.Processes), d.Processes),
		RunMemory:          l.RunMemory,
	}
}

// orDefault is v when positive, else d.
func orDefault[T int | int64 | uint64 | time.Duration](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// Option configures a Sandbox. Options never fail: New reports problems.
type Option func(*config)

type config struct {
	engine        *Engine
	shell         string
	limits        Limits
	workdir       string
	env           map[string]string
	mounts        []vfs.MountSpec
	allow         map[string]bool // nil: every command allowed
	deterministic *wasi.Deterministic
	pool          *pool.Pool
	session       string
	native        *NativeConfig
	nativePolicy  *native.Policy
	unjailed      bool
	audit         *audit.Logger
	redactor      *audit.Redactor
	secrets       *secretSet // shared with forks
	network       *netpolicy.Policy
	netAudit      *audit.Logger
	// MCP bridge (mcp.go) and tracing (trace.go).
	mcpServers     map[string]MCPServer
	hostTools      []hostTool
	tracerProvider trace.TracerProvider
	errs           []error
	protected      []ProtectedPath
}

// defaultShell is the shell of a sandbox made without WithShell:
// ShellDefault, GNU bash. The package's tests set it from
// WASMBOX_TEST_SHELL (see TestMain).
var defaultShell = ShellDefault

func defaultConfig() *config {
	return &config{limits: DefaultLimits, workdir: vfs.UserHome, env: map[string]string{}, secrets: &secretSet{}, shell: defaultShell}
}

func (c *config) check() error {
	if len(c.errs) > 0 {
		return fmt.Errorf("sandbox: %w", c.errs[0])
	}
	switch c.shell {
	case ShellDefault, ShellBash:
		if _, ok := wasm.Bash(); !ok {
			return errors.New("sandbox: shell bash: GNU bash is not built into this binary (make bash)")
		}
		c.shell = ShellBash
	case "interp":
		return errors.New("sandbox: shell interp: the wasmbox interpreter was removed; GNU bash (the default) is the only shell")
	default:
		return fmt.Errorf("sandbox: unknown shell %q (want bash, or none for the default: bash)", c.shell)
	}
	if err := c.buildNative(); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

// WithEngine runs the sandbox's commands on e instead of the process-wide
// DefaultEngine.
func WithEngine(e *Engine) Option { return func(c *config) { c.engine = e } }

// WithLimits sets the limits; zero fields keep their defaults.
func WithLimits(l Limits) Option { return func(c *config) { c.limits = l.withDefaults() } }

// WithTimeout sets the time limit of each Run (default 30 s).
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.limits.Timeout = d
		}
	}
}

// WithShellMemory sets the memory limit of the sandbox's shell (default
// 256 MiB; see Limits.ShellMemory).
func WithShellMemory(n uint64) Option {
	return func(c *config) {
		if n > 0 {
			c.limits.ShellMemory = n
		}
	}
}

// WithRunMemory sets the memory budget of one Run (see Limits.RunMemory).
func WithRunMemory(n uint64) Option {
	return func(c *config) {
		if n > 0 {
			c.limits.RunMemory = n
		}
	}
}

// WithWorkdir sets the initial working directory (default /home/user);
// it is created if missing.
func WithWorkdir(dir string) Option {
	return func(c *config) {
		if !path.IsAbs(dir) {
			c.errs = append(c.errs, fmt.Errorf("workdir %q is not an absolute path", dir))
			return
		}
		c.workdir = path.Clean(dir)
	}
}

// WithEnv sets an environment variable of the sandbox. Nothing of the host
// environment is visible unless set this way.
func WithEnv(key, value string) Option {
	return func(c *config) {
		if key == "" || strings.ContainsAny(key, "=\x00") {
			c.errs = append(c.errs, fmt.Errorf("bad environment variable name %q", key))
			return
		}
		c.env[key] = value
	}
}

// WithMount mounts a host directory into the guest namespace: read-only,
// read-write, or copy-on-write (writes stay in memory).
func WithMount(m vfs.MountSpec) Option {
	return func(c *config) { c.mounts = append(c.mounts, m) }
}

// WithMountSpec is WithMount for the CLI form HOST:GUEST[:ro|:rw|:cow].
func WithMountSpec(spec string) Option {
	return func(c *config) {
		m, err := vfs.ParseMountSpec(spec)
		if err != nil {
			c.errs = append(c.errs, err)
			return
		}
		c.mounts = append(c.mounts, m)
	}
}

// WithAllow restricts the external commands a script may run to names
// (e.g. "cat", "grep"; builtins like echo and cd are always available).
// The check happens where a command starts, so pipes, $( ), source, xargs
// and find -exec cannot get around it. Calls accumulate.
func WithAllow(names ...string) Option {
	return func(c *config) {
		if c.allow == nil {
			c.allow = map[string]bool{}
		}
		for _, n := range names {
			if n = strings.TrimSpace(n); n != "" {
				c.allow[n] = true
			}
		}
	}
}

// WithDeterministic makes runs reproducible: a fixed wall clock (and fixed
// file times), a monotonic clock that advances per read, seeded $RANDOM,
// /dev/random and random_get. The same script twice gives byte-identical
// output and files.
func WithDeterministic(seed int64) Option {
	return func(c *config) {
		c.deterministic = &wasi.Deterministic{Walltime: wasi.DefaultWalltime, Seed: seed, NanotimeStep: time.Millisecond}
	}
}

// Shells WithShell accepts: ShellDefault and ShellBash, GNU bash
// (wasm/bash.wasm, build/bash), the only shell. (The wasmbox interpreter,
// "interp", was removed; a snapshot of it still restores into bash.)
const (
	ShellDefault = ""
	ShellBash    = "bash"
)

// WithShell selects the sandbox's shell. GNU bash (ShellDefault,
// ShellBash) is the live shell of the session (shell/bashsession): one bash instance whose
// state (variables, functions, aliases, options, the working directory)
// persists across Runs, a kill or limit going
// back to the state at the start of the Run, Fork and Snapshot/Restore
// carrying its memory image; its commands, forks and pipes run under the
// same policy, limits and filesystem. Each Run is a script of its own as
// with bash -c: an EXIT trap runs when it ends. New returns an error for
// another name, or when this binary has no GNU bash built in.
func WithShell(name string) Option {
	return func(c *config) { c.shell = name }
}

// WithAudit writes an entry to l for every Run (script, exit, class,
// duration, truncation) and every native exec and policy decision. Entries
// are hash-chained and always redacted: by the logger's redactor, and of
// the values of secret-named variables (see audit.Redactor.IsSecretName)
// that the embedder set (WithEnv, SetEnv) or that a script of the sandbox
// assigned (MYPASSWORD=x cmd, export API_KEY=x, ...; see the audit
// package's redaction policy).
func WithAudit(l *audit.Logger) Option { return func(c *config) { c.audit = l } }

// WithRedactor redacts secrets from everything a Run writes (stdout and
// stderr, including the shell's own error messages), before it leaves the
// sandbox: what r redacts (by default the values of secret host
// environment variables and known token shapes), plus the values of
// secret-named variables the embedder set (WithEnv, SetEnv) or a script of
// the sandbox assigned, in this Run or an earlier one. Without it output is
// never redacted (an agent sees what its commands print); the audit log is
// redacted either way. ReadFile and FS are the embedder's own access and
// are not redacted. r also decides which names are secret.
func WithRedactor(r *audit.Redactor) Option { return func(c *config) { c.redactor = r } }

// WithSession names the sandbox's session in audit entries and for pool
// fairness.
func WithSession(id string) Option { return func(c *config) { c.session = id } }

// WithPool runs every Run of the sandbox through p's interactive lane,
// under the session name session (for fairness across sessions).
func WithPool(p *pool.Pool, session string) Option {
	return func(c *config) { c.pool, c.session = p, session }
}
