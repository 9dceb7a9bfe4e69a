// Package natscluster implements [server.Cluster] on NATS JetStream: the
// sessions of a fleet of `wasmbox serve` nodes live in a replicated
// key-value bucket and object store, so that any node serves any session
// and a session survives the node that last ran it.
//
// # Layout
//
// Three JetStream assets, with the replicas of Config.Replicas:
//
//	KV <prefix>_sessions    "s.<id>": the session record (JSON: snapshot
//	                        name, its size and SHA-256, times, and the
//	                        snapshot itself when it compresses to at
//	                        most MaxInline bytes);
//	                        "count": the number of sessions (the cap)
//	KV <prefix>_leases      "l.<id>": the node holding the session now;
//	                        the bucket's TTL is the lease TTL, so a lease
//	                        not renewed disappears
//	Obj <prefix>_snapshots  "<id>/<unique>": zstd-compressed snapshots
//	                        (the sandbox's versioned, checksummed format)
//
// A commit first stores a new snapshot object (unless it is inline), then advances the session
// record with compare-and-set on the revision the lease loaded: of two
// commits from one revision exactly one wins, the other gets
// server.ErrConflict and its object is deleted. The old object of a
// winning commit is deleted afterwards.
//
// A lease is taken with a KV create (fails while another node's lease
// lives) and renewed with compare-and-set on its own revision every third
// of the TTL. The holder considers it lost once TTL*4/5 have passed since
// the start of the last renewal that succeeded: before JetStream can
// expire it, so that two nodes never both believe they hold a session.
package natscluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wasmbox/wasmbox/server"
)

// DefaultLeaseTTL is the default lease TTL: a crashed node's sessions
// resume elsewhere after at most this long.
const DefaultLeaseTTL = 10 * time.Second

// MaxSnapshotBytes bounds a decompressed snapshot loaded from the cluster.
const MaxSnapshotBytes = 1 << 30

// MaxInline is the largest compressed snapshot kept in the session's
// record itself rather than in the object store: one write per commit
// instead of three (chunk, object info, record) for small sessions. It
// stays well under NATS's default message limit of 1 MiB.
const MaxInline = 256 << 10

// Config configures [Open].
type Config struct {
	// URLs are the NATS servers, comma-separated
	// ("nats://a:4222,nats://b:4222"). Ignored when Conn is set.
	URLs string
	// Conn is an open connection to use instead of URLs; Close does not
	// close it.
	Conn *nats.Conn
	// Node names this node (default: host name and a random suffix).
	Node string
	// Addr is this node's address as clients reach it
	// ("http://10.0.0.5:8080"): other nodes answer it (409 session_busy,
	// X-Wasmbox-Owner) to requests for a session this node holds.
	Addr string
	// Replicas of the buckets: 0 means min(3, the servers of the
	// cluster known to the connection). Used when the buckets are
	// created; existing buckets keep theirs.
	Replicas int
	// LeaseTTL is how long a lease lives unrenewed (default
	// DefaultLeaseTTL; at least 300ms). It is the leases bucket's TTL,
	// fixed by the node that creates the bucket.
	LeaseTTL time.Duration
	// Prefix of the bucket names (default "wasmbox").
	Prefix string
	// Timeout of one JetStream operation (default 5s).
	Timeout time.Duration
}

// Cluster is a [server.Cluster] on NATS JetStream.
type Cluster struct {
	nc           *nats.Conn
	ownsConn     bool
	js           jetstream.JetStream
	sessions     jetstream.KeyValue
	bucket       string // of sessions
	leases       jetstream.KeyValue
	leasesBucket string
	snaps        jetstream.ObjectStore
	chunks       jetstream.KeyValue // incremental snapshots' chunks
	chunksBucket string
	prefix       string
	yieldSub     *nats.Subscription
	node         string
	addr         string
	ttl          time.Duration
	timeout      time.Duration
	enc          *zstd.Encoder
	held         atomic.Int64

	mu   sync.Mutex
	mine map[string]*lease // the leases this node holds, by session

	wg     sync.WaitGroup // lease renewers
	closed chan struct{}
	once   sync.Once
}

