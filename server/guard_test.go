package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/audit"
)

// secretRun prints the secrets back, or fails with one in the message.
func secretRun(ctx context.Context, script string, timeout time.Duration) (RunResult, error) {
	if script == "boom" {
		return RunResult{}, errors.New("session broken near super-secret-1")
	}
	return RunResult{Stdout: "hunter2hunter2 super-secret-1\n", Stderr: "key AKIAIOSFODNN7EXAMPLE", Duration: time.Millisecond}, nil
}

// TestRedactionIsOnePolicy: with a Redactor, every channel the server
// returns is redacted (run output, file reads, error messages), including
// the values the session's scripts assigned to secret-named variables;
// without one, none is (a file reads back exactly as written).
func TestRedactionIsOnePolicy(t *testing.T) {
	const file = "DB_URL=postgres://u:super-secret-1@db\nold=hunter2hunter2\n"
	for _, redact := range []bool{true, false} {
		cfg := Config{}
		if redact {
			cfg.Redactor = audit.NewRedactor(audit.WithEnviron([]string{"SERVICE_TOKEN=super-secret-1"}))
		}
		ts := start(t, cfg, secretRun)
		id := ts.newSession(t)
		base := ts.url + "/v1/sessions/" + id
		r := do(t, "POST", base+"/run", strings.NewReader(`{"script":"MYPASSWORD=hunter2hunter2 printenv MYPASSWORD"}`))
		stdout, stderr := r.json(t)["stdout"], r.json(t)["stderr"]
		if r := do(t, "PUT", base+"/files?path=/w/f", strings.NewReader(file)); r.status != 204 {
			t.Fatalf("put: %d %s", r.status, r.body)
		}
		got := do(t, "GET", base+"/files?path=/w/f", nil)
		missing := do(t, "GET", base+"/files?path=/w/super-secret-1", nil)
		boom := do(t, "POST", base+"/run", strings.NewReader(`{"script":"boom"}`))
		wantError(t, missing, 404, "file_not_found")
		wantError(t, boom, 500, "internal")
		if redact {
			if stdout != "[REDACTED] [REDACTED]\n" || stderr != "key [REDACTED]" {
				t.Errorf("run output not redacted: %q %q", stdout, stderr)
			}
			if want := "DB_URL=postgres://u:[REDACTED]@db\nold=[REDACTED]\n"; string(got.body) != want || got.header.Get("Content-Length") != strconv.Itoa(len(want)) {
				t.Errorf("file read %q (length %s), want %q", got.body, got.header.Get("Content-Length"), want)
			}
			for _, e := range []response{missing, boom} {
				if strings.Contains(string(e.body), "super-secret-1") || !strings.Contains(string(e.body), "[REDACTED]") {
					t.Errorf("error not redacted: %s", e.body)
				}
			}
		} else {
			if stdout != "hunter2hunter2 super-secret-1\n" || stderr != "key AKIAIOSFODNN7EXAMPLE" {
				t.Errorf("run output redacted without a Redactor: %q %q", stdout, stderr)
			}
			if string(got.body) != file {
				t.Errorf("file read %q, want it as written", got.body)
			}
		}
	}
}

