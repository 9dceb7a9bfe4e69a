package natscluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wasmbox/wasmbox/server"
	"github.com/wasmbox/wasmbox/server/natscluster"
)

const counter = `x=$((x+1)); echo $x >> f; echo $x`

// TestContinuity: 100 runs of the counter against random nodes of three,
// on a 3-server NATS cluster with replicas 3. One NATS server is killed
// after a third of the runs (no commit is lost: R3) and one node crashes
// after two thirds (the next request on another node sees the last
// committed run). Every run sees the next number and f ends with 1..100.
func TestContinuity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // watchdog
	defer cancel()
	nc := startNATS(t, 3)
	nodes := []*node{startNode(t, "a", nc.URLs()), startNode(t, "b", nc.URLs()), startNode(t, "c", nc.URLs())}
	id := createSession(t, nodes[0])
	alive := slices.Clone(nodes)
	rng := rand.New(rand.NewPCG(1, 2))
	const runs = 100
	for i := 1; i <= runs; i++ {
		switch i {
		case 34:
			nc.Kill(2)
		case 67:
			nodes[2].crash()
			alive = nodes[:2]
		}
		n := alive[rng.IntN(len(alive))]
		r := runRetry(ctx, t, n, id, counter)
		if r.Stdout != fmt.Sprintf("%d\n", i) || r.ExitCode != 0 {
			t.Fatalf("run %d on %s: %+v", i, n.name, r)
		}
	}
	checkCounter(t, readFile(ctx, t, alive[0], id, "/home/user/f"), runs)

	// The cluster's view in /health and /metrics.
	code, b, err := do(ctx, "GET", nodes[0].url+"/health", nil)
	var h server.Health
	if err != nil || code != http.StatusOK || json.Unmarshal(b, &h) != nil || h.Cluster == nil {
		t.Fatalf("health: %d %s %v", code, b, err)
	}
	if h.Cluster.Node != "a" || h.Cluster.NATS != "CONNECTED" || h.Cluster.Commits == 0 || h.Cluster.CommitMS.Max <= 0 || h.Status != "ok" {
		t.Fatalf("health: %s", b)
	}
	// A node keeps a lease after a request, and gives it back once
	// idle (Config.LeaseIdle): the gauge comes back to 0.
	for {
		code, b, err = do(ctx, "GET", nodes[0].url+"/metrics", nil)
		if err != nil || code != http.StatusOK {
			t.Fatalf("metrics: %d %v", code, err)
		}
		if strings.Contains(string(b), "wasmbox_cluster_leases_held 0") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("node a never gave its idle lease back")
		case <-time.After(100 * time.Millisecond):
		}
	}
	for _, m := range []string{"wasmbox_cluster_commit_seconds_count", `wasmbox_cluster_connected{node="a"} 1`, "wasmbox_cluster_resume_seconds_count"} {
		if !strings.Contains(string(b), m) {
			t.Fatalf("metrics lack %q", m)
		}
	}
}

