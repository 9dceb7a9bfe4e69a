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

// The bash record of a snapshot ('B', format version 2): the memory image
// of the idle bash session.
//
//	magic     "bash-image\x02"
//	module    SHA-256 of the bash.wasm the image belongs to (32 bytes)
//	dir       string: the shell's working directory
//	size      uvarint: bytes of linear memory (whole 64 KiB pages)
//	sp        uvarint: __stack_pointer
//	sum       SHA-256 of the pages, as stored before compression (32 bytes)
//	pages     blob, zstd-compressed: the 4 KiB pages that are not zeros, in
//	          runs of adjacent pages, ascending: uvarint offset, uvarint
//	          length (whole pages), the bytes; everything else is zeros
//
// An idle bash has ~9 MiB of memory and ~400 KiB of pages that are not
// zeros: a commit hashes and compresses those only. The first form
// ("bash-image\x01": the sum and the blob of the whole memory) is still
// read.
//
// Restore checks every field before anything runs: the module, the size
// against the sandbox's shell memory limit (before decompressing, and the
// decompressed size against the runs' bound), the checksum, each run
// (ascending, whole pages, inside the memory), and then that the image
// answers as an idle bash session does (bashsession.NewFromImage).
const (
	bashImageMagic   = "bash-image\x02"
	bashImageMagicV1 = "bash-image\x01"
	bashPage         = 4096
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

func encodeBashImage(img *runtime.MemoryImage, dir string) ([]byte, error) {
	enc, err := bashZstd()
	if err != nil {
		return nil, err
	}
	// The pages in canonical runs (adjacent pages joined, whatever runs
	// the image keeps them in), so that the same memory gives the same
	// bytes.
	var pages []byte
	var runStart, runEnd uint64
	var run [][]byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		pages = binary.AppendUvarint(pages, runStart)
		pages = binary.AppendUvarint(pages, runEnd-runStart)
		for _, p := range run {
			pages = append(pages, p...)
		}
		run = run[:0]
	}
	img.Pages(func(off uint64, p []byte) {
		if len(p) != bashPage || len(run) == 0 || off != runEnd {
			flush()
			runStart = off
			runEnd = off
		}
		run = append(run, p)
		runEnd += uint64(len(p))
	})
	flush()
	h := bashModuleHash()
	sum := sha256.Sum256(pages)
	b := append([]byte(bashImageMagic), h[:]...)
	b = appendString(b, dir)
	b = binary.AppendUvarint(b, img.Size())
	b = binary.AppendUvarint(b, img.StackPointer())
	b = append(b, sum[:]...)
	return appendBytes(b, enc.EncodeAll(pages, nil)), nil
}

// decodeBashImage decodes a bash record for a shell whose memory limit is
// limit bytes.
func decodeBashImage(p []byte, limit uint64) (*runtime.MemoryImage, string, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: bash image: %s", ErrCorruptSnapshot, fmt.Sprintf(format, a...))
	}
	sparse := bytes.HasPrefix(p, []byte(bashImageMagic))
	if !sparse && !bytes.HasPrefix(p, []byte(bashImageMagicV1)) {
		return nil, "", bad("unknown format")
	}
	r := &snapReader{b: p, off: len(bashImageMagic)}
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
	if len(p) < r.off+32 {
		return nil, "", bad("truncated")
	}
	sum := p[r.off : r.off+32]
	r.off += 32
	z, err := r.blob("bash memory", uint64(len(p)))
	if err != nil {
		return nil, "", err
	}
	if r.off != len(p) {
		return nil, "", bad("data after the memory")
	}
	// What the blob may decompress to: the memory, or its pages with a
	// run header (two uvarints, at most 20 bytes) per page at most.
	bound := size
	if sparse {
		bound = size + size/bashPage*20
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(bound))
	if err != nil {
		return nil, "", err
	}
	defer dec.Close()
	data, err := dec.DecodeAll(z, nil)
	if err != nil {
		return nil, "", bad("memory does not decompress: %v", err)
	}
	if got := sha256.Sum256(data); !bytes.Equal(got[:], sum) {
		return nil, "", bad("memory checksum mismatch")
	}
	mem := data
	if sparse {
		if mem, err = bashPages(data, size); err != nil {
			return nil, "", bad("%v", err)
		}
	} else if uint64(len(mem)) != size {
		return nil, "", bad("memory decompresses to %d bytes, not %d", len(mem), size)
	}
	img := runtime.NewMemoryImage(mem, sp)
	if err := img.Check(limit); err != nil {
		return nil, "", bad("%v", err)
	}
	return img, dir, nil
}

// bashPages lays the runs of pages of a bash record out in a memory of
// size bytes: each run ascending after the last, whole pages, inside.
func bashPages(data []byte, size uint64) ([]byte, error) {
	mem := make([]byte, size)
	next := uint64(0)
	for len(data) > 0 {
		off, n := binary.Uvarint(data)
		if n <= 0 {
			return nil, errors.New("bad page run offset")
		}
		data = data[n:]
		length, n := binary.Uvarint(data)
		if n <= 0 {
			return nil, errors.New("bad page run length")
		}
		data = data[n:]
		switch {
		case off < next || off%bashPage != 0:
			return nil, fmt.Errorf("page run at %d is out of order or not on a page", off)
		case length == 0 || length%bashPage != 0:
			return nil, fmt.Errorf("page run at %d of %d bytes is not whole pages", off, length)
		case length > size || off > size-length:
			return nil, fmt.Errorf("page run at %d of %d bytes is outside the %d-byte memory", off, length, size)
		case length > uint64(len(data)):
			return nil, fmt.Errorf("page run at %d is truncated", off)
		}
		copy(mem[off:], data[:length])
		data = data[length:]
		next = off + length
	}
	return mem, nil
}
