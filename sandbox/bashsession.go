package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/shell/bashsession"
	"github.com/wasmbox/wasmbox/wasm"
)

// bashModule is GNU bash compiled by the engine's executor (once; the
// executor keeps it).
func (e *Engine) bashModule(ctx context.Context) (*runtime.Module, error) {
	return e.exec.Module(ctx, wasm.BashModule)
}

// bashConfig is the configuration of a GNU bash session shell in dir.
func (s *Sandbox) bashConfig(ctx context.Context, dir string) (bashsession.Config, error) {
	m, err := s.engine.bashModule(ctx)
	if err != nil {
		return bashsession.Config{}, err
	}
	env := make([]string, 0, len(s.env))
	for k, v := range s.env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	var cmds map[string]string
	if n := s.cfg.native; n != nil {
		cmds = map[string]string{}
		for _, name := range n.Names {
			cmds[name] = "/usr/bin/" + name
		}
	}
	if s.bridge != nil {
		if cmds == nil {
			cmds = map[string]string{}
		}
		cmds["mcp"] = "/usr/bin/mcp"
	}
	return bashsession.Config{
		Commands:      cmds,
		Runtime:       s.engine.rt,
		Module:        m,
		FS:            s.gfs,
		Spawner:       &commandRunner{s: s},
		Env:           env,
		Dir:           dir,
		MemoryLimit:   s.cfg.limits.ShellMemory,
		Budget:        s.mem.shell,
		Deterministic: s.cfg.deterministic,
		MaxProcesses:  s.cfg.limits.Processes,
	}, nil
}

// newShell starts the sandbox's shell, GNU bash's live session, in dir.
func (s *Sandbox) newShell(ctx context.Context, dir string) (*bashsession.Session, error) {
	cfg, err := s.bashConfig(ctx, dir)
	if err != nil {
		return nil, err
	}
	return bashsession.New(ctx, cfg)
}

// bashEnv is the exported environment of a bash session, sorted.
func bashEnv(b *bashsession.Session) []string {
	info, err := b.Info(context.Background())
	if err != nil {
		return nil
	}
	env := append([]string(nil), info.Env...)
	sort.Strings(env)
	return env
}

// The bash record of a snapshot ('B', snapshot format version 2): the
// memory image of the idle bash session.
//
//	magic     "bash-image\x03"
//	module    SHA-256 of the bash.wasm the image belongs to (32 bytes)
//	dir       string: the shell's working directory
//	size      uvarint: bytes of linear memory (whole 64 KiB pages)
//	sp        uvarint: __stack_pointer
//	region    uvarint: bytes of memory per region (bashRegionSize; whole
//	          4 KiB pages, at most maxBashRegion)
//	count     uvarint: how many regions follow
//	regions   count times, ascending, each of the memory's regions that
//	          holds a page that is not zeros:
//	            base   uvarint: the region's offset (a multiple of region)
//	            pages  blob, zstd-compressed: the region's 4 KiB pages that
//	                   are not zeros, in runs of adjacent pages, ascending:
//	                   uvarint offset, uvarint length (whole pages), the
//	                   bytes; everything else is zeros
//
// An idle bash has ~9 MiB of memory and ~400 KiB of pages that are not
// zeros: a snapshot holds those only. A region's bytes in the record
// depend on that region's memory only, so that a snapshot in parts
// (SnapshotParts) keeps a region whose pages did not change since the
// last one as it was (its encoding, its part and the part's SHA-256) and
// encodes only the regions a run dirtied. The record has no checksum of
// its own: the snapshot's trailer (SHA-256 of every byte) covers it, and
// each region's zstd frame carries its content checksum, checked when it
// is decompressed.
//
// The earlier forms are still read: "bash-image\x02" (after sp: the
// SHA-256 of the pages as stored before compression, and one blob of all
// the runs of pages) and "bash-image\x01" (the SHA-256 and the blob of the
// whole memory).
//
// Restore checks every field before anything runs: the module, the size
// against the sandbox's shell memory limit (before decompressing, and
// each blob's decompressed size against what its runs can hold), the
// checksums, each region (ascending, on a region, inside the memory) and
// each run (ascending, whole pages, inside its region and the memory), and
// then that the image answers as an idle bash session does
// (bashsession.NewFromImage).
const (
	bashImageMagic   = "bash-image\x03"
	bashImageMagicV2 = "bash-image\x02"
	bashImageMagicV1 = "bash-image\x01"
	bashPage         = 4096
	// bashRegionSize: a run dirties a few pages here and there (bash's
	// counters, malloc's lists, the top of its stack); a region of 8
	// pages keeps what a dirty page costs small, and its encoding well
	// under a snapshot part (maxPart) even when it does not compress.
	bashRegionSize = 32 << 10
	maxBashRegion  = 1 << 20
)

