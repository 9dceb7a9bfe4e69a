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
	return s
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
	n := len(g.fixed)
	delim := g.delim
	w := g.t.out
	buf := make([]byte, grepLitBlock)
	start, end := 0, 0 // unconsumed data is buf[start:end]
	var count, lines int64
	eof := false
	for !(eof && start == end) {
		if g.maxCount >= 0 && count >= g.maxCount {
			break
		}
		if !eof {
			// Fill the buffer, growing it when one line does not fit.
			if start > 0 {
				end = copy(buf, buf[start:end])
				start = 0
			}
			if end == len(buf) {
				buf = append(buf, make([]byte, len(buf))...)
			}
			k, err := r.Read(buf[end:])
			end += k
			if err == io.EOF {
				eof = true
			} else if err != nil {
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
		pos := 0
		runS, runE := 0, 0 // lines to print: chunk[runS:runE]
		for pos < len(chunk) {
			if g.maxCount >= 0 && count >= g.maxCount {
				break
			}
			i := s.index(chunk, pos)
			if i < 0 {
				break
			}
			count++
			le := swarIndexByte(chunk, i+n, delim) + 1
			if le == 0 {
				le = len(chunk) // the last line, with no delimiter
			}
			if mode == 'p' {
				ls := swarLastIndexByte(chunk, pos, i, delim) + 1
				if ls == 0 {
					ls = pos
				}
				if g.withName {
					g.nameOut(name, ':')
					w.Write(chunk[ls:le])
				} else if ls == runE {
					runE = le
				} else {
					w.Write(chunk[runS:runE])
					runS, runE = ls, le
				}
				if chunk[le-1] != delim {
					if !g.withName {
						w.Write(chunk[runS:runE])
						runS, runE = le, le
					}
					w.WriteByte(delim)
				}
			}
			pos = le
		}
		if runE > runS {
			w.Write(chunk[runS:runE])
		}
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
