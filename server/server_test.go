package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/audit"
	"github.com/wasmbox/wasmbox/executor/pool"
)

// fakeBackend is a TEST DOUBLE for the server tests only: it satisfies
// Backend so that the HTTP layer (routing, limits, error mapping, pool
// integration, metrics, shutdown) can be tested without the sandbox. Its
// sessions keep files in a map, and Run does what the test's run function
// says. The real Backend is the sandbox package; the end-to-end test with
// it belongs to the lead's integration tests.
type fakeBackend struct {
	mu       sync.Mutex
	run      func(ctx context.Context, script string, timeout time.Duration) (RunResult, error)
	sessions []*fakeSession
}

func (b *fakeBackend) NewSession(ctx context.Context) (Session, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &fakeSession{b: b, files: map[string][]byte{}}
	b.sessions = append(b.sessions, s)
	return s, nil
}

type fakeSession struct {
	b      *fakeBackend
	mu     sync.Mutex
	files  map[string][]byte
	closed bool
}

func (s *fakeSession) Run(ctx context.Context, script string, timeout time.Duration) (RunResult, error) {
	return s.b.run(ctx, script, timeout)
}

func (s *fakeSession) ReadFile(ctx context.Context, path string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.files[path]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	return d, nil
}

func (s *fakeSession) WriteFile(ctx context.Context, path string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = append([]byte(nil), data...)
	return nil
}

func (s *fakeSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// echoRun returns the script as stdout.
func echoRun(ctx context.Context, script string, timeout time.Duration) (RunResult, error) {
	return RunResult{Stdout: script, Duration: 3 * time.Millisecond}, nil
}

type testServer struct {
	*Server
	url string
	b   *fakeBackend
}

// start serves a Server over real loopback TCP.
func start(t *testing.T, cfg Config, run func(context.Context, string, time.Duration) (RunResult, error)) *testServer {
	t.Helper()
	b := &fakeBackend{run: run}
	cfg.Backend = b
	s, url := serve(t, cfg)
	return &testServer{Server: s, url: url, b: b}
}

// serve serves a Server of cfg (its Backend set) over real loopback TCP
// until the test ends, and returns it with its base URL.
func serve(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, "http://" + l.Addr().String()
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("not JSON (%d): %q", r.status, r.body)
	}
	return m
}

func do(t *testing.T, method, url string, body io.Reader) response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

func (ts *testServer) newSession(t *testing.T) string {
	t.Helper()
	r := do(t, "POST", ts.url+"/v1/sessions", nil)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	id, _ := r.json(t)["id"].(string)
	if id == "" {
		t.Fatalf("no id: %s", r.body)
	}
	return id
}

func wantError(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if r.header.Get("Content-Type") != "application/json" {
		t.Errorf("content type %q", r.header.Get("Content-Type"))
	}
	m := r.json(t)
	if m["code"] != code || m["error"] == "" || len(m) != 2 {
		t.Fatalf("error body %s, want code %q", r.body, code)
	}
}

func TestSessionLifecycle(t *testing.T) {
	ts := start(t, Config{}, echoRun)
	id := ts.newSession(t)

	r := do(t, "POST", ts.url+"/v1/sessions/"+id+"/run", strings.NewReader(`{"script":"echo hi","timeout_ms":500}`))
	if r.status != 200 {
		t.Fatalf("run: %d %s", r.status, r.body)
	}
	want := `{"stdout":"echo hi","stderr":"","exit_code":0,"error_class":"","truncated":false,"duration_ms":3}` + "\n"
	if string(r.body) != want {
		t.Fatalf("run body\n got %s\nwant %s", r.body, want)
	}

	data := []byte("binary\x00data\n")
	if r := do(t, "PUT", ts.url+"/v1/sessions/"+id+"/files?path=/work/a.bin", bytes.NewReader(data)); r.status != 204 {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	r = do(t, "GET", ts.url+"/v1/sessions/"+id+"/files?path=/work/a.bin", nil)
	if r.status != 200 || !bytes.Equal(r.body, data) || r.header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("get: %d %q %v", r.status, r.body, r.header)
	}
	wantError(t, do(t, "GET", ts.url+"/v1/sessions/"+id+"/files?path=/nope", nil), 404, "file_not_found")
	wantError(t, do(t, "GET", ts.url+"/v1/sessions/"+id+"/files?path=relative", nil), 400, "bad_request")
	wantError(t, do(t, "GET", ts.url+"/v1/sessions/"+id+"/files", nil), 400, "bad_request")

	if r := do(t, "DELETE", ts.url+"/v1/sessions/"+id, nil); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if !ts.b.sessions[0].closed {
		t.Fatal("session not closed on DELETE")
	}
	wantError(t, do(t, "POST", ts.url+"/v1/sessions/"+id+"/run", strings.NewReader(`{"script":"x"}`)), 404, "not_found")
	wantError(t, do(t, "DELETE", ts.url+"/v1/sessions/"+id, nil), 404, "not_found")
}

