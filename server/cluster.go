package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/wasmbox/wasmbox/audit"
	"github.com/wasmbox/wasmbox/internal/budget"
)

// Cluster is the shared state of a fleet of servers (Config.Cluster;
// package server/natscluster implements it on NATS JetStream). With a
// Cluster, a node holds nothing another node needs: each request on a
// session takes the session's lease, resumes the session from its last
// committed snapshot unless this node already holds that snapshot in
// memory, and, when the request changed the session, commits a new
// snapshot with compare-and-set on the revision it loaded before it
// answers. The node keeps the lease after the request (renewed in the
// background) for Config.LeaseIdle, so that the next request on the
// session here neither takes it nor reads the record nor loads anything;
// it gives the lease back when idle, when another node asks for the
// session (Lease.Wanted), when the lease is lost, and on Shutdown.
//
// A request for a session whose lease another node holds is answered 409
// session_busy with the owner (JSON "owner", header X-Wasmbox-Owner, and
// Retry-After): this server does not forward. A commit that loses the
// race for its revision is 409 conflict and the run's result is dropped,
// never merged. A node that cannot reach the cluster, or whose lease could
// not be renewed in time, answers 503 cluster_unavailable or lease_lost
// and runs nothing. Config.MaxSessions and Config.SessionTTL count
// cluster-wide.
type Cluster interface {
	// Node names this node.
	Node() string
	// Create registers a new session id, unless MaxSessions sessions
	// exist already (an error wrapping ErrTooManySessions).
	Create(ctx context.Context, id string, maxSessions int) error
	// Acquire takes the lease of session id: an *OwnedError when another
	// node holds it, an error wrapping ErrUnknownSession when there is
	// no such session, ErrClusterUnavailable when the cluster cannot be
	// reached.
	Acquire(ctx context.Context, id string) (Lease, error)
	// Idle lists the sessions not used since before cutoff.
	Idle(ctx context.Context, cutoff time.Time) ([]string, error)
	// Status is the cluster's view of this node, for /health.
	Status() ClusterStatus
}

// Lease is a node's hold on one session, renewed until Release.
type Lease interface {
	// Snapshot names the committed snapshot the lease loaded ("" for a
	// session never committed: a fresh one).
	Snapshot() string
	// LastUsed is when the session was last used, cluster-wide.
	LastUsed() time.Time
	// Load returns the committed snapshot's bytes (in the sandbox's
	// snapshot format).
	Load(ctx context.Context) ([]byte, error)
	// Commit stores snap as the session's new state, with
	// compare-and-set on the revision the lease loaded (or last
	// committed): an error wrapping ErrConflict when another commit won.
	Commit(ctx context.Context, snap []byte) error
	// Touch records a use of the session without changing it.
	Touch(ctx context.Context) error
	// Delete removes the session and its snapshot.
	Delete(ctx context.Context) error
	// Lost is closed when the lease could not be renewed in time: the
	// node must stop using the session.
	Lost() <-chan struct{}
	// Wanted is closed when another node asks for the session: the
	// node gives the lease back as soon as it is not using it.
	Wanted() <-chan struct{}
	// Release gives the lease back. It is idempotent.
	Release()
}

// SnapshotSession is a Session whose whole state can be written and
// restored; a Backend's sessions must implement it to serve in a cluster.
type SnapshotSession interface {
	Session
	Snapshot(w io.Writer) error
	Restore(r io.Reader) error
}

// SnapshotPart is a piece of a snapshot and its SHA-256 (PartsSession).
type SnapshotPart struct {
	Data []byte // never modified, by its maker or its user
	Sum  [32]byte
}

// PartsSession is a SnapshotSession that can give its snapshot cut into
// parts, the parts of what did not change since its last call reused
// rather than read and hashed again: the concatenation of the parts,
// followed by its SHA-256, is what Snapshot writes. With a PartsLease, a
// commit costs what changed, not the size of the session.
type PartsSession interface {
	SnapshotSession
	SnapshotParts() ([]SnapshotPart, error)
}

// PartsLease is a Lease that commits a snapshot given in parts, without
// the trailer (the SHA-256 of the rest): Load gives the whole snapshot
// back, trailer included.
type PartsLease interface {
	Lease
	CommitParts(ctx context.Context, parts []SnapshotPart) error
}

