package sandbox

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io/fs"
	"sort"

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
// alive, so that its memory is not reused), and the sums of the grouped
// parts by their bytes.
type partCache struct {
	files  map[sharedKey]fileParts
	groups map[string][32]byte
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
	img := &snapImage{}
	if err := s.snapshotShell(img); err != nil {
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
	pw := &partWriter{old: old, cache: &partCache{files: map[sharedKey]fileParts{}, groups: map[string][32]byte{}}}
	pw.encode(img, shared)
	s.parts = pw.cache
	return pw.parts, nil
}

// partWriter lays out a snapshot's parts.
type partWriter struct {
	buf   []byte // the group being filled
	parts []SnapshotPart
	old   *partCache
	cache *partCache
}

// encode writes img in the snapshot format (encodeSnapshot's, without
// the trailer) as parts. shared holds the file contents read shared.
func (w *partWriter) encode(img *snapImage, shared map[string][]byte) {
	entries := append([]snapEntry(nil), img.Entries...)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	w.buf = append(w.buf, snapshotMagic...)
	version := uint32(snapshotVersion)
	if img.Bash != nil {
		version = snapshotVersionBash
	}
	w.buf = binary.BigEndian.AppendUint32(w.buf, version)
	var hdr []byte
	for _, e := range entries {
		hdr = append(hdr[:0], byte(e.Kind))
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
		if e.Kind == kindFile && len(e.Data) >= bigPart {
			w.add(hdr)
			_, isShared := shared[e.Path]
			w.big(e.Data, isShared)
		} else {
			var data []byte
			if e.Kind == kindFile {
				data = e.Data
			}
			w.add(hdr, data)
		}
		w.endEntry(e.Path)
	}
	hdr = append(hdr[:0], byte(kindState))
	hdr = binary.AppendUvarint(hdr, uint64(len(img.State)))
	w.record(hdr, img.State)
	if img.Bash != nil {
		hdr = append(hdr[:0], byte(kindBash))
		hdr = binary.AppendUvarint(hdr, uint64(len(img.Bash)))
		w.record(hdr, img.Bash)
	}
	w.add([]byte{byte(kindEnd)})
	w.flush()
}

// record adds a shell record: its header and blob b.
func (w *partWriter) record(hdr, b []byte) {
	if len(b) >= bigPart {
		w.add(hdr)
		w.big(b, false)
		return
	}
	w.add(hdr, b)
}

// add appends bytes to the group, ending the group first if they would
// not fit in it.
func (w *partWriter) add(bs ...[]byte) {
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	if len(w.buf)+n > maxPart {
		w.flush()
	}
	for _, b := range bs {
		// A header and a small file fit in a part: a path is at most
		// maxSnapshotPath bytes, a small file under bigPart.
		w.buf = append(w.buf, b...)
	}
}

// endEntry ends the group after the entry at path p if it is full
// enough and p hashes to a boundary.
func (w *partWriter) endEntry(p string) {
	if len(w.buf) < minPart {
		return
	}
	h := fnv.New32a()
	h.Write([]byte(p))
	if h.Sum32()&7 == 0 {
		w.flush()
	}
}

// flush ends the group: its sum is reused when the last snapshot had a
// group with the same bytes.
func (w *partWriter) flush() {
	if len(w.buf) == 0 {
		return
	}
	b := w.buf
	w.buf = nil
	sum, ok := w.old.groups[string(b)]
	if !ok {
		sum = sha256.Sum256(b)
	}
	w.cache.groups[string(b)] = sum
	w.parts = append(w.parts, SnapshotPart{Data: b, Sum: sum})
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