var (
	_ server.Cluster    = (*Cluster)(nil)
	_ server.PartsLease = (*lease)(nil)
)

// Open connects to the cluster and creates the buckets that do not exist.
func Open(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.LeaseTTL < 300*time.Millisecond {
		return nil, fmt.Errorf("natscluster: lease TTL %v is under 300ms", cfg.LeaseTTL)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "wasmbox"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Node == "" {
		h, _ := os.Hostname()
		cfg.Node = h + "-" + randomHex(4)
	}
	c := &Cluster{nc: cfg.Conn, node: cfg.Node, addr: cfg.Addr, timeout: cfg.Timeout, closed: make(chan struct{}), mine: map[string]*lease{}, prefix: cfg.Prefix}
	if c.nc == nil {
		if strings.TrimSpace(cfg.URLs) == "" {
			return nil, errors.New("natscluster: no NATS server URL")
		}
		nc, err := nats.Connect(cfg.URLs, nats.Name("wasmbox "+cfg.Node), nats.MaxReconnects(-1),
			nats.ReconnectWait(250*time.Millisecond), nats.Timeout(cfg.Timeout))
		if err != nil {
			return nil, fmt.Errorf("natscluster: connecting to %s: %w", cfg.URLs, err)
		}
		c.nc, c.ownsConn = nc, true
	}
	fail := func(err error) (*Cluster, error) {
		if c.ownsConn {
			c.nc.Close()
		}
		return nil, err
	}
	js, err := jetstream.New(c.nc, jetstream.WithDefaultTimeout(cfg.Timeout))
	if err != nil {
		return fail(fmt.Errorf("natscluster: %w", err))
	}
	c.js = js
	replicas := cfg.Replicas
	if replicas <= 0 {
		replicas = min(3, max(1, len(c.nc.Servers())))
	}
	c.bucket = cfg.Prefix + "_sessions"
	c.sessions, err = ensureKV(ctx, js, jetstream.KeyValueConfig{
		Bucket: cfg.Prefix + "_sessions", Description: "wasmbox session records",
		History: 1, Replicas: replicas, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return fail(err)
	}
	c.leasesBucket = cfg.Prefix + "_leases"
	c.leases, err = ensureKV(ctx, js, jetstream.KeyValueConfig{
		Bucket: cfg.Prefix + "_leases", Description: "wasmbox session leases",
		History: 1, TTL: cfg.LeaseTTL, Replicas: replicas, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return fail(err)
	}
	if st, err := c.leases.Status(ctx); err == nil {
		c.ttl = st.TTL() // the bucket's, if another node created it
	}
	if c.ttl <= 0 {
		c.ttl = cfg.LeaseTTL
	}
	c.chunksBucket = cfg.Prefix + "_chunks"
	c.chunks, err = ensureKV(ctx, js, jetstream.KeyValueConfig{
		Bucket: c.chunksBucket, Description: "wasmbox snapshot chunks (incremental snapshots)",
		History: 1, Replicas: replicas, Storage: jetstream.FileStorage, MaxValueSize: maxChunkStored,
	})
	if err != nil {
		return fail(err)
	}
	oc := jetstream.ObjectStoreConfig{
		Bucket: cfg.Prefix + "_snapshots", Description: "wasmbox session snapshots (zstd)",
		Replicas: replicas, Storage: jetstream.FileStorage,
	}
	c.snaps, err = js.ObjectStore(ctx, oc.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		c.snaps, err = js.CreateObjectStore(ctx, oc)
		if errors.Is(err, jetstream.ErrBucketExists) {
			c.snaps, err = js.ObjectStore(ctx, oc.Bucket)
		}
	}
	if err != nil {
		return fail(fmt.Errorf("natscluster: object store %s: %w", oc.Bucket, err))
	}
	c.enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return fail(err)
	}
	c.yieldSub, err = c.nc.Subscribe(c.yieldSubject(c.node), c.onYield)
	if err != nil {
		return fail(fmt.Errorf("natscluster: subscribing to yield requests: %w", err))
	}
	return c, nil
}

func ensureKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, cfg.Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("natscluster: key-value bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// Close stops the lease renewers (their leases are then lost) and closes
// the connection if Open made it.
func (c *Cluster) Close() error {
	c.once.Do(func() {
		close(c.closed)
		if c.yieldSub != nil {
			c.yieldSub.Unsubscribe()
		}
	})
	c.wg.Wait()
	if c.ownsConn {
		c.nc.Close()
	}
	return nil
}

// Conn is the NATS connection.
func (c *Cluster) Conn() *nats.Conn { return c.nc }

// LeaseTTL is the lease TTL in force (the leases bucket's).
func (c *Cluster) LeaseTTL() time.Duration { return c.ttl }

// Node implements server.Cluster.
func (c *Cluster) Node() string { return c.node }

// Status implements server.Cluster.
func (c *Cluster) Status() server.ClusterStatus {
	return server.ClusterStatus{
		Node:       c.node,
		NATS:       c.nc.Status().String(),
		Server:     c.nc.ConnectedUrlRedacted(),
		LeasesHeld: int(c.held.Load()),
	}
}

// record is the value of a session's key.
type record struct {
	Snapshot string    `json:"snapshot,omitempty"` // object name; "" before the first commit
	Size     int64     `json:"size,omitempty"`     // compressed size
	Inline   []byte    `json:"inline,omitempty"`   // the compressed snapshot, when at most MaxInline bytes
	Manifest []byte    `json:"manifest,omitempty"` // an incremental snapshot's manifest (chunks.go)
	Fresh    []fresh   `json:"fresh,omitempty"`    // the manifest's chunks of revision 0, stored values
	Sum      string    `json:"sum,omitempty"`      // SHA-256 of the object, the inline snapshot or the manifest, hex
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used"`
	Node     string    `json:"node"`  // the node that wrote it
	Write    string    `json:"write"` // unique to the write
}

// holder is the value of a lease key.
type holder struct {
	Node  string `json:"node"`
	Addr  string `json:"addr,omitempty"`
	Token string `json:"token"` // unique to one lease
}

// validID accepts the ids a server makes (UUIDs), and nothing that is not
// a valid key token.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func (c *Cluster) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

// unavailable wraps a JetStream error as server.ErrClusterUnavailable.
func unavailable(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", server.ErrClusterUnavailable, what, err)
}

const countKey = "count"

// Create implements server.Cluster.
func (c *Cluster) Create(ctx context.Context, id string, maxSessions int) error {
	if !validID(id) {
		return fmt.Errorf("natscluster: bad session id %q", id)
	}
	if err := c.addCount(ctx, 1, maxSessions); err != nil {
		return err
	}
	now := time.Now().UTC()
	b, _ := json.Marshal(record{Created: now, LastUsed: now, Node: c.node})
	octx, cancel := c.op(ctx)
	defer cancel()
	if _, err := c.sessions.Create(octx, "s."+id, b); err != nil {
		c.addCount(context.WithoutCancel(ctx), -1, 0)
		return unavailable("creating the session record", err)
	}
	return nil
}

// addCount adds d to the session count with compare-and-set; with d > 0
// it refuses to pass maxSessions.
func (c *Cluster) addCount(ctx context.Context, d, maxSessions int) error {
	for try := 0; try < 1000; try++ {
		octx, cancel := c.op(ctx)
		n, rev := 0, uint64(0)
		e, err := c.sessions.Get(octx, countKey)
		switch {
		case err == nil:
			n, _ = strconv.Atoi(string(e.Value()))
			rev = e.Revision()
		case errors.Is(err, jetstream.ErrKeyNotFound):
		default:
			cancel()
			return unavailable("reading the session count", err)
		}
		if d > 0 && n+d > maxSessions {
			cancel()
			return fmt.Errorf("%w: %d of %d", server.ErrTooManySessions, n, maxSessions)
		}
		v := []byte(strconv.Itoa(max(0, n+d)))
		if rev == 0 {
			_, err = c.sessions.Create(octx, countKey, v)
		} else {
			_, err = c.sessions.Update(octx, countKey, v, rev)
		}
		cancel()
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !isWrongLastSeq(err) {
			return unavailable("updating the session count", err)
		}
	}
	return unavailable("updating the session count", errors.New("too much contention"))
}

// Idle implements server.Cluster.
func (c *Cluster) Idle(ctx context.Context, cutoff time.Time) ([]string, error) {
	lister, err := c.sessions.ListKeysFiltered(ctx, "s.*")
	if err != nil {
		return nil, unavailable("listing sessions", err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	lister.Stop()
	var idle []string
	for _, k := range keys {
		octx, cancel := c.op(ctx)
		e, err := c.sessions.Get(octx, k)
		cancel()
		if err != nil {
			continue
		}
		var r record
		if json.Unmarshal(e.Value(), &r) == nil && r.LastUsed.Before(cutoff) {
			idle = append(idle, strings.TrimPrefix(k, "s."))
		}
	}
	return idle, ctx.Err()
}

// Acquire implements server.Cluster.
func (c *Cluster) Acquire(ctx context.Context, id string) (server.Lease, error) {
	if !validID(id) {
		return nil, server.ErrUnknownSession
	}
	select {
	case <-c.closed:
		return nil, unavailable("acquiring a lease", errors.New("closed"))
	default:
	}
	c.mu.Lock()
	if c.mine[id] != nil {
		c.mu.Unlock()
		return nil, &server.OwnedError{Node: c.node, Addr: c.addr}
	}
	c.mine[id] = &lease{} // reserved
	c.mu.Unlock()
	l, err := c.acquire(ctx, id)
	var owned *server.OwnedError
	if errors.As(err, &owned) && owned.Node != c.node && owned.Node != "?" && c.askYield(ctx, owned.Node, id) {
		l, err = c.acquire(ctx, id)
	}
	c.mu.Lock()
	if err != nil {
		delete(c.mine, id)
	} else {
		c.mine[id] = l
	}
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (c *Cluster) acquire(ctx context.Context, id string) (*lease, error) {
	hv, _ := json.Marshal(holder{Node: c.node, Addr: c.addr, Token: randomHex(8)})
	key := "l." + id
	var rev uint64
	var start time.Time
	// A create: compare-and-set on "no message" or on the delete marker
	// of the last release, both read from the stream's leader (a KV
	// Create reads through any replica, which may not have seen the
	// release yet, and would call a free lease taken).
	var expect uint64
	for try := 0; ; try++ {
		octx, cancel := c.op(ctx)
		start = time.Now()
		var err error
		rev, err = c.leases.Update(octx, key, hv, expect)
		cancel()
		if err == nil {
			break
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !isWrongLastSeq(err) {
			return nil, unavailable("taking the lease", err)
		}
		data, seq, deleted, err := c.getLast(ctx, c.leasesBucket, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			expect = 0 // expired meanwhile
		case err != nil:
			return nil, err
		case deleted:
			expect = seq // released
		default:
			var h holder
			json.Unmarshal(data, &h)
			if h.Node != c.node {
				return nil, &server.OwnedError{Node: h.Node, Addr: h.Addr}
			}
			// This node's, yet none of its leases: left over from a
			// release whose answer was lost. Take it over.
			expect = seq
		}
		if try >= 5 {
			return nil, &server.OwnedError{Node: "?"}
		}
	}
	l := &lease{c: c, id: id, key: key, hv: hv, rev: rev, lost: make(chan struct{}), stop: make(chan struct{}), renewed: make(chan struct{}),
		wanted: make(chan struct{}), released: make(chan struct{})}
	l.deadline.Store(start.Add(c.validFor()).UnixNano())
	c.held.Add(1)
	c.wg.Add(1)
	go l.renew()
	rec, rev, err := c.getRecord(ctx, id)
	if err != nil {
		l.Release()
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, server.ErrUnknownSession
		}
		return nil, err
	}
	l.rec, l.recRev = rec, rev
	if rec.Manifest != nil {
		// Only to know which chunks exist: a manifest that does not
		// decode gives none (Load refuses it with its error).
		_, l.man, _, _ = decodeManifest(rec.Manifest, MaxSnapshotBytes)
		l.resolveFresh()
	}
	return l, nil
}

// yieldSubject is the subject on which node takes requests to give a
// lease up.
func (c *Cluster) yieldSubject(node string) string {
	sum := sha256.Sum256([]byte(node))
	return c.prefix + ".yield." + hex.EncodeToString(sum[:8])
}

// yieldWait bounds how long a node asked to give a lease up waits for the
// request in progress on it to end.
func (c *Cluster) yieldWait() time.Duration { return max(c.ttl/4, 100*time.Millisecond) }

// askYield asks node to give session id's lease up, and reports whether
// it did (or holds it no more). A node keeps a lease between requests
// (server.Lease.Wanted): this is how another node gets it without
// waiting for the holder's idle time.
func (c *Cluster) askYield(ctx context.Context, node, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, c.yieldWait()+c.timeout/4)
	defer cancel()
	msg, err := c.nc.RequestWithContext(ctx, c.yieldSubject(node), []byte(id))
	if err != nil {
		return false
	}
	return string(msg.Data) == "released" || string(msg.Data) == "free"
}

// onYield answers a request to give a lease up: the lease is marked
// wanted, and the answer waits (a bounded time) for its release.
func (c *Cluster) onYield(m *nats.Msg) {
	id := string(m.Data)
	if !validID(id) {
		return
	}
	c.mu.Lock()
	l := c.mine[id]
	c.mu.Unlock()
	if l == nil {
		m.Respond([]byte("free"))
		return
	}
	if l.c == nil { // being acquired by this node right now
		m.Respond([]byte("busy"))
		return
	}
	l.wantOnce.Do(func() { close(l.wanted) })
	select {
	case <-c.closed:
		return
	default:
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTimer(c.yieldWait())
		defer t.Stop()
		select {
		case <-l.released:
			m.Respond([]byte("released"))
		case <-t.C:
			m.Respond([]byte("busy"))
		case <-c.closed:
		}
	}()
}

// validFor is how long after the start of a renewal that succeeded the
// holder still considers its lease valid: 4/5 of the TTL, so that it stops
// before JetStream can expire the lease and another node take it.
func (c *Cluster) validFor() time.Duration { return c.ttl * 4 / 5 }

// lease is a held lease. Its methods other than Release are called by one
// request at a time (the server serializes them).
type lease struct {
	c        *Cluster
	id, key  string
	hv       []byte
	rev      uint64 // of the lease key
	deadline atomic.Int64
	lost     chan struct{}
	lostOnce sync.Once
	stop     chan struct{}
	stopOnce sync.Once
	renewed  chan struct{} // closed when renew has returned

	rec    record
	recRev uint64     // of the session record
	man    []chunkRef // the chunks of rec.Manifest
	// flushed is closed when the last commit's fresh chunks are in the
	// chunks bucket (or failed to get there); flushRevs are their
	// revisions there.
	flushed   chan struct{}
	flushRevs map[[32]byte]uint64

	wanted   chan struct{} // closed when another node asks for the lease
	wantOnce sync.Once
	released chan struct{} // closed when Release has returned
	gcDone   chan struct{} // of the last commit's deletion of chunks, if any
}

// Wanted implements server.Lease.
func (l *lease) Wanted() <-chan struct{} { return l.wanted }

func (l *lease) markLost() { l.lostOnce.Do(func() { close(l.lost) }) }

// renew renews the lease every third of the TTL until Release, and marks
// it lost when its deadline passes without a renewal.
func (l *lease) renew() {
	defer l.c.wg.Done()
	defer close(l.renewed)
	tick := time.NewTicker(l.c.ttl / 3)
	defer tick.Stop()
	expire := time.NewTimer(time.Until(time.Unix(0, l.deadline.Load())))
	defer expire.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.c.closed:
			l.markLost()
			return
		case <-expire.C:
			if time.Now().UnixNano() >= l.deadline.Load() {
				l.markLost()
				return
			}
			expire.Reset(time.Until(time.Unix(0, l.deadline.Load())))
		case <-tick.C:
			start := time.Now()
			ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, l.deadline.Load()))
			rev, err := l.c.leases.Update(ctx, l.key, l.hv, l.rev)
			cancel()
			switch {
			case err == nil:
				l.rev = rev
				l.deadline.Store(start.Add(l.c.validFor()).UnixNano())
			case errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) || isWrongLastSeq(err):
				l.markLost() // expired and maybe taken
				return
			}
			// Other errors: retry at the next tick until the deadline.
		}
	}
}