// partsKey identifies a snapshot given in parts: the SHA-256 of their
// sums (the same parts make the same snapshot).
func partsKey(parts []SnapshotPart) [32]byte {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p.Sum[:])
	}
	return [32]byte(h.Sum(nil))
}

// ClusterStatus is the "cluster" object of GET /health.
type ClusterStatus struct {
	Node       string `json:"node"`
	NATS       string `json:"nats"`        // connection state: CONNECTED, RECONNECTING, ...
	Server     string `json:"server"`      // the NATS server connected to
	LeasesHeld int    `json:"leases_held"` // leases this node holds now
	Commits    uint64 `json:"commits"`     // commits by this node
	Conflicts  uint64 `json:"conflicts"`   // commits that lost their race
	CommitMS   struct {
		Last float64 `json:"last"`
		Mean float64 `json:"mean"`
		Max  float64 `json:"max"`
	} `json:"commit_ms"`
}

// Errors of a Cluster.
var (
	ErrConflict           = errors.New("commit lost the race: another commit advanced the session first")
	ErrUnknownSession     = errors.New("unknown session")
	ErrTooManySessions    = errors.New("too many sessions")
	ErrClusterUnavailable = errors.New("cluster unavailable")
	ErrLeaseLost          = errors.New("the session's lease could not be renewed in time")
)

// OwnedError is the error of Cluster.Acquire when another node holds the
// session's lease.
type OwnedError struct {
	Node string // the owner's node name
	Addr string // the owner's advertised address, if any
}

func (e *OwnedError) Error() string {
	s := "session is in use on node " + strconv.Quote(e.Node)
	if e.Addr != "" {
		s += " (" + e.Addr + ")"
	}
	return s
}

// clusterError answers a Cluster error.
func (s *Server) clusterError(w http.ResponseWriter, e *entry, id string, err error) {
	var owned *OwnedError
	switch {
	case errors.As(err, &owned):
		w.Header().Set("Retry-After", "1")
		if owned.Addr != "" {
			w.Header().Set("X-Wasmbox-Owner", owned.Addr)
		}
		writeJSON(w, http.StatusConflict, map[string]string{
			"error": err.Error() + "; retry later or there", "code": "session_busy", "owner": owned.Node, "owner_addr": owned.Addr,
		})
	case errors.Is(err, ErrConflict):
		s.metrics.clusterConflicts.Inc()
		s.metrics.commitMu.Lock()
		s.metrics.conflictN++
		s.metrics.commitMu.Unlock()
		s.fail(w, e, http.StatusConflict, "conflict", "session "+strconv.Quote(id)+": "+err.Error()+"; this request's changes were discarded")
	case errors.Is(err, ErrUnknownSession):
		writeError(w, http.StatusNotFound, "not_found", "unknown session "+strconv.Quote(id))
	case errors.Is(err, ErrLeaseLost):
		w.Header().Set("Retry-After", "1")
		s.fail(w, e, http.StatusServiceUnavailable, "lease_lost", "session "+strconv.Quote(id)+": "+err.Error()+"; its changes were discarded")
	default:
		s.cfg.Logger.Warn("cluster", "session", id, "err", err)
		w.Header().Set("Retry-After", "1")
		s.fail(w, e, http.StatusServiceUnavailable, "cluster_unavailable", "session "+strconv.Quote(id)+": "+err.Error())
	}
}

