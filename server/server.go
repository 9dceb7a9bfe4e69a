// Package server is the HTTP API of wasmbox (`wasmbox serve`): sessions,
// runs, files, health and Prometheus metrics.
//
// # Routes
//
//	POST   /v1/sessions                 -> 201 {"id": "..."}
//	POST   /v1/sessions/{id}/run        {"script": "...", "timeout_ms": N}
//	                                    or {"script_b64": "...", "timeout_ms": N}
//	                                    -> 200 {"stdout", "stderr", "exit_code",
//	                                            "error_class", "truncated", "duration_ms"}
//	GET    /v1/sessions/{id}/files?path=/abs   -> 200 raw bytes
//	PUT    /v1/sessions/{id}/files?path=/abs   raw body -> 204
//	DELETE /v1/sessions/{id}            -> 204
//	GET    /health                      -> 200 {"status", "sessions", "pool", "cluster"?}
//	GET    /health?ready                -> the same; 503 when status is not "ok"
//	GET    /metrics                     -> Prometheus text format
//
// A script is bytes: "script" is its text when it is UTF-8, "script_b64"
// its bytes in standard base64 (with padding) in any case; give exactly one
// (a JSON string cannot carry a byte that is not UTF-8: a decoder makes it
// U+FFFD). The script limit counts the decoded bytes.
//
// error_class is "" (the script ran; see exit_code), "TIMEOUT",
// "CANCELLED", "LIMIT_EXCEEDED", "DENIED" or "NOT_FOUND". timeout_ms 0 or
// absent means Config.DefaultTimeout.
//
// # Errors
//
// Every error is JSON {"error": "...", "code": "..."} with a status code:
// 400 bad_request (bad JSON, unknown field, bad path or timeout), 401
// unauthorized (missing or wrong bearer token; with WWW-Authenticate), 403
// forbidden_host (a non-loopback Host or Origin; see Config.AllowAnyHost), 404
// not_found (route or session), session_expired (the session was closed
// after Config.SessionTTL without a request) and file_not_found, 405
// method_not_allowed, 413 too_large (body, script or file over its limit),
// 429 too_many_sessions, 503 worker_unavailable or memory_budget (both
// with Retry-After), disabled or shutting_down, 507 no_space, 500
// internal. With a Cluster also 409 session_busy (another node holds the
// session now; with "owner" and "owner_addr") and conflict (the request's
// commit lost the race; its changes were dropped), and 503
// cluster_unavailable and lease_lost (with Retry-After; nothing was
// committed). memory_budget: the process's memory budget has no room for a
// new session (its filesystem quota and shell) or a run (its run budget);
// the Backend reports it with an error wrapping budget.ErrExceeded
// (sandbox.ErrMemoryBudget).
//
// # Authentication
//
// With Config.Token set, every request must carry
// "Authorization: Bearer <token>" (compared in constant time); anything
// else gets 401 unauthorized before routing. That includes /health and
// /metrics: they tell how many sessions are open and how busy the pool is,
// and a monitoring system can send the header. Without a token the API is
// open to every local process; [Server.Serve] then refuses a listener that
// is not on a loopback address ([ErrTokenRequired]), and by default
// requests must name a loopback Host and come from no foreign browser
// Origin (DNS rebinding, web pages posting to the port).
//
// # Sessions
//
// A session idle (no request on it, none in progress) for longer than
// Config.SessionTTL (default 15 minutes) is closed and its resources
// freed, by a background reaper that stops with [Server.Shutdown] or when
// a request finds it idle, whichever comes first. A request on it then
// gets 404 session_expired. Config.MaxSessions still bounds the open ones
// (429 too_many_sessions): the TTL is what makes abandoned sessions give
// their place back.
//
// # Redaction
//
// The audit log (Config.Audit) is always redacted, including the values a
// session's scripts assign to secret-named variables (see package audit).
// What the server returns is redacted only when Config.Redactor is set,
// and then on every channel: run stdout and stderr, file contents read
// through GET .../files, and error messages, with the values the session's
// scripts assigned to secret-named variables added to what the Redactor
// replaces. Redaction of output is off by default because it changes what
// an agent sees (a file read back would differ from the file written).
//
// # Cluster
//
// With Config.Cluster the server is a node of a fleet that shares its
// sessions (see [Cluster]; `wasmbox serve --cluster` uses NATS JetStream):
// any node serves any session, MaxSessions and SessionTTL count across the
// fleet, and /health gains "cluster" (NATS connection, leases held,
// commits and their latency).
//
// Runs go through the interactive lane of the execution pool; /health and
// /metrics do not, so they answer while every worker is busy.
package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/wasmbox/wasmbox/audit"
	"github.com/wasmbox/wasmbox/executor/pool"
	"github.com/wasmbox/wasmbox/internal/budget"
	"github.com/wasmbox/wasmbox/netpolicy"
)

