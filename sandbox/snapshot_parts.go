package sandbox

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io/fs"
	"sort"
	"unsafe"

	"github.com/wasmbox/wasmbox/vfs"
)

// SnapshotPart is a piece of a snapshot (see Sandbox.SnapshotParts).
type SnapshotPart struct {
	// Data is the piece's bytes. It is shared (with the sandbox's files
	// copy-on-write, and with the next call's parts) and never changes:
	// the caller must not modify it.
	Data []byte
	// Sum is the SHA-256 of Data.
	Sum [32]byte
}

// Parts of a snapshot. A file of at least bigPart bytes (and a shell
// record as large) gets parts of its own, cut where its content says
// (a gear rolling hash, so that a change inside it moves the boundaries
// near the change only), each between minPart and maxPart bytes but the
// last. Everything else (record headers, directories, symlinks, small
// files) is grouped into parts of at most maxPart bytes, which end after
// an entry whose path hashes to a boundary once they hold minPart bytes:
// where a group ends depends on its own entries only, so that a change to
// one small file changes one group.
const (
	minPart = 4 << 10
	maxPart = 64 << 10
	bigPart = 8 << 10
	avgMask = 1<<14 - 1
)

// partCache is what a snapshot reuses from the one before it: the parts
// of a file's content by the content's identity (vfs.MemFS.ReadShared:
// the same shared slice holds the same bytes, and the cache keeps it
// alive, so that its memory is not reused), and the grouped parts by
// their key (groupKey), which names a shared small file's content by its
// identity too.
type partCache struct {
	files  map[sharedKey]fileParts
	groups map[string]groupPart
	// bash is the last 'B' record in pieces: the regions of bash's
	// memory that did not change keep their encoding (encodeBashRecord).
	bash *bashRecordParts
}

type groupPart struct {
	key  string // the map's key, kept to be reused
	part SnapshotPart
	keep [][]byte // the shared contents key names by identity: kept alive
}

type sharedKey struct {
	first *byte
	n     int
}

type fileParts struct {
	data  []byte // keeps first alive
	parts []SnapshotPart
}

// SnapshotParts returns the sandbox's snapshot cut into parts: the
// concatenation of the parts' Data, followed by its SHA-256 (the
// snapshot's trailer), is byte for byte what Snapshot writes. It is
// incremental: the content of a file that did not change since the last
// call is neither read nor hashed again (its parts are reused, found by
// the identity of the content shared copy-on-write with the file), and a
// group of small entries that did not change is not hashed again.
// Directories, symlinks, modes and times are read anew each time.
//
// Parts are at most 64 KiB. The trailer is not a part: computing it
// needs every byte; a caller that stores parts (the cluster) recomputes
// it when it loads them.
func (s *Sandbox) SnapshotParts() ([]SnapshotPart, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	var prevBash *bashRecordParts
	if s.parts != nil {
		prevBash = s.parts.bash
	}
	img := &snapImage{}
	if err := s.snapshotShell(img, true, prevBash); err != nil {
		return nil, err
	}
	shared := map[string][]byte{}
	read := func(p string, fi fs.FileInfo) ([]byte, error) {
		data, ino, err := s.fs.ReadShared(p)
		st, ok := fi.Sys().(*vfs.Stat)
		if err != nil || !ok || st.Ino != ino {
			// Not in the MemFS, or not the file just listed: an
			// ordinary copy, not cached.
			return readAll(s.fs, p)
		}
		shared[p] = data
		return data, nil
	}
	if err := collect(s.fs, "/", s.snapshotSkip(), img, read); err != nil {
		return nil, fmt.Errorf("sandbox: snapshot: %w", err)
	}
	old := s.parts
	if old == nil {
		old = &partCache{}
	}
	if old.groups == nil {
		old.groups = map[string]groupPart{}
	}
	pw := &partWriter{old: old, cache: &partCache{files: map[sharedKey]fileParts{}, groups: make(map[string]groupPart, len(old.groups))}}
	pw.encode(img, shared)
	pw.cache.bash = img.bashParts
	s.parts = pw.cache
	return pw.parts, nil
}