// clusterSession is Server.session with a Cluster: it waits for this
// node's other requests on the session, takes the lease, and resumes the
// session from its committed snapshot unless it is in memory already.
func (s *Server) clusterSession(w http.ResponseWriter, r *http.Request) (id string, e *entry, done func(), ok bool) {
	id = r.PathValue("id")
	ctx := r.Context()
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "shutting_down", "server is shutting down")
		return id, nil, nil, false
	}
	e = s.sessions[id]
	if e == nil {
		e = &entry{lock: make(chan struct{}, 1)}
		s.sessions[id] = e
	}
	e.active++
	s.mu.Unlock()
	unuse := func() {
		s.mu.Lock()
		e.active--
		e.lastUsed = s.cfg.Clock()
		if e.active == 0 && e.sess == nil && s.sessions[id] == e {
			delete(s.sessions, id)
		}
		s.mu.Unlock()
	}
	select {
	case e.lock <- struct{}{}:
	case <-ctx.Done():
		unuse()
		writeError(w, http.StatusServiceUnavailable, "cancelled", ctx.Err().Error())
		return id, nil, nil, false
	}
	unlock := func() { <-e.lock; unuse() }
	if e.lease != nil {
		select {
		case <-e.lease.Lost():
			s.dropLease(e)
		case <-e.lease.Wanted():
			// Another node asked for it: give it its chance rather
			// than keep it through a stream of requests here.
			s.dropLease(e)
		default:
		}
	}
	lease := e.lease // kept from an earlier request: the latest revision
	if lease == nil {
		var err error
		lease, err = s.cfg.Cluster.Acquire(ctx, id)
		if err != nil {
			unlock()
			s.clusterError(w, nil, id, err)
			return id, nil, nil, false
		}
		s.metrics.leasesHeld.Inc()
		e.lease = lease
		s.keepers.Add(1)
		go s.keepLease(id, e, lease)
	}
	if e.sess == nil || e.snap != lease.Snapshot() {
		if err := s.resume(ctx, e, lease); err != nil {
			s.dropLease(e)
			unlock()
			switch {
			case errors.Is(err, budget.ErrExceeded):
				memoryBudgetFull(w, "cannot resume the session", err)
			case errors.Is(err, errResume):
				s.cfg.Logger.Error("resume", "session", id, "err", err)
				writeError(w, http.StatusInternalServerError, "internal", "session "+strconv.Quote(id)+": "+err.Error())
			default:
				s.clusterError(w, nil, id, err)
			}
			return id, nil, nil, false
		}
	}
	e.mutated, e.clean = false, false
	return id, e, func() {
		failed := e.mutated && !e.clean
		if failed {
			// Changed in memory and not committed: what this node
			// holds is not the session any more. (Not touched either:
			// the request failed.)
			e.snap, e.sum, e.partsKey = "\x00uncommitted", [32]byte{}, [32]byte{}
		}
		if !e.committed && !failed && e.lease != nil && e.sess != nil && s.touchDue(e.lease) {
			if err := e.lease.Touch(context.WithoutCancel(ctx)); err != nil {
				s.cfg.Logger.Warn("cluster touch", "session", id, "err", err)
				failed = true
			}
		}
		e.committed = false
		if failed || e.sess == nil {
			s.dropLease(e) // a failed commit or touch: take the lease anew
		}
		e.leaseUsed = time.Now()
		unlock()
	}, true
}

// touchDue tells whether a request that changed nothing records its use
// of the session: not when the record says it was used less than a tenth
// of the session TTL (at most a second) ago.
func (s *Server) touchDue(l Lease) bool {
	d := time.Second
	if s.cfg.SessionTTL > 0 {
		d = min(d, s.cfg.SessionTTL/10)
	}
	return time.Since(l.LastUsed()) >= d
}

// dropLease gives e's lease back; e.lock is held.
func (s *Server) dropLease(e *entry) {
	if e.lease == nil {
		return
	}
	e.lease.Release()
	e.lease = nil
	s.metrics.leasesHeld.Dec()
}

// keepLease gives l back once it is idle for Config.LeaseIdle, wanted by
// another node, lost, or the server shuts down, and no request is using
// it.
func (s *Server) keepLease(id string, e *entry, l Lease) {
	defer s.keepers.Done()
	t := time.NewTimer(s.cfg.LeaseIdle)
	defer t.Stop()
wait:
	for {
		select {
		case <-l.Wanted():
			break wait
		case <-l.Lost():
			break wait
		case <-s.base.Done():
			break wait
		case <-t.C:
			e.lock <- struct{}{}
			idle := time.Since(e.leaseUsed)
			if e.lease == l && idle < s.cfg.LeaseIdle {
				<-e.lock
				t.Reset(s.cfg.LeaseIdle - idle)
				continue
			}
			<-e.lock
			break wait
		}
	}
	e.lock <- struct{}{} // after the request in progress, if any
	if e.lease == l {
		s.dropLease(e)
	}
	<-e.lock
	s.mu.Lock()
	if e.active == 0 && e.sess == nil && s.sessions[id] == e {
		delete(s.sessions, id)
	}
	s.mu.Unlock()
}

var errResume = errors.New("cannot resume the session")

