package natscluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wasmbox/wasmbox/server"
)

// Incremental snapshots.
//
// A session's snapshot (the sandbox's own versioned, checksummed format)
// is cut into content-defined chunks (a gear rolling hash: a boundary
// depends only on the bytes just before it, so a change inside one file
// moves the boundaries of that region only). Each chunk is stored once,
// in the chunks bucket under "c.<session>.<SHA-256 of the chunk>", and
// the session record carries a manifest: the list of its chunks. A
// commit writes the chunks that the record's current manifest does not
// have, plus the record itself: a run that changed 1 KB of a 1 MB
// session writes one or two chunks and the manifest, not the megabyte.
//
// Chunks are scoped to their session (never shared between sessions), so
// that a session's chunks can be deleted without reference counting
// across sessions. A chunk that a new manifest no longer lists is deleted
// after the commit, with compare-and-set on the revision the manifest
// recorded for it: a late delete never removes a chunk written again
// since.
//
// The chunks a commit adds go into the record itself ("fresh", up to
// maxFresh bytes), so that a commit is one replicated write; the node
// copies them into the chunks bucket after the commit, off the request's
// path, and the next commit waits for that copy. In a manifest a fresh
// chunk has revision 0: it is read from the record, and a node that takes
// the session over before the copy was made stores it again.
//
// Manifest format, versions 1 and 2 (all integers unsigned varints):
//
//	magic    "WBXM" (4 bytes)
//	version  1 byte (1 or 2)
//	size     total bytes of the chunks
//	count    number of chunks
//	chunks   count times: length, revision of its key, SHA-256 (32 bytes)
//	trailer  SHA-256 (32 bytes) of every byte before it
//
// In version 1 the chunks are the whole snapshot. In version 2 (a commit
// of a snapshot given in parts, server.PartsLease) they are the snapshot
// but its trailer, the SHA-256 of the rest, which Load appends: a commit
// then hashes only the parts that changed, and each chunk is checked
// against its own SHA-256 anyway. Both versions are read.
//
// A chunk's value is one byte of codec (0 stored, 1 zstd) and the payload.
// Everything read back is bounded before it is decompressed (a chunk's
// payload by maxChunkStored, its decompressed size by the length the
// manifest gives, itself at most maxChunk) and checked against its
// SHA-256: bytes written by another node, or by anyone with access to the
// buckets, are never trusted.

const (
	manifestMagic   = "WBXM"
	manifestVersion = 1
	// manifestVersionParts is a manifest without the snapshot's
	// trailer.
	manifestVersionParts = 2

	// Small chunks make a small commit: a change writes its chunk and
	// the snapshot's last one (its trailer changes every time), about
	// 2 x 16 KiB.
	minChunk = 4 << 10
	avgMask  = 1<<14 - 1 // average chunk of about 16 KiB past the minimum
	maxChunk = 64 << 10

	// maxChunkStored bounds a stored chunk value: a chunk that zstd
	// cannot shrink is stored as is, so a value is at most the chunk
	// and its codec byte.
	maxChunkStored = maxChunk + 1

	// minChunked is the smallest snapshot stored in chunks: a smaller
	// one goes whole into the record (zstd).
	minChunked = 64 << 10

	// maxFresh bounds the stored bytes of the chunks a commit puts in
	// the record (with a manifest of at most MaxInline bytes, the
	// record stays under NATS's default message limit of 1 MiB).
	maxFresh = 256 << 10

	codecStored = 0
	codecZstd   = 1
)

// gear is the table of the rolling hash, fixed (a change would only move
// the boundaries, never break a stored manifest).
var gear = func() (g [256]uint64) {
	x := uint64(0x9E3779B97F4A7C15)
	for i := range g {
		// splitmix64
		x += 0x9E3779B97F4A7C15
		z := x
		z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
		z = (z ^ z>>27) * 0x94D049BB133111EB
		g[i] = z ^ z>>31
	}
	return
}()

// cut returns the lengths of the content-defined chunks of b: each
// between minChunk and maxChunk bytes, but the last.
func cut(b []byte) []int {
	var lens []int
	for len(b) > 0 {
		n := len(b)
		if n > minChunk {
			end := min(n, maxChunk)
			var h uint64
			n = end
			for i := minChunk; i < end; i++ {
				h = h<<1 + gear[b[i]]
				if h&avgMask == 0 {
					n = i + 1
					break
				}
			}
		}
		lens = append(lens, n)
		b = b[n:]
	}
	return lens
}