// partWriter lays out a snapshot's parts.
type partWriter struct {
	// The group being filled: its pieces (not copied yet), their
	// length, its key and the shared contents the key names.
	pieces [][]byte
	n      int
	key    []byte
	keep   [][]byte
	hdrs   []byte // the headers of this snapshot, one after the other

	parts []SnapshotPart
	old   *partCache
	cache *partCache
}

// encode writes img in the snapshot format (encodeSnapshot's, without
// the trailer) as parts. shared holds the file contents read shared.
func (w *partWriter) encode(img *snapImage, shared map[string][]byte) {
	entries := append([]snapEntry(nil), img.Entries...)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	version := uint32(snapshotVersion)
	if img.Bash != nil || img.bashParts != nil {
		version = snapshotVersionBash
	}
	w.add(binary.BigEndian.AppendUint32([]byte(snapshotMagic), version), nil, false)
	var hdr []byte
	for _, e := range entries {
		start := len(w.hdrs)
		w.hdrs = append(w.hdrs, byte(e.Kind))
		hdr = w.hdrs
		hdr = appendString(hdr, e.Path)
		switch e.Kind {
		case kindDir:
			hdr = binary.AppendUvarint(hdr, uint64(e.Mode))
			hdr = binary.AppendVarint(hdr, e.Mtime.UnixNano())
		case kindFile:
			hdr = binary.AppendUvarint(hdr, uint64(e.Mode))
			hdr = binary.AppendVarint(hdr, e.Mtime.UnixNano())
			hdr = binary.AppendUvarint(hdr, uint64(len(e.Data)))
		case kindSymlink:
			hdr = appendString(hdr, e.Target)
			hdr = binary.AppendVarint(hdr, e.Mtime.UnixNano())
		}
		// hdr is w.hdrs grown: earlier headers' bytes stay where the
		// pieces took them (appending never writes below len).
		w.hdrs = hdr
		hdr = hdr[start:len(hdr):len(hdr)]
		_, isShared := shared[e.Path]
		if e.Kind == kindFile && len(e.Data) >= bigPart {
			w.add(hdr, nil, false)
			w.big(e.Data, isShared)
		} else {
			var data []byte
			if e.Kind == kindFile {
				data = e.Data
			}
			w.add(hdr, data, isShared)
		}
		w.endEntry(e.Path)
	}
	hdr = binary.AppendUvarint([]byte{byte(kindState)}, uint64(len(img.State)))
	w.record(hdr, img.State)
	if rec := img.bashParts; rec != nil {
		w.bash(rec)
	} else if img.Bash != nil {
		hdr = binary.AppendUvarint([]byte{byte(kindBash)}, uint64(len(img.Bash)))
		w.record(hdr, img.Bash)
	}
	w.add([]byte{byte(kindEnd)}, nil, false)
	w.flush()
}

// bash adds the 'B' record in pieces. Its header and head (the record's
// length, the stack pointer: they change with any run) make a small part
// of their own. Each region of bash's memory is added by the identity of
// its encoding, which a region that did not change keeps from the last
// snapshot (encodeBashRecord): the group it is in is then the last one,
// and its part is reused without hashing. A group ends after a region
// once it holds minPart bytes: a region a run dirtied changes its group,
// and the small groups after it up to the next large region only if its
// new size moves where its group ends.
func (w *partWriter) bash(rec *bashRecordParts) {
	hdr := binary.AppendUvarint([]byte{byte(kindBash)}, uint64(rec.len()))
	w.flush()
	w.add(append(hdr, rec.head...), nil, false)
	w.flush()
	for _, g := range rec.regions {
		w.add(nil, g.enc, true)
		if w.n >= minPart {
			w.flush()
		}
	}
	w.flush()
}