// resume replaces e's session by one restored from the lease's snapshot.
// e.lock is held.
func (s *Server) resume(ctx context.Context, e *entry, lease Lease) error {
	start := time.Now()
	var data []byte
	if lease.Snapshot() != "" {
		var err error
		if data, err = lease.Load(ctx); err != nil {
			return err
		}
	}
	sess, err := s.cfg.Backend.NewSession(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", errResume, err)
	}
	ss, ok := sess.(SnapshotSession)
	if !ok {
		sess.Close()
		return fmt.Errorf("%w: the backend's sessions cannot be snapshotted", errResume)
	}
	var key [32]byte
	if data != nil {
		if err := ss.Restore(bytes.NewReader(data)); err != nil {
			sess.Close()
			return fmt.Errorf("%w: %w", errResume, err)
		}
		ps, ok := sess.(PartsSession)
		if _, pl := lease.(PartsLease); ok && pl {
			// The parts of the session as restored: the next commit
			// starts from them, and finds an unchanged session
			// unchanged.
			parts, err := ps.SnapshotParts()
			if err != nil {
				sess.Close()
				return fmt.Errorf("%w: %w", errResume, err)
			}
			key = partsKey(parts)
		}
	}
	if e.sess != nil {
		e.sess.Close()
	}
	s.mu.Lock()
	e.sess = sess
	s.mu.Unlock()
	e.snap, e.sum = lease.Snapshot(), sha256.Sum256(data)
	if data == nil {
		e.sum = [32]byte{}
	}
	e.partsKey = key
	s.metrics.resumes.Observe(time.Since(start).Seconds())
	return nil
}

// commit stores e's session in the cluster if it changed since the
// snapshot e holds; e.lock and e.lease are held. It returns nil without a
// Cluster.
func (s *Server) commit(ctx context.Context, e *entry) error {
	if s.cfg.Cluster == nil || e.lease == nil {
		return nil
	}
	select {
	case <-e.lease.Lost():
		return ErrLeaseLost
	default:
	}
	ps, isParts := e.sess.(PartsSession)
	pl, leaseParts := e.lease.(PartsLease)
	if isParts && leaseParts {
		// Incremental: what did not change is neither read nor hashed
		// again, and an unchanged session is one with the same parts.
		// A run of GNU bash that changed no file still changes bash's
		// memory (its counters, malloc's lists), and is committed: the
		// shell's state lives there (a run that only sets a variable,
		// defines a function or changes directory changes nothing
		// else), and no part of it can be told from noise without
		// bash's help. Such a commit stores the regions of bash's
		// memory the run dirtied (a few KiB; sandbox.SnapshotParts).
		parts, err := ps.SnapshotParts()
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		key := partsKey(parts)
		if key == e.partsKey {
			e.clean = true
			return nil // unchanged
		}
		start := time.Now()
		err = pl.CommitParts(context.WithoutCancel(ctx), parts)
		s.metrics.observeCommit(time.Since(start))
		if err != nil {
			return err // done() forgets what this node holds
		}
		e.snap, e.sum, e.partsKey, e.committed, e.clean = e.lease.Snapshot(), [32]byte{}, key, true, true
		return nil
	}
	ss := e.sess.(SnapshotSession)
	var buf bytes.Buffer
	if err := ss.Snapshot(&buf); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	if sum == e.sum {
		e.clean = true
		return nil // unchanged
	}
	start := time.Now()
	err := e.lease.Commit(context.WithoutCancel(ctx), buf.Bytes())
	s.metrics.observeCommit(time.Since(start))
	if err != nil {
		return err // done() forgets what this node holds
	}
	e.snap, e.sum, e.partsKey, e.committed, e.clean = e.lease.Snapshot(), sum, [32]byte{}, true, true
	return nil
}

// createClusterSession is createSession with a Cluster.
func (s *Server) createClusterSession(w http.ResponseWriter, r *http.Request, id string, sess Session) bool {
	if _, ok := sess.(SnapshotSession); !ok {
		sess.Close()
		writeError(w, http.StatusInternalServerError, "internal", "the backend's sessions cannot be snapshotted for a cluster")
		return false
	}
	if err := s.cfg.Cluster.Create(r.Context(), id, s.cfg.MaxSessions); err != nil {
		sess.Close()
		if errors.Is(err, ErrTooManySessions) {
			writeError(w, http.StatusTooManyRequests, "too_many_sessions", fmt.Sprintf("at most %d sessions in the cluster", s.cfg.MaxSessions))
		} else {
			s.clusterError(w, nil, id, err)
		}
		return false
	}
	s.mu.Lock()
	s.sessions[id] = &entry{sess: sess, lastUsed: s.cfg.Clock(), lock: make(chan struct{}, 1)}
	s.mu.Unlock()
	return true
}

