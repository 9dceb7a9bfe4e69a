package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wasmbox/wasmbox/audit"
	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/sandbox"
	"github.com/wasmbox/wasmbox/vfs"
)

func init() { subcommands = append(subcommands, newRunCmd, newShellCmd) }

// sandboxFlags are the flags shared by run and shell.
type sandboxFlags struct {
	timeout       time.Duration
	workdir       string
	mounts        []string
	env           []string
	allow         []string
	native        []string
	unjailed      bool
	memory        string
	shellMemory   string
	runMemory     string
	deterministic bool
	redactOutput  bool
	auditLog      string
	mcpConfig     string
	net           netFlags
	shell         string
}

func (f *sandboxFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.DurationVar(&f.timeout, "timeout", sandbox.DefaultLimits.Timeout, "time limit of a script, e.g. 500ms, 10s (exit 124, TIMEOUT)")
	fl.StringVar(&f.workdir, "workdir", "/home/user", "initial working directory (a guest path; created if missing)")
	fl.StringArrayVar(&f.mounts, "mount", nil, "map a host directory or file into the sandbox, HOST:GUEST[:ro|:rw|:cow] (default ro; a file: ro or rw; repeatable)")
	fl.StringArrayVar(&f.env, "env", nil, "set an environment variable, K=V (repeatable); nothing of the host environment is visible otherwise")
	fl.StringSliceVar(&f.allow, "allow", nil, "allow only these external commands, CMD,... (builtins always work; repeatable)")
	fl.StringSliceVar(&f.native, "native", nil, "run these allowlisted host binaries natively, e.g. git (only inside rw/ro host mounts, in an OS jail)")
	fl.BoolVar(&f.unjailed, "native-unjailed", false, "let --native commands run without the OS jail where it is unavailable (UNSAFE: host user's rights)")
	fl.StringVar(&f.memory, "memory", "", "memory limit of each command, e.g. 64MiB (default 256MiB)")
	fl.StringVar(&f.shellMemory, "shell-memory", "", "memory limit of the shell itself, e.g. 64MiB (default 256MiB; past it a script ends with 137, LIMIT_EXCEEDED)")
	fl.StringVar(&f.runMemory, "run-memory", "", "memory budget of one script: all its commands together, e.g. 512MiB (default: an eighth of the process budget, 256MiB to 1GiB; past it a command ends with 137, LIMIT_EXCEEDED)")
	fl.BoolVar(&f.deterministic, "deterministic", false, "fixed clock and file times, seeded $RANDOM and /dev/random: reproducible runs")
	fl.BoolVar(&f.redactOutput, "redact-output", false, "redact secrets from the output (values of secret host variables and of secret-named variables set with --env or by the script, known token shapes)")
	fl.StringVar(&f.auditLog, "audit-log", "", "append a hash-chained audit log (JSON lines, always redacted) to this file")
	fl.StringVar(&f.mcpConfig, "mcp-config", "", `MCP servers whose tools scripts may call with the mcp command: a JSON file {"mcpServers": {...}}`)
	f.net.register(fl)
}

// protectedFiles are the files named by the flags that no mount may cover.
func (f *sandboxFlags) protectedFiles() []sandbox.ProtectedPath {
	return []sandbox.ProtectedPath{
		{Path: f.auditLog, What: "the audit log (--audit-log)"},
		{Path: f.mcpConfig, What: "the MCP configuration (--mcp-config)"},
	}
}