// fresh is a chunk stored in the session record.
type fresh struct {
	Sum  []byte `json:"sum"`
	Data []byte `json:"data"` // its stored value
}

// chunkRef is one chunk of a manifest.
type chunkRef struct {
	Len int
	Rev uint64 // revision of its key when it was written
	Sum [32]byte
}

func encodeManifest(size int, refs []chunkRef, noTrailer bool) []byte {
	v := byte(manifestVersion)
	if noTrailer {
		v = manifestVersionParts
	}
	b := append([]byte(manifestMagic), v)
	b = binary.AppendUvarint(b, uint64(size))
	b = binary.AppendUvarint(b, uint64(len(refs)))
	for _, r := range refs {
		b = binary.AppendUvarint(b, uint64(r.Len))
		b = binary.AppendUvarint(b, r.Rev)
		b = append(b, r.Sum[:]...)
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

var errManifest = errors.New("natscluster: corrupt snapshot manifest")

// decodeManifest checks and decodes a manifest; limit bounds the snapshot
// it describes. noTrailer tells that the chunks lack the snapshot's
// trailer (version 2).
func decodeManifest(m []byte, limit int64) (size int64, refs []chunkRef, noTrailer bool, err error) {
	bad := func(what string) (int64, []chunkRef, bool, error) {
		return 0, nil, false, fmt.Errorf("%w: %s", errManifest, what)
	}
	if len(m) < len(manifestMagic)+1+32 || string(m[:len(manifestMagic)]) != manifestMagic {
		return bad("bad magic")
	}
	body, trailer := m[:len(m)-32], m[len(m)-32:]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], trailer) {
		return bad("checksum mismatch")
	}
	switch v := body[len(manifestMagic)]; v {
	case manifestVersion:
	case manifestVersionParts:
		noTrailer = true
		limit -= sha256.Size
	default:
		return bad(fmt.Sprintf("unknown version %d", v))
	}
	p := body[len(manifestMagic)+1:]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	total, ok := next()
	if !ok || total > uint64(limit) {
		return bad("bad size")
	}
	count, ok := next()
	// Every chunk takes at least 34 bytes of the manifest: the count
	// is bounded by what is there before anything is allocated.
	if !ok || count > uint64(len(p))/34 {
		return bad("bad chunk count")
	}
	refs = make([]chunkRef, 0, count)
	var sum uint64
	for range count {
		l, ok1 := next()
		rev, ok2 := next()
		if !ok1 || !ok2 || l == 0 || l > maxChunk || len(p) < 32 {
			return bad("bad chunk entry")
		}
		var r chunkRef
		r.Len, r.Rev = int(l), rev
		copy(r.Sum[:], p)
		p = p[32:]
		sum += l
		refs = append(refs, r)
	}
	if len(p) != 0 || sum != total {
		return bad("chunk lengths do not add up")
	}
	return int64(total), refs, noTrailer, nil
}

// chunkKey is the key of a session's chunk in the chunks bucket.
func chunkKey(id string, sum [32]byte) string { return "c." + id + "." + hex.EncodeToString(sum[:]) }

// encodeChunk is a chunk's stored value: zstd when it saves a sixteenth,
// else stored.
func (c *Cluster) encodeChunk(raw []byte) []byte {
	z := c.enc.EncodeAll(raw, []byte{codecZstd})
	if len(z)-1 < len(raw)-len(raw)/16 {
		return z
	}
	return append([]byte{codecStored}, raw...)
}

var decoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxChunk+1), zstd.WithDecoderMaxWindow(1<<20))
	if err != nil {
		return err
	}
	return d
}}