// valid reports whether the lease is still held.
func (l *lease) valid() bool {
	select {
	case <-l.lost:
		return false
	default:
	}
	return time.Now().UnixNano() < l.deadline.Load()
}

func (l *lease) Snapshot() string    { return l.rec.Snapshot }
func (l *lease) LastUsed() time.Time { return l.rec.LastUsed }
func (l *lease) Lost() <-chan struct{} {
	return l.lost
}

// Load implements server.Lease.
func (l *lease) Load(ctx context.Context) ([]byte, error) {
	if l.rec.Snapshot == "" {
		return nil, nil
	}
	// An object read goes to any replica: one that has not caught up
	// with the commit yet says "object not found", and a read of a large
	// object can come back damaged on a loaded machine (the client's
	// digest check catches it: ErrDigestMismatch). It is read again, with
	// a growing pause, while the lease lasts. What is used is checked
	// against the record's own SHA-256 in any case.
	if l.rec.Manifest != nil {
		if sum := sha256.Sum256(l.rec.Manifest); hex.EncodeToString(sum[:]) != l.rec.Sum {
			return nil, fmt.Errorf("natscluster: snapshot %s: manifest checksum mismatch", l.rec.Snapshot)
		}
		size, refs, noTrailer, err := decodeManifest(l.rec.Manifest, MaxSnapshotBytes)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", l.rec.Snapshot, err)
		}
		b, err := l.loadChunks(ctx, size, refs)
		if err != nil {
			return nil, fmt.Errorf("natscluster: snapshot %s: %w", l.rec.Snapshot, err)
		}
		if noTrailer {
			// Every chunk was checked against its SHA-256, and the
			// manifest against the record's.
			sum := sha256.Sum256(b)
			b = append(b, sum[:]...)
		}
		return b, nil
	}
	if l.rec.Inline != nil {
		if sum := sha256.Sum256(l.rec.Inline); hex.EncodeToString(sum[:]) != l.rec.Sum {
			return nil, fmt.Errorf("natscluster: snapshot %s: checksum mismatch", l.rec.Snapshot)
		}
		return decompress(l.rec.Inline, MaxSnapshotBytes)
	}
	var z []byte
	var err error
	pause := 10 * time.Millisecond
	for try := 0; try < 7; try++ { // pauses of 10 ms .. 320 ms, 630 ms in all
		if try > 0 {
			select {
			case <-ctx.Done():
			case <-l.lost:
			case <-time.After(pause):
			}
			pause *= 2
		}
		octx, cancel := l.c.op(ctx)
		z, err = l.c.snaps.GetBytes(octx, l.rec.Snapshot)
		cancel()
		if err == nil {
			if sum := sha256.Sum256(z); hex.EncodeToString(sum[:]) != l.rec.Sum {
				err = fmt.Errorf("snapshot %s: checksum mismatch", l.rec.Snapshot)
			}
		}
		if err == nil || ctx.Err() != nil || !l.valid() {
			break
		}
	}
	if err != nil {
		return nil, unavailable("loading snapshot "+l.rec.Snapshot, err)
	}
	return decompress(z, MaxSnapshotBytes)
}