// Error classes of a run (RunResult.ErrorClass).
const (
	ClassNone          = ""
	ClassTimeout       = "TIMEOUT"
	ClassCancelled     = "CANCELLED"
	ClassLimitExceeded = "LIMIT_EXCEEDED"
	ClassDenied        = "DENIED"
	ClassNotFound      = "NOT_FOUND"
)

// Backend creates sessions. The sandbox package implements it.
type Backend interface {
	// NewSession creates an isolated session (its own filesystem and
	// shell state).
	NewSession(ctx context.Context) (Session, error)
}

// Session is one sandbox session. Its methods may be called concurrently;
// Close may be called while a Run is in progress and must make it return.
type Session interface {
	// Run runs a shell script with a time limit. A script that fails,
	// times out or is denied is a RunResult with ExitCode and ErrorClass
	// set, not an error; an error means the session itself failed.
	Run(ctx context.Context, script string, timeout time.Duration) (RunResult, error)
	// ReadFile returns the content of the file at an absolute guest path.
	// A missing file is an error matching fs.ErrNotExist.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// WriteFile creates or replaces the file at an absolute guest path.
	WriteFile(ctx context.Context, path string, data []byte) error
	// Close releases the session. It is idempotent.
	Close() error
}

// RunResult is the outcome of Session.Run.
type RunResult struct {
	Stdout     string
	Stderr     string
	ExitCode   int
	ErrorClass string
	Truncated  bool
	Duration   time.Duration
	// Network are the run's requests (see netpolicy.Record).
	Network []netpolicy.Record
}

// empty reports whether r is the zero result (nothing ran).
func (r RunResult) empty() bool {
	return r.Stdout == "" && r.Stderr == "" && r.ExitCode == 0 && r.ErrorClass == "" && !r.Truncated && r.Duration == 0 && len(r.Network) == 0
}

// Config configures a [Server].
type Config struct {
	// Backend creates sessions; required.
	Backend Backend
	// Pool runs the scripts; default a new pool.New(pool.Config{}), which
	// the Server then owns and shuts down.
	Pool *pool.Pool
	// MaxScriptBytes limits a script (default 256 KiB); the run request
	// body may be this plus 64 KiB of JSON.
	MaxScriptBytes int64
	// MaxFileBytes limits a file read or written (default 16 MiB).
	MaxFileBytes int64
	// DefaultTimeout applies when timeout_ms is 0 (default 30s);
	// MaxTimeout is the largest accepted (default 10 min).
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	// MaxSessions limits open sessions (default 256).
	MaxSessions int
	// Logger receives request errors (default: discard).
	Logger *slog.Logger
	// Redactor, when set, redacts everything the server returns to a
	// client: run stdout and stderr, file contents read, and error
	// messages. It replaces what it redacts by default plus the values the
	// session's scripts assigned to secret-named variables. Without it no
	// output is redacted (the audit log always is); see the package doc.
	Redactor *audit.Redactor
	// AllowAnyHost turns off the loopback checks on requests: by default a
	// request whose Host is not a loopback address or "localhost" (DNS
	// rebinding) or that carries a browser Origin that is not loopback (a
	// web page posting to the local port) gets 403 forbidden_host. Set it
	// when serving on a non-loopback address.
	AllowAnyHost bool
	// Audit, when set, records every session creation, deletion and
	// expiry and every run (job id, session, lane, slot, script, exit,
	// class, truncated, start, end) in the hash-chained audit log.
	Audit *audit.Logger
	// SessionTTL closes a session idle (no request on it) for longer:
	// default DefaultSessionTTL; negative means sessions never expire. A
	// session with a request in progress is never idle.
	SessionTTL time.Duration
	// Clock is the clock of session idleness (default time.Now).
	Clock func() time.Time
	// Token, when set, is required on every request as
	// "Authorization: Bearer <token>" (401 unauthorized otherwise),
	// /health and /metrics included. Without it, [Server.Serve] refuses a
	// listener that is not on a loopback address.
	Token string
	// Cluster, when set, shares the sessions with the other nodes of a
	// fleet (see [Cluster]); nil serves sessions from this process's
	// memory alone.
	Cluster Cluster
	// LeaseIdle is how long a node keeps the lease of a session it does
	// not use (default DefaultLeaseIdle): the next request on the
	// session on this node then neither takes the lease nor reads the
	// session's record. Another node that wants the session asks for it
	// (Lease.Wanted) rather than waiting; a node that dies holding it
	// delays the session by the lease TTL.
	LeaseIdle time.Duration
}