var (
	bashHashOnce sync.Once
	bashHash     [32]byte
)

// bashModuleHash identifies the bash.wasm built into this binary.
func bashModuleHash() [32]byte {
	bashHashOnce.Do(func() {
		if b, ok := wasm.Bash(); ok {
			bashHash = sha256.Sum256(b)
		}
	})
	return bashHash
}

// bashZstd compresses bash records; EncodeAll is safe for concurrent use.
var bashZstd = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
})

// bashRecordParts is a bash record in pieces: its head (magic to count) and
// its regions, one after the other.
type bashRecordParts struct {
	head    []byte
	regions []*bashRegion
}

// bashRegion is one region of a bash record.
type bashRegion struct {
	base  uint64
	offs  []uint64 // its pages that are not zeros, ascending
	pages [][]byte // their bytes: views of the image's pages, which never change
	enc   []byte   // its bytes in the record (base and blob); never changed once made
}

// len is the record's length in bytes.
func (r *bashRecordParts) len() int {
	n := len(r.head)
	for _, g := range r.regions {
		n += len(g.enc)
	}
	return n
}

// bytes is the record, whole.
func (r *bashRecordParts) bytes() []byte {
	b := make([]byte, 0, r.len())
	b = append(b, r.head...)
	for _, g := range r.regions {
		b = append(b, g.enc...)
	}
	return b
}

// sameAs says whether g holds the same pages as o, byte for byte (the
// pages an image shares with the one it was taken since are the same
// memory: comparing them is comparing a pointer).
func (g *bashRegion) sameAs(o *bashRegion) bool {
	if g.base != o.base || len(g.offs) != len(o.offs) {
		return false
	}
	for i, off := range g.offs {
		if off != o.offs[i] || !bytes.Equal(g.pages[i], o.pages[i]) {
			return false
		}
	}
	return true
}

// encodeBashImage is the bash record of img and dir, whole.
func encodeBashImage(img *runtime.MemoryImage, dir string) ([]byte, error) {
	rec, err := encodeBashRecord(img, dir, nil)
	if err != nil {
		return nil, err
	}
	return rec.bytes(), nil
}