// options turns the flags into sandbox options, or a usage error.
func (f *sandboxFlags) options(a *app) ([]sandbox.Option, error) {
	var opts []sandbox.Option
	p, err := f.net.policy(a)
	if err != nil {
		return nil, err
	}
	if p != nil {
		opts = append(opts, sandbox.WithNetwork(p))
	}
	if f.timeout <= 0 {
		return nil, fmt.Errorf("--timeout must be positive, got %v", f.timeout)
	}
	lim := sandbox.DefaultLimits
	lim.Timeout = f.timeout
	if f.memory != "" {
		n, err := runtime.ParseBytes(f.memory)
		if err != nil {
			return nil, fmt.Errorf("--memory: %w", err)
		}
		lim.MemoryPerCommand = n
	}
	if f.shellMemory != "" {
		n, err := runtime.ParseBytes(f.shellMemory)
		if err != nil {
			return nil, fmt.Errorf("--shell-memory: %w", err)
		}
		lim.ShellMemory = n
	}
	if f.runMemory != "" {
		n, err := runtime.ParseBytes(f.runMemory)
		if err != nil {
			return nil, fmt.Errorf("--run-memory: %w", err)
		}
		lim.RunMemory = n
	}
	opts = append(opts, sandbox.WithLimits(lim), sandbox.WithWorkdir(f.workdir))
	if f.shell != "" {
		opts = append(opts, sandbox.WithShell(f.shell))
	}
	for _, m := range f.mounts {
		opts = append(opts, sandbox.WithMountSpec(m))
	}
	for _, kv := range f.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: want K=V", kv)
		}
		opts = append(opts, sandbox.WithEnv(k, v))
	}
	if len(f.allow) > 0 {
		opts = append(opts, sandbox.WithAllow(f.allow...))
	}
	if len(f.native) > 0 {
		opts = append(opts, sandbox.WithNative(f.native...))
	}
	if f.unjailed {
		opts = append(opts, sandbox.WithNativeUnjailed())
	}
	if f.deterministic {
		opts = append(opts, sandbox.WithDeterministic(1))
	}
	if f.mcpConfig != "" {
		mc, err := sandbox.LoadMCPConfig(f.mcpConfig)
		if err != nil {
			return nil, fmt.Errorf("--mcp-config: %w", err)
		}
		opts = append(opts, sandbox.WithMCPServers(mc.Servers))
	}
	return opts, nil
}

// engine returns the sandbox engine for the root flags, telling a terminal
// user when the first compile of the tools takes a while.
func (a *app) engine(ctx context.Context) (*sandbox.Engine, error) {
	done := make(chan struct{})
	defer close(done)
	if a.stderrIsTerminal() {
		go func() {
			select {
			case <-done:
			case <-time.After(compileNotice):
				fmt.Fprintln(a.stderr, "wasmbox: compiling the tools (first run; cached afterwards)...")
			}
		}()
	}
	if a.shared != nil {
		return a.shared(ctx)
	}
	cfg, err := a.runtimeConfig()
	if err != nil {
		return nil, err
	}
	return sandbox.NewEngine(ctx, cfg)
}

// memoryBudgetExit reports a run the process's memory budget refused: one
// line, exit 137 (LIMIT_EXCEEDED), as the memory limit of a command.
func (a *app) memoryBudgetExit(err error, asJSON bool) error {
	msg := "wasmbox: " + strings.TrimPrefix(err.Error(), "sandbox: ") + "; retry when other runs end\n"
	a.exit = executor.ExitLimitExceeded
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(sandbox.Result{Stderr: msg, ExitCode: executor.ExitLimitExceeded, ErrorClass: sandbox.ClassLimitExceeded}.JSON())
	}
	_, werr := io.WriteString(a.stderr, msg)
	return werr
}