// DefaultLeaseIdle is the default Config.LeaseIdle.
const DefaultLeaseIdle = 2 * time.Second

// DefaultSessionTTL is how long a session may stay idle by default.
const DefaultSessionTTL = 15 * time.Minute

// maxExpired bounds how many expired session ids the server remembers,
// to answer "expired" rather than "unknown".
const maxExpired = 4096

// maxSessionSecrets bounds the secret values remembered per session.
const maxSessionSecrets = 256

// entry is an open session and its bookkeeping (guarded by Server.mu).
type entry struct {
	sess     Session
	lastUsed time.Time
	active   int      // requests in progress
	secrets  []string // values its scripts assigned to secret-named variables

	// With a Cluster: lock serializes this node's requests on the
	// session; while it is held, lease is the session's lease, snap and
	// sum name the committed snapshot sess holds, committed tells that
	// the request committed. The lease stays held between requests (a
	// keepLease goroutine gives it back when idle, wanted or lost).
	lock      chan struct{}
	lease     Lease
	leaseUsed time.Time // when a request on the lease last ended
	snap      string
	sum       [32]byte
	partsKey  [32]byte // partsKey of the snapshot snap, when given in parts
	committed bool
	// mutated tells that the request may have changed sess; clean that
	// what sess holds is what the cluster has (commit succeeded or had
	// nothing to do).
	mutated, clean bool
}

// Server is the HTTP API. Create it with [New], serve with [Server.Serve],
// stop with [Server.Shutdown].
type Server struct {
	cfg      Config
	ownsPool bool
	pool     *pool.Pool
	mux      *http.ServeMux
	handler  http.Handler
	metrics  *metrics

	// base is cancelled by Shutdown; every run's context follows it.
	base       context.Context
	cancelBase context.CancelFunc

	mu       sync.Mutex
	sessions map[string]*entry
	expired  map[string]bool
	expOrder []string
	closing  bool
	srv      *http.Server
	reaped   chan struct{}  // closed when the reaper has stopped
	keepers  sync.WaitGroup // keepLease goroutines
}

// ErrTokenRequired is returned by [Server.Serve] for a listener on a
// non-loopback address when Config.Token is empty.
var ErrTokenRequired = errors.New("server: a bearer token (Config.Token) is required to serve on a non-loopback address")