// encodeBashRecord is the bash record of img and dir in pieces. A region
// whose pages are those of prev's region at the same offset (prev: the
// record of an earlier snapshot, or nil) keeps prev's encoding: only the
// regions that changed are compressed. The same memory gives the same
// bytes, whatever prev is.
func encodeBashRecord(img *runtime.MemoryImage, dir string, prev *bashRecordParts) (*bashRecordParts, error) {
	enc, err := bashZstd()
	if err != nil {
		return nil, err
	}
	rec := &bashRecordParts{}
	var old []*bashRegion
	if prev != nil {
		old = prev.regions
	}
	var cur *bashRegion
	var runs []byte // scratch: a region's runs before compression
	finish := func() {
		if cur == nil {
			return
		}
		for len(old) > 0 && old[0].base < cur.base {
			old = old[1:]
		}
		if len(old) > 0 && cur.sameAs(old[0]) {
			cur.enc = old[0].enc
		} else {
			runs = runs[:0]
			for i := 0; i < len(cur.offs); {
				j := i + 1
				for j < len(cur.offs) && cur.offs[j] == cur.offs[j-1]+bashPage {
					j++
				}
				runs = binary.AppendUvarint(runs, cur.offs[i])
				runs = binary.AppendUvarint(runs, uint64(j-i)*bashPage)
				for _, p := range cur.pages[i:j] {
					runs = append(runs, p...)
				}
				i = j
			}
			z := enc.EncodeAll(runs, nil)
			e := make([]byte, 0, 2*binary.MaxVarintLen64+len(z))
			e = binary.AppendUvarint(e, cur.base)
			cur.enc = appendBytes(e, z)
		}
		rec.regions = append(rec.regions, cur)
		cur = nil
	}
	partial := false
	img.Pages(func(off uint64, p []byte) {
		if len(p) != bashPage {
			partial = true
			return
		}
		base := off &^ (bashRegionSize - 1)
		if cur != nil && cur.base != base {
			finish()
		}
		if cur == nil {
			cur = &bashRegion{base: base}
		}
		cur.offs = append(cur.offs, off)
		cur.pages = append(cur.pages, p)
	})
	if partial {
		return nil, fmt.Errorf("bash image: memory of %d bytes is not whole pages", img.Size())
	}
	finish()
	h := bashModuleHash()
	b := append([]byte(bashImageMagic), h[:]...)
	b = appendString(b, dir)
	b = binary.AppendUvarint(b, img.Size())
	b = binary.AppendUvarint(b, img.StackPointer())
	b = binary.AppendUvarint(b, bashRegionSize)
	rec.head = binary.AppendUvarint(b, uint64(len(rec.regions)))
	return rec, nil
}

// decodeBashImage decodes a bash record for a shell whose memory limit is
// limit bytes.
func decodeBashImage(p []byte, limit uint64) (*runtime.MemoryImage, string, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: bash image: %s", ErrCorruptSnapshot, fmt.Sprintf(format, a...))
	}
	var magic string
	for _, m := range []string{bashImageMagic, bashImageMagicV2, bashImageMagicV1} {
		if bytes.HasPrefix(p, []byte(m)) {
			magic = m
		}
	}
	if magic == "" {
		return nil, "", bad("unknown format")
	}
	r := &snapReader{b: p, off: len(magic)}
	if len(p) < r.off+32 {
		return nil, "", bad("truncated")
	}
	if h := bashModuleHash(); !bytes.Equal(p[r.off:r.off+32], h[:]) {
		return nil, "", fmt.Errorf("%w: bash image: made by another build of bash.wasm; it restores only into the wasmbox that made it", ErrCorruptSnapshot)
	}
	r.off += 32
	dir, err := r.path("bash working directory")
	if err != nil {
		return nil, "", err
	}
	size, err := r.uvarint("bash memory size")
	if err != nil {
		return nil, "", err
	}
	if size == 0 || size%65536 != 0 {
		return nil, "", bad("memory of %d bytes is not a whole number of 64 KiB pages", size)
	}
	if size > limit {
		return nil, "", bad("memory of %s is over the shell's memory limit (%s)", runtime.FormatBytes(size), runtime.FormatBytes(limit))
	}
	sp, err := r.uvarint("bash stack pointer")
	if err != nil {
		return nil, "", err
	}
	var mem []byte
	if magic == bashImageMagic {
		mem, err = decodeBashRegions(r, size)
	} else {
		mem, err = decodeBashWhole(r, size, magic == bashImageMagicV2)
	}
	if err != nil {
		return nil, "", err
	}
	img := runtime.NewMemoryImage(mem, sp)
	if err := img.Check(limit); err != nil {
		return nil, "", bad("%v", err)
	}
	return img, dir, nil
}

