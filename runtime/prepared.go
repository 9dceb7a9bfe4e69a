package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/wasmbox/wasmbox/internal/wasmbin"
)

// The prepared-module cache.
//
// Before wazero sees a module, Compile checks it against the caps,
// meters its loops and prepares it as a reactor: two or three passes over
// the whole binary (~100 ms each for the 9 MB tool modules), which every
// new process paid although wazero's own cache held the compiled code. With
// a disk cache, Compile keeps their output beside wazero's, in
// prepared/<key>, where key names the original module's SHA-256, the
// source of the rewrites (wasmbin.SourceHash: a changed rewrite never
// reads an older output), the caps and the runtime's mode. An entry ends
// with a CRC-32C of its content; one that does not check out, or does not
// parse, is a miss and is written again. The directory is the host's
// (never reachable by a guest).

const preparedMagic = "wasmbox prepared module v2\n"

// prepared is the output of Compile's rewrites of one module.
type prepared struct {
	binary   []byte
	minPages uint32
	metered  bool
	reactor  bool
	segments []wasmbin.Segment
	globals  []string
}

// preparedPath is where the entry of module key lives, or "".
func (r *Runtime) preparedPath(key [32]byte) string {
	if r.preparedDir == "" {
		return ""
	}
	src := wasmbin.SourceHash()
	tag := sha256.Sum256(fmt.Appendf(nil, "%x|%+v|%t", src, wasmbin.DefaultCaps, r.wazeroCheck))
	return filepath.Join(r.preparedDir, fmt.Sprintf("%x-%x", key, tag[:8]))
}

func (r *Runtime) loadPrepared(key [32]byte) (prepared, bool) {
	p := r.preparedPath(key)
	if p == "" {
		return prepared{}, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return prepared{}, false
	}
	pm, err := decodePrepared(b)
	if err != nil {
		os.Remove(p)
		return prepared{}, false
	}
	return pm, true
}

// storePrepared writes the entry atomically (a temporary file renamed),
// best effort: a failure only costs the next process the rewrites.
func (r *Runtime) storePrepared(key [32]byte, pm prepared) {
	p := r.preparedPath(key)
	if p == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(encodePrepared(pm))
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(f.Name())
		return
	}
	if os.Rename(f.Name(), p) != nil {
		os.Remove(f.Name())
	}
}

func encodePrepared(pm prepared) []byte {
	b := []byte(preparedMagic)
	b = binary.AppendUvarint(b, uint64(pm.minPages))
	b = append(b, boolByte(pm.metered), boolByte(pm.reactor))
	b = binary.AppendUvarint(b, uint64(len(pm.segments)))
	for _, s := range pm.segments {
		b = binary.AppendUvarint(b, uint64(s.Offset))
		b = binary.AppendUvarint(b, uint64(len(s.Data)))
		b = append(b, s.Data...)
	}
	b = binary.AppendUvarint(b, uint64(len(pm.globals)))
	for _, g := range pm.globals {
		b = binary.AppendUvarint(b, uint64(len(g)))
		b = append(b, g...)
	}
	b = binary.AppendUvarint(b, uint64(len(pm.binary)))
	b = append(b, pm.binary...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// castagnoli is the checksum of an entry: CRC-32C catches a torn or
// corrupted file (every burst error up to 32 bits) at a few GB/s, where
// SHA-256 cost a warm start 7 ms per module. The entry is not a trust
// boundary: the cache directory is the host user's, and the module bytes
// inside are hashed again by wazero, whose cache is keyed by them.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

var errBadPrepared = errors.New("runtime: bad prepared-module cache entry")

func decodePrepared(b []byte) (prepared, error) {
	var pm prepared
	if len(b) < len(preparedMagic)+4 || !bytes.HasPrefix(b, []byte(preparedMagic)) {
		return pm, errBadPrepared
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return pm, errBadPrepared
	}
	d := decoder{b: body[len(preparedMagic):]}
	pm.minPages = uint32(d.uvarint(1 << 16))
	pm.metered, pm.reactor = d.byte() == 1, d.byte() == 1
	n := d.uvarint(1 << 20)
	for i := uint64(0); i < n && d.err == nil; i++ {
		off := d.uvarint(1 << 32)
		pm.segments = append(pm.segments, wasmbin.Segment{Offset: uint32(off), Data: d.bytes()})
	}
	n = d.uvarint(1 << 20)
	for i := uint64(0); i < n && d.err == nil; i++ {
		pm.globals = append(pm.globals, string(d.bytes()))
	}
	pm.binary = d.bytes()
	if d.err != nil || len(d.b) != 0 || !IsWasm(pm.binary) {
		return prepared{}, errBadPrepared
	}
	return pm, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint(max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > max {
		d.err = errBadPrepared
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.err = errBadPrepared
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bytes() []byte {
	n := d.uvarint(uint64(len(d.b)))
	if d.err != nil {
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}