// New returns a Server. It fails without a Backend or with a Token that
// cannot travel in a header (empty after trimming, or with spaces or
// control characters). It starts the reaper of idle sessions, which
// [Server.Shutdown] stops.
func New(cfg Config) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("server: Config.Backend is required")
	}
	if cfg.Token != "" && strings.IndexFunc(cfg.Token, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return nil, errors.New("server: Config.Token must not contain spaces or control characters")
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.MaxScriptBytes <= 0 {
		cfg.MaxScriptBytes = 256 << 10
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = 16 << 20
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = 30 * time.Second
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = 10 * time.Minute
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 256
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.LeaseIdle <= 0 {
		cfg.LeaseIdle = DefaultLeaseIdle
	}
	s := &Server{cfg: cfg, pool: cfg.Pool, sessions: make(map[string]*entry), expired: map[string]bool{}, reaped: make(chan struct{})}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	if s.pool == nil {
		s.pool = pool.New(pool.Config{})
		s.ownsPool = true
	}
	s.metrics = newMetrics(s)
	s.mux = http.NewServeMux()
	s.route("POST /v1/sessions", "create", s.createSession)
	s.route("POST /v1/sessions/{id}/run", "run", s.run)
	s.route("GET /v1/sessions/{id}/files", "read_file", s.readFile)
	s.route("PUT /v1/sessions/{id}/files", "write_file", s.writeFile)
	s.route("DELETE /v1/sessions/{id}", "delete", s.deleteSession)
	s.route("GET /health", "health", s.health)
	s.mux.Handle("GET /metrics", s.metrics.handler())
	s.route("/", "unknown", s.notFound)
	s.handler = s.mux
	if cfg.Token != "" {
		s.handler = bearerOnly(cfg.Token, s.handler)
	}
	if !cfg.AllowAnyHost {
		s.handler = loopbackOnly(s.handler)
	}
	go s.reap()
	return s, nil
}

// bearerOnly refuses requests without "Authorization: Bearer <token>". The
// comparison is of SHA-256 digests in constant time, so that neither the
// token's bytes nor its length leak through timing.
func bearerOnly(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		ok := subtle.ConstantTimeCompare(sum[:], want[:]) == 1
		if !strings.EqualFold(scheme, "Bearer") || !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="wasmbox"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token: send Authorization: Bearer <token>")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// RequireToken wraps next so that every request must carry
// "Authorization: Bearer <token>" (401 with a JSON error otherwise),
// compared as in the server. Other HTTP front ends of wasmbox (wasmbox mcp)
// use it so that one rule guards them all.
func RequireToken(token string, next http.Handler) http.Handler { return bearerOnly(token, next) }

// LoopbackOnly wraps next so that a request must name a loopback Host and
// come from no foreign browser Origin (403 with a JSON error otherwise).
func LoopbackOnly(next http.Handler) http.Handler { return loopbackOnly(next) }

// reap closes the sessions idle for longer than the TTL until the server
// shuts down.
func (s *Server) reap() {
	defer close(s.reaped)
	ttl := s.cfg.SessionTTL
	if ttl < 0 {
		if s.cfg.Cluster == nil {
			return
		}
		ttl = 4 * clusterCacheIdle // still drop the idle copies of cluster sessions
	}
	t := time.NewTicker(min(max(ttl/4, 5*time.Millisecond), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-s.base.Done():
			return
		case <-t.C:
			if s.cfg.Cluster != nil {
				s.reapCluster()
			} else {
				s.expireIdle()
			}
		}
	}
}

// expireIdle closes every session idle for longer than the TTL.
func (s *Server) expireIdle() {
	now := s.cfg.Clock()
	var gone []string
	var closing []Session
	s.mu.Lock()
	for id, e := range s.sessions {
		if s.idle(e, now) {
			gone, closing = append(gone, id), append(closing, e.sess)
			s.forget(id)
		}
	}
	s.mu.Unlock()
	for i, id := range gone {
		s.closeExpired(id, closing[i])
	}
}

// idle reports whether e has been idle for longer than the TTL. s.mu is
// held.
func (s *Server) idle(e *entry, now time.Time) bool {
	return s.cfg.SessionTTL >= 0 && e.active == 0 && now.Sub(e.lastUsed) > s.cfg.SessionTTL
}

// forget removes session id as expired. s.mu is held.
func (s *Server) forget(id string) {
	delete(s.sessions, id)
	if !s.expired[id] {
		s.expired[id] = true
		s.expOrder = append(s.expOrder, id)
		if len(s.expOrder) > maxExpired {
			delete(s.expired, s.expOrder[0])
			s.expOrder = s.expOrder[1:]
		}
	}
}

func (s *Server) closeExpired(id string, sess Session) {
	if err := sess.Close(); err != nil {
		s.cfg.Logger.Warn("closing expired session", "session", id, "err", err)
	}
	s.audit(context.WithoutCancel(s.base), audit.Event{Kind: audit.KindSession, Session: id, Reason: "expired"})
}

// Handler returns the HTTP handler of the API (for tests or embedding in
// another server).
func (s *Server) Handler() http.Handler { return s.handler }

// Pool returns the execution pool the server runs scripts on.
func (s *Server) Pool() *pool.Pool { return s.pool }

func (s *Server) route(pattern, name string, h http.HandlerFunc) {
	s.mux.Handle(pattern, s.metrics.instrument(name, h))
}

// isLoopbackHost reports whether host (a Host header or URL host, with or
// without port) names the loopback interface.
func isLoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackOnly refuses requests that did not come from a local client
// talking to a loopback name: DNS rebinding and cross-site requests from a
// browser.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopbackHost(r.Host) {
			writeError(w, http.StatusForbidden, "forbidden_host", "Host "+strconv.Quote(r.Host)+" is not a loopback name")
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || !isLoopbackHost(u.Host) {
				writeError(w, http.StatusForbidden, "forbidden_host", "cross-origin request from "+strconv.Quote(o))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// ErrNotLoopback is returned by [Listen] for an address that is not a
// loopback address when non-loopback listening was not allowed.
var ErrNotLoopback = errors.New("server: refusing to listen on a non-loopback address")

// Listen opens a TCP listener on addr ("127.0.0.1:8080", "[::1]:0",
// "localhost:0"). Unless allowNonLoopback is set it refuses, with
// [ErrNotLoopback], any address that is not loopback, including an empty
// host (all interfaces) and host names other than "localhost".
func Listen(addr string, allowNonLoopback bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("server: bad listen address %q: %w", addr, err)
	}
	if !allowNonLoopback {
		ip := net.ParseIP(host)
		if host == "localhost" {
			ip = net.IPv4(127, 0, 0, 1)
			addr = net.JoinHostPort("127.0.0.1", addr[strings.LastIndexByte(addr, ':')+1:])
		}
		if ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("%w: %q (pass the explicit flag to allow it)", ErrNotLoopback, addr)
		}
	}
	return net.Listen("tcp", addr)
}

// Serve serves the API on l until [Server.Shutdown]; it then returns
// http.ErrServerClosed. Without Config.Token it refuses, with
// [ErrTokenRequired], a TCP listener whose address is not loopback.
func (s *Server) Serve(l net.Listener) error {
	if a, ok := l.Addr().(*net.TCPAddr); ok && s.cfg.Token == "" && !a.IP.IsLoopback() {
		l.Close()
		return fmt.Errorf("%w (listening on %s)", ErrTokenRequired, a)
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		l.Close()
		return http.ErrServerClosed
	}
	if s.srv == nil {
		s.srv = &http.Server{
			Handler:           s.handler,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
		}
	}
	srv := s.srv
	s.mu.Unlock()
	return srv.Serve(l)
}

// Shutdown stops the server within ctx's deadline: new runs are refused
// (503 shutting_down), queued runs rejected and running ones cancelled
// through the pool, the HTTP server stops accepting and waits for the
// in-flight requests, and every session is closed. /health reports
// "shutting_down" meanwhile. It returns the first error met (a pool
// *pool.ShutdownError or ctx's error when the deadline passed).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	srv := s.srv
	s.mu.Unlock()

	s.cancelBase()
	var errs []error
	if s.ownsPool {
		errs = append(errs, s.pool.Shutdown(ctx))
	}
	if srv != nil {
		errs = append(errs, srv.Shutdown(ctx))
	}
	<-s.reaped
	// The kept leases are given back (their keepers follow s.base) once
	// the requests on them have ended.
	kept := make(chan struct{})
	go func() { s.keepers.Wait(); close(kept) }()
	select {
	case <-kept:
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	s.mu.Lock()
	sessions := s.sessions
	s.sessions = make(map[string]*entry)
	s.mu.Unlock()
	for id, e := range sessions {
		if e.sess == nil {
			continue
		}
		if err := e.sess.Close(); err != nil {
			s.cfg.Logger.Warn("closing session", "session", id, "err", err)
		}
	}
	return errors.Join(errs...)
}

// audit writes e to the audit log, if any. A failing audit log is logged,
// not fatal to the request.
func (s *Server) audit(ctx context.Context, e audit.Event) {
	if s.cfg.Audit == nil {
		return
	}
	if err := s.cfg.Audit.Log(ctx, e); err != nil {
		s.cfg.Logger.Error("audit", "err", err)
	}
}

// ---- handlers ----

type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, apiError{Error: msg, Code: code})
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{"GET", "PUT", "POST", "DELETE"} {
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, p := s.mux.Handler(r2); p != "" && p != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed on "+r.URL.Path)
		return
	}
	writeError(w, http.StatusNotFound, "not_found", "no route "+r.Method+" "+r.URL.Path)
}

