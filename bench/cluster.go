package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmbox/wasmbox/sandbox"
	"github.com/wasmbox/wasmbox/server"
	"github.com/wasmbox/wasmbox/server/natscluster"
	"github.com/wasmbox/wasmbox/server/natscluster/embedded"
	"github.com/wasmbox/wasmbox/server/sandboxbackend"
)

// measureCluster measures `wasmbox serve --cluster` on a 3-server NATS
// cluster (JetStream, replicas 3) started in the process on loopback: the
// commit of a changed session by the size of its files, the resume of a
// session on a node that does not hold it, and runs per second through 1,
// 2 and 3 serve nodes.
func measureCluster(ctx context.Context, e *Env) ([]Row, error) {
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	nc, err := embedded.Start(sctx, filepath.Join(e.Dir, "nats"), 3)
	cancel()
	if err != nil {
		return nil, err
	}
	defer nc.Shutdown()
	open := func(name string) (*natscluster.Cluster, error) {
		return natscluster.Open(ctx, natscluster.Config{URLs: nc.URLs(), Node: name, Replicas: 3})
	}
	a, err := open("bench-a")
	if err != nil {
		return nil, err
	}
	defer a.Close()
	b, err := open("bench-b")
	if err != nil {
		return nil, err
	}
	defer b.Close()

	var rows []Row
	rng := rand.New(rand.NewPCG(1, 1))
	for _, sz := range []struct {
		name string
		n    int
	}{{"1 KB", 1 << 10}, {"1 MB", 1 << 20}, {"10 MB", 10 << 20}} {
		m, err := measureCommitResume(ctx, e, a, b, sz.n, rng)
		if err != nil {
			return rows, fmt.Errorf("%s session: %w", sz.name, err)
		}
		rows = append(rows,
			row("commit, "+sz.name+" of files", Duration, m.commit, nil,
				fmt.Sprintf("a run that changed a few bytes, as serve commits it: the sandbox's incremental snapshot in parts (%s; what did not change is not read or hashed again), parts the record's manifest lacks stored (the whole snapshot zstd in the record under 64 KiB), CAS on the record; R3", fmtSize(m.snapLen))),
			row("  of which the snapshot, "+sz.name, Duration, m.snapOnly, nil, "sandbox.SnapshotParts on the node, before the cluster's part"),
			row("  unchanged session, "+sz.name, Duration, m.unchanged, nil, fmt.Sprintf("a run that changed no file (`true`), as serve handles it: SnapshotParts, the parts' sums compared, a commit when they differ (%d of %d committed: GNU bash's memory holds the shell's state and changes every run, and only the regions it dirtied are new)", m.unchangedCommits, len(m.unchanged))),
			row("commit of the whole snapshot, "+sz.name, Duration, m.whole, nil,
				"the same change committed as before parts: sandbox.Snapshot, cut into chunks and hashed whole, chunks stored, CAS"),
			row("resume on a new node, "+sz.name+" of files", Duration, m.resume, nil,
				"lease, record and chunks read, new sandbox restored from it, and its first snapshot parts (hashes every file once)"))
	}
	for nodes := 0; nodes <= 3; nodes++ {
		r, err := measureClusterThroughput(ctx, e, nc.URLs(), nodes)
		if err != nil {
			return rows, fmt.Errorf("%d nodes: %w", nodes, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func fmtSize(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}

type commitTimes struct {
	commit, snapOnly, unchanged, whole, resume []float64
	snapLen                                    int
	unchangedCommits                           int // of the unchanged session's runs
}

// measureCommitResume makes a session with n bytes of files (random,
// so that compression does not hide the size) and times commits of a
// small change to it (on cluster a), in parts as serve makes them and
// whole, and resumes of it (on cluster b).
func measureCommitResume(ctx context.Context, e *Env, a, b *natscluster.Cluster, n int, rng *rand.Rand) (m commitTimes, err error) {
	sb, err := e.newSandbox(ctx)
	if err != nil {
		return m, err
	}
	defer sb.Close()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	if err := sb.WriteFile("/home/user/data", data, 0o644); err != nil {
		return m, err
	}
	parts := func() ([]server.SnapshotPart, error) {
		ps, err := sb.SnapshotParts()
		out := make([]server.SnapshotPart, len(ps))
		for i, p := range ps {
			out[i] = server.SnapshotPart(p)
		}
		return out, err
	}
	id := fmt.Sprintf("bench-%d-%d", n, rng.Uint32())
	if err := a.Create(ctx, id, 1<<20); err != nil {
		return m, err
	}
	reps := e.reps(3, 20)
	// Commits as serve makes them: one lease kept across runs (a node
	// keeps the lease of a session in use).
	l, err := a.Acquire(ctx, id)
	if err != nil {
		return m, err
	}
	pl := l.(server.PartsLease)
	counter := 0
	run := func(script string) error {
		res, err := sb.Run(ctx, script)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("%q: exit %d: %s", script, res.ExitCode, res.Stderr)
		}
		return err
	}
	fail := func(err error) (commitTimes, error) {
		l.Release()
		return m, err
	}
	// The session as committed before the runs timed: the first commit
	// stores every part.
	ps, err := parts()
	if err == nil {
		err = pl.CommitParts(ctx, ps)
	}
	if err != nil {
		return fail(err)
	}
	// Runs that change a file, each committed in parts as serve does,
	// one after the other (a commit waits for the cluster's copy of the
	// last one's chunks, as serve's next commit does).
	for range reps {
		counter++
		if err := run(fmt.Sprintf("echo %d > /home/user/counter", counter)); err != nil {
			return fail(err)
		}
		start := time.Now()
		ps, err := parts()
		snap := time.Since(start)
		if err == nil {
			err = pl.CommitParts(ctx, ps)
			m.commit = append(m.commit, time.Since(start).Seconds())
			m.snapOnly = append(m.snapOnly, snap.Seconds())
		}
		if err != nil {
			return fail(err)
		}
		m.snapLen = 32
		for _, p := range ps {
			m.snapLen += len(p.Data)
		}
	}
	// Runs that change no file, as serve handles them: the parts,
	// compared by their sums with the last commit's, and committed when
	// they differ. GNU bash's memory changes with every
	// run (its command counters, malloc's free lists) and holds the
	// shell's state (a run that only sets a variable changes nothing
	// else), so serve commits it: the regions of bash's memory the run
	// dirtied, the rest reused.
	key := partsKeyOf(ps)
	for range reps {
		if err := run("true"); err != nil {
			return fail(err)
		}
		u0 := time.Now()
		ps, err := parts()
		if err == nil && partsKeyOf(ps) != key {
			key = partsKeyOf(ps)
			err = pl.CommitParts(ctx, ps)
			m.unchangedCommits++
		}
		m.unchanged = append(m.unchanged, time.Since(u0).Seconds())
		if err != nil {
			return fail(err)
		}
	}
	// The same change committed whole, as before parts.
	for range reps {
		counter++
		if err := run(fmt.Sprintf("echo %d > /home/user/counter", counter)); err != nil {
			return fail(err)
		}
		start := time.Now()
		var buf bytes.Buffer
		err := sb.Snapshot(&buf)
		if err == nil {
			err = l.Commit(ctx, buf.Bytes())
		}
		m.whole = append(m.whole, time.Since(start).Seconds())
		if err != nil {
			return fail(err)
		}
	}
	l.Release()
	last := counter

	// Resumes on the other node: a sandbox made from the last commit.
	for range reps {
		start := time.Now()
		lb, err := b.Acquire(ctx, id)
		if err != nil {
			return m, err
		}
		data, err := lb.Load(ctx)
		var rs *sandbox.Sandbox
		if err == nil {
			rs, err = e.newSandbox(ctx)
		}
		if err == nil {
			err = rs.Restore(bytes.NewReader(data))
		}
		if err == nil {
			// As serve resumes: the restored sandbox's parts, which
			// tell the next run's commit what changed.
			_, err = rs.SnapshotParts()
		}
		m.resume = append(m.resume, time.Since(start).Seconds())
		lb.Release()
		if err != nil {
			if rs != nil {
				rs.Close()
			}
			return m, err
		}
		got, err := rs.ReadFile("/home/user/counter")
		rs.Close()
		if err != nil || string(got) != fmt.Sprintf("%d\n", last) {
			return m, fmt.Errorf("resumed session has counter %q (%v), want %d", got, err, last)
		}
	}
	if l, err := a.Acquire(ctx, id); err == nil {
		l.Delete(ctx)
		l.Release()
	}
	return m, nil
}

// partsKeyOf identifies a snapshot in parts by their sums.
func partsKeyOf(ps []server.SnapshotPart) [32]byte {
	h := sha256.New()
	for _, p := range ps {
		h.Write(p.Sum[:])
	}
	return [32]byte(h.Sum(nil))
}

// measureClusterThroughput serves with `nodes` serve nodes (the real
// server handler on loopback HTTP) and has 6 clients, each with its own
// session kept on one node (a load balancer with session affinity), run
// the counter for a while. Every run commits.
//
// nodes 0 is the baseline: one server without a cluster.
func measureClusterThroughput(ctx context.Context, e *Env, urls string, nodes int) (Row, error) {
	var urlsOf []string
	for i := range max(nodes, 1) {
		cfg := server.Config{
			Backend:     sandboxbackend.Backend{Opts: []sandbox.Option{sandbox.WithEngine(e.Engine)}},
			MaxSessions: 1 << 20,
		}
		if nodes > 0 {
			cl, err := natscluster.Open(ctx, natscluster.Config{URLs: urls, Node: fmt.Sprintf("bench-node-%d", i), Replicas: 3})
			if err != nil {
				return Row{}, err
			}
			defer cl.Close()
			cfg.Cluster = cl
		}
		srv, err := server.New(cfg)
		if err != nil {
			return Row{}, err
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return Row{}, err
		}
		go srv.Serve(l)
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			srv.Shutdown(sctx)
		}()
		urlsOf = append(urlsOf, "http://"+l.Addr().String())
	}
	const clients = 6
	ids := make([]string, clients)
	for c := range clients {
		var r struct{ ID string }
		if err := post(ctx, urlsOf[c%len(urlsOf)]+"/v1/sessions", nil, &r); err != nil {
			return Row{}, err
		}
		ids[c] = r.ID
	}
	span := e.span(2*time.Second, 10*time.Second)
	deadline := time.Now().Add(span)
	var runs atomic.Int64
	var lat []float64
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, clients)
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			for i := 1; time.Now().Before(deadline); i++ {
				t0 := time.Now()
				var r server.RunResponse
				err := post(ctx, urlsOf[c%len(urlsOf)]+"/v1/sessions/"+ids[c]+"/run", map[string]any{"script": `x=$((x+1)); echo $x >> f; echo $x`}, &r)
				if err == nil && r.Stdout != fmt.Sprintf("%d\n", i) {
					err = fmt.Errorf("run %d saw %q", i, r.Stdout)
				}
				if err != nil {
					errs[c] = err
					return
				}
				runs.Add(1)
				mu.Lock()
				lat = append(lat, time.Since(t0).Seconds())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return Row{}, err
	}
	name, note := fmt.Sprintf("runs/s, %d serve node(s)", nodes), fmt.Sprintf("%d clients, a session each, kept on one node; every run commits; latency per run", clients)
	if nodes == 0 {
		name, note = "runs/s, 1 serve without --cluster", fmt.Sprintf("baseline: the same %d clients and runs, sessions in memory; latency per run", clients)
	}
	r := row(name, Duration, lat, nil, note)
	r.PerSecond = float64(runs.Load()) / elapsed.Seconds()
	return r, nil
}

// post sends a JSON request and decodes a 2xx JSON answer into out.
func post(ctx context.Context, url string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, "POST", url, rd)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %d %s", strings.TrimPrefix(url, "http://"), resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}