// decodeChunk checks a stored chunk value against its manifest entry and
// returns the chunk.
func decodeChunk(v []byte, r chunkRef) ([]byte, error) {
	if len(v) < 1 || len(v) > maxChunkStored {
		return nil, fmt.Errorf("stored chunk of %d bytes", len(v))
	}
	var raw []byte
	switch v[0] {
	case codecStored:
		raw = v[1:]
	case codecZstd:
		dv := decoders.Get()
		d, ok := dv.(*zstd.Decoder)
		if !ok {
			return nil, dv.(error)
		}
		err := d.Reset(bytes.NewReader(v[1:]))
		if err == nil {
			raw, err = io.ReadAll(io.LimitReader(d, int64(r.Len)+1))
		}
		d.Reset(nil)
		decoders.Put(d)
		if err != nil {
			return nil, fmt.Errorf("decompressing: %w", err)
		}
	default:
		return nil, fmt.Errorf("unknown codec %d", v[0])
	}
	if len(raw) != r.Len {
		return nil, fmt.Errorf("%d bytes, the manifest says %d", len(raw), r.Len)
	}
	if sha256.Sum256(raw) != r.Sum {
		return nil, errors.New("checksum mismatch")
	}
	return raw, nil
}

// loadChunks reads the chunks of a manifest (a few at a time) into one
// snapshot of size bytes.
func (l *lease) loadChunks(ctx context.Context, size int64, refs []chunkRef) ([]byte, error) {
	out := make([]byte, size, size+sha256.Size) // room for a trailer
	offs := make([]int, len(refs))
	o := 0
	for i, r := range refs {
		offs[i] = o
		o += r.Len
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	inRecord := map[[32]byte][]byte{}
	for _, f := range l.rec.Fresh {
		if len(f.Sum) == 32 {
			inRecord[[32]byte(f.Sum)] = f.Data
		}
	}
	work := make(chan int)
	for range min(32, len(refs)) {
		wg.Go(func() {
			for i := range work {
				var raw []byte
				var err error
				if refs[i].Rev == 0 {
					if v, ok := inRecord[refs[i].Sum]; ok {
						raw, err = decodeChunk(v, refs[i])
					} else {
						err = errors.New("missing from the record")
					}
				} else {
					raw, err = l.readChunk(ctx, refs[i])
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("chunk %d of %d: %w", i, len(refs), err)
					}
					mu.Unlock()
					cancel()
					continue
				}
				copy(out[offs[i]:], raw)
			}
		})
	}
feed:
	for i := range refs {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return out, first
}

// readChunk reads one chunk: from any replica (a direct get: all the
// versions of a chunk's key hold the same bytes, checked anyway), else
// from the stream's leader (a replica may not have it yet), again while
// the lease lasts if it is missing.
func (l *lease) readChunk(ctx context.Context, r chunkRef) ([]byte, error) {
	key := chunkKey(l.id, r.Sum)
	octx, cancel := l.c.op(ctx)
	e, err := l.c.chunks.Get(octx, key)
	cancel()
	if err == nil {
		if raw, err := decodeChunk(e.Value(), r); err == nil {
			return raw, nil
		}
	}
	for try := 0; try < 5; try++ {
		var data []byte
		var deleted bool
		data, _, deleted, err = l.c.getLast(ctx, l.c.chunksBucket, key)
		if err == nil && deleted {
			err = errors.New("missing (deleted)")
		}
		if err == nil {
			return decodeChunk(data, r)
		}
		if ctx.Err() != nil || !l.valid() {
			break
		}
	}
	return nil, err
}

// piece is a chunk to commit and its SHA-256.
type piece struct {
	data []byte
	sum  [32]byte
}

// manifestFits tells whether a manifest of n chunks fits in the record.
func manifestFits(n int) bool { return n*(32+2*binary.MaxVarintLen64)+128 <= MaxInline }

// commitChunks is Commit of an incremental snapshot: it stores the chunks
// of snap that the current manifest does not list, then advances the
// record to the new manifest. ok is false when the manifest would not fit
// in the record (Commit then stores the snapshot whole).
func (l *lease) commitChunks(ctx context.Context, name string, snap []byte) (err error, ok bool) {
	lens := cut(snap)
	if !manifestFits(len(lens)) {
		return nil, false
	}
	pieces := make([]piece, len(lens))
	off := 0
	for i, n := range lens {
		b := snap[off : off+n]
		off += n
		pieces[i] = piece{b, sha256.Sum256(b)}
	}
	return l.commitPieces(ctx, name, pieces, len(snap), false), true
}

// CommitParts implements server.PartsLease: the parts are the chunks
// (their sums given, not computed again), the manifest one of version 2.
// A small snapshot, or one of too many parts, is committed whole.
func (l *lease) CommitParts(ctx context.Context, parts []server.SnapshotPart) error {
	size := 0
	fits := manifestFits(len(parts))
	for _, p := range parts {
		size += len(p.Data)
		if len(p.Data) == 0 || len(p.Data) > maxChunk {
			fits = false
		}
	}
	if size+sha256.Size < minChunked || !fits {
		snap := make([]byte, 0, size+sha256.Size)
		for _, p := range parts {
			snap = append(snap, p.Data...)
		}
		sum := sha256.Sum256(snap)
		return l.Commit(ctx, append(snap, sum[:]...))
	}
	if !l.valid() {
		return server.ErrLeaseLost
	}
	pieces := make([]piece, len(parts))
	for i, p := range parts {
		pieces[i] = piece{p.Data, p.Sum}
	}
	octx, cancel := l.c.op(ctx)
	defer cancel()
	return l.commitPieces(octx, l.newName(), pieces, size, true)
}

// commitPieces stores the pieces the current manifest does not list and
// advances the record to their manifest.
func (l *lease) commitPieces(ctx context.Context, name string, pieces []piece, size int, noTrailer bool) error {
	l.waitFlush()
	have := make(map[[32]byte]uint64, len(l.man))
	for _, r := range l.man {
		if r.Rev != 0 { // in the chunks bucket
			have[r.Sum] = r.Rev
		}
	}
	// The last commit's fresh chunks, when this lease does not know
	// whether they reached the chunks bucket (another lease made that
	// commit): carried into the new record as they are, not stored again
	// on the request's path.
	carried := map[[32]byte][]byte{}
	for _, f := range l.rec.Fresh {
		if len(f.Sum) == 32 {
			carried[[32]byte(f.Sum)] = f.Data
		}
	}
	var fr []fresh
	freshBytes := 0
	refs := make([]chunkRef, len(pieces))
	type pending struct {
		idx []int
		fut jetstream.PubAckFuture
	}
	var futs []*pending
	writing := map[[32]byte]*pending{}
	for i, pc := range pieces {
		b, sum := pc.data, pc.sum
		refs[i] = chunkRef{Len: len(b), Sum: sum}
		if rev, ok := have[sum]; ok {
			refs[i].Rev = rev
			continue
		}
		if p := writing[sum]; p != nil {
			p.idx = append(p.idx, i)
			continue
		}
		v, ok := carried[sum]
		if !ok {
			v = l.c.encodeChunk(b)
		}
		if freshBytes+len(v) <= maxFresh {
			// In the record (revision 0).
			freshBytes += len(v)
			writing[sum] = &pending{idx: []int{i}}
			fr = append(fr, fresh{Sum: refs[i].Sum[:], Data: v})
			continue
		}
		// Published without waiting: the chunks of one commit are
		// replicated together.
		f, err := l.c.js.PublishAsync("$KV."+l.c.chunksBucket+"."+chunkKey(l.id, sum), v)
		if err != nil {
			return unavailable("storing a chunk", err)
		}
		p := &pending{idx: []int{i}, fut: f}
		writing[sum] = p
		futs = append(futs, p)
	}
	for _, p := range futs {
		select {
		case ack := <-p.fut.Ok():
			for _, i := range p.idx {
				refs[i].Rev = ack.Sequence
			}
		case err := <-p.fut.Err():
			return unavailable("storing a chunk", err)
		case <-ctx.Done():
			return unavailable("storing a chunk", ctx.Err())
		}
	}
	m := encodeManifest(size, refs, noTrailer)
	sum := sha256.Sum256(m)
	rec := l.rec
	rec.Snapshot, rec.Size, rec.Sum = name, int64(size), hex.EncodeToString(sum[:])
	rec.LastUsed, rec.Node = time.Now().UTC(), l.c.node
	rec.Inline, rec.Manifest, rec.Fresh = nil, m, fr
	old, oldObject, oldMan := l.rec.Snapshot, l.rec.Inline == nil && l.rec.Manifest == nil, l.man
	if err := l.update(ctx, rec); err != nil {
		// The chunks written stay (another commit may list the same
		// keys); the session's deletion removes them.
		return err
	}
	l.man = refs
	l.flush(fr)
	l.dropChunks(oldMan, refs)
	if old != "" && oldObject {
		l.c.deleteObject(old)
	}
	return nil
}

// dropChunks deletes, off the request's path, the chunks of old that keep
// does not list, each with compare-and-set on the revision old recorded:
// a chunk written again since (its key's revision moved) stays.
func (l *lease) dropChunks(old, keep []chunkRef) {
	if len(old) == 0 {
		return
	}
	kept := make(map[[32]byte]bool, len(keep))
	for _, r := range keep {
		kept[r.Sum] = true
	}
	var drop []chunkRef
	for _, r := range old {
		if r.Rev != 0 && !kept[r.Sum] {
			kept[r.Sum] = true // once
			drop = append(drop, r)
		}
	}
	if len(drop) == 0 {
		return
	}
	l.c.wg.Add(1)
	go func() {
		defer l.c.wg.Done()
		for _, r := range drop {
			ctx, cancel := context.WithTimeout(context.Background(), l.c.timeout)
			l.c.chunks.Delete(ctx, chunkKey(l.id, r.Sum), jetstream.LastRevision(r.Rev))
			cancel()
		}
	}()
}

// deleteChunks deletes every chunk of session id (its deletion).
func (c *Cluster) deleteChunks(ctx context.Context, id string) {
	lister, err := c.chunks.ListKeysFiltered(ctx, "c."+id+".*")
	if err != nil {
		return
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	lister.Stop()
	for _, k := range keys {
		octx, cancel := c.op(ctx)
		c.chunks.Purge(octx, k)
		cancel()
	}
}

// deleteObject deletes a snapshot object off the request's path (Close
// waits for it); best effort: an orphan only costs space.
func (c *Cluster) deleteObject(name string) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		dctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		defer cancel()
		c.snaps.Delete(dctx, name)
	}()
}