// session finds the session of the request and marks it in use; the
// caller calls done when the request ends. A session idle past the TTL
// expires here even if the reaper has not seen it yet.
func (s *Server) session(w http.ResponseWriter, r *http.Request) (id string, e *entry, done func(), ok bool) {
	if s.cfg.Cluster != nil {
		return s.clusterSession(w, r)
	}
	id = r.PathValue("id")
	now := s.cfg.Clock()
	s.mu.Lock()
	e, ok = s.sessions[id]
	var stale Session
	if ok && s.idle(e, now) {
		stale, ok = e.sess, false
		s.forget(id)
	}
	expired := s.expired[id]
	if ok {
		e.active++
		e.lastUsed = now
	}
	s.mu.Unlock()
	if stale != nil {
		s.closeExpired(id, stale)
	}
	if !ok {
		if expired {
			writeError(w, http.StatusNotFound, "session_expired", fmt.Sprintf("session %q expired after %v without a request; create a new one", id, s.cfg.SessionTTL))
		} else {
			writeError(w, http.StatusNotFound, "not_found", "unknown session "+strconv.Quote(id))
		}
		return id, nil, nil, false
	}
	return id, e, func() {
		now := s.cfg.Clock()
		s.mu.Lock()
		e.active--
		e.lastUsed = now
		s.mu.Unlock()
	}, true
}

// namer decides which variable names are secret.
func (s *Server) namer() *audit.Redactor {
	if s.cfg.Redactor != nil {
		return s.cfg.Redactor
	}
	return defaultNamer()
}

var defaultNamer = sync.OnceValue(func() *audit.Redactor { return audit.NewRedactor(audit.WithEnviron(nil)) })

// noteScript remembers the values script assigns to secret-named variables
// in the session, for the audit log and output redaction, and returns the
// session's secrets.
func (s *Server) noteScript(e *entry, script string) []string {
	if s.cfg.Audit == nil && s.cfg.Redactor == nil {
		return nil
	}
	_, vals := s.namer().RedactScript(script)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vals {
		if len(e.secrets) < maxSessionSecrets && len(v) <= 4096 && !slices.Contains(e.secrets, v) {
			e.secrets = append(e.secrets, v)
		}
	}
	return slices.Clip(e.secrets)
}

