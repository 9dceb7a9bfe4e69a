package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/wasmbox/wasmbox/audit"
	"github.com/wasmbox/wasmbox/executor/pool"
	wbruntime "github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/sandbox"
	"github.com/wasmbox/wasmbox/server"
	"github.com/wasmbox/wasmbox/server/natscluster"
	"github.com/wasmbox/wasmbox/server/sandboxbackend"
)

func init() { subcommands = append(subcommands, newServeCmd) }

// serveSignals stop `wasmbox serve` gracefully.
var serveSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM}

type serveFlags struct {
	listen           string
	allowNonLoopback bool
	workers          int
	queue            int
	maxSessions      int
	timeout          time.Duration
	maxTimeout       time.Duration
	shutdownTimeout  time.Duration
	auditLog         string
	mounts           []string
	native           []string
	unjailed         bool
	disabled         bool
	redactOutput     bool
	sessionTTL       time.Duration
	tokenFile        string
	memoryBudget     string
	runMemory        string
	net              netFlags
	cluster          string
	clusterNode      string
	clusterAddr      string
	clusterReplicas  int
	leaseTTL         time.Duration
	leaseIdle        time.Duration
}

// tokenEnv holds the bearer token of serve when --token-file is not given.
const tokenEnv = "WASMBOX_TOKEN"

func newServeCmd(a *app) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the sandbox over HTTP (sessions, runs, files, health, metrics)",
		Long: `Serve the wasmbox HTTP API. Each session is a sandbox of its own (in-memory
filesystem with the default layout, plus the --mount directories). Runs go
through a pool of workers (--workers) with a bounded queue (--queue);
beyond it a run gets 503 with Retry-After.

  POST   /v1/sessions                        create a session: {"id": "..."}
  POST   /v1/sessions/{id}/run               {"script": "...", "timeout_ms": N}
  GET    /v1/sessions/{id}/files?path=/abs   read a file (raw bytes)
  PUT    /v1/sessions/{id}/files?path=/abs   write a file (raw body)
  DELETE /v1/sessions/{id}                   close a session
  GET    /health                             status and pool statistics
  GET    /metrics                            Prometheus metrics (wasmbox_*)

It listens on loopback only unless --allow-non-loopback is given. With a
bearer token (--token-file, or the WASMBOX_TOKEN environment variable; the
file wins) every request, /health and /metrics included, must carry
"Authorization: Bearer <token>" (401 otherwise). A token is mandatory on a
non-loopback address. On loopback without a token any local process can
run code in the sandbox; requests with a non-loopback Host or a browser
Origin are refused (DNS rebinding, web pages posting to the port).

A session without a request for --session-ttl is closed (404
session_expired afterwards). Memory is admitted before it is used: a
session reserves its filesystem quota and its shell's memory limit in the
process's --memory-budget when it is made, a run its --run-memory when it
starts; what does not fit gets 503 memory_budget with Retry-After. The audit log is always redacted, including
the values scripts assign to secret-named variables; what clients get back
(run output, file reads, errors) only with --redact-output.

With --cluster nats://HOST:4222[,...] the server is a node of a fleet on
NATS JetStream: sessions live in the cluster (records and leases in KV
buckets, snapshots in an object store), any node serves any session, and a
session survives the node that ran it. A request takes the session's
lease, resumes it from its last commit unless this node holds it, and
commits a changed session with compare-and-set before answering: a lost
race is 409 conflict, another node's live lease 409 session_busy (with the
owner; retry), an unreachable cluster or a lease not renewed in time 503.
--max-sessions and --session-ttl count cluster-wide. See docs/cluster.md.

SIGINT or SIGTERM stop it: new runs are refused, running ones
cancelled, sessions closed, within --shutdown-timeout.`,
		Example: `  wasmbox serve --listen 127.0.0.1:8080
  wasmbox serve --audit-log audit.jsonl --mount ./repo:/work:rw --native git
  wasmbox serve --listen 0.0.0.0:8080 --allow-non-loopback --token-file /run/secrets/wasmbox-token
  wasmbox serve --cluster nats://nats-0:4222,nats://nats-1:4222 --cluster-addr http://10.0.0.5:8080 ...`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.serve(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to listen on (HOST:PORT)")
	fl.BoolVar(&f.allowNonLoopback, "allow-non-loopback", false, "allow listening on a non-loopback address (requires a token: --token-file or "+tokenEnv+")")
	fl.IntVar(&f.workers, "workers", 2, fmt.Sprintf("concurrent runs (at most %d, the number of CPUs)", runtime.NumCPU()))
	fl.IntVar(&f.queue, "queue", 10, "runs that may wait for a worker before new ones get 503")
	fl.IntVar(&f.maxSessions, "max-sessions", 256, "open sessions at most")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "run timeout when a request gives none")
	fl.DurationVar(&f.maxTimeout, "max-timeout", 10*time.Minute, "largest run timeout a request may ask for")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long a graceful stop may take")
	fl.StringVar(&f.auditLog, "audit-log", "", "append a hash-chained audit log (JSON lines) to this file")
	fl.StringArrayVar(&f.mounts, "mount", nil, "mount a host directory in every session: HOST:GUEST[:ro|:rw|:cow] (repeatable)")
	fl.StringSliceVar(&f.native, "native", nil, "route these commands to the native lane (e.g. git); they run only in host-mounted directories, in an OS jail")
	fl.BoolVar(&f.unjailed, "native-unjailed", false, "let --native commands run without the OS jail where it is unavailable (UNSAFE: host user's rights)")
	fl.BoolVar(&f.disabled, "disabled", false, "start with execution disabled (every run gets 503 disabled; health stays up)")
	fl.BoolVar(&f.redactOutput, "redact-output", false, "redact secrets from everything returned to clients: run output, file reads, error messages")
	fl.DurationVar(&f.sessionTTL, "session-ttl", server.DefaultSessionTTL, "close a session idle for this long (0: never)")
	fl.StringVar(&f.memoryBudget, "memory-budget", "", "memory budget of the process: sessions and runs reserve their memory in it, 503 past it (default: 3/4 of the machine's memory or cgroup limit)")
	f.net.register(fl)
	fl.StringVar(&f.runMemory, "run-memory", "", "memory budget of one run: all its commands together (default: an eighth of --memory-budget, 256MiB to 1GiB)")
	fl.StringVar(&f.cluster, "cluster", "", "serve as a node of a fleet on NATS JetStream: nats://HOST:4222[,...] (sessions, snapshots and leases in the cluster)")
	fl.StringVar(&f.clusterNode, "cluster-node", "", "with --cluster: this node's name (default: host name and a random suffix)")
	fl.StringVar(&f.clusterAddr, "cluster-addr", "", "with --cluster: this node's URL as clients reach it, told to clients of other nodes when this node holds their session")
	fl.IntVar(&f.clusterReplicas, "cluster-replicas", 0, "with --cluster: replicas of the buckets it creates (0: up to 3, as many as the NATS servers)")
	fl.DurationVar(&f.leaseIdle, "lease-idle", server.DefaultLeaseIdle, "with --cluster: keep the lease of a session not in use this long (its next request here then takes no lease and loads nothing); another node that wants it asks for it")
	fl.DurationVar(&f.leaseTTL, "lease-ttl", natscluster.DefaultLeaseTTL, "with --cluster: a session lease lives this long unrenewed (how soon a dead node's sessions resume elsewhere), if this node creates the bucket")
	fl.StringVar(&f.tokenFile, "token-file", "", "require Authorization: Bearer <token> on every request, the token read from this file (default: $"+tokenEnv+")")
	return cmd
}