func TestRequestErrors(t *testing.T) {
	ts := start(t, Config{MaxScriptBytes: 100, MaxFileBytes: 1000}, echoRun)
	id := ts.newSession(t)
	run := ts.url + "/v1/sessions/" + id + "/run"
	tests := []struct {
		name, method, url, body string
		status                  int
		code                    string
	}{
		{"bad json", "POST", run, `{"script":`, 400, "bad_request"},
		{"unknown field", "POST", run, `{"script":"x","cmd":"y"}`, 400, "bad_request"},
		{"trailing data", "POST", run, `{"script":"x"} {}`, 400, "bad_request"},
		{"missing script", "POST", run, `{"timeout_ms":5}`, 400, "bad_request"},
		{"negative timeout", "POST", run, `{"script":"x","timeout_ms":-1}`, 400, "bad_request"},
		{"huge timeout", "POST", run, `{"script":"x","timeout_ms":99999999999}`, 400, "bad_request"},
		{"script too large", "POST", run, `{"script":"` + strings.Repeat("a", 101) + `"}`, 413, "too_large"},
		{"body too large", "POST", run, `{"script":"x","pad":"` + strings.Repeat("a", 70<<10) + `"}`, 413, "too_large"},
		{"file too large", "PUT", ts.url + "/v1/sessions/" + id + "/files?path=/f", strings.Repeat("a", 1001), 413, "too_large"},
		{"unknown session", "POST", ts.url + "/v1/sessions/nope/run", `{"script":"x"}`, 404, "not_found"},
		{"unknown route", "GET", ts.url + "/v2/what", "", 404, "not_found"},
		{"wrong method", "GET", run, "", 405, "method_not_allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, do(t, tc.method, tc.url, strings.NewReader(tc.body)), tc.status, tc.code)
		})
	}
}

func TestTooManySessions(t *testing.T) {
	ts := start(t, Config{MaxSessions: 1}, echoRun)
	ts.newSession(t)
	wantError(t, do(t, "POST", ts.url+"/v1/sessions", nil), 429, "too_many_sessions")
}