// TestCommitRace: two leases on one revision (the first node's lease
// vanished under it, as when JetStream expires it while the node is
// stalled) both commit at once: exactly one commit wins each revision, the
// other gets ErrConflict, and the winner's snapshot is what is loaded next.
func TestCommitRace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // watchdog
	defer cancel()
	nc := startNATS(t, 3)
	open := func(name string) *natscluster.Cluster {
		c, err := natscluster.Open(ctx, natscluster.Config{URLs: nc.URLs(), Node: name, Replicas: 3, LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := open("a"), open("b")
	const id = "race-session"
	if err := a.Create(ctx, id, 10); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(a.Conn())
	if err != nil {
		t.Fatal(err)
	}
	leases, err := js.KeyValue(ctx, "wasmbox_leases")
	if err != nil {
		t.Fatal(err)
	}
	wins := map[string]int{}
	// Odd rounds commit snapshots too large to be kept in the record
	// (the object store), even rounds small ones (inline).
	payload := func(round, i int) []byte {
		b := []byte(fmt.Sprintf("round %d by %d", round, i))
		if round%2 == 1 {
			rng := rand.New(rand.NewPCG(uint64(round), uint64(i)))
			for len(b) < natscluster.MaxInline+64<<10 {
				b = append(b, byte(rng.Uint32()))
			}
		}
		return b
	}
	for round := range 20 {
		la, err := a.Acquire(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		// A's lease is gone from the bucket; B takes one.
		if err := leases.Purge(ctx, "l."+id); err != nil {
			t.Fatal(err)
		}
		lb, err := b.Acquire(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if la.Snapshot() != lb.Snapshot() {
			t.Fatalf("round %d: the leases loaded %q and %q", round, la.Snapshot(), lb.Snapshot())
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, l := range []server.Lease{la, lb} {
			wg.Go(func() { errs[i] = l.Commit(ctx, payload(round, i)) })
		}
		wg.Wait()
		ok := 0
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
				winner = i
			case !errors.Is(err, server.ErrConflict):
				t.Fatalf("round %d: commit %d: %v", round, i, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d commits won, want exactly 1 (%v)", round, ok, errs)
		}
		wins[string(rune('a'+winner))]++
		la.Release()
		lb.Release()
		l, err := a.Acquire(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		data, err := l.Load(ctx)
		l.Release()
		if err != nil || !bytes.Equal(data, payload(round, winner)) {
			t.Fatalf("round %d: loaded %d bytes %q... %v, want the winner's (%d)", round, len(data), data[:min(len(data), 20)], err, winner)
		}
	}
	t.Logf("wins: %v", wins)

	// The session's deletion leaves nothing of it: no snapshot object,
	// no chunk (a loser's chunks stay until then: a chunk's key is its
	// content, so a loser cannot tell its chunks from the winner's).
	l, err := a.Acquire(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	l.Release()
	chunks, err := js.KeyValue(ctx, "wasmbox_chunks")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := js.ObjectStore(ctx, "wasmbox_snapshots")
	if err != nil {
		t.Fatal(err)
	}
	for {
		list, err := objs.List(ctx)
		if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
			t.Fatal(err)
		}
		keys, err := chunks.ListKeysFiltered(ctx, "c."+id+".*")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for range keys.Keys() {
			n++
		}
		if len(list) == 0 && n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d snapshot objects and %d chunks left after the deletion, want none", len(list), n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestRaceHTTP: clients hammer one session through two nodes at once.
// Every answer is the run (200) or 409 (session_busy: the other node holds
// the lease; conflict: the commit lost), the 200s saw distinct values, one
// per commit, and f holds exactly them: nothing was merged or lost.
func TestRaceHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // watchdog
	defer cancel()
	nc := startNATS(t, 3)
	nodes := []*node{startNode(t, "a", nc.URLs()), startNode(t, "b", nc.URLs())}
	id := createSession(t, nodes[0])
	var mu sync.Mutex
	var seen []int
	conflicts := 0
	var wg sync.WaitGroup
	for c := range 4 {
		n := nodes[c%2]
		wg.Go(func() {
			for range 8 {
				code, r, err := run(ctx, n, id, counter)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				switch {
				case code == http.StatusOK:
					v, _ := strconv.Atoi(strings.TrimSpace(r.Stdout))
					seen = append(seen, v)
				case code == http.StatusConflict && (r.Code == "session_busy" || r.Code == "conflict"):
					conflicts++
				default:
					t.Errorf("run on %s: %d %+v", n.name, code, r)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	slices.Sort(seen)
	for i, v := range seen {
		if v != i+1 {
			t.Fatalf("the runs that answered 200 saw %v, want 1..%d", seen, len(seen))
		}
	}
	checkCounter(t, readFile(ctx, t, nodes[1], id, "/home/user/f"), len(seen))
	t.Logf("%d runs committed, %d answered 409", len(seen), conflicts)
}

// TestPartition: a node cut off from NATS while it runs a session stops:
// its run is cancelled once its lease cannot be renewed (503 lease_lost,
// nothing committed), it refuses the session meanwhile, another node
// takes the session over from the last commit, and once healed the node
// does not serve its stale copy.
func TestPartition(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // watchdog
	defer cancel()
	nc := startNATS(t, 3)
	b := startNode(t, "b", nc.URLs())
	p := newProxy(t, strings.TrimPrefix(nc.Server(0).ClientURL(), "nats://"))
	a := startNode(t, "a", p.url(), nats.DontRandomize(), nats.IgnoreDiscoveredServers())
	id := createSession(t, a)
	if r := runRetry(ctx, t, a, id, `echo committed > g; echo ok`); r.Stdout != "ok\n" {
		t.Fatalf("first run: %+v", r)
	}

	type result struct {
		code int
		r    runResp
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, r, err := run(ctx, a, id, `echo uncommitted > g; sleep 120`)
		done <- result{code, r, err}
	}()
	// Wait until A runs it (A's /health: A keeps the lease from the
	// first run on, so its run must be in progress), then B is told the
	// owner: A does not give up a lease in use.
	for {
		code, b, err := do(ctx, "GET", a.url+"/health", nil)
		var h server.Health
		if err != nil || code != http.StatusOK || json.Unmarshal(b, &h) != nil || h.Cluster == nil {
			t.Fatalf("health: %d %s %v", code, b, err)
		}
		if h.Cluster.LeasesHeld == 1 && h.Pool.Interactive.Active == 1 {
			break
		}
		select {
		case res := <-done:
			t.Fatalf("A's run ended early: %d %+v %v", res.code, res.r, res.err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if code, r, err := run(ctx, b, id, `true`); err != nil || code != http.StatusConflict || r.Code != "session_busy" || r.Owner != "a" {
		t.Fatalf("B while A holds the lease: %d %+v %v, want 409 session_busy owner a", code, r, err)
	}
	p.setCut(true)
	res := <-done
	if res.err != nil || res.code != http.StatusServiceUnavailable || res.r.Code != "lease_lost" {
		t.Fatalf("partitioned run: %d %+v %v, want 503 lease_lost", res.code, res.r, res.err)
	}
	// A tells a readiness probe that it cannot serve; B can.
	if code, body, err := do(ctx, "GET", a.url+"/health?ready", nil); err != nil || code != http.StatusServiceUnavailable || !strings.Contains(string(body), `"status":"cluster_unavailable"`) {
		t.Fatalf("partitioned node's readiness: %d %s %v", code, body, err)
	}
	if code, body, err := do(ctx, "GET", b.url+"/health?ready", nil); err != nil || code != http.StatusOK {
		t.Fatalf("B's readiness: %d %s %v", code, body, err)
	}
	// A serves nothing of the session while partitioned.
	if code, r, err := run(ctx, a, id, `cat g`); err != nil || code != http.StatusServiceUnavailable {
		t.Fatalf("partitioned node answered %d %+v %v", code, r, err)
	}
	// B takes over from the last commit once the lease expires.
	if r := runRetry(ctx, t, b, id, `cat g; echo b >> h`); r.Stdout != "committed\n" {
		t.Fatalf("after the partition B sees %+v, want the last commit", r)
	}
	p.setCut(false)
	if r := runRetry(ctx, t, a, id, `cat g h`); r.Stdout != "committed\nb\n" {
		t.Fatalf("healed A sees %+v, want B's commit", r)
	}
}

// TestSessionCapAndDelete: the session cap counts across nodes, a
// deleted session is gone on every node and frees its place.
func TestSessionCapAndDelete(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // watchdog
	defer cancel()
	nc := startNATS(t, 1)
	nodes := []*node{startNode(t, "a", nc.URLs()), startNode(t, "b", nc.URLs())}
	var ids []string
	for i := range 16 {
		ids = append(ids, createSession(t, nodes[i%2]))
	}
	if code, b, _ := do(ctx, "POST", nodes[1].url+"/v1/sessions", nil); code != http.StatusTooManyRequests {
		t.Fatalf("17th session: %d %s, want 429", code, b)
	}
	if code, b, _ := do(ctx, "DELETE", nodes[1].url+"/v1/sessions/"+ids[0], nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, b)
	}
	if code, _, _ := run(ctx, nodes[0], ids[0], "true"); code != http.StatusNotFound {
		t.Fatalf("run on a deleted session: %d", code)
	}
	createSession(t, nodes[0])
	if code, _, _ := run(ctx, nodes[0], "no-such-session", "true"); code != http.StatusNotFound {
		t.Fatalf("unknown session: %d", code)
	}
	if code, _, _ := run(ctx, nodes[0], "bad.id", "true"); code != http.StatusNotFound {
		t.Fatalf("bad id: %d", code)
	}
}

// TestSoak runs the counter from 4 clients on 4 sessions through 3
// nodes for -cluster.soak runs each; one NATS server is killed when the
// first client is halfway.
func TestSoak(t *testing.T) {
	if *soak == 0 {
		t.Skip("soak: go test ./server/natscluster -run TestSoak -cluster.soak 500")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour) // watchdog
	defer cancel()
	nc := startNATS(t, 3)
	nodes := []*node{startNode(t, "a", nc.URLs()), startNode(t, "b", nc.URLs()), startNode(t, "c", nc.URLs())}
	var wg sync.WaitGroup
	for c := range 4 {
		id := createSession(t, nodes[c%3])
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for i := 1; i <= *soak; i++ {
				if c == 0 && i == *soak/2 {
					nc.Kill(2)
				}
				r := runRetry(ctx, t, nodes[rng.IntN(3)], id, counter)
				if r.Stdout != fmt.Sprintf("%d\n", i) {
					t.Errorf("client %d run %d: %+v", c, i, r)
					return
				}
			}
			checkCounter(t, readFile(ctx, t, nodes[0], id, "/home/user/f"), *soak)
		})
	}
	wg.Wait()
}

// TestSequentialNeverBusy: a client that waits for each answer is never
// told that the session is busy, on the same node or moving between
// nodes: the lease of the previous request is released before its answer,
// and the release is seen by the next request wherever it lands (leases
// and records are read from the stream's leader, not from a replica that
// may lag).
func TestSequentialNeverBusy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // watchdog
	defer cancel()
	nc := startNATS(t, 3)
	nodes := []*node{startNode(t, "a", nc.URLs()), startNode(t, "b", nc.URLs()), startNode(t, "c", nc.URLs())}
	id := createSession(t, nodes[0])
	for i := 1; i <= 45; i++ {
		n := nodes[0]
		if i > 15 {
			n = nodes[i%3] // round robin after 15 on one node
		}
		code, r, err := run(ctx, n, id, counter)
		if err != nil || code != http.StatusOK || r.Stdout != fmt.Sprintf("%d\n", i) {
			t.Fatalf("run %d on %s: %d %+v %v", i, n.name, code, r, err)
		}
	}
}

// TestSessionTTLClusterWide: a session idle for longer than the TTL is
// deleted from the cluster by a node's reaper (under its lease), whichever
// node used it last, and gives its place under the cap back.
func TestSessionTTLClusterWide(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // watchdog
	defer cancel()
	nc := startNATS(t, 1)
	a := startNodeTTL(t, "a", nc.URLs(), 300*time.Millisecond)
	id := createSession(t, a)
	if code, r, err := run(ctx, a, id, `echo x > f`); err != nil || code != http.StatusOK {
		t.Fatalf("run: %d %+v %v", code, r, err)
	}
	for {
		code, r, err := run(ctx, a, id, `true`)
		if err != nil {
			t.Fatal(err)
		}
		if code == http.StatusNotFound {
			break // expired and deleted
		}
		if code != http.StatusOK && !retriable(code, r) {
			t.Fatalf("run: %d %+v", code, r)
		}
		// Each run counts as a use: wait longer than the TTL before the
		// next one.
		select {
		case <-ctx.Done():
			t.Fatal("the session never expired")
		case <-time.After(time.Second):
		}
	}
	// All 16 places are free again.
	for range 16 {
		createSession(t, a)
	}
}

// TestTamperedSnapshotRefused: a snapshot whose bytes do not match the
// SHA-256 in its record (inline or in the object store) is refused with
// an error, never restored.
func TestTamperedSnapshotRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // watchdog
	defer cancel()
	nc := startNATS(t, 1)
	c, err := natscluster.Open(ctx, natscluster.Config{URLs: nc.URLs(), Node: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	js, err := jetstream.New(c.Conn())
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := js.KeyValue(ctx, "wasmbox_sessions")
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{10, natscluster.MaxInline + 1<<10} {
		id := fmt.Sprintf("tamper-%d", size)
		if err := c.Create(ctx, id, 10); err != nil {
			t.Fatal(err)
		}
		l, err := c.Acquire(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, size)
		rng := rand.New(rand.NewPCG(1, uint64(size)))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		if err := l.Commit(ctx, data); err != nil {
			t.Fatal(err)
		}
		l.Release()
		// Change the record's checksum, as a corrupted or forged
		// record would.
		e, err := sessions.Get(ctx, "s."+id)
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		json.Unmarshal(e.Value(), &rec)
		rec["sum"] = strings.Repeat("0", 64)
		b, _ := json.Marshal(rec)
		if _, err := sessions.Put(ctx, "s."+id, b); err != nil {
			t.Fatal(err)
		}
		l, err = c.Acquire(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Load(ctx)
		l.Release()
		if err == nil || !strings.Contains(err.Error(), "checksum mismatch") || got != nil {
			t.Fatalf("size %d: Load of a tampered snapshot: %d bytes, %v", size, len(got), err)
		}
	}
}
