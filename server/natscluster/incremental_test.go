package natscluster_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wasmbox/wasmbox/server"
	"github.com/wasmbox/wasmbox/server/natscluster"
)

// streamMsgs is the number of messages ever stored in a stream (its last
// sequence), 0 for a stream that does not exist.
func streamMsgs(ctx context.Context, t *testing.T, js jetstream.JetStream, name string) uint64 {
	t.Helper()
	s, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

func randomBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestIncrementalCommit: a commit of a 1 MiB session of which 1 KiB
// changed stores a few chunks beside the record, not the megabyte again
// (before incremental snapshots: 9 object store messages or more for
// every commit), and another node loads exactly the new bytes.
func TestIncrementalCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // watchdog
	defer cancel()
	nc := startNATS(t, 1)
	a, err := natscluster.Open(ctx, natscluster.Config{URLs: nc.URLs(), Node: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := natscluster.Open(ctx, natscluster.Config{URLs: nc.URLs(), Node: "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	js, err := jetstream.New(a.Conn())
	if err != nil {
		t.Fatal(err)
	}
	stored := func() uint64 {
		return streamMsgs(ctx, t, js, "KV_wasmbox_chunks") + streamMsgs(ctx, t, js, "OBJ_wasmbox_snapshots")
	}
	const id = "incremental"
	if err := a.Create(ctx, id, 10); err != nil {
		t.Fatal(err)
	}
	snap := randomBytes(1<<20, 7)
	l, err := a.Acquire(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(ctx, snap); err != nil {
		t.Fatal(err)
	}
	l.Release()
	for round := range 3 {
		// A new lease each round: what is stored is known from the
		// record, not from this node's memory.
		l, err := a.Acquire(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		before := stored()
		for i := range 3 {
			copy(snap[(300+100*i)<<10:], randomBytes(1<<10, uint64(100+10*round+i)))
			if err := l.Commit(ctx, snap); err != nil {
				t.Fatal(err)
			}
		}
		l.Release() // waits for the copy of the last commit's fresh chunks into the bucket
		// Each commit stores the chunks it changed (1 to 3 of about 64
		// KiB: the 1 KiB and the end of the snapshot). The first commit
		// of a lease finds the last commit's fresh chunks in the bucket
		// (one NATS server: no replica lags), so it does not store them
		// again.
		n := stored() - before
		t.Logf("round %d: 3 commits stored %d messages", round, n)
		if n < 3 || n > 3*3 {
			t.Fatalf("round %d: 3 commits of a 1 KiB change each of a 1 MiB session stored %d messages, want 3..9 (a whole snapshot is 9 or more)", round, n)
		}
		lb, err := b.Acquire(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := lb.Load(ctx)
		lb.Release()
		if err != nil || !bytes.Equal(got, snap) {
			t.Fatalf("round %d: node b loads %d bytes (%v), want the %d committed", round, len(got), err, len(snap))
		}
	}
}

// TestHostileChunksRefused: chunks rewritten by someone with access to
// the buckets (bytes that do not match their SHA-256, an unknown codec,
// a zstd frame that inflates past the chunk's length) are refused with a
// clear error, never restored, and a decompression bomb is cut at the
// length the manifest gives.
func TestHostileChunksRefused(t *testing.T) {
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
	chunks, err := js.KeyValue(ctx, "wasmbox_chunks")
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil, zstd.WithWindowSize(1<<15))
	bomb := enc.EncodeAll(make([]byte, 64<<20), []byte{1}) // 64 MiB of zeros, a few KiB stored
	wide, _ := zstd.NewWriter(nil, zstd.WithWindowSize(8<<20))
	wideBomb := wide.EncodeAll(make([]byte, 64<<20), []byte{1}) // the same with an 8 MiB window
	for i, tc := range []struct {
		name, value, want string
	}{
		{"other bytes", "", "checksum mismatch"},
		{"unknown codec", "\x09abc", "unknown codec 9"},
		{"zstd bomb", string(bomb), "the manifest says"},
		{"zstd bomb, wide window", string(wideBomb), "decompressing: window size exceeded"},
		{"empty", "", "stored chunk of 0 bytes"},
	} {
		id := fmt.Sprintf("hostile-%d", i)
		if err := c.Create(ctx, id, 10); err != nil {
			t.Fatal(err)
		}
		l, err := c.Acquire(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Commit(ctx, randomBytes(300<<10, uint64(i))); err != nil {
			t.Fatal(err)
		}
		l.Release()
		lister, err := chunks.ListKeysFiltered(ctx, "c."+id+".*")
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range lister.Keys() {
			keys = append(keys, k)
		}
		if len(keys) < 2 {
			t.Fatalf("%s: %d chunks for 300 KiB", tc.name, len(keys))
		}
		value := []byte(tc.value)
		if tc.value == "" && tc.want == "checksum mismatch" {
			// The stored chunk with one byte changed.
			e, err := chunks.Get(ctx, keys[0])
			if err != nil {
				t.Fatal(err)
			}
			value = bytes.Clone(e.Value())
			value[len(value)-1] ^= 1
		}
		if _, err := chunks.Put(ctx, keys[0], value); err != nil {
			t.Fatal(err)
		}
		l, err = c.Acquire(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Load(ctx)
		l.Release()
		if err == nil || !strings.Contains(err.Error(), tc.want) || got != nil {
			t.Fatalf("%s: Load gave %d bytes, %v; want an error with %q", tc.name, len(got), err, tc.want)
		}
	}
}

// TestHostileManifestRefused: a manifest in the record that a forger
// made consistent with the record's checksum, but that lies (a size over
// the bound, a chunk count no manifest of its length can hold, chunk
// lengths that do not add up, an unknown version, a broken trailer), is
// refused before anything is allocated or read for it.
func TestHostileManifestRefused(t *testing.T) {
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
	for i, tc := range []struct {
		name string
		m    []byte
		want string
	}{
		{"size over the bound", natscluster.ForgeManifest(1, 1<<40, 1, nil), "bad size"},
		{"huge count", natscluster.ForgeManifest(1, 1<<20, 1<<40, nil), "bad chunk count"},
		{"lengths", natscluster.ForgeManifest(1, 1<<20, 1, []uint64{1 << 10}), "do not add up"},
		{"chunk over the bound", natscluster.ForgeManifest(1, 1<<20, 1, []uint64{1 << 20}), "bad chunk entry"},
		{"version", natscluster.ForgeManifest(3, 1<<10, 1, []uint64{1 << 10}), "unknown version 3"},
		// Version 2 (no trailer: Load appends 32 bytes) is bounded with
		// the trailer counted.
		{"size over the bound, v2", natscluster.ForgeManifest(2, natscluster.MaxSnapshotBytes, 1, nil), "bad size"},
		{"lengths, v2", natscluster.ForgeManifest(2, 1<<20, 1, []uint64{1 << 10}), "do not add up"},
		{"magic", natscluster.ForgeManifest(1, 1<<10, 1, []uint64{1 << 10})[1:], "bad magic"},
		{"trailer", flipLast(natscluster.ForgeManifest(1, 1<<10, 1, []uint64{1 << 10})), "checksum mismatch"},
	} {
		id := fmt.Sprintf("manifest-%d", i)
		if err := c.Create(ctx, id, 10); err != nil {
			t.Fatal(err)
		}
		e, err := sessions.Get(ctx, "s."+id)
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		json.Unmarshal(e.Value(), &rec)
		rec["snapshot"] = id + "/forged"
		rec["manifest"] = tc.m
		rec["sum"] = natscluster.RecordSum(tc.m)
		b, _ := json.Marshal(rec)
		if _, err := sessions.Put(ctx, "s."+id, b); err != nil {
			t.Fatal(err)
		}
		l, err := c.Acquire(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Load(ctx)
		l.Release()
		if err == nil || !strings.Contains(err.Error(), "corrupt snapshot manifest") || !strings.Contains(err.Error(), tc.want) || got != nil {
			t.Fatalf("%s: Load gave %d bytes, %v; want a corrupt manifest error with %q", tc.name, len(got), err, tc.want)
		}
	}
}

// TestLeaseKept: a node keeps a session's lease between requests, so
// that its next requests take no lease and load nothing; another node
// that wants the session gets it at once (the holder yields), and a node
// that shuts down gives its leases back.
func TestLeaseKept(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // watchdog
	defer cancel()
	nc := startNATS(t, 1)
	a, b := startNode(t, "a", nc.URLs()), startNode(t, "b", nc.URLs())
	id := createSession(t, a)
	for i := 1; i <= 10; i++ {
		code, r, err := run(ctx, a, id, counter)
		if err != nil || code != http.StatusOK || r.Stdout != fmt.Sprintf("%d\n", i) {
			t.Fatalf("run %d on a: %d %+v %v", i, code, r, err)
		}
	}
	t.Log("10 runs done", time.Now().Format("15:04:05.000"))
	if n := a.acquires.Load(); n != 1 {
		t.Fatalf("10 runs in a row on node a took the lease %d times, want 1", n)
	}
	if st := a.cl.Status(); st.LeasesHeld != 1 {
		t.Fatalf("node a holds %d leases after its runs, want 1 (kept)", st.LeasesHeld)
	}
	_, body, _ := do(ctx, "GET", a.url+"/metrics", nil)
	if !strings.Contains(string(body), "wasmbox_cluster_resume_seconds_count 0") {
		t.Fatal("node a resumed a session it held")
	}
	// b wants it: a yields at once, b is never told busy.
	code, r, err := run(ctx, b, id, counter)
	if err != nil || code != http.StatusOK || r.Stdout != "11\n" {
		t.Fatalf("run 11 on b: %d %+v %v", code, r, err)
	}
	if st := a.cl.Status(); st.LeasesHeld != 0 {
		t.Fatalf("node a holds %d leases after yielding, want 0", st.LeasesHeld)
	}
	t.Log("run 11 done", time.Now().Format("15:04:05.000"))
	b.stop()
	t.Log("b stopped", time.Now().Format("15:04:05.000"))
	if st := b.cl.Status(); st.LeasesHeld != 0 {
		t.Fatalf("node b holds %d leases after its shutdown, want 0", st.LeasesHeld)
	}
	code, r, err = run(ctx, a, id, counter)
	if err != nil || code != http.StatusOK || r.Stdout != "12\n" {
		t.Fatalf("run 12 on a: %d %+v %v", code, r, err)
	}
	t.Log("run 12 done", time.Now().Format("15:04:05.000"))
}

func flipLast(b []byte) []byte {
	b[len(b)-1] ^= 1
	return b
}

// partsOf cuts b into parts of n bytes with their sums.
func partsOf(b []byte, n int) []server.SnapshotPart {
	var parts []server.SnapshotPart
	for len(b) > 0 {
		k := min(n, len(b))
		parts = append(parts, server.SnapshotPart{Data: b[:k:k], Sum: sha256.Sum256(b[:k])})
		b = b[k:]
	}
	return parts
}

// TestCommitParts: a snapshot committed in parts (server.PartsLease) is
// loaded on another node as the parts followed by their SHA-256 (the
// trailer the parts leave out); a later commit that changed one part
// stores that part only; a small snapshot in parts is committed whole;
// and whole and part commits follow each other on one session.
func TestCommitParts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // watchdog
	defer cancel()
	nc := startNATS(t, 1)
	a, err := natscluster.Open(ctx, natscluster.Config{URLs: nc.URLs(), Node: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := natscluster.Open(ctx, natscluster.Config{URLs: nc.URLs(), Node: "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	js, err := jetstream.New(a.Conn())
	if err != nil {
		t.Fatal(err)
	}
	stored := func() uint64 {
		return streamMsgs(ctx, t, js, "KV_wasmbox_chunks") + streamMsgs(ctx, t, js, "OBJ_wasmbox_snapshots")
	}
	const id = "parts"
	if err := a.Create(ctx, id, 10); err != nil {
		t.Fatal(err)
	}
	withTrailer := func(body []byte) []byte {
		sum := sha256.Sum256(body)
		return append(append([]byte(nil), body...), sum[:]...)
	}
	loadOnB := func(step string, want []byte) {
		t.Helper()
		lb, err := b.Acquire(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := lb.Load(ctx)
		lb.Release()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: node b loads %d bytes (%v), want the %d committed", step, len(got), err, len(want))
		}
	}
	commit := func(step string, f func(l server.PartsLease) error) {
		t.Helper()
		l, err := a.Acquire(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		pl, ok := l.(server.PartsLease)
		if !ok {
			t.Fatal("a natscluster lease is not a server.PartsLease")
		}
		err = f(pl)
		l.Release()
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	body := randomBytes(1<<20, 11)
	commit("first", func(l server.PartsLease) error { return l.CommitParts(ctx, partsOf(body, 64<<10)) })
	loadOnB("first", withTrailer(body))

	before := stored()
	copy(body[500<<10:], randomBytes(100, 12))
	commit("one part changed", func(l server.PartsLease) error { return l.CommitParts(ctx, partsOf(body, 64<<10)) })
	// The changed part, copied into the bucket after the commit (and
	// maybe a fresh chunk of the commit before, which the new lease
	// could not find there yet): not the 16.
	if n := stored() - before; n > 3 {
		t.Fatalf("a commit that changed one part of 16 stored %d messages, want at most 3", n)
	}
	loadOnB("one part changed", withTrailer(body))

	// Whole, then parts again, then a small snapshot in parts.
	whole := withTrailer(randomBytes(300<<10, 13))
	commit("whole", func(l server.PartsLease) error { return l.Commit(ctx, whole) })
	loadOnB("whole", whole)
	commit("parts after whole", func(l server.PartsLease) error { return l.CommitParts(ctx, partsOf(body, 64<<10)) })
	loadOnB("parts after whole", withTrailer(body))
	small := randomBytes(1000, 14)
	commit("small", func(l server.PartsLease) error { return l.CommitParts(ctx, partsOf(small, 300)) })
	loadOnB("small", withTrailer(small))
	// Parts over the chunk bound are committed whole, not refused.
	commit("big parts", func(l server.PartsLease) error { return l.CommitParts(ctx, partsOf(body, 200<<10)) })
	loadOnB("big parts", withTrailer(body))
}

// commitsOf is the number of commits node n made (its /health).
func commitsOf(ctx context.Context, t *testing.T, n *node) uint64 {
	t.Helper()
	code, b, err := do(ctx, "GET", n.url+"/health", nil)
	var h server.Health
	if err != nil || code != http.StatusOK || json.Unmarshal(b, &h) != nil || h.Cluster == nil {
		t.Fatalf("health of %s: %d %s %v", n.name, code, b, err)
	}
	return h.Cluster.Commits
}

// TestUnchangedFilesNotStoredAgain: serve commits a sandbox in parts; a
// run that changed no file stores none of the files' chunks again, on the
// node that made the last commit and on a node that just resumed the
// session (its parts are those of the session restored); a run that
// rewrote a file stores it, and the next node sees it.
//
// (It was TestUnchangedRunNotCommitted, which asserted no commit at all
// and so ran the wasmbox interpreter's sessions. GNU bash, now the only
// shell, changes its memory with every run (its command counters,
// malloc's free lists), so every run commits its shell part; what must
// not be committed again is what did not change: here a 4 MiB file of
// random bytes, 64 chunks, against the few dozen at most of bash's record.)
func TestUnchangedFilesNotStoredAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // watchdog
	defer cancel()
	nc := startNATS(t, 1)
	a, b := startNode(t, "a", nc.URLs()), startNode(t, "b", nc.URLs())
	js, err := jetstream.New(a.nc)
	if err != nil {
		t.Fatal(err)
	}
	stored := func() uint64 {
		return streamMsgs(ctx, t, js, "KV_wasmbox_chunks") + streamMsgs(ctx, t, js, "OBJ_wasmbox_snapshots")
	}
	// 4 MiB of random bytes in chunks of at most 64 KiB (here ~200
	// messages). The file must take many more messages than a run that
	// changes no file stores (6-8 here; 18 once for "true" in CI's race
	// step, which crossed the line of a 1 MiB file's 16), so that only
	// storing the file again can reach fileChunks.
	const fileChunks = 64
	id := createSession(t, a)
	mustRun := func(n *node, script, want string) {
		t.Helper()
		code, r, err := run(ctx, n, id, script)
		if err != nil || code != http.StatusOK || r.Stdout != want {
			t.Fatalf("%q on %s: %d %+v %v", script, n.name, code, r, err)
		}
	}
	// storedBy is what the run of script on n stored.
	storedBy := func(n *node, script, want string) uint64 {
		t.Helper()
		before := stored()
		mustRun(n, script, want)
		d := stored() - before
		t.Logf("%q on %s stored %d messages", script, n.name, d)
		return d
	}
	mustRun(a, counter, "1\n")
	if d := storedBy(a, "head -c 4194304 /dev/urandom > big", ""); d < fileChunks {
		t.Fatalf("writing a 4 MiB file stored %d messages, want %d or more", d, fileChunks)
	}
	for _, script := range []string{"true", "cat big > /dev/null", "x=$x"} {
		if d := storedBy(a, script, ""); d >= fileChunks {
			t.Fatalf("node a: %q changed no file and stored %d messages: the file's chunks again", script, d)
		}
	}
	// b resumes the session: its first run changes no file either.
	if d := storedBy(b, "true", ""); d >= fileChunks {
		t.Fatalf("node b: a run that changed no file right after a resume stored %d messages", d)
	}
	mustRun(b, counter, "2\n")
	if d := storedBy(b, "head -c 4194304 /dev/urandom > big", ""); d < fileChunks {
		t.Fatalf("node b: rewriting the 4 MiB file stored %d messages, want %d or more", d, fileChunks)
	}
	mustRun(a, counter, "3\n")
	mustRun(a, "wc -c < big", "4194304\n")
}

// TestLostFenceAnswer: a commit whose write is not applied and whose
// answer is lost is settled by fencing (rewriting the revision it
// expected); when the fence's own answer is lost too, but it was
// applied, the commit is reported unavailable (nothing of it can apply
// any more), not as a lost race, and the lease knows the fence's
// revision: its next commit succeeds. (Before: 409 conflict, and the
// lease kept the stale revision, so its next commit conflicted too.)
func TestLostFenceAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // watchdog
	defer cancel()
	nc := startNATS(t, 1)
	c, err := natscluster.Open(ctx, natscluster.Config{URLs: nc.URLs(), Node: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const id = "fence"
	if err := c.Create(ctx, id, 10); err != nil {
		t.Fatal(err)
	}
	l, err := c.Acquire(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := l.Commit(ctx, []byte("first")); err != nil {
		t.Fatal(err)
	}
	natscluster.LoseUpdateAnswers(c, false, true) // the write lost, the fence applied
	err = l.Commit(ctx, []byte("second"))
	if err == nil || errors.Is(err, server.ErrConflict) || !errors.Is(err, server.ErrClusterUnavailable) {
		t.Fatalf("a commit whose fence was applied unanswered: %v; want cluster unavailable, not a conflict", err)
	}
	if err := l.Commit(ctx, []byte("third")); err != nil {
		t.Fatalf("the next commit on the lease: %v", err)
	}
	got, err := l.Load(ctx)
	if err != nil || string(got) != "third" {
		t.Fatalf("Load = %q, %v", got, err)
	}
}