func (a *app) serve(ctx context.Context, f serveFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if f.workers < 1 || f.queue < 0 || f.maxSessions < 1 || f.timeout <= 0 || f.maxTimeout < f.timeout || f.shutdownTimeout <= 0 {
		return errors.New("--workers and --max-sessions must be positive, --queue not negative, timeouts positive and --max-timeout at least --timeout")
	}
	if f.sessionTTL < 0 {
		return fmt.Errorf("--session-ttl must not be negative, got %v", f.sessionTTL)
	}
	var memBudget, runMemory uint64
	if f.memoryBudget != "" {
		n, err := wbruntime.ParseBytes(f.memoryBudget)
		if err != nil {
			return fmt.Errorf("--memory-budget: %w", err)
		}
		memBudget = n
	}
	if f.runMemory != "" {
		n, err := wbruntime.ParseBytes(f.runMemory)
		if err != nil {
			return fmt.Errorf("--run-memory: %w", err)
		}
		runMemory = n
	}
	netPolicy, err := f.net.policy(a)
	if err != nil {
		return err
	}
	token, err := serveToken(f.tokenFile)
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return a.fail(err)
	} else if err != nil {
		return err
	}
	if !loopbackListen(f.listen) {
		switch {
		case token == "" && !f.allowNonLoopback:
			return fmt.Errorf("--listen %s is not a loopback address: it needs --allow-non-loopback and a bearer token (--token-file FILE or %s)", f.listen, tokenEnv)
		case token == "":
			return fmt.Errorf("--listen %s is not a loopback address: a bearer token is required (--token-file FILE or %s)", f.listen, tokenEnv)
		}
	}
	l, err := server.Listen(f.listen, f.allowNonLoopback)
	if errors.Is(err, server.ErrNotLoopback) {
		return a.fail(fmt.Errorf("refusing to listen on %q, a non-loopback address, without --allow-non-loopback", f.listen))
	}
	if err != nil {
		return a.fail(err)
	}
	defer l.Close()

	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	protected := a.protected(
		sandbox.ProtectedPath{Path: f.auditLog, What: "the audit log (--audit-log)"},
		sandbox.ProtectedPath{Path: f.tokenFile, What: "the token file (--token-file)"})
	if f.cluster == "" && (f.clusterNode != "" || f.clusterAddr != "" || f.clusterReplicas != 0) {
		return errors.New("--cluster-node, --cluster-addr and --cluster-replicas need --cluster")
	}
	if err := a.checkMounts(f.mounts, protected); err != nil {
		return a.fail(fmt.Errorf("sandbox: %w", err))
	}
	rcfg, err := a.runtimeConfig()
	if err != nil {
		return err
	}
	rcfg.MemoryBudget = memBudget
	eng, err := sandbox.NewEngine(ctx, rcfg)
	if err != nil {
		return a.fail(err)
	}
	defer eng.Close(context.WithoutCancel(ctx))
	setMemoryLimit(eng)

	opts := []sandbox.Option{sandbox.WithEngine(eng), sandbox.WithRunMemory(runMemory), sandbox.WithProtectedPaths(protected...)}
	if netPolicy != nil {
		opts = append(opts, sandbox.WithNetwork(netPolicy))
	}
	for _, m := range f.mounts {
		opts = append(opts, sandbox.WithMountSpec(m))
	}
	if len(f.native) > 0 {
		opts = append(opts, sandbox.WithNative(f.native...))
	}
	if f.unjailed {
		warnUnjailed(a.stderr)
		opts = append(opts, sandbox.WithNativeUnjailed())
	}
	// Check the options once, so that a bad --mount fails at start.
	probe, err := sandbox.New(ctx, opts...)
	if err != nil {
		return a.fail(err)
	}
	probe.Close()

	red := audit.NewRedactor()
	cfg := server.Config{
		Backend:        sandboxbackend.Backend{Opts: opts},
		MaxSessions:    f.maxSessions,
		DefaultTimeout: f.timeout,
		MaxTimeout:     f.maxTimeout,
		Logger:         logger,
		AllowAnyHost:   f.allowNonLoopback,
		SessionTTL:     f.sessionTTL,
		Token:          token,
	}
	if f.sessionTTL == 0 {
		cfg.SessionTTL = -1 // never
	}
	if f.redactOutput {
		cfg.Redactor = red
	}
	mode := pool.Normal
	if f.disabled {
		mode = pool.Disabled
	}
	queue := f.queue
	if queue == 0 {
		queue = -1 // pool.Config: negative means no queue
	}
	p := pool.New(pool.Config{InteractiveWorkers: f.workers, MaxQueue: queue, ShutdownTimeout: f.shutdownTimeout, Mode: mode})
	cfg.Pool = p
	if f.auditLog != "" {
		al, closeLog, err := openAuditLog(f.auditLog, red)
		if err != nil {
			return a.fail(err)
		}
		defer closeLog()
		cfg.Audit = al
		// The server logs the runs; the sandboxes log their requests.
		cfg.Backend = sandboxbackend.Backend{Opts: append(opts[:len(opts):len(opts)], sandbox.WithNetworkAudit(al))}
	}
	if f.cluster != "" {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cl, err := natscluster.Open(cctx, natscluster.Config{
			URLs: f.cluster, Node: f.clusterNode, Addr: f.clusterAddr, Replicas: f.clusterReplicas, LeaseTTL: f.leaseTTL,
		})
		cancel()
		if err != nil {
			return a.fail(err)
		}
		defer cl.Close()
		cfg.Cluster = cl
		cfg.LeaseIdle = f.leaseIdle
	}
	srv, err := server.New(cfg)
	if err != nil {
		return a.fail(err)
	}

	sigCtx, stop := signal.NotifyContext(ctx, serveSignals...)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	fmt.Fprintf(a.stdout, "wasmbox: serving on http://%s\n", l.Addr())

	select {
	case err := <-served:
		p.Shutdown(context.WithoutCancel(ctx))
		return a.fail(err)
	case <-sigCtx.Done():
	}
	stop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.shutdownTimeout)
	defer cancel()
	err = errors.Join(srv.Shutdown(sctx), p.Shutdown(sctx))
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return a.fail(fmt.Errorf("shutdown: %w", err))
	}
	fmt.Fprintln(a.stdout, "wasmbox: stopped")
	return nil
}