// newSandbox makes the sandbox of the flags; closeAll closes it and its
// audit log.
func (a *app) newSandbox(ctx context.Context, f *sandboxFlags) (sb *sandbox.Sandbox, closeAll func(), err error) {
	var mounts []sandbox.Option
	specs := f.mounts
	if a.cwd != "" {
		// Relative HOST paths are the caller's: resolved here and passed
		// parsed (the caller's directory may hold ':', which a spec
		// cannot). A bad spec stays for options to report as usual.
		fc := *f
		fc.mounts = nil
		for _, m := range f.mounts {
			spec, err := vfs.ParseMountSpec(m)
			if err != nil {
				fc.mounts = append(fc.mounts, m)
				continue
			}
			spec.Host = a.hostPath(spec.Host)
			mounts = append(mounts, sandbox.WithMount(spec))
		}
		f = &fc
	}
	opts, err := f.options(a)
	if err != nil {
		return nil, nil, err
	}
	opts = append(opts, mounts...)
	protected := a.protected(f.protectedFiles()...)
	if err := a.checkMounts(specs, protected); err != nil {
		return nil, nil, a.fail(fmt.Errorf("sandbox: %w", err))
	}
	opts = append(opts, sandbox.WithProtectedPaths(protected...))
	var red *audit.Redactor
	if f.redactOutput || f.auditLog != "" {
		var redOpts []audit.RedactorOption
		if a.environ != nil {
			redOpts = append(redOpts, audit.WithEnviron(a.environ))
		}
		red = audit.NewRedactor(redOpts...)
	}
	if f.redactOutput {
		opts = append(opts, sandbox.WithRedactor(red))
	}
	closeLog := func() {}
	if f.auditLog != "" {
		al, c, err := openAuditLog(a.hostPath(f.auditLog), red)
		if err != nil {
			return nil, nil, a.fail(err)
		}
		closeLog = c
		opts = append(opts, sandbox.WithAudit(al))
	}
	if f.unjailed {
		warnUnjailed(a.stderr)
	}
	eng, err := a.engine(ctx)
	if err != nil {
		closeLog()
		return nil, nil, a.fail(err)
	}
	sb, err = sandbox.New(ctx, append(opts, sandbox.WithEngine(eng))...)
	if err != nil {
		closeLog()
		return nil, nil, a.fail(err)
	}
	return sb, func() {
		if a.later != nil {
			a.later(func() { sb.Close() })
		} else {
			sb.Close()
		}
		closeLog()
	}, nil
}

// signalContext is cancelled by SIGINT or SIGTERM.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