// redactor returns the output redactor of a session, or nil when output
// is not redacted.
func (s *Server) redactor(e *entry) *audit.Redactor {
	red := s.cfg.Redactor
	if red == nil || e == nil {
		return red
	}
	s.mu.Lock()
	secrets := slices.Clip(e.secrets)
	s.mu.Unlock()
	return red.With(secrets...)
}

// fail writes an error whose message is redacted when output is.
func (s *Server) fail(w http.ResponseWriter, e *entry, status int, code, msg string) {
	if red := s.redactor(e); red != nil {
		msg = red.Redact(msg)
	}
	writeError(w, status, code, msg)
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	closing, n := s.closing, len(s.sessions)
	s.mu.Unlock()
	if closing {
		writeError(w, http.StatusServiceUnavailable, "shutting_down", "server is shutting down")
		return
	}
	if n >= s.cfg.MaxSessions && s.cfg.Cluster == nil {
		writeError(w, http.StatusTooManyRequests, "too_many_sessions", fmt.Sprintf("at most %d sessions", s.cfg.MaxSessions))
		return
	}
	sess, err := s.cfg.Backend.NewSession(r.Context())
	if errors.Is(err, budget.ErrExceeded) {
		memoryBudgetFull(w, "cannot create a session", err)
		return
	}
	if err != nil {
		s.cfg.Logger.Error("new session", "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "cannot create session: "+err.Error())
		return
	}
	id := uuid.NewString()
	if s.cfg.Cluster != nil {
		if !s.createClusterSession(w, r, id, sess) {
			return
		}
		s.audit(r.Context(), audit.Event{Kind: audit.KindSession, Session: id, Reason: "created"})
		writeJSON(w, http.StatusCreated, map[string]string{"id": id})
		return
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		sess.Close()
		writeError(w, http.StatusServiceUnavailable, "shutting_down", "server is shutting down")
		return
	}
	if len(s.sessions) >= s.cfg.MaxSessions {
		// Concurrent creates passed the first check together: the one
		// that finds the cap reached gets the same answer as if it had
		// come after them.
		s.mu.Unlock()
		sess.Close()
		writeError(w, http.StatusTooManyRequests, "too_many_sessions", fmt.Sprintf("at most %d sessions", s.cfg.MaxSessions))
		return
	}
	s.sessions[id] = &entry{sess: sess, lastUsed: s.cfg.Clock()}
	s.mu.Unlock()
	s.audit(r.Context(), audit.Event{Kind: audit.KindSession, Session: id, Reason: "created"})
	writeJSON(w, http.StatusCreated, map[string]string{"id": id})
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Cluster != nil {
		s.deleteClusterSession(w, r)
		return
	}
	id, e, done, ok := s.session(w, r)
	if !ok {
		return
	}
	done()
	s.mu.Lock()
	delete(s.sessions, id)
	s.mu.Unlock()
	if err := e.sess.Close(); err != nil {
		s.cfg.Logger.Warn("closing session", "session", id, "err", err)
	}
	s.audit(r.Context(), audit.Event{Kind: audit.KindSession, Session: id, Reason: "deleted"})
	w.WriteHeader(http.StatusNoContent)
}

type runRequest struct {
	Script    *string `json:"script"`
	ScriptB64 *string `json:"script_b64"`
	TimeoutMS int64   `json:"timeout_ms"`
}

// RunResponse is the JSON body of a run; its fields are exactly the API's.
type RunResponse struct {
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ExitCode   int    `json:"exit_code"`
	ErrorClass string `json:"error_class"`
	Truncated  bool   `json:"truncated"`
	DurationMS int64  `json:"duration_ms"`
	// Network is left out when the run made no request.
	Network []netpolicy.Record `json:"network,omitempty"`
}

// decodeJSON reads a JSON body of at most limit bytes into v.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, e := dec.Token(); e != io.EOF {
			err = errors.New("trailing data after the JSON object")
		}
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("request body over %d bytes", mbe.Limit))
		} else {
			writeError(w, http.StatusBadRequest, "bad_request", "bad JSON body: "+err.Error())
		}
		return false
	}
	return true
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	id, e, done, ok := s.session(w, r)
	if !ok {
		return
	}
	defer done()
	sess := e.sess
	var req runRequest
	// Room for a script of the limit in base64 (4 bytes for 3).
	if !decodeJSON(w, r, (s.cfg.MaxScriptBytes+2)/3*4+64<<10, &req) {
		return
	}
	switch {
	case req.Script != nil && req.ScriptB64 != nil:
		writeError(w, http.StatusBadRequest, "bad_request", `give "script" or "script_b64", not both`)
		return
	case req.ScriptB64 != nil:
		b, err := base64.StdEncoding.DecodeString(*req.ScriptB64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", `"script_b64" is not standard base64: `+err.Error())
			return
		}
		script := string(b)
		req.Script = &script
	}
	switch {
	case req.Script == nil:
		writeError(w, http.StatusBadRequest, "bad_request", `missing "script" (or "script_b64")`)
		return
	case int64(len(*req.Script)) > s.cfg.MaxScriptBytes:
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("script over %d bytes", s.cfg.MaxScriptBytes))
		return
	case req.TimeoutMS < 0:
		writeError(w, http.StatusBadRequest, "bad_request", "timeout_ms must not be negative")
		return
	case req.TimeoutMS > s.cfg.MaxTimeout.Milliseconds():
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("timeout_ms over the maximum of %d", s.cfg.MaxTimeout.Milliseconds()))
		return
	}
	secrets := s.noteScript(e, *req.Script)
	timeout := s.cfg.DefaultTimeout
	if req.TimeoutMS > 0 {
		timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		writeError(w, http.StatusServiceUnavailable, "shutting_down", "server is shutting down")
		return
	}

	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	stop := context.AfterFunc(s.base, func() { cancel(pool.ErrShuttingDown) })
	defer stop()
	e.mutated = true
	if e.lease != nil {
		// A node that lost the session's lease stops running it.
		lost := e.lease.Lost()
		go func() {
			select {
			case <-lost:
				cancel(ErrLeaseLost)
			case <-ctx.Done():
			}
		}()
	}

	var res RunResult
	var runErr error
	start := time.Now()
	job, err := s.pool.Submit(ctx, pool.Job{
		Session: id,
		Lane:    pool.Interactive,
		Label:   "run",
		Run: func(ctx context.Context) error {
			res, runErr = sess.Run(ctx, *req.Script, timeout)
			if runErr == nil && res.ErrorClass == ClassTimeout {
				return context.DeadlineExceeded // counted as timed out
			}
			return runErr
		},
	})
	switch {
	case errors.Is(err, pool.ErrWorkerUnavailable):
		s.metrics.rejected.Inc()
		s.audit(r.Context(), audit.Event{Kind: audit.KindRun, JobID: job.ID.String(), Session: id, Lane: job.Lane.String(), Slot: -1,
			Script: *req.Script, Allowed: audit.Allowed(false), Reason: "worker unavailable", Secrets: secrets})
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "worker_unavailable", "all workers busy and the queue is full; retry later")
		return
	case errors.Is(err, pool.ErrDisabled):
		writeError(w, http.StatusServiceUnavailable, "disabled", "execution is disabled")
		return
	case errors.Is(err, pool.ErrShuttingDown) && runErr == nil && res.empty():
		writeError(w, http.StatusServiceUnavailable, "shutting_down", "server is shutting down")
		return
	}
	if runErr != nil {
		// The session failed rather than the script; a cancel or a
		// deadline still gets the result contract.
		switch {
		case errors.Is(runErr, budget.ErrExceeded):
			s.metrics.rejected.Inc()
			memoryBudgetFull(w, "cannot start the run", runErr)
			return
		case errors.Is(runErr, context.DeadlineExceeded):
			res = RunResult{ExitCode: 124, ErrorClass: ClassTimeout, Stderr: res.Stderr, Stdout: res.Stdout}
		case errors.Is(runErr, context.Canceled) || errors.Is(runErr, pool.ErrShuttingDown):
			res = RunResult{ExitCode: 125, ErrorClass: ClassCancelled, Stderr: res.Stderr, Stdout: res.Stdout}
		default:
			s.cfg.Logger.Error("run", "session", id, "err", runErr)
			s.fail(w, e, http.StatusInternalServerError, "internal", runErr.Error())
			return
		}
	} else if err != nil && res.empty() {
		// Left the queue because the client went away.
		s.fail(w, e, http.StatusServiceUnavailable, "cancelled", err.Error())
		return
	}
	if res.Duration == 0 {
		res.Duration = time.Since(start)
	}
	if context.Cause(ctx) == ErrLeaseLost {
		s.clusterError(w, e, id, ErrLeaseLost)
		return
	}
	if err := s.commit(r.Context(), e); err != nil {
		s.clusterError(w, e, id, err)
		return
	}
	if red := s.redactor(e); red != nil {
		res.Stdout, res.Stderr = red.Redact(res.Stdout), red.Redact(res.Stderr)
	}
	s.metrics.observeRun(res)
	s.audit(r.Context(), audit.Event{
		Kind: audit.KindRun, JobID: job.ID.String(), Session: id, Lane: job.Lane.String(), Slot: job.Slot,
		Script: *req.Script, Start: start, End: start.Add(res.Duration), Exit: res.ExitCode,
		Class: res.ErrorClass, Truncated: res.Truncated, Secrets: secrets,
	})
	writeJSON(w, http.StatusOK, RunResponse{
		Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode,
		ErrorClass: res.ErrorClass, Truncated: res.Truncated, DurationMS: res.Duration.Milliseconds(),
		Network: res.Network,
	})
}