// barrierBackend's NewSession returns only once n callers are in it, so
// that n creates pass the server's first cap check together.
type barrierBackend struct {
	*fakeBackend
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func (b *barrierBackend) NewSession(ctx context.Context) (Session, error) {
	b.mu.Lock()
	if b.arrived++; b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return b.fakeBackend.NewSession(ctx)
}

// TestConcurrentCreatesPastTheCap: two creates that pass the first check
// together under MaxSessions 1 give one session and one 429
// too_many_sessions (before, the second got 503 shutting_down, "server is
// shutting down or full"), and the refused one's session is closed.
func TestConcurrentCreatesPastTheCap(t *testing.T) {
	fb := &fakeBackend{run: echoRun}
	_, base := serve(t, Config{Backend: &barrierBackend{fakeBackend: fb, n: 2, all: make(chan struct{})}, MaxSessions: 1})
	url := base + "/v1/sessions"
	got := make(chan response, 2)
	for range 2 {
		go func() {
			resp, err := http.Post(url, "application/json", nil)
			if err != nil {
				got <- response{status: -1, body: []byte(err.Error())}
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			got <- response{resp.StatusCode, resp.Header, body}
		}()
	}
	a, b := <-got, <-got
	if a.status != 201 {
		a, b = b, a
	}
	if a.status != 201 {
		t.Fatalf("no session created: %d %s", a.status, a.body)
	}
	wantError(t, b, 429, "too_many_sessions")
	fb.mu.Lock()
	defer fb.mu.Unlock()
	closed := 0
	for _, ss := range fb.sessions {
		ss.mu.Lock()
		if ss.closed {
			closed++
		}
		ss.mu.Unlock()
	}
	if len(fb.sessions) != 2 || closed != 1 {
		t.Fatalf("%d sessions made, %d closed; want 2 and 1", len(fb.sessions), closed)
	}
}

// blockingRun blocks until released or its context ends.
type blockingRun struct {
	started chan struct{}
	once    sync.Once
	release chan struct{}
}

func newBlockingRun() *blockingRun {
	return &blockingRun{started: make(chan struct{}), release: make(chan struct{})}
}

func (b *blockingRun) run(ctx context.Context, script string, timeout time.Duration) (RunResult, error) {
	b.once.Do(func() { close(b.started) })
	select {
	case <-b.release:
		return RunResult{Stdout: "done"}, nil
	case <-ctx.Done():
		return RunResult{ExitCode: 125, ErrorClass: ClassCancelled}, nil
	}
}

func TestWorkerUnavailableAndHealthStaysResponsive(t *testing.T) {
	p := pool.New(pool.Config{InteractiveWorkers: 1, MaxQueue: -1})
	defer p.Shutdown(context.Background())
	br := newBlockingRun()
	ts := start(t, Config{Pool: p}, br.run)
	id := ts.newSession(t)
	first := make(chan response, 1)
	go func() {
		first <- do(t, "POST", ts.url+"/v1/sessions/"+id+"/run", strings.NewReader(`{"script":"long"}`))
	}()
	<-br.started

	r := do(t, "POST", ts.url+"/v1/sessions/"+id+"/run", strings.NewReader(`{"script":"more"}`))
	wantError(t, r, 503, "worker_unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}

	// The busy worker never finishes by itself: a health check waiting
	// for it would run into this watchdog (not a speed limit).
	start := time.Now()
	hc := make(chan response, 1)
	go func() { hc <- do(t, "GET", ts.url+"/health", nil) }()
	var h response
	select {
	case h = <-hc:
	case <-time.After(30 * time.Second):
		t.Fatalf("health did not answer in 30s while the worker is busy")
	}
	if h.status != 200 {
		t.Fatalf("health: %d after %v", h.status, time.Since(start))
	}
	var health Health
	if err := json.Unmarshal(h.body, &health); err != nil {
		t.Fatal(err)
	}
	if health.Status != "ok" || health.Sessions != 1 || health.Pool.Interactive.Active != 1 || health.Pool.System.Idle != 1 || health.Pool.Totals.Rejected != 1 {
		t.Fatalf("health %s", h.body)
	}

	m := do(t, "GET", ts.url+"/metrics", nil)
	for _, want := range []string{
		`wasmbox_pool_active{lane="interactive"} 1`,
		`wasmbox_pool_idle{lane="system"} 1`,
		`wasmbox_pool_queue_rejections_total 1`,
		`wasmbox_http_run_rejections_total 1`,
		`wasmbox_sessions_active 1`,
	} {
		if !strings.Contains(string(m.body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	close(br.release)
	if r := <-first; r.status != 200 || r.json(t)["stdout"] != "done" {
		t.Fatalf("first run: %d %s", r.status, r.body)
	}
}

func TestRunClassesAndMetrics(t *testing.T) {
	results := map[string]RunResult{
		"ok":      {Stdout: "x", Duration: time.Millisecond},
		"fail":    {ExitCode: 1, Stderr: "bad", Duration: time.Millisecond},
		"timeout": {ExitCode: 124, ErrorClass: ClassTimeout, Duration: 50 * time.Millisecond, Truncated: true},
		"denied":  {ExitCode: 126, ErrorClass: ClassDenied},
	}
	ts := start(t, Config{}, func(ctx context.Context, script string, timeout time.Duration) (RunResult, error) {
		if script == "boom" {
			return RunResult{}, errors.New("session broken")
		}
		if script == "deadline" {
			return RunResult{}, fmt.Errorf("run: %w", context.DeadlineExceeded)
		}
		return results[script], nil
	})
	id := ts.newSession(t)
	run := func(script string) response {
		return do(t, "POST", ts.url+"/v1/sessions/"+id+"/run", strings.NewReader(`{"script":"`+script+`"}`))
	}
	for script, want := range results {
		r := run(script)
		var got RunResponse
		if err := json.Unmarshal(r.body, &got); err != nil || r.status != 200 {
			t.Fatalf("%s: %d %s", script, r.status, r.body)
		}
		if got.ExitCode != want.ExitCode || got.ErrorClass != want.ErrorClass || got.Truncated != want.Truncated || got.Stderr != want.Stderr {
			t.Errorf("%s: got %+v", script, got)
		}
	}
	wantError(t, run("boom"), 500, "internal")
	if r := run("deadline"); r.status != 200 || r.json(t)["error_class"] != "TIMEOUT" || r.json(t)["exit_code"] != 124.0 {
		t.Fatalf("deadline error: %s", r.body)
	}
	m := string(do(t, "GET", ts.url+"/metrics", nil).body)
	for _, want := range []string{
		`wasmbox_runs_total{class="OK"} 2`,
		`wasmbox_runs_total{class="TIMEOUT"} 2`,
		`wasmbox_runs_total{class="DENIED"} 1`,
		`wasmbox_runs_total{class="LIMIT_EXCEEDED"} 0`,
		`wasmbox_run_duration_seconds_count 5`,
		`wasmbox_pool_jobs_total{outcome="timed_out"} 2`,
		`wasmbox_http_requests_total{code="500",route="run"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	for _, line := range strings.Split(m, "\n") {
		if line != "" && !strings.HasPrefix(line, "wasmbox_") && !strings.HasPrefix(line, "# HELP wasmbox_") && !strings.HasPrefix(line, "# TYPE wasmbox_") {
			t.Errorf("metric without the wasmbox_ prefix: %q", line)
		}
	}
}

func TestDisabledPool(t *testing.T) {
	p := pool.New(pool.Config{Mode: pool.Disabled})
	defer p.Shutdown(context.Background())
	ts := start(t, Config{Pool: p}, echoRun)
	id := ts.newSession(t)
	wantError(t, do(t, "POST", ts.url+"/v1/sessions/"+id+"/run", strings.NewReader(`{"script":"x"}`)), 503, "disabled")
	if h := do(t, "GET", ts.url+"/health", nil); h.json(t)["status"] != "disabled" || h.status != 200 {
		t.Fatalf("health %s", h.body)
	}
	// A readiness probe is told 503 with the same body.
	if h := do(t, "GET", ts.url+"/health?ready", nil); h.json(t)["status"] != "disabled" || h.status != 503 {
		t.Fatalf("health?ready %d %s", h.status, h.body)
	}
	ok := start(t, Config{}, echoRun)
	if h := do(t, "GET", ok.url+"/health?ready", nil); h.json(t)["status"] != "ok" || h.status != 200 {
		t.Fatalf("health?ready %d %s", h.status, h.body)
	}
}

func TestShutdownCancelsRunsWithinDeadline(t *testing.T) {
	br := newBlockingRun()
	b := &fakeBackend{run: br.run}
	s, err := New(Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	url := "http://" + l.Addr().String()
	r := do(t, "POST", url+"/v1/sessions", nil)
	id := r.json(t)["id"].(string)
	inflight := make(chan response, 1)
	go func() { inflight <- do(t, "POST", url+"/v1/sessions/"+id+"/run", strings.NewReader(`{"script":"x"}`)) }()
	<-br.started

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	t0 := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Fatalf("Shutdown took %v", d)
	}
	got := <-inflight
	if got.status != 200 || got.json(t)["error_class"] != "CANCELLED" {
		t.Fatalf("in-flight run: %d %s", got.status, got.body)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	if !b.sessions[0].closed {
		t.Fatal("session not closed by Shutdown")
	}
	if _, err := net.Dial("tcp", l.Addr().String()); err == nil {
		t.Fatal("still listening")
	}
}

func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:0", "[::]:0", "nonsense"} {
		if l, err := Listen(addr, false); err == nil {
			l.Close()
			t.Errorf("Listen(%q) accepted", addr)
		} else if addr != "nonsense" && !errors.Is(err, ErrNotLoopback) {
			t.Errorf("Listen(%q): %v, want ErrNotLoopback", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		l, err := Listen(addr, false)
		if err != nil {
			t.Errorf("Listen(%q): %v", addr, err)
			continue
		}
		if !l.Addr().(*net.TCPAddr).IP.IsLoopback() {
			t.Errorf("%q listens on %v", addr, l.Addr())
		}
		l.Close()
	}
	l, err := Listen("0.0.0.0:0", true)
	if err != nil {
		t.Fatalf("explicitly allowed: %v", err)
	}
	l.Close()
}

func TestAuditAndRedaction(t *testing.T) {
	var log bytes.Buffer
	var logMu sync.Mutex
	red := audit.NewRedactor(audit.WithEnviron([]string{"SERVICE_TOKEN=super-secret-1"}))
	al := audit.New(lockedWriter{&logMu, &log}, audit.WithRedactor(red))
	ts := start(t, Config{Audit: al, Redactor: red}, func(ctx context.Context, script string, timeout time.Duration) (RunResult, error) {
		return RunResult{Stdout: "value super-secret-1\n", Stderr: "key AKIAIOSFODNN7EXAMPLE", Duration: time.Millisecond}, nil
	})
	id := ts.newSession(t)
	r := do(t, "POST", ts.url+"/v1/sessions/"+id+"/run", strings.NewReader(`{"script":"echo $SERVICE_TOKEN super-secret-1"}`))
	var got RunResponse
	json.Unmarshal(r.body, &got)
	if got.Stdout != "value [REDACTED]\n" || got.Stderr != "key [REDACTED]" {
		t.Fatalf("not redacted: %+v", got)
	}
	do(t, "DELETE", ts.url+"/v1/sessions/"+id, nil)
	logMu.Lock()
	text := log.String()
	logMu.Unlock()
	if strings.Contains(text, "super-secret-1") {
		t.Fatal("secret in the audit log")
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d audit lines:\n%s", len(lines), text)
	}
	for i, want := range []string{`"msg":"session"`, `"msg":"run"`, `"msg":"session"`} {
		if !strings.Contains(lines[i], want) || !strings.Contains(lines[i], `"session":"`+id+`"`) {
			t.Errorf("line %d: %s", i+1, lines[i])
		}
	}
	if !strings.Contains(lines[1], `"lane":"interactive","slot":0,"script":"echo $SERVICE_TOKEN [REDACTED]"`) || !strings.Contains(lines[1], `"job_id":"`) {
		t.Errorf("run entry: %s", lines[1])
	}
	if err := audit.Verify(strings.NewReader(text)); err != nil {
		t.Fatal(err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestLoopbackHostAndOrigin(t *testing.T) {
	ts := start(t, Config{}, echoRun)
	send := func(host, origin string) response {
		req, _ := http.NewRequest("GET", ts.url+"/health", nil)
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{resp.StatusCode, resp.Header, b}
	}
	for _, ok := range [][2]string{{"", ""}, {"localhost:8080", ""}, {"[::1]:1", ""}, {"", "http://localhost:3000"}, {"", "http://127.0.0.1:9"}} {
		if r := send(ok[0], ok[1]); r.status != 200 {
			t.Errorf("host %q origin %q: %d %s", ok[0], ok[1], r.status, r.body)
		}
	}
	for _, bad := range [][2]string{{"evil.example:8080", ""}, {"10.0.0.1", ""}, {"", "https://evil.example"}, {"", "null"}} {
		wantError(t, send(bad[0], bad[1]), 403, "forbidden_host")
	}
}
