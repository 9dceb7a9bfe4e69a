package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/server"
	"github.com/wasmbox/wasmbox/server/natscluster/embedded"
)

// serveNode is a real `wasmbox serve --cluster` process.
type serveNode struct {
	name string
	url  string
	cmd  *exec.Cmd
	out  *bytes.Buffer
	mu   *sync.Mutex
}

func startServeNode(t *testing.T, ctx context.Context, name, natsURLs string) *serveNode {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "--cachedir", testCacheDir(), "serve", "--listen", "127.0.0.1:0",
		"--cluster", natsURLs, "--cluster-node", name, "--lease-ttl", "2s", "--workers", "1", "--max-sessions", "8")
	cmd.Env = append(os.Environ(), "WASMBOX_TEST_AS_WASMBOX=1", "WASMBOX_ENGINE=off")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	n := &serveNode{name: name, cmd: cmd, out: &bytes.Buffer{}, mu: &sync.Mutex{}}
	cmd.Stderr = &lockedWriter{n.mu, n.out}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "wasmbox: serving on "); ok {
				addr <- a
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case n.url = <-addr:
	case <-ctx.Done():
		n.mu.Lock()
		defer n.mu.Unlock()
		t.Fatalf("node %s did not start: %s", name, n.out)
	}
	return n
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// kill9 kills the node with SIGKILL: it releases nothing.
func (n *serveNode) kill9(t *testing.T) {
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	n.cmd.Wait()
}

func clusterDo(ctx context.Context, method, url string, body any) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &m); err != nil {
			return resp.StatusCode, nil, fmt.Errorf("%q: %w", b, err)
		}
	} else {
		m = map[string]any{"body": string(b)}
	}
	return resp.StatusCode, m, nil
}

// clusterRun runs script on n, again while the answer says that nothing
// was committed (409 session_busy, 503 lease_lost or cluster_unavailable).
func clusterRun(ctx context.Context, t *testing.T, n *serveNode, id, script string) string {
	t.Helper()
	for {
		code, m, err := clusterDo(ctx, "POST", n.url+"/v1/sessions/"+id+"/run", map[string]any{"script": script})
		if err != nil {
			t.Fatalf("run on %s: %v", n.name, err)
		}
		if code == http.StatusOK {
			if m["exit_code"] != 0.0 {
				t.Fatalf("run on %s: %v", n.name, m)
			}
			return m["stdout"].(string)
		}
		if c := m["code"]; !(code == 409 && c == "session_busy" || code == 503 && (c == "lease_lost" || c == "cluster_unavailable")) {
			t.Fatalf("run on %s: %d %v", n.name, code, m)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run on %s: still %d %v when the watchdog fired", n.name, code, m)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestServeClusterKill9: three `wasmbox serve --cluster` processes on a
// 3-server NATS cluster (JetStream, R3) share a session that a client
// counts through at random. One node is killed with SIGKILL between runs,
// another with SIGKILL in the middle of a run that holds the session's
// lease: the next request on the surviving node sees the state of the
// last committed run (after the lease expired), and the count goes on
// 1..30 with no gap and no repeat.
func TestServeClusterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three serve processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // watchdog
	defer cancel()
	nc, err := embedded.Start(ctx, t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Shutdown()
	nodes := []*serveNode{
		startServeNode(t, ctx, "n0", nc.URLs()), startServeNode(t, ctx, "n1", nc.URLs()), startServeNode(t, ctx, "n2", nc.URLs()),
	}
	code, m, err := clusterDo(ctx, "POST", nodes[1].url+"/v1/sessions", nil)
	if err != nil || code != http.StatusCreated {
		t.Fatalf("create: %d %v %v", code, m, err)
	}
	id := m["id"].(string)
	const counter = `x=$((x+1)); echo $x >> f; echo $x`
	alive := []*serveNode{nodes[0], nodes[1], nodes[2]}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 1; i <= 30; i++ {
		switch i {
		case 10:
			nodes[1].kill9(t)
			alive = []*serveNode{nodes[0], nodes[2]}
		case 20:
			// Node 2 dies in the middle of a run that holds the lease.
			inflight := make(chan error, 1)
			go func() {
				_, _, err := clusterDo(ctx, "POST", nodes[2].url+"/v1/sessions/"+id+"/run",
					map[string]any{"script": `x=$((x+1)); echo $x >> f; sleep 120`})
				inflight <- err
			}()
			for {
				code, m, err := clusterDo(ctx, "GET", nodes[2].url+"/health", nil)
				if err != nil || code != http.StatusOK {
					t.Fatalf("health of n2: %d %v %v", code, m, err)
				}
				var h server.Health
				b, _ := json.Marshal(m)
				json.Unmarshal(b, &h)
				if h.Cluster != nil && h.Cluster.LeasesHeld == 1 {
					break
				}
				if ctx.Err() != nil {
					t.Fatal("n2 never took the lease")
				}
				time.Sleep(20 * time.Millisecond)
			}
			nodes[2].kill9(t)
			if err := <-inflight; err == nil {
				t.Fatal("the run in flight on the killed node answered")
			}
			alive = []*serveNode{nodes[0]}
		}
		n := alive[rng.IntN(len(alive))]
		if got := clusterRun(ctx, t, n, id, counter); got != fmt.Sprintf("%d\n", i) {
			t.Fatalf("run %d on %s: %q", i, n.name, got)
		}
	}
	code, m, err = clusterDo(ctx, "GET", nodes[0].url+"/v1/sessions/"+id+"/files?path=/home/user/f", nil)
	if err != nil || code != http.StatusOK {
		t.Fatalf("read f: %d %v %v", code, m, err)
	}
	var want strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if m["body"] != want.String() {
		t.Fatalf("f = %q", m["body"])
	}
}