func newRunCmd(a *app) *cobra.Command {
	var (
		f      sandboxFlags
		script string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "run [flags] [-c SCRIPT | FILE | -]",
		Short: "Run a bash script in a fresh sandbox",
		Long: `Run a bash script in a fresh sandbox: the script comes from -c, from
FILE (a host file), or from standard input. Its commands (coreutils, grep,
sed, awk, jq, ...) run as WebAssembly against an in-memory filesystem; the
host is reached only through --mount and --native. Output is streamed; the
exit status is the script's (124 timeout, 125 cancelled, 126 denied,
127 not found).

With --json, exactly one JSON object is printed:
{"stdout","stderr","exit_code","error_class","truncated","duration_ms"}.

--audit-log appends the run to a hash-chained audit log (the format of
serve's; check it with audit-verify). The log is always redacted, including
the values the script assigns to secret-named variables (MYPASSWORD=x,
export API_KEY=x). The output is redacted only with --redact-output.`,
		Example: `  wasmbox run -c 'echo hello | tr a-z A-Z'
  wasmbox run --mount .:/work:ro --workdir /work -c 'grep -rn TODO . | head'
  wasmbox run --json --timeout 2s script.sh
  echo 'ls -l /' | wasmbox run`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.admit != nil {
				if err := a.admit(cmd, &f); err != nil {
					return err
				}
			}
			if !cmd.Flags().Changed("shell") {
				f.shell = a.getenv("WASMBOX_SHELL") // the client's, in the engine
			}
			src, stdin, err := a.scriptSource(cmd, script, args)
			if err != nil {
				return err
			}
			ctx, stop := cmd.Context(), func() {}
			if a.shared == nil {
				// (In the engine, the client forwards its signals.)
				ctx, stop = signalContext(ctx)
			}
			defer stop()
			sb, closeAll, err := a.newSandbox(ctx, &f)
			if err != nil {
				return err
			}
			defer closeAll()
			if asJSON {
				var stdout, stderr cappedWriter
				stdout.limit, stderr.limit = outputCap, outputCap
				res, err := sb.Stream(ctx, src, stdin, &stdout, &stderr)
				if errors.Is(err, sandbox.ErrMemoryBudget) {
					return a.memoryBudgetExit(err, true)
				}
				if err != nil {
					return a.fail(err)
				}
				res.Stdout, res.Stderr = stdout.String(), stderr.String()
				res.Truncated = res.Truncated || stdout.truncated || stderr.truncated
				enc := json.NewEncoder(a.stdout)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(res.JSON()); err != nil {
					return a.fail(err)
				}
				a.exit = res.ExitCode
				return nil
			}
			gout, gerr := terminalSafe(a.stdout), terminalSafe(a.stderr)
			out := &flushWriter{w: bufio.NewWriter(gout)}
			res, err := sb.Stream(ctx, src, stdin, out, gerr)
			out.w.Flush()
			flushTerminalSafe(gout, gerr)
			if errors.Is(err, sandbox.ErrMemoryBudget) {
				return a.memoryBudgetExit(err, false)
			}
			if err != nil {
				return a.fail(err)
			}
			if res.Truncated {
				// On a line of its own, also after a cut line.
				nl := ""
				if out.last != 0 && out.last != '\n' {
					nl = "\n"
				}
				fmt.Fprintf(a.stderr, "%swasmbox: output truncated at the limit\n", nl)
			}
			a.exit = res.ExitCode
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVarP(&script, "command", "c", "", "the script to run")
	cmd.Flags().StringVar(&f.shell, "shell", "", "the shell that runs the script: bash, GNU bash (wasm/bash.wasm), the sandbox's live session shell and the only one (the wasmbox interpreter, interp, was removed); default: bash ($WASMBOX_SHELL when the flag is not given)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print one JSON object {"stdout","stderr","exit_code","error_class","truncated","duration_ms"}`)
	return cmd
}

// scriptSource returns the script and the script's standard input.
func (a *app) scriptSource(cmd *cobra.Command, script string, args []string) (string, io.Reader, error) {
	const max = 64 << 10 // read a little past the limit: the sandbox reports it
	switch {
	case cmd.Flags().Changed("command"):
		if len(args) > 0 {
			return "", nil, errors.New("run: give -c SCRIPT or FILE, not both")
		}
		return script, a.stdin, nil
	case len(args) == 1 && args[0] != "-":
		fh := a.script // opened by the engine's admit
		if a.scriptErr != nil {
			return "", nil, a.fail(a.scriptErr)
		}
		if fh == nil {
			var err error
			if fh, err = os.Open(a.hostPath(args[0])); err != nil {
				return "", nil, a.fail(err)
			}
		}
		defer fh.Close()
		b, err := io.ReadAll(io.LimitReader(fh, 16*max))
		if err != nil {
			return "", nil, a.fail(err)
		}
		return string(b), a.stdin, nil
	default:
		if a.stdin == nil {
			return "", nil, errors.New("run: no script (give -c SCRIPT, FILE, or a script on standard input)")
		}
		b, err := io.ReadAll(io.LimitReader(a.stdin, 16*max))
		if err != nil {
			return "", nil, a.fail(err)
		}
		// The script came on standard input: bash reads it there, as
		// `bash < FILE`.
		return string(b), sandbox.ScriptOnStdin, nil
	}
}

// flushWriter flushes after every write so that output streams, and
// remembers the last byte written.
type flushWriter struct {
	w    *bufio.Writer
	last byte
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if n > 0 {
		f.last = p[n-1]
	}
	if err == nil {
		err = f.w.Flush()
	}
	return n, err
}

// cappedWriter keeps the first limit bytes and drops (but accepts) the rest.
type cappedWriter struct {
	buf       bytes.Buffer
	limit     int
	truncated bool
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	room := c.limit - c.buf.Len()
	if len(p) > room {
		c.buf.Write(p[:max(room, 0)])
		c.truncated = true
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (c *cappedWriter) String() string { return c.buf.String() }

// warnUnjailed is printed whenever --native-unjailed is given.
func warnUnjailed(w io.Writer) {
	fmt.Fprintln(w, "wasmbox: warning: --native-unjailed: where the OS jail is unavailable, native commands run with this user's rights on the host, behind the policy alone")
}
