package natscluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/wasmbox/wasmbox/internal/testcache"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wasmbox/wasmbox/sandbox"
	"github.com/wasmbox/wasmbox/server"
	"github.com/wasmbox/wasmbox/server/natscluster"
	"github.com/wasmbox/wasmbox/server/natscluster/embedded"
	"github.com/wasmbox/wasmbox/server/sandboxbackend"
)

var soak = flag.Int("cluster.soak", 0, "run the soak test with this many runs per client")

// testLeaseTTL is short so that the crash and partition tests resume
// within seconds.
const testLeaseTTL = 2 * time.Second

func TestMain(m *testing.M) {
	flag.Parse()
	// The sandboxes' compile cache is the tests' own, not the user's
	// (package testcache).
	cleanup := testcache.Setup()
	// The sandboxes' engine is made (its modules compiled) before any
	// test, not by the first session a node creates: with a cold cache
	// under -race the compiler runs instrumented, and on a loaded machine
	// that took minutes, past the tests' HTTP timeouts (a run of the
	// race detector once timed out in createSession that way). The go
	// test -timeout bounds it.
	start := time.Now()
	if _, err := sandbox.DefaultEngine(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox engine:", err)
		cleanup()
		os.Exit(1)
	}
	if d := time.Since(start); d > 10*time.Second {
		fmt.Fprintf(os.Stderr, "sandbox engine made in %v (compiled, cold cache)\n", d.Round(time.Second))
	}
	base := goruntime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		// No goroutine left behind by the tests: nodes, leases,
		// renewers, NATS servers and connections all stop.
		deadline := time.Now().Add(20 * time.Second) // watchdog
		for goruntime.NumGoroutine() > base+2 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if n := goruntime.NumGoroutine(); n > base+2 {
			buf := make([]byte, 1<<20)
			buf = buf[:goruntime.Stack(buf, true)]
			fmt.Fprintf(os.Stderr, "goroutines left behind: %d (at start %d)\n%s\n", n, base, buf)
			code = 1
		}
	}
	cleanup()
	os.Exit(code)
}

// startNATS starts a NATS cluster of n servers with JetStream in the
// process, each with its own store in a temporary directory.
func startNATS(t *testing.T, n int) *embedded.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // watchdog
	defer cancel()
	c, err := embedded.Start(ctx, t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	return c
}

// node is one serve node: the real server handler on a loopback HTTP
// server, with its own NATS connection.
type node struct {
	name string
	url  string
	srv  *server.Server
	ts   *httptest.Server
	cl   *natscluster.Cluster
	nc   *nats.Conn
	once sync.Once

	acquires atomic.Int64 // leases the server took
}

// countingCluster is the real cluster, counting the leases taken.
type countingCluster struct {
	*natscluster.Cluster
	n *atomic.Int64
}

func (c countingCluster) Acquire(ctx context.Context, id string) (server.Lease, error) {
	c.n.Add(1)
	return c.Cluster.Acquire(ctx, id)
}

// startNode starts a serve node connected to the NATS servers at urls.
func startNode(t *testing.T, name, urls string, opts ...nats.Option) *node {
	t.Helper()
	return startNodeTTL(t, name, urls, time.Hour, opts...)
}

// startNodeTTL starts a serve node whose sessions expire after ttl.
func startNodeTTL(t *testing.T, name, urls string, ttl time.Duration, opts ...nats.Option) *node {
	t.Helper()
	return startNodeBackend(t, name, urls, ttl, sandboxbackend.Backend{}, opts...)
}