// serveToken returns the bearer token of serve: the content of file
// (trailing white space removed) or else of $WASMBOX_TOKEN; "" for none.
// An empty token is an error, not "no token".
func serveToken(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		t := strings.TrimRightFunc(string(b), unicode.IsSpace)
		if t == "" {
			return "", fmt.Errorf("--token-file %s is empty", file)
		}
		return t, nil
	}
	if v, ok := os.LookupEnv(tokenEnv); ok {
		t := strings.TrimRightFunc(v, unicode.IsSpace)
		if t == "" {
			return "", fmt.Errorf("%s is set but empty", tokenEnv)
		}
		return t, nil
	}
	return "", nil
}

// loopbackListen reports whether a --listen address is on loopback (a bad
// address counts as loopback here: server.Listen reports it).
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// openAuditLog opens path for appending, after checking the chain already
// in it (a tampered log refuses to start) so that new entries continue it.
// Every entry is appended under the file's lock, chained to the lines
// other processes appended meanwhile (audit.OpenFile).
func openAuditLog(path string, red *audit.Redactor) (*audit.Logger, func(), error) {
	l, err := audit.OpenFile(context.Background(), path, audit.WithRedactor(red))
	if err != nil {
		return nil, nil, err
	}
	return l, func() { l.Close() }, nil
}