// decodeBashRegions reads the regions of a record (its current form) into
// a memory of size bytes.
func decodeBashRegions(r *snapReader, size uint64) ([]byte, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: bash image: %s", ErrCorruptSnapshot, fmt.Sprintf(format, a...))
	}
	region, err := r.uvarint("bash region size")
	if err != nil {
		return nil, err
	}
	if region == 0 || region%bashPage != 0 || region > maxBashRegion {
		return nil, bad("region of %d bytes is not whole pages up to %d bytes", region, maxBashRegion)
	}
	count, err := r.uvarint("bash region count")
	if err != nil {
		return nil, err
	}
	if count > (size+region-1)/region {
		return nil, bad("%d regions of %d bytes in a memory of %d bytes", count, region, size)
	}
	// What a region's blob may decompress to: its pages, with a run
	// header (two uvarints, at most 20 bytes) per page at most.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(region+region/bashPage*20))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	mem := make([]byte, size)
	var data []byte
	next := uint64(0)
	for i := uint64(0); i < count; i++ {
		base, err := r.uvarint("bash region offset")
		if err != nil {
			return nil, err
		}
		switch {
		case base < next || base%region != 0:
			return nil, bad("region at %d is out of order or not on a region of %d bytes", base, region)
		case base >= size:
			return nil, bad("region at %d is outside the %d-byte memory", base, size)
		}
		z, err := r.blob("bash memory", uint64(len(r.b)))
		if err != nil {
			return nil, err
		}
		if data, err = dec.DecodeAll(z, data[:0]); err != nil {
			return nil, bad("region at %d does not decompress: %v", base, err)
		}
		if len(data) == 0 {
			return nil, bad("region at %d holds no page", base)
		}
		end := min(base+region, size)
		if err := bashRuns(mem, data, base, end, fmt.Sprintf("its region [%d, %d)", base, end)); err != nil {
			return nil, bad("%v", err)
		}
		next = base + region
	}
	if r.off != len(r.b) {
		return nil, bad("data after the memory")
	}
	return mem, nil
}

// decodeBashWhole reads the memory of a record of an earlier form: a
// SHA-256 and one blob, of the whole memory (the first form) or of its
// runs of pages (sparse, the second).
func decodeBashWhole(r *snapReader, size uint64, sparse bool) ([]byte, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: bash image: %s", ErrCorruptSnapshot, fmt.Sprintf(format, a...))
	}
	if len(r.b) < r.off+32 {
		return nil, bad("truncated")
	}
	sum := r.b[r.off : r.off+32]
	r.off += 32
	z, err := r.blob("bash memory", uint64(len(r.b)))
	if err != nil {
		return nil, err
	}
	if r.off != len(r.b) {
		return nil, bad("data after the memory")
	}
	// What the blob may decompress to: the memory, or its pages with a
	// run header (two uvarints, at most 20 bytes) per page at most.
	bound := size
	if sparse {
		bound = size + size/bashPage*20
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(bound))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	data, err := dec.DecodeAll(z, nil)
	if err != nil {
		return nil, bad("memory does not decompress: %v", err)
	}
	if got := sha256.Sum256(data); !bytes.Equal(got[:], sum) {
		return nil, bad("memory checksum mismatch")
	}
	if !sparse {
		if uint64(len(data)) != size {
			return nil, bad("memory decompresses to %d bytes, not %d", len(data), size)
		}
		return data, nil
	}
	mem := make([]byte, size)
	if err := bashRuns(mem, data, 0, size, fmt.Sprintf("the %d-byte memory", size)); err != nil {
		return nil, bad("%v", err)
	}
	return mem, nil
}

// bashRuns lays the runs of pages in data out in mem: each run ascending
// after the last, whole pages, inside [lo, hi) (where names it).
func bashRuns(mem, data []byte, lo, hi uint64, where string) error {
	next := lo
	for len(data) > 0 {
		off, n := binary.Uvarint(data)
		if n <= 0 {
			return errors.New("bad page run offset")
		}
		data = data[n:]
		length, n := binary.Uvarint(data)
		if n <= 0 {
			return errors.New("bad page run length")
		}
		data = data[n:]
		switch {
		case off < next || off%bashPage != 0:
			return fmt.Errorf("page run at %d is out of order or not on a page", off)
		case length == 0 || length%bashPage != 0:
			return fmt.Errorf("page run at %d of %d bytes is not whole pages", off, length)
		case length > hi || off > hi-length:
			return fmt.Errorf("page run at %d of %d bytes is outside %s", off, length, where)
		case length > uint64(len(data)):
			return fmt.Errorf("page run at %d is truncated", off)
		}
		copy(mem[off:], data[:length])
		data = data[length:]
		next = off + length
	}
	return nil
}