// record adds a shell record: its header and blob b.
func (w *partWriter) record(hdr, b []byte) {
	if len(b) >= bigPart {
		w.add(hdr, nil, false)
		w.big(b, false)
		return
	}
	w.add(hdr, b, false)
}

// add appends a header and its data to the group, ending the group first
// if they would not fit in it. A header and a small file fit in a part: a
// path is at most maxSnapshotPath bytes, a small file under bigPart. The
// group's key takes the header's bytes, and the data's bytes or, when it
// is a file's content shared copy-on-write, its identity.
func (w *partWriter) add(hdr, data []byte, shared bool) {
	if w.n+len(hdr)+len(data) > maxPart {
		w.flush()
	}
	w.pieces = append(w.pieces, hdr)
	w.key = append(w.key, 'h')
	w.key = appendBytes(w.key, hdr)
	w.n += len(hdr)
	if len(data) == 0 {
		return
	}
	w.pieces = append(w.pieces, data)
	w.n += len(data)
	if shared {
		w.key = append(w.key, 's')
		w.key = binary.AppendUvarint(w.key, uint64(uintptr(unsafe.Pointer(unsafe.SliceData(data)))))
		w.key = binary.AppendUvarint(w.key, uint64(len(data)))
		w.keep = append(w.keep, data)
		return
	}
	w.key = append(w.key, 'd')
	w.key = appendBytes(w.key, data)
}

// endEntry ends the group after the entry at path p if it is full
// enough and p hashes to a boundary (FNV-1a).
func (w *partWriter) endEntry(p string) {
	if w.n < minPart {
		return
	}
	h := uint32(2166136261)
	for i := 0; i < len(p); i++ {
		h = (h ^ uint32(p[i])) * 16777619
	}
	if h&7 == 0 {
		w.flush()
	}
}

// flush ends the group: the last snapshot's part is reused when it had a
// group of the same key (the same bytes: a shared content it names by
// identity was kept alive by that snapshot's cache, so that its address
// was not reused, and it never changes).
func (w *partWriter) flush() {
	if len(w.pieces) == 0 {
		return
	}
	g, ok := w.old.groups[string(w.key)]
	if !ok {
		b := make([]byte, 0, w.n)
		for _, p := range w.pieces {
			b = append(b, p...)
		}
		g = groupPart{key: string(w.key), part: SnapshotPart{Data: b, Sum: sha256.Sum256(b)}}
	}
	g.keep = w.keep
	w.cache.groups[g.key] = g
	w.parts = append(w.parts, g.part)
	w.pieces, w.n, w.key, w.keep = w.pieces[:0], 0, w.key[:0], nil
}

// big adds b (a large file's content or shell record) as parts of its
// own, reusing the last snapshot's parts of the same shared content.
func (w *partWriter) big(b []byte, shared bool) {
	w.flush()
	key := sharedKey{&b[0], len(b)}
	if shared {
		if fp, ok := w.old.files[key]; ok {
			w.parts = append(w.parts, fp.parts...)
			w.cache.files[key] = fp
			return
		}
		if fp, ok := w.cache.files[key]; ok { // a hard link
			w.parts = append(w.parts, fp.parts...)
			return
		}
	}
	start := len(w.parts)
	for rest := b; len(rest) > 0; {
		n := cutPart(rest)
		w.parts = append(w.parts, SnapshotPart{Data: rest[:n:n], Sum: sha256.Sum256(rest[:n])})
		rest = rest[n:]
	}
	if shared {
		w.cache.files[key] = fileParts{data: b, parts: w.parts[start:len(w.parts):len(w.parts)]}
	}
}

// gear is the table of the rolling hash that cuts large contents.
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

// cutPart returns the length of b's first part: between minPart and
// maxPart bytes (less when b is shorter).
func cutPart(b []byte) int {
	n := len(b)
	if n <= minPart {
		return n
	}
	end := min(n, maxPart)
	var h uint64
	for i := minPart; i < end; i++ {
		h = h<<1 + gear[b[i]]
		if h&avgMask == 0 {
			return i + 1
		}
	}
	return end
}