// memoryBudgetFull answers 503 memory_budget with Retry-After: the
// process's memory budget refused what the request needs; it frees as
// other sessions and runs end.
func memoryBudgetFull(w http.ResponseWriter, what string, err error) {
	msg := err.Error()
	var ee *budget.ExceededError
	if errors.As(err, &ee) {
		msg = ee.Error()
	}
	w.Header().Set("Retry-After", "5")
	writeError(w, http.StatusServiceUnavailable, "memory_budget", what+": "+msg+"; retry later")
}

func filePath(w http.ResponseWriter, r *http.Request) (string, bool) {
	p := r.URL.Query().Get("path")
	if !strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		writeError(w, http.StatusBadRequest, "bad_request", `query parameter "path" must be an absolute guest path`)
		return "", false
	}
	return p, true
}

func (s *Server) fileError(w http.ResponseWriter, e *entry, err error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.fail(w, e, http.StatusNotFound, "file_not_found", err.Error())
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EFBIG):
		s.fail(w, e, http.StatusInsufficientStorage, "no_space", err.Error())
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS):
		s.fail(w, e, http.StatusForbidden, "forbidden", err.Error())
	case errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTDIR), errors.Is(err, fs.ErrInvalid),
		errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.ELOOP):
		s.fail(w, e, http.StatusBadRequest, "bad_request", err.Error())
	default:
		s.cfg.Logger.Error("file", "err", err)
		s.fail(w, e, http.StatusInternalServerError, "internal", err.Error())
	}
}

