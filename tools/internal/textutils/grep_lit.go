package textutils

import (
	"encoding/binary"
	"io"
	"math/bits"

	"github.com/wasmbox/wasmbox/tools/internal/textio"
)

// The literal scan of grep: one fixed string (ASCII-folded under -i), and
// either -c (with or without -v) or plain output of the selected lines.
// It finds the string in large blocks eight bytes at a time and jumps to
// the end of the line of each hit, with no call per line: in wasm, Go's
// calls and byte loops (bytes.Index, bytes.IndexByte are byte loops
// there) cost 4-20x their native time, while a loop of 64-bit loads and
// arithmetic runs near native speed.

// grepLitScan enables the literal scan (tests compare it with the block
// search and the line loop).
var grepLitScan = true

// grepLitBlock is the read size of the literal scan (tests make it small
// to put lines across blocks).
var grepLitBlock = 1 << 20

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// swarZero returns x with the high bit of each byte set iff that byte of
// x is zero (exactly: no borrow from a lower byte).
func swarZero(x uint64) uint64 {
	return ^(((x &^ swarHi) + (swarHi - swarLo)) | x) & swarHi
}

// litScan finds one literal: a hit is a position where its first and last
// bytes match (found eight positions at a time) and then its middle.
type litScan struct {
	lit         []byte // lower case under fold
	fold        bool
	first, last uint64 // the first and last byte in every byte
	fm, lm      uint64 // ORed into the data first: 0x20s for a letter under fold
	mask        []byte // per byte of lit: ORed into the data (0x20 for a letter under fold)
}

func newLitScan(lit []byte, fold bool) *litScan {
	s := &litScan{lit: lit, fold: fold}
	c0, c1 := lit[0], lit[len(lit)-1]
	s.first, s.last = uint64(c0)*swarLo, uint64(c1)*swarLo
	if fold && c0 >= 'a' && c0 <= 'z' {
		s.fm = 0x20 * swarLo
	}
	if fold && c1 >= 'a' && c1 <= 'z' {
		s.lm = 0x20 * swarLo
	}
	s.mask = make([]byte, len(lit))
	for j, c := range lit {
		if fold && c >= 'a' && c <= 'z' {
			s.mask[j] = 0x20
		}
	}
	return s
}

