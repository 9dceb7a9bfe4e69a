package sha256u

import (
	"bytes"
	"crypto/sha256"
	"hash"
	"math/rand/v2"
	"testing"
)

// TestAgainstCryptoSHA256 compares both hashes with crypto/sha256 for
// every length around the padding boundaries and for random lengths
// written in random pieces, with Sum in the middle and after Reset.
func TestAgainstCryptoSHA256(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 5000)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for _, c := range []struct {
		name       string
		ours, want func() hash.Hash
	}{{"sha256", New, sha256.New}, {"sha224", New224, sha256.New224}} {
		lengths := []int{}
		for n := 0; n <= 300; n++ {
			lengths = append(lengths, n)
		}
		for range 50 {
			lengths = append(lengths, r.IntN(len(data)+1))
		}
		for _, n := range lengths {
			h, w := c.ours(), c.want()
			p := data[:n]
			for len(p) > 0 {
				k := min(len(p), r.IntN(200)+1)
				h.Write(p[:k])
				w.Write(p[:k])
				p = p[k:]
				if r.IntN(4) == 0 && !bytes.Equal(h.Sum([]byte("x")), w.Sum([]byte("x"))) {
					t.Fatalf("%s: Sum in the middle of %d bytes differs", c.name, n)
				}
			}
			if got, want := h.Sum(nil), w.Sum(nil); !bytes.Equal(got, want) {
				t.Fatalf("%s of %d bytes: %x, want %x", c.name, n, got, want)
			}
			h.Reset()
			h.Write(data[:n])
			if got, want := h.Sum(nil), w.Sum(nil); !bytes.Equal(got, want) {
				t.Fatalf("%s of %d bytes after Reset: %x, want %x", c.name, n, got, want)
			}
			if h.Size() != w.Size() || h.BlockSize() != w.BlockSize() {
				t.Fatalf("%s: sizes %d/%d, want %d/%d", c.name, h.Size(), h.BlockSize(), w.Size(), w.BlockSize())
			}
		}
	}
}