// startNodeBackend starts a serve node whose sessions are backend's.
func startNodeBackend(t *testing.T, name, urls string, ttl time.Duration, backend sandboxbackend.Backend, opts ...nats.Option) *node {
	t.Helper()
	opts = append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond), nats.Timeout(2 * time.Second)}, opts...)
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // watchdog
	defer cancel()
	cl, err := natscluster.Open(ctx, natscluster.Config{Conn: nc, Node: name, LeaseTTL: testLeaseTTL, Timeout: 2 * time.Second})
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	n := &node{name: name, cl: cl, nc: nc}
	srv, err := server.New(server.Config{
		Backend: backend, Cluster: countingCluster{cl, &n.acquires}, MaxSessions: 16, SessionTTL: ttl,
		DefaultTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	n.srv = srv
	n.ts = httptest.NewServer(srv.Handler())
	n.url = n.ts.URL
	t.Cleanup(n.stop)
	return n
}

// stop stops the node gracefully.
func (n *node) stop() {
	n.once.Do(func() {
		n.ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		n.srv.Shutdown(ctx)
		n.cl.Close()
		n.nc.Close()
	})
}

// crash stops the node as a crash would for the cluster: its NATS
// connection drops without releasing anything, its HTTP server goes away.
func (n *node) crash() {
	n.once.Do(func() {
		n.nc.Close() // first: nothing it does later reaches NATS
		n.ts.CloseClientConnections()
		n.ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		n.srv.Shutdown(ctx)
		n.cl.Close()
	})
}

var httpClient = &http.Client{Timeout: 2 * time.Minute}

type runResp struct {
	server.RunResponse
	Code  string `json:"code"`
	Error string `json:"error"`
	Owner string `json:"owner"`
}

func do(ctx context.Context, method, url string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func createSession(t *testing.T, n *node) string {
	t.Helper()
	code, b, err := do(context.Background(), "POST", n.url+"/v1/sessions", nil)
	if err != nil || code != http.StatusCreated {
		t.Fatalf("create on %s: %d %s %v", n.name, code, b, err)
	}
	var r struct{ ID string }
	json.Unmarshal(b, &r)
	return r.ID
}

// run runs script once on n.
func run(ctx context.Context, n *node, id, script string) (int, runResp, error) {
	body, _ := json.Marshal(map[string]any{"script": script})
	code, b, err := do(ctx, "POST", n.url+"/v1/sessions/"+id+"/run", body)
	var r runResp
	if err == nil {
		if jerr := json.Unmarshal(b, &r); jerr != nil {
			err = fmt.Errorf("%d %q: %w", code, b, jerr)
		}
	}
	return code, r, err
}

// retriable reports whether a response says that nothing was committed
// and the request may be sent again.
func retriable(code int, r runResp) bool {
	switch {
	case code == http.StatusConflict && r.Code == "session_busy":
		return true
	case code == http.StatusServiceUnavailable && (r.Code == "cluster_unavailable" || r.Code == "lease_lost"):
		return true
	}
	return false
}

// runRetry runs script on n, again while the answer says nothing was
// committed (another node holds the lease, the cluster is failing over),
// until ctx ends.
func runRetry(ctx context.Context, t *testing.T, n *node, id, script string) runResp {
	t.Helper()
	for {
		code, r, err := run(ctx, n, id, script)
		if err != nil {
			t.Fatalf("run on %s: %v", n.name, err)
		}
		if code == http.StatusOK {
			return r
		}
		if !retriable(code, r) {
			t.Fatalf("run on %s: %d %+v", n.name, code, r)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run on %s: still %d %s when the watchdog fired", n.name, code, r.Code)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func readFile(ctx context.Context, t *testing.T, n *node, id, path string) string {
	t.Helper()
	for {
		code, b, err := do(ctx, "GET", n.url+"/v1/sessions/"+id+"/files?path="+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if code == http.StatusOK {
			return string(b)
		}
		var r runResp
		json.Unmarshal(b, &r)
		if !retriable(code, r) {
			t.Fatalf("read %s on %s: %d %s", path, n.name, code, b)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("read on %s: still %d when the watchdog fired", n.name, code)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkCounter checks that f holds the lines 1..n.
func checkCounter(t *testing.T, f string, n int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(f, "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("f has %d lines, want %d: %q", len(lines), n, f)
	}
	for i, l := range lines {
		if l != fmt.Sprint(i+1) {
			t.Fatalf("line %d of f is %q, want %d", i+1, l, i+1)
		}
	}
}

// proxy is a TCP proxy to a NATS server that a test can cut (a network
// partition between a node and NATS) and heal.
type proxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		l.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *proxy) url() string { return "nats://" + p.l.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		d, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, d)
		p.wg.Add(2)
		p.mu.Unlock()
		go func() { defer p.wg.Done(); io.Copy(d, c); d.Close(); c.Close() }()
		go func() { defer p.wg.Done(); io.Copy(c, d); c.Close(); d.Close() }()
	}
}

// setCut cuts (every connection closed, new ones refused) or heals.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}