// lines finds the lines of b (delimited by delim; the last one may lack
// it) that hold the literal, at most limit of them when limit >= 0. It
// returns their number and, when runs is not nil, appends them to runs as
// [start, end) pairs of offsets in b, adjacent lines merged into one pair.
//
// It is one function with no calls in its loops: in wasm a Go call costs
// far more than the few instructions of a step here. The search looks at
// 16 positions per step (two 64-bit words at the literal's first byte and
// two at its last) through array pointers, which need one bounds check
// each instead of one per load.
func (s *litScan) lines(b []byte, delim byte, limit int, runs []int) (int, []int) {
	lit, mask := s.lit, s.mask
	n := len(lit)
	if len(mask) != n {
		return 0, runs
	}
	first, last, fm, lm := s.first, s.last, s.fm, s.lm
	c0, c1, f0, f1 := byte(first), byte(last), byte(fm), byte(lm)
	dp := uint64(delim) * swarLo
	count := 0
	i := 0 // search from here
	for i < len(b) {
		from := i // a line starts here
		k := -1   // the literal's position
	search:
		for ; i+n+15 < len(b); i += 16 {
			p := (*[16]byte)(b[i : i+16])
			q := (*[16]byte)(b[i+n-1 : i+n+15])
			m0 := swarZero((binary.LittleEndian.Uint64(p[0:8])|fm)^first) & swarZero((binary.LittleEndian.Uint64(q[0:8])|lm)^last)
			m1 := swarZero((binary.LittleEndian.Uint64(p[8:16])|fm)^first) & swarZero((binary.LittleEndian.Uint64(q[8:16])|lm)^last)
			for m0|m1 != 0 {
				var j int
				if m0 != 0 {
					j = i + bits.TrailingZeros64(m0)>>3
					m0 &= m0 - 1
				} else {
					j = i + 8 + bits.TrailingZeros64(m1)>>3
					m1 &= m1 - 1
				}
				w := b[j : j+n]
				x := 1
				for x < n-1 && w[x]|mask[x] == lit[x] {
					x++
				}
				if x >= n-1 {
					k = j
					break search
				}
			}
		}
		if k < 0 {
			for ; i+n <= len(b); i++ {
				if b[i]|f0 == c0 && b[i+n-1]|f1 == c1 {
					w := b[i : i+n]
					x := 1
					for x < n-1 && w[x]|mask[x] == lit[x] {
						x++
					}
					if x >= n-1 {
						k = i
						break
					}
				}
			}
			if k < 0 {
				break
			}
		}
		count++
		// The line's end: the delimiter after the literal, or the end.
		le := len(b)
		e := k + n
		for ; e+8 <= len(b); e += 8 {
			if m := swarZero(binary.LittleEndian.Uint64(b[e:e+8]) ^ dp); m != 0 {
				le = e + bits.TrailingZeros64(m)>>3 + 1
				break
			}
		}
		if le == len(b) {
			for ; e < len(b); e++ {
				if b[e] == delim {
					le = e + 1
					break
				}
			}
		}
		if runs != nil {
			// The line's start: after the last delimiter before the
			// literal and at or after from.
			ls := from
			h := k
			for ; h-8 >= from; h -= 8 {
				if m := swarZero(binary.LittleEndian.Uint64(b[h-8:h]) ^ dp); m != 0 {
					ls = h - 8 + (63-bits.LeadingZeros64(m))>>3 + 1
					break
				}
			}
			if ls == from {
				for h--; h >= from; h-- {
					if b[h] == delim {
						ls = h + 1
						break
					}
				}
			}
			if r := len(runs); r > 0 && runs[r-1] == ls {
				runs[r-1] = le
			} else {
				runs = append(runs, ls, le)
			}
		}
		i = le
		if count == limit {
			break
		}
	}
	return count, runs
}

// index returns the first position at or after i where the literal
// starts in b, or -1.
func (s *litScan) index(b []byte, i int) int {
	lit := s.lit
	n := len(lit)
	first, last, fm, lm := s.first, s.last, s.fm, s.lm
	for ; i+n+7 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		y := binary.LittleEndian.Uint64(b[i+n-1:])
		m := swarZero((x|fm)^first) & swarZero((y|lm)^last)
		for m != 0 {
			k := i + bits.TrailingZeros64(m)>>3
			m &= m - 1
			if s.middle(b[k : k+n]) {
				return k
			}
		}
	}
	c0, c1 := byte(first), byte(last)
	f0, f1 := byte(fm), byte(lm)
	for ; i+n <= len(b); i++ {
		if b[i]|f0 == c0 && b[i+n-1]|f1 == c1 && s.middle(b[i:i+n]) {
			return i
		}
	}
	return -1
}

