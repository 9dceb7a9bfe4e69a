package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/wasmbox/wasmbox/internal/cachemac"
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
// with a CRC-32C of its content and a MAC (cachemac) of all of it; one
// that does not check out, or does not parse, is a miss and is written
// again. The directory is the host's: no mount may cover it.

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

// prepareRules numbers the rules of prepare (runtime.go) that
// wasmbin.SourceHash does not cover, such as what it refuses: change it
// with them, or an entry prepared under the old rules is read again.
const prepareRules = 2

// preparedPath is where the entry of module key lives, or "".
func (r *Runtime) preparedPath(key [32]byte) string {
	if r.preparedDir == "" {
		return ""
	}
	src := wasmbin.SourceHash()
	tag := sha256.Sum256(fmt.Appendf(nil, "%x|%+v|%t|%d", src, wasmbin.DefaultCaps, r.wazeroCheck, prepareRules))
	return filepath.Join(r.preparedDir, fmt.Sprintf("%x-%x", key, tag[:8]))
}

func (r *Runtime) loadPrepared(key [32]byte) (prepared, bool) {
	p := r.preparedPath(key)
	if p == "" {
		return prepared{}, false
	}
	// Read into the heap, verified there: the bytes decoded are the bytes
	// whose MAC checked out, whatever happens to the file afterwards.
	b, err := readEntry(p)
	if err != nil {
		return prepared{}, false
	}
	body, tag, ok := cachemac.Split(b)
	if !ok || !r.mac.Verify([]byte(filepath.Base(p)), body, tag) {
		os.Remove(p)
		return prepared{}, false
	}
	pm, err := decodePrepared(body)
	if err != nil {
		os.Remove(p)
		return prepared{}, false
	}
	touch(p)
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
	b := encodePrepared(pm)
	_, werr := f.Write(append(b, r.mac.Sum([]byte(filepath.Base(p)), b)...))
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(f.Name())
		return
	}
	if os.Rename(f.Name(), p) != nil {
		os.Remove(f.Name())
	}
}

// maxPreparedEntry bounds what loadPrepared reads: a file larger than the
// largest module the caps admit plus its segments is not an entry.
const maxPreparedEntry = 1 << 30

// readEntry reads the regular file p, at most maxPreparedEntry bytes.
func readEntry(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxPreparedEntry {
		return nil, errBadPrepared
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return b, nil
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

// castagnoli is the checksum of an entry's content: CRC-32C catches a torn
// or corrupted file at a few GB/s. It is not what makes an entry trusted:
// the whole entry, checksum included, carries a MAC (package cachemac) under
// the cache directory's key, which loadPrepared verifies on its copy in
// memory before decoding anything. An entry decides what wazero compiles
// (its binary) and what memory a guest starts with (its segments), so one
// that something else wrote, even with a correct checksum, is a miss.
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
