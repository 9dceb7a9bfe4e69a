package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"time"
)

// Snapshot format, version 1.
//
// A snapshot is a single byte stream:
//
//	magic    "WASMBOX-SNAPSHOT\n" (17 bytes)
//	version  uint32, big endian (1)
//	records  a sequence of records, each a one-byte kind followed by fields
//	trailer  SHA-256 (32 bytes) of every byte before it (magic included)
//
// Integers in records are unsigned varints (encoding/binary.AppendUvarint);
// strings and byte blobs are a uvarint length followed by the bytes; times are
// Unix nanoseconds as a zig-zag varint. Record kinds:
//
//	'D' directory: path, mode, mtime
//	'F' regular file: path, mode, mtime, content
//	'L' symlink: path, target, mtime (always 0: symlink times are not kept)
//	'S' shell state: JSON blob (cwd, variables, exports, functions, aliases)
//	'B' GNU bash's memory image (version 2 only; see bashImageMagic)
//	'E' end of records (exactly once, last)
//
// Version 2 is version 1 with a 'B' record (a sandbox WithShell(ShellBash)):
// a snapshot without one is written as version 1, byte for byte as before,
// and both versions are read.
//
// Entries appear in lexical path order, parents before children, so that a
// round trip (Snapshot, Restore, Snapshot) is byte-identical. Paths are
// absolute, clean guest paths. Hard links are stored as independent files.
// Host-backed mounts and /dev are not part of a snapshot.
const (
	snapshotMagic   = "WASMBOX-SNAPSHOT\n"
	snapshotVersion = 1
	// snapshotVersionBash is the version of a snapshot with a 'B' record.
	snapshotVersionBash = 2

	maxSnapshotPath = 4096
)

// ErrCorruptSnapshot is wrapped by every error Restore returns for input that
// is not a valid snapshot (bad magic, unknown version, checksum mismatch,
// truncated or malformed records).
var ErrCorruptSnapshot = errors.New("corrupt snapshot")

type snapKind byte

const (
	kindDir     snapKind = 'D'
	kindFile    snapKind = 'F'
	kindSymlink snapKind = 'L'
	kindState   snapKind = 'S'
	kindBash    snapKind = 'B'
	kindEnd     snapKind = 'E'
)

// snapEntry is one filesystem record of a snapshot.
type snapEntry struct {
	Kind   snapKind
	Path   string
	Mode   fs.FileMode
	Mtime  time.Time
	Data   []byte // file content
	Target string // symlink target
}

// snapImage is a decoded snapshot.
type snapImage struct {
	Entries []snapEntry
	State   []byte
	// Bash is the 'B' record: GNU bash's memory image (encodeBashImage).
	Bash []byte
	// bashParts is the 'B' record in pieces, in place of Bash, for
	// SnapshotParts (encodeBashRecord).
	bashParts *bashRecordParts
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// encodeSnapshot writes img to w in the format above. Entries are sorted.
func encodeSnapshot(w io.Writer, img *snapImage) error {
	entries := append([]snapEntry(nil), img.Entries...)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	h := sha256.New()
	mw := io.MultiWriter(w, h)
	var buf []byte
	buf = append(buf, snapshotMagic...)
	version := uint32(snapshotVersion)
	if img.Bash != nil {
		version = snapshotVersionBash
	}
	buf = binary.BigEndian.AppendUint32(buf, version)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		_, err := mw.Write(buf)
		buf = buf[:0]
		return err
	}
	for _, e := range entries {
		buf = append(buf, byte(e.Kind))
		buf = appendString(buf, e.Path)
		switch e.Kind {
		case kindDir:
			buf = binary.AppendUvarint(buf, uint64(e.Mode))
			buf = binary.AppendVarint(buf, e.Mtime.UnixNano())
		case kindFile:
			buf = binary.AppendUvarint(buf, uint64(e.Mode))
			buf = binary.AppendVarint(buf, e.Mtime.UnixNano())
			buf = binary.AppendUvarint(buf, uint64(len(e.Data)))
			if err := flush(); err != nil {
				return err
			}
			if _, err := mw.Write(e.Data); err != nil {
				return err
			}
		case kindSymlink:
			buf = appendString(buf, e.Target)
			buf = binary.AppendVarint(buf, e.Mtime.UnixNano())
		default:
			return fmt.Errorf("snapshot: unknown entry kind %q", e.Kind)
		}
		if len(buf) > 64<<10 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	buf = append(buf, byte(kindState))
	buf = appendBytes(buf, img.State)
	if img.Bash != nil {
		buf = append(buf, byte(kindBash))
		buf = appendBytes(buf, img.Bash)
	}
	buf = append(buf, byte(kindEnd))
	if err := flush(); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// snapReader decodes records from a verified snapshot body.
type snapReader struct {
	b   []byte
	off int
}

func (r *snapReader) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", ErrCorruptSnapshot, what, r.off)
}

func (r *snapReader) uvarint(what string) (uint64, error) {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		return 0, r.fail("bad " + what)
	}
	r.off += n
	return v, nil
}