func (s *Server) readFile(w http.ResponseWriter, r *http.Request) {
	_, e, done, ok := s.session(w, r)
	if !ok {
		return
	}
	defer done()
	p, ok := filePath(w, r)
	if !ok {
		return
	}
	data, err := e.sess.ReadFile(r.Context(), p)
	if err != nil {
		s.fileError(w, e, err)
		return
	}
	if int64(len(data)) > s.cfg.MaxFileBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("file over %d bytes", s.cfg.MaxFileBytes))
		return
	}
	if red := s.redactor(e); red != nil {
		data = red.RedactBytes(data)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data)
}

func (s *Server) writeFile(w http.ResponseWriter, r *http.Request) {
	_, e, done, ok := s.session(w, r)
	if !ok {
		return
	}
	defer done()
	p, ok := filePath(w, r)
	if !ok {
		return
	}
	if r.ContentLength > s.cfg.MaxFileBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("file over %d bytes", s.cfg.MaxFileBytes))
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxFileBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("file over %d bytes", s.cfg.MaxFileBytes))
		} else {
			writeError(w, http.StatusBadRequest, "bad_request", "reading body: "+err.Error())
		}
		return
	}
	e.mutated = true
	if err := e.sess.WriteFile(r.Context(), p, data); err != nil {
		s.fileError(w, e, err)
		return
	}
	if err := s.commit(r.Context(), e); err != nil {
		s.clusterError(w, e, r.PathValue("id"), err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Health is the JSON body of GET /health.
type Health struct {
	Status   string     `json:"status"`
	Sessions int        `json:"sessions"`
	Pool     pool.Stats `json:"pool"`
	// Cluster is the cluster's view of this node (with Config.Cluster).
	Cluster *ClusterStatus `json:"cluster,omitempty"`
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := Health{Status: "ok", Sessions: len(s.sessions)}
	if s.closing {
		h.Status = "shutting_down"
	}
	s.mu.Unlock()
	h.Pool = s.pool.Stats()
	if s.cfg.Cluster != nil {
		cs := s.cfg.Cluster.Status()
		s.metrics.commitStats(&cs)
		h.Cluster = &cs
		if h.Status == "ok" && cs.NATS != "CONNECTED" {
			h.Status = "cluster_unavailable"
		}
	}
	if h.Status == "ok" && h.Pool.Mode == pool.Disabled.String() {
		h.Status = "disabled"
	}
	if r.URL.Query().Has("ready") && h.Status != "ok" {
		// A readiness probe: this node cannot serve now.
		writeJSON(w, http.StatusServiceUnavailable, h)
		return
	}
	writeJSON(w, http.StatusOK, h)
}
