// Package sha256u is SHA-256 and SHA-224 in pure Go with the block
// function unrolled (see gen_block.go), for the wasip1 tools: there
// crypto/sha256 has no assembly and runs its generic block function,
// whose round loop (a 64-word schedule array, eight variables shifted
// every round) Go's wasm code generation makes 2.5-3x slower than this
// form. Natively crypto/sha256 (SHA-NI, AVX2) is much faster; the tools
// use this package only under wasip1 (see sysutils).
package sha256u

import (
	"encoding/binary"
	"hash"
)

const (
	// Size is the size of a SHA-256 checksum in bytes.
	Size = 32
	// Size224 is the size of a SHA-224 checksum in bytes.
	Size224 = 28
	// BlockSize is the block size of SHA-256 and SHA-224 in bytes.
	BlockSize = 64
)

var (
	iv256 = [8]uint32{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}
	iv224 = [8]uint32{0xc1059ed8, 0x367cd507, 0x3070dd17, 0xf70e5939, 0xffc00b31, 0x68581511, 0x64f98fa7, 0xbefa4fa4}
)

type digest struct {
	h     [8]uint32
	x     [BlockSize]byte
	nx    int
	len   uint64
	is224 bool
}

// New returns a new hash.Hash computing the SHA-256 checksum.
func New() hash.Hash { d := &digest{}; d.Reset(); return d }

// New224 returns a new hash.Hash computing the SHA-224 checksum.
func New224() hash.Hash { d := &digest{is224: true}; d.Reset(); return d }

func (d *digest) Reset() {
	d.h = iv256
	if d.is224 {
		d.h = iv224
	}
	d.nx, d.len = 0, 0
}

func (d *digest) Size() int {
	if d.is224 {
		return Size224
	}
	return Size
}

func (d *digest) BlockSize() int { return BlockSize }

func (d *digest) Write(p []byte) (int, error) {
	n := len(p)
	d.len += uint64(n)
	if d.nx > 0 {
		c := copy(d.x[d.nx:], p)
		d.nx += c
		p = p[c:]
		if d.nx == BlockSize {
			block(&d.h, d.x[:])
			d.nx = 0
		}
	}
	if len(p) >= BlockSize {
		m := len(p) &^ (BlockSize - 1)
		block(&d.h, p[:m])
		p = p[m:]
	}
	if len(p) > 0 {
		d.nx = copy(d.x[:], p)
	}
	return n, nil
}

func (d *digest) Sum(in []byte) []byte {
	c := *d // Sum does not change the state
	var tail [2 * BlockSize]byte
	r := copy(tail[:], c.x[:c.nx])
	tail[r] = 0x80
	t := BlockSize
	if r >= BlockSize-8 {
		t = 2 * BlockSize
	}
	binary.BigEndian.PutUint64(tail[t-8:t], c.len*8)
	block(&c.h, tail[:t])
	var out [Size]byte
	for i, v := range c.h {
		binary.BigEndian.PutUint32(out[4*i:], v)
	}
	return append(in, out[:c.Size()]...)
}