// middle reports whether w (as long as the literal, its first and last
// bytes known to match) matches the literal.
func (s *litScan) middle(w []byte) bool {
	lit := s.lit
	if len(w) != len(lit) {
		return false
	}
	if s.fold {
		for j := 1; j < len(lit)-1; j++ {
			c := w[j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lit[j] {
				return false
			}
		}
		return true
	}
	for j := 1; j < len(lit)-1; j++ {
		if w[j] != lit[j] {
			return false
		}
	}
	return true
}

// swarIndexByte returns the first position at or after i of c in b, or -1.
func swarIndexByte(b []byte, i int, c byte) int {
	pat := uint64(c) * swarLo
	for ; i+8 <= len(b); i += 8 {
		if m := swarZero(binary.LittleEndian.Uint64(b[i:]) ^ pat); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// swarLastIndexByte returns the last position of c in b[lo:hi], or -1.
func swarLastIndexByte(b []byte, lo, hi int, c byte) int {
	pat := uint64(c) * swarLo
	for ; hi-8 >= lo; hi -= 8 {
		if m := swarZero(binary.LittleEndian.Uint64(b[hi-8:]) ^ pat); m != 0 {
			return hi - 8 + (63-bits.LeadingZeros64(m))>>3
		}
	}
	for hi--; hi >= lo; hi-- {
		if b[hi] == c {
			return hi
		}
	}
	return -1
}

// litScanMode returns what the literal scan can do for this search: 'c'
// (count selected lines), 'p' (print them) or 0 (not applicable).
func (g *grepper) litScanMode(printLines, binary bool) byte {
	if !grepLitScan || g.fixed == nil || g.before > 0 || g.after > 0 {
		return 0
	}
	for _, c := range g.fixed {
		if c == g.delim {
			return 0
		}
	}
	switch {
	case g.count && !g.quiet && !g.listMatch && !g.listNoMatch:
		if g.invert && g.maxCount >= 0 {
			return 0
		}
		return 'c'
	case printLines && !g.only && !g.invert && !binary && !g.lineNum && !g.byteOff:
		return 'p'
	}
	return 0
}

// scanLiteral runs the literal scan of r in mode ('c' or 'p', see
// litScanMode) and returns the number of selected lines.
func (g *grepper) scanLiteral(r io.Reader, name string, mode byte) int64 {
	s := newLitScan(g.fixed, g.fixedFold)
	delim := g.delim
	buf := make([]byte, grepLitBlock)
	start, end := 0, 0 // unconsumed data is buf[start:end]
	var count, lines int64
	runs := make([]int, 0, 256)
	eof := false
	for !(eof && start == end) {
		if g.maxCount >= 0 && count >= g.maxCount {
			break
		}
		if !eof {
			var err error
			if buf, start, end, eof, err = fillBlock(r, buf, start, end); err != nil {
				g.errorf("%s: %s", name, strerror(err))
				break
			}
		}
		chunk := buf[start:end]
		if len(chunk) == 0 {
			continue
		}
		if !eof {
			k := swarLastIndexByte(chunk, 0, len(chunk), delim)
			if k < 0 {
				continue // no whole line yet
			}
			chunk = chunk[:k+1]
		}
		if g.invert {
			// -c -v: the lines less those holding the literal.
			lines += int64(textio.CountByte(chunk, delim))
			if chunk[len(chunk)-1] != delim {
				lines++
			}
		}
		limit := -1
		if g.maxCount >= 0 {
			limit = int(min(g.maxCount-count, 1<<30))
		}
		var c int
		if mode == 'p' {
			c, runs = s.lines(chunk, delim, limit, runs[:0])
			g.writeRuns(chunk, runs, name)
		} else {
			c, _ = s.lines(chunk, delim, limit, nil)
		}
		count += int64(c)
		start += len(chunk)
	}
	if g.invert {
		count = lines - count
	}
	if count > 0 {
		g.matchedAny = true
		if mode == 'p' {
			g.lastOut = true
		}
	}
	return count
}

// writeRuns writes the lines of chunk in runs (see litScan.lines), each
// with the file name prefix under -H, and a delimiter after a last line
// that lacks one.
func (g *grepper) writeRuns(chunk []byte, runs []int, name string) {
	w := g.t.out
	for r := 0; r+1 < len(runs); r += 2 {
		a, e := runs[r], runs[r+1]
		if g.withName {
			for a < e {
				le := swarIndexByte(chunk[:e], a, g.delim) + 1
				if le == 0 {
					le = e
				}
				g.nameOut(name, ':')
				w.Write(chunk[a:le])
				a = le
			}
		} else {
			w.Write(chunk[a:e])
		}
		if e > 0 && chunk[e-1] != g.delim {
			w.WriteByte(g.delim)
		}
	}
}
