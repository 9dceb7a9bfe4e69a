package textutils

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// TestWcCountPaths checks that the fast paths of wcCount (lines only,
// lines and words) count what the full byte-by-byte path counts, across
// read boundaries and on every byte class.
func TestWcCountPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte("ab \t\n\v\f\r\x00\x01\x7f\x80\xff~!")
	for _, size := range []int{0, 1, 7, 100, wcBufSize - 1, wcBufSize + 3, 3*wcBufSize + 17} {
		p := make([]byte, size)
		for i := range p {
			p[i] = alphabet[r.IntN(len(alphabet))]
		}
		full, err := wcCount(bytes.NewReader(p), wcNeed{words: true, maxLen: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, need := range []wcNeed{{}, {words: true}} {
			// HalfReader splits words and lines across reads.
			for _, rd := range []io.Reader{bytes.NewReader(p), iotest.HalfReader(bytes.NewReader(p))} {
				got, err := wcCount(rd, need)
				if err != nil {
					t.Fatal(err)
				}
				if got.lines != full.lines || got.bytes != full.bytes || (need.words && got.words != full.words) {
					t.Errorf("size %d need %+v: got %+v, want %+v", size, need, got, full)
				}
			}
		}
	}
}