// Compress compresses a snapshot as the cluster stores it.
func (c *Cluster) Compress(snap []byte) []byte { return c.enc.EncodeAll(snap, nil) }

func decompress(z []byte, limit int64) ([]byte, error) {
	d, err := zstd.NewReader(bytes.NewReader(z), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	b, err := io.ReadAll(io.LimitReader(d, limit+1))
	if err != nil {
		return nil, fmt.Errorf("natscluster: decompressing a snapshot: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("natscluster: snapshot over %d bytes", limit)
	}
	return b, nil
}

// newName names a new snapshot of the session.
func (l *lease) newName() string {
	return l.id + "/" + strconv.FormatUint(l.recRev, 10) + "-" + randomHex(8)
}

// Commit implements server.Lease.
func (l *lease) Commit(ctx context.Context, snap []byte) error {
	if !l.valid() {
		return server.ErrLeaseLost
	}
	name := l.newName()
	octx, cancel := l.c.op(ctx)
	defer cancel()
	if len(snap) >= minChunked {
		if err, ok := l.commitChunks(octx, name, snap); ok {
			return err
		}
	}
	z := l.c.Compress(snap)
	sum := sha256.Sum256(z)
	inline := len(z) <= MaxInline
	if !inline {
		if _, err := l.c.snaps.PutBytes(octx, name, z); err != nil {
			return unavailable("storing the snapshot", err)
		}
	}
	rec := l.rec
	rec.Snapshot, rec.Size, rec.Sum = name, int64(len(z)), hex.EncodeToString(sum[:])
	rec.LastUsed, rec.Node = time.Now().UTC(), l.c.node
	rec.Inline, rec.Manifest = nil, nil
	if inline {
		rec.Inline = z
	}
	old, oldObject, oldMan := l.rec.Snapshot, l.rec.Inline == nil && l.rec.Manifest == nil, l.man
	if err := l.update(octx, rec); err != nil {
		if !inline {
			l.c.snaps.Delete(context.WithoutCancel(octx), name)
		}
		return err
	}
	l.man = nil
	l.dropChunks(oldMan, nil)
	if old != "" && old != name && oldObject {
		l.c.deleteObject(old)
	}
	return nil
}

// update advances the session record with compare-and-set.
//
// A write whose answer is lost (a timeout while a NATS server dies) may
// still be applied later, and a retry of the request would then apply its
// run twice. So an unanswered write is settled before update returns: the
// record is read back; if it is this write, it committed; if it is still
// the revision this write expected, that revision is rewritten as it was
// (with compare-and-set on it), after which the lost write can never
// apply, and the commit is reported as not made.
func (l *lease) update(ctx context.Context, rec record) error {
	if !l.valid() {
		return server.ErrLeaseLost
	}
	rec.Write = randomHex(8)
	b, _ := json.Marshal(rec)
	key := "s." + l.id
	rev, err := l.c.sessions.Update(ctx, key, b, l.recRev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isWrongLastSeq(err) {
		return fmt.Errorf("%w (revision %d)", server.ErrConflict, l.recRev)
	}
	if err == nil {
		l.recRev, l.rec = rev, rec
		return nil
	}
	// Unanswered: settle it while the lease is valid.
	werr := err
	old := l.rec
	old.Write = randomHex(8)
	ob, _ := json.Marshal(old)
	for l.valid() {
		octx, cancel := l.c.op(context.WithoutCancel(ctx))
		cur, curRev, err := l.c.getRecord(octx, l.id)
		if err == nil {
			switch {
			case cur.Write == rec.Write:
				cancel()
				l.recRev, l.rec = curRev, rec
				return nil // it did commit
			case cur.Write == old.Write:
				// The fence below was applied, its answer lost:
				// the write can no longer apply.
				cancel()
				l.recRev, l.rec = curRev, old
				return unavailable("advancing the session record", werr)
			case curRev != l.recRev:
				cancel()
				return fmt.Errorf("%w (revision %d)", server.ErrConflict, l.recRev)
			}
			if rev, err := l.c.sessions.Update(octx, key, ob, l.recRev); err == nil {
				cancel()
				l.recRev, l.rec = rev, old
				return unavailable("advancing the session record", werr)
			}
		}
		cancel()
		select {
		case <-l.lost:
		case <-time.After(100 * time.Millisecond):
		}
	}
	return server.ErrLeaseLost
}

// Touch implements server.Lease.
func (l *lease) Touch(ctx context.Context) error {
	octx, cancel := l.c.op(ctx)
	defer cancel()
	rec := l.rec
	rec.LastUsed = time.Now().UTC()
	return l.update(octx, rec)
}

// Delete implements server.Lease.
func (l *lease) Delete(ctx context.Context) error {
	if !l.valid() {
		return server.ErrLeaseLost
	}
	octx, cancel := l.c.op(ctx)
	defer cancel()
	err := l.c.sessions.Delete(octx, "s."+l.id, jetstream.LastRevision(l.recRev))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isWrongLastSeq(err) {
		return fmt.Errorf("%w (revision %d)", server.ErrConflict, l.recRev)
	}
	if err != nil {
		return unavailable("deleting the session record", err)
	}
	if l.rec.Snapshot != "" && l.rec.Inline == nil && l.rec.Manifest == nil {
		l.c.snaps.Delete(octx, l.rec.Snapshot)
	}
	l.c.deleteChunks(ctx, l.id)
	return l.c.addCount(ctx, -1, 0)
}

func isWrongLastSeq(err error) bool {
	var ae *jetstream.APIError
	return errors.As(err, &ae) && (ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// Release implements server.Lease: it stops the renewer and deletes the
// lease key if it is still at the revision this lease last wrote.
func (l *lease) Release() {
	l.stopOnce.Do(func() {
		l.waitFlush()
		close(l.stop)
		<-l.renewed // l.rev is settled
		if l.valid() {
			ctx, cancel := context.WithTimeout(context.Background(), l.c.timeout)
			l.c.leases.Delete(ctx, l.key, jetstream.LastRevision(l.rev))
			cancel()
		}
		l.c.held.Add(-1)
		l.c.mu.Lock()
		if l.c.mine[l.id] == l {
			delete(l.c.mine, l.id)
		}
		l.c.mu.Unlock()
		close(l.released)
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// getRecord reads session id's record from the stream's leader. (A KV
// Get may be answered by any replica, which can lag behind the last
// commit: compare-and-set on its revision would then fail.)
func (c *Cluster) getRecord(ctx context.Context, id string) (record, uint64, error) {
	data, seq, deleted, err := c.getLast(ctx, c.bucket, "s."+id)
	if err == nil && deleted {
		err = jetstream.ErrKeyNotFound
	}
	if err != nil {
		return record{}, 0, err
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return record{}, 0, fmt.Errorf("natscluster: session record %s: %w", id, err)
	}
	return r, seq, nil
}

// getLast reads the last message of a key of a KV bucket from the
// stream's leader: its data and revision, and whether it is a delete or
// purge marker. jetstream.ErrKeyNotFound when there is none.
func (c *Cluster) getLast(ctx context.Context, bucket, key string) (data []byte, seq uint64, deleted bool, err error) {
	octx, cancel := c.op(ctx)
	defer cancel()
	req, _ := json.Marshal(map[string]string{"last_by_subj": "$KV." + bucket + "." + key})
	msg, err := c.nc.RequestWithContext(octx, "$JS.API.STREAM.MSG.GET.KV_"+bucket, req)
	if err != nil {
		return nil, 0, false, unavailable("reading "+key, err)
	}
	var resp struct {
		Error *struct {
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
		Message *struct {
			Seq  uint64 `json:"seq"`
			Data []byte `json:"data"`
			Hdrs []byte `json:"hdrs"`
		} `json:"message"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, 0, false, unavailable("reading "+key, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrCode == 10037 { // no message found
			return nil, 0, false, jetstream.ErrKeyNotFound
		}
		return nil, 0, false, unavailable("reading "+key, errors.New(resp.Error.Description))
	}
	if resp.Message == nil {
		return nil, 0, false, jetstream.ErrKeyNotFound
	}
	m := resp.Message
	return m.Data, m.Seq, bytes.Contains(m.Hdrs, []byte("KV-Operation")), nil
}