func (r *snapReader) varint(what string) (int64, error) {
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		return 0, r.fail("bad " + what)
	}
	r.off += n
	return v, nil
}

func (r *snapReader) blob(what string, max uint64) ([]byte, error) {
	n, err := r.uvarint(what + " length")
	if err != nil {
		return nil, err
	}
	if n > max || n > uint64(len(r.b)-r.off) {
		return nil, r.fail(what + " too long")
	}
	p := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return p, nil
}

func (r *snapReader) path(what string) (string, error) {
	p, err := r.blob(what, maxSnapshotPath)
	if err != nil {
		return "", err
	}
	s := string(p)
	if s == "" || s[0] != '/' || path.Clean(s) != s || bytes.IndexByte(p, 0) >= 0 {
		return "", r.fail(fmt.Sprintf("invalid %s %q", what, s))
	}
	return s, nil
}

// decodeSnapshot reads a whole snapshot of at most maxBytes bytes, verifies
// its checksum and decodes it. It never panics on bad input.
func decodeSnapshot(rd io.Reader, maxBytes int64) (*snapImage, error) {
	data, err := io.ReadAll(io.LimitReader(rd, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("snapshot: read: %w", err)
	}
	if int64(len(data)) > maxBytes {
		return nil, fmt.Errorf("%w: larger than the %d-byte limit", ErrCorruptSnapshot, maxBytes)
	}
	hdr := len(snapshotMagic) + 4
	if len(data) < hdr+sha256.Size+1 || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return nil, fmt.Errorf("%w: not a wasmbox snapshot", ErrCorruptSnapshot)
	}
	version := binary.BigEndian.Uint32(data[len(snapshotMagic):hdr])
	if version != snapshotVersion && version != snapshotVersionBash {
		return nil, fmt.Errorf("%w: unsupported version %d (this build reads versions %d and %d)", ErrCorruptSnapshot, version, snapshotVersion, snapshotVersionBash)
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorruptSnapshot)
	}
	r := &snapReader{b: body, off: hdr}
	img := &snapImage{}
	seen := map[string]bool{}
	var last string
	for {
		if r.off >= len(r.b) {
			return nil, r.fail("missing end record")
		}
		kind := snapKind(r.b[r.off])
		r.off++
		switch kind {
		case kindEnd:
			if r.off != len(r.b) {
				return nil, r.fail("data after end record")
			}
			return img, nil
		case kindState:
			st, err := r.blob("shell state", uint64(len(r.b)))
			if err != nil {
				return nil, err
			}
			img.State = append([]byte(nil), st...)
			continue
		case kindBash:
			if version != snapshotVersionBash || img.Bash != nil {
				return nil, r.fail("unexpected bash image record")
			}
			b, err := r.blob("bash image", uint64(len(r.b)))
			if err != nil {
				return nil, err
			}
			img.Bash = append([]byte(nil), b...)
			continue
		case kindDir, kindFile, kindSymlink:
		default:
			return nil, r.fail(fmt.Sprintf("unknown record kind 0x%02x", byte(kind)))
		}
		e := snapEntry{Kind: kind}
		if e.Path, err = r.path("path"); err != nil {
			return nil, err
		}
		if seen[e.Path] || e.Path < last {
			return nil, r.fail("entries out of order or duplicated: " + e.Path)
		}
		seen[e.Path], last = true, e.Path
		if kind == kindSymlink {
			t, err := r.blob("symlink target", maxSnapshotPath)
			if err != nil {
				return nil, err
			}
			e.Target = string(t)
		} else {
			m, err := r.uvarint("mode")
			if err != nil {
				return nil, err
			}
			if m > uint64(^uint32(0)) {
				return nil, r.fail("bad mode")
			}
			e.Mode = fs.FileMode(m)
		}
		ns, err := r.varint("mtime")
		if err != nil {
			return nil, err
		}
		e.Mtime = time.Unix(0, ns).UTC()
		if kind == kindFile {
			d, err := r.blob("file content", uint64(len(r.b)))
			if err != nil {
				return nil, err
			}
			e.Data = d
		}
		img.Entries = append(img.Entries, e)
	}
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}