// TestAuditRedactsSessionSecrets: without output redaction, the audit log
// still never holds a value a script of the session assigned to a
// secret-named variable, in that run or a later one.
func TestAuditRedactsSessionSecrets(t *testing.T) {
	var log bytes.Buffer
	var mu sync.Mutex
	al := audit.New(lockedWriter{&mu, &log}, audit.WithRedactor(audit.NewRedactor(audit.WithEnviron(nil))))
	ts := start(t, Config{Audit: al}, echoRun)
	id := ts.newSession(t)
	for _, script := range []string{"MYPASSWORD=hunter2hunter2 printenv MYPASSWORD", "echo hunter2hunter2"} {
		r := do(t, "POST", ts.url+"/v1/sessions/"+id+"/run", strings.NewReader(`{"script":"`+script+`"}`))
		if r.json(t)["stdout"] != script {
			t.Fatalf("output changed without a Redactor: %s", r.body)
		}
	}
	mu.Lock()
	text := log.String()
	mu.Unlock()
	if strings.Contains(text, "hunter2hunter2") || !strings.Contains(text, `"script":"MYPASSWORD=[REDACTED] printenv MYPASSWORD"`) ||
		!strings.Contains(text, `"script":"echo [REDACTED]"`) {
		t.Fatalf("audit log:\n%s", text)
	}
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (b *fakeBackend) closed(i int) bool {
	b.mu.Lock()
	s := b.sessions[i]
	b.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// TestSessionExpires: a session idle past the TTL is closed, and a
// request on it gets 404 session_expired; use keeps a session alive, and a
// run in progress is never idle.
func TestSessionExpires(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var log bytes.Buffer
	var mu sync.Mutex
	al := audit.New(lockedWriter{&mu, &log})
	br := newBlockingRun()
	ts := start(t, Config{SessionTTL: time.Minute, Clock: clock.Now, Audit: al}, func(ctx context.Context, script string, timeout time.Duration) (RunResult, error) {
		if script == "block" {
			return br.run(ctx, script, timeout)
		}
		return echoRun(ctx, script, timeout)
	})
	idle, used, busy := ts.newSession(t), ts.newSession(t), ts.newSession(t)
	running := make(chan response, 1)
	go func() {
		running <- do(t, "POST", ts.url+"/v1/sessions/"+busy+"/run", strings.NewReader(`{"script":"block"}`))
	}()
	<-br.started
	clock.Add(40 * time.Second)
	if r := do(t, "POST", ts.url+"/v1/sessions/"+used+"/run", strings.NewReader(`{"script":"x"}`)); r.status != 200 {
		t.Fatalf("used session: %d %s", r.status, r.body)
	}
	clock.Add(40 * time.Second) // idle: 80s, used: 40s, busy: running
	ts.expireIdle()
	if !ts.b.closed(0) || ts.b.closed(1) || ts.b.closed(2) {
		t.Fatalf("closed: idle %v used %v busy %v", ts.b.closed(0), ts.b.closed(1), ts.b.closed(2))
	}
	r := do(t, "POST", ts.url+"/v1/sessions/"+idle+"/run", strings.NewReader(`{"script":"x"}`))
	wantError(t, r, 404, "session_expired")
	if !strings.Contains(r.json(t)["error"].(string), "expired") {
		t.Errorf("message: %s", r.body)
	}
	wantError(t, do(t, "GET", ts.url+"/v1/sessions/"+idle+"/files?path=/x", nil), 404, "session_expired")
	wantError(t, do(t, "DELETE", ts.url+"/v1/sessions/nope", nil), 404, "not_found")

	// A request finds a session idle before the reaper does.
	clock.Add(time.Hour)
	wantError(t, do(t, "DELETE", ts.url+"/v1/sessions/"+used, nil), 404, "session_expired")
	if !ts.b.closed(1) {
		t.Fatal("the expired session was not closed")
	}
	ts.expireIdle()
	if ts.b.closed(2) {
		t.Fatal("a session with a run in progress expired")
	}
	close(br.release)
	if r := <-running; r.status != 200 {
		t.Fatalf("busy run: %d %s", r.status, r.body)
	}
	clock.Add(59 * time.Second)
	ts.expireIdle()
	if ts.b.closed(2) {
		t.Fatal("expired less than the TTL after its last request")
	}
	if h := do(t, "GET", ts.url+"/health", nil); h.json(t)["sessions"] != 1.0 {
		t.Fatalf("health: %s", h.body)
	}
	mu.Lock()
	n := strings.Count(log.String(), `"reason":"expired"`)
	mu.Unlock()
	if n != 2 {
		t.Errorf("%d expiries in the audit log, want 2:\n%s", n, log.String())
	}
}

// TestReaperFreesSessions: with a short TTL and the real clock, the
// background reaper closes an abandoned session by itself, so that a full
// server takes new sessions again.
func TestReaperFreesSessions(t *testing.T) {
	ts := start(t, Config{SessionTTL: 20 * time.Millisecond, MaxSessions: 1}, echoRun)
	ts.newSession(t)
	deadline := time.Now().Add(10 * time.Second)
	for !ts.b.closed(0) {
		if time.Now().After(deadline) {
			t.Fatal("the reaper did not close the idle session")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ts.newSession(t) // room again
}

func TestNoTTL(t *testing.T) {
	clock := &fakeClock{now: time.Now()}
	ts := start(t, Config{SessionTTL: -1, Clock: clock.Now}, echoRun)
	id := ts.newSession(t)
	clock.Add(1000 * time.Hour)
	ts.expireIdle()
	if r := do(t, "POST", ts.url+"/v1/sessions/"+id+"/run", strings.NewReader(`{"script":"x"}`)); r.status != 200 {
		t.Fatalf("run: %d %s", r.status, r.body)
	}
}

func doAuth(t *testing.T, method, url, auth string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

// TestBearerToken: with a token, every route (health and metrics too)
// wants it.
func TestBearerToken(t *testing.T) {
	const token = "tok-0123456789abcdef"
	ts := start(t, Config{Token: token}, echoRun)
	for _, path := range []string{"/v1/sessions", "/health", "/metrics", "/v1/sessions/x/run", "/nowhere"} {
		method := "GET"
		if strings.HasPrefix(path, "/v1/") {
			method = "POST"
		}
		for _, auth := range []string{"", "Bearer", "Bearer wrong", "Basic " + token, "Bearer " + token + "x", "Bearer " + token[:5], token} {
			r := doAuth(t, method, ts.url+path, auth)
			wantError(t, r, 401, "unauthorized")
			if r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %q: no WWW-Authenticate", path, auth)
			}
		}
	}
	if r := doAuth(t, "POST", ts.url+"/v1/sessions", "Bearer "+token); r.status != 201 {
		t.Fatalf("create with the token: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/health", "/metrics"} {
		if r := doAuth(t, "GET", ts.url+path, "bearer "+token); r.status != 200 {
			t.Errorf("%s with the token: %d %s", path, r.status, r.body)
		}
	}
	for _, bad := range []string{" ", "a b", "tab\there", "nl\n"} {
		if _, err := New(Config{Backend: &fakeBackend{}, Token: bad}); err == nil {
			t.Errorf("token %q accepted", bad)
		}
	}
}

// TestServeNonLoopbackNeedsToken: Serve refuses a non-loopback listener
// without a token, and serves it with one.
func TestServeNonLoopbackNeedsToken(t *testing.T) {
	for _, token := range []string{"", "tok-1"} {
		s, err := New(Config{Backend: &fakeBackend{run: echoRun}, Token: token, AllowAnyHost: true})
		if err != nil {
			t.Fatal(err)
		}
		l, err := Listen("0.0.0.0:0", true)
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- s.Serve(l) }()
		if token == "" {
			if err := <-served; !errors.Is(err, ErrTokenRequired) {
				t.Fatalf("Serve without a token: %v", err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.Shutdown(ctx)
		cancel()
		if token != "" {
			if err := <-served; !errors.Is(err, http.ErrServerClosed) {
				t.Fatalf("Serve with a token: %v", err)
			}
		}
	}
}
