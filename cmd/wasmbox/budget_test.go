package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	wbruntime "github.com/wasmbox/wasmbox/runtime"
)

// TestServeMemoryBudget: `wasmbox serve --memory-budget 1000MiB` admits a
// session (its 256 MiB VFS quota and 256 MiB shell) and refuses a second
// one (two take 1024 MiB: the interpreter's engine held more besides, GNU
// bash's does not, so 1 GiB was just enough for two) with 503 memory_budget and Retry-After, as well as a run whose
// --run-memory does not fit beside it; closing the first admits another.
// (Before, serve admitted 256 sessions of ~580 MB each.)
func TestServeMemoryBudget(t *testing.T) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	cache := filepath.Join(base, "wasmbox-test", "compile")
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- doMain([]string{"--cachedir", cache, "serve", "--listen", "127.0.0.1:0", "--workers", "1",
			"--memory-budget", "1000MiB", "--run-memory", "600MiB"}, strings.NewReader(""), pw, &stderr)
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v (exit %v) %s", err, <-done, stderr.String())
	}
	go io.Copy(io.Discard, br)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "wasmbox: serving on ")
	if !ok {
		t.Fatalf("ready line %q", line)
	}
	do := func(method, path, body string) (int, http.Header, []byte) {
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	var sess struct{ ID string }
	code, _, body := do("POST", "/v1/sessions", "")
	if json.Unmarshal(body, &sess); code != 201 {
		t.Fatalf("first session: %d %s", code, body)
	}
	var e struct{ Error, Code string }
	code, hdr, body := do("POST", "/v1/sessions", "")
	if json.Unmarshal(body, &e); code != 503 || e.Code != "memory_budget" || hdr.Get("Retry-After") == "" ||
		!strings.Contains(e.Error, "process memory budget (1000MiB) exceeded") {
		t.Fatalf("second session: %d %v %s", code, hdr, body)
	}
	code, hdr, body = do("POST", "/v1/sessions/"+sess.ID+"/run", `{"script":"echo hi"}`)
	if json.Unmarshal(body, &e); code != 503 || e.Code != "memory_budget" || hdr.Get("Retry-After") == "" {
		t.Fatalf("run over the budget: %d %v %s", code, hdr, body)
	}
	if code, _, body := do("DELETE", "/v1/sessions/"+sess.ID, ""); code != 204 {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, _, body := do("POST", "/v1/sessions", ""); code != 201 {
		t.Fatalf("a session after the first was closed: %d %s", code, body)
	}

	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
}

// TestMCPSessionCap: `wasmbox mcp --listen --max-sessions 2` refuses a
// third session with 429 too_many_sessions and Retry-After; closing one
// admits another. (Before, mcp --listen accepted 300 sessions.)
func TestMCPSessionCap(t *testing.T) {
	url := startMCPHTTP(t, nil, "--max-sessions", "2")
	connect := func() (*mcp.ClientSession, error) {
		return newTestClient(&progressLog{}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	}
	a, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	b, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if c, err := connect(); err == nil {
		c.Close()
		t.Fatal("a third session was admitted past --max-sessions 2")
	}
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "too_many_sessions") {
		t.Fatalf("initialize past the cap: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	a.Close()
	// The server sees the session end when the client's DELETE arrives:
	// the next session is admitted once it has (a watchdog bounds the
	// wait).
	watchdog := time.Now().Add(30 * time.Second)
	for {
		c, err := connect()
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(watchdog) {
			t.Fatalf("no session admitted after one was closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunMemoryBudgetRefused: a run whose --run-memory the process budget
// cannot hold ends before it starts with exit 137 and one line (and
// LIMIT_EXCEEDED in --json), as a command over its memory limit does.
func TestRunMemoryBudgetRefused(t *testing.T) {
	stdout, stderr, code := runMain(t, "", "--cachedir", testCacheDir(), "run", "--run-memory", "64TiB", "-c", "echo ran")
	if code != 137 || stdout != "" || strings.Count(stderr, "\n") != 1 ||
		!strings.HasPrefix(stderr, "wasmbox: the run's 64 TiB: process memory budget (") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdout, _, code = runMain(t, "", "--cachedir", testCacheDir(), "run", "--json", "--run-memory", "64TiB", "-c", "echo ran")
	var res struct {
		ExitCode   int    `json:"exit_code"`
		ErrorClass string `json:"error_class"`
		Stderr     string `json:"stderr"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 137 || res.ExitCode != 137 || res.ErrorClass != "LIMIT_EXCEEDED" ||
		!strings.Contains(res.Stderr, "process memory budget") {
		t.Fatalf("--json: exit %d, %s (%v)", code, stdout, err)
	}
}

// TestSessionCapCountsAnAnsweredSessionOnce: a session whose initialize
// was answered is live (the SDK connected it before writing the answer)
// while its handler may still be finishing; sessionCap must not count it
// twice then, or the client's next session is refused under the cap (CI
// failed TestMCPSessionCap this way on a loaded machine). The handler
// here holds its request open after answering, as a slow one does.
func TestSessionCapCountsAnAnsweredSessionOnce(t *testing.T) {
	var mu sync.Mutex
	live := 0
	answered := make(chan struct{}, 2)
	release := make(chan struct{})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		live++
		mu.Unlock()
		w.Header().Set("Mcp-Session-Id", "s")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		answered <- struct{}{}
		<-release
	})
	c := &sessionCap{next: next, max: 2, budget: wbruntime.NewBudget(1 << 40), cost: 1,
		live: func() int { mu.Lock(); defer mu.Unlock(); return live }}
	srv := httptest.NewServer(c)
	defer srv.Close()
	defer close(release)
	post := func() *http.Response {
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// The first session is answered; its handler has not returned.
	r1 := post()
	defer r1.Body.Close()
	<-answered
	if r1.StatusCode != 200 {
		t.Fatalf("first session: %d", r1.StatusCode)
	}
	r2 := post()
	defer r2.Body.Close()
	if r2.StatusCode != 200 {
		b, _ := io.ReadAll(r2.Body)
		t.Fatalf("second session under --max-sessions 2: %d %s", r2.StatusCode, b)
	}
	<-answered
	// Two are live: a third is refused.
	r3 := post()
	defer r3.Body.Close()
	if r3.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third session: %d", r3.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if c.opening != 0 {
		t.Fatalf("opening = %d after every request was answered", c.opening)
	}
}