// deleteClusterSession is deleteSession with a Cluster.
func (s *Server) deleteClusterSession(w http.ResponseWriter, r *http.Request) {
	id, e, done, ok := s.clusterSession(w, r)
	if !ok {
		return
	}
	err := e.lease.Delete(r.Context())
	if err == nil {
		s.mu.Lock()
		sess := e.sess
		e.sess = nil
		s.mu.Unlock()
		sess.Close()
		e.committed = true // nothing to touch
	}
	done()
	if err != nil {
		s.clusterError(w, nil, id, err)
		return
	}
	s.audit(r.Context(), audit.Event{Kind: audit.KindSession, Session: id, Reason: "deleted"})
	w.WriteHeader(http.StatusNoContent)
}

// clusterCacheIdle bounds how long a node keeps in memory a session it
// has not used: the copy only saves a restore, and with a load balancer
// without affinity every node would otherwise hold every session.
const clusterCacheIdle = 2 * time.Minute

// reapCluster deletes the sessions idle cluster-wide for longer than the
// TTL (each under its lease, so never one in use), and drops from memory
// the sessions this node has not used for clusterCacheIdle (or the TTL).
func (s *Server) reapCluster() {
	now := s.cfg.Clock()
	cutoff := now.Add(-s.cfg.SessionTTL)
	cacheIdle := clusterCacheIdle
	if s.cfg.SessionTTL >= 0 {
		cacheIdle = min(s.cfg.SessionTTL, clusterCacheIdle)
	}
	var drop []Session
	held := map[string]*entry{}
	s.mu.Lock()
	for id, e := range s.sessions {
		select {
		case e.lock <- struct{}{}:
		default:
			continue // in use
		}
		if e.lease != nil {
			held[id] = e
		} else if e.active == 0 && now.Sub(e.lastUsed) > cacheIdle {
			delete(s.sessions, id)
			if e.sess != nil {
				drop = append(drop, e.sess)
			}
		}
		<-e.lock
	}
	s.mu.Unlock()
	for _, sess := range drop {
		sess.Close()
	}
	if s.cfg.SessionTTL < 0 {
		return // sessions never expire
	}
	ctx, cancel := context.WithTimeout(s.base, time.Minute)
	defer cancel()
	ids, err := s.cfg.Cluster.Idle(ctx, cutoff)
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Warn("cluster reaper", "err", err)
		}
		return
	}
	for _, id := range ids {
		if e := held[id]; e != nil && s.reapHeld(ctx, id, e, cutoff) {
			continue
		}
		lease, err := s.cfg.Cluster.Acquire(ctx, id)
		if err != nil {
			continue
		}
		if lease.LastUsed().Before(cutoff) {
			if err := lease.Delete(ctx); err == nil {
				s.audit(context.WithoutCancel(s.base), audit.Event{Kind: audit.KindSession, Session: id, Reason: "expired"})
			}
		}
		lease.Release()
	}
}

// reapHeld deletes session id, idle since before cutoff, under the lease
// this node keeps for it. It reports whether it could look (the lease
// was still kept and not in use).
func (s *Server) reapHeld(ctx context.Context, id string, e *entry, cutoff time.Time) bool {
	select {
	case e.lock <- struct{}{}:
	default:
		return true // in use: not idle
	}
	defer func() { <-e.lock }()
	if e.lease == nil {
		return false
	}
	if e.lease.LastUsed().Before(cutoff) {
		if err := e.lease.Delete(ctx); err == nil {
			s.mu.Lock()
			sess := e.sess
			e.sess = nil
			if e.active == 0 && s.sessions[id] == e {
				delete(s.sessions, id)
			}
			s.mu.Unlock()
			if sess != nil {
				sess.Close()
			}
			s.dropLease(e)
			s.audit(context.WithoutCancel(s.base), audit.Event{Kind: audit.KindSession, Session: id, Reason: "expired"})
		}
	}
	return true
}