// flush copies the fresh chunks of the commit just made into the chunks
// bucket, off the request's path; waitFlush waits for it and notes their
// revisions in the manifest this lease holds.
func (l *lease) flush(fr []fresh) {
	if len(fr) == 0 {
		return
	}
	done := make(chan struct{})
	l.flushed, l.flushRevs = done, nil
	l.c.wg.Add(1)
	go func() {
		defer l.c.wg.Done()
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), l.c.timeout)
		defer cancel()
		futs := make([]jetstream.PubAckFuture, len(fr))
		for i, f := range fr {
			var err error
			if futs[i], err = l.c.js.PublishAsync("$KV."+l.c.chunksBucket+"."+chunkKey(l.id, [32]byte(f.Sum)), f.Data); err != nil {
				futs = futs[:i]
				break
			}
		}
		revs := map[[32]byte]uint64{}
		for i, f := range futs {
			select {
			case ack := <-f.Ok():
				revs[[32]byte(fr[i].Sum)] = ack.Sequence
			case <-f.Err():
			case <-ctx.Done():
			}
		}
		l.flushRevs = revs // read after done is closed
	}()
}

func (l *lease) waitFlush() {
	if l.flushed == nil {
		return
	}
	<-l.flushed
	for i, r := range l.man {
		if rev, ok := l.flushRevs[r.Sum]; ok && r.Rev == 0 {
			l.man[i].Rev = rev
		}
	}
	l.flushed, l.flushRevs = nil, nil
}

// resolveFresh finds out, in the background, which of the record's fresh
// chunks its writer copied into the chunks bucket already (the value
// there is the record's, byte for byte), and at which revision: the next
// commit waits for it (waitFlush), and carries in its record only the
// ones that are not there.
func (l *lease) resolveFresh() {
	if len(l.rec.Fresh) == 0 {
		return
	}
	fr := l.rec.Fresh
	done := make(chan struct{})
	l.flushed, l.flushRevs = done, nil
	l.c.wg.Add(1)
	go func() {
		defer l.c.wg.Done()
		defer close(done)
		revs := map[[32]byte]uint64{}
		for _, f := range fr {
			if len(f.Sum) != 32 {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), l.c.timeout)
			e, err := l.c.chunks.Get(ctx, chunkKey(l.id, [32]byte(f.Sum)))
			cancel()
			if err == nil && bytes.Equal(e.Value(), f.Data) {
				revs[[32]byte(f.Sum)] = e.Revision()
			}
		}
		l.flushRevs = revs
	}()
}
