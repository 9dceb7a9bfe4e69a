package audit

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
)

// minEncodedLen is the shortest secret whose encodings are redacted, and
// the shortest encoded form: the encodings of a shorter secret (allowed
// by WithMinSecretLen) carry too few bits not to match ordinary text, as
// 6 hex digits would match git's hashes.
const minEncodedLen = 6

// encodedForms returns the encodings of the secret s that a Redactor
// replaces as well as s itself:
//
//   - base64, standard and URL-safe alphabets, padded and unpadded; and,
//     for a secret inside a larger base64 blob ("user:secret" in a Basic
//     header, "secret\n" from echo | base64), the characters that encode
//     only the secret's bytes at each of the three alignments (offset 0,
//     1 or 2 mod 3) in both alphabets. Only the up to 4 bits that share
//     a character with the bytes around it remain;
//   - hex, lower and upper case;
//   - URL (percent) encoding as Go's QueryEscape writes it (space as
//     "+"), the same with "%20", as PathEscape and as JavaScript's
//     encodeURIComponent write it, each also with lower-case hex digits.
//
// A secret shorter than minEncodedLen has none; forms equal to s or
// shorter than minEncodedLen are left out.
func encodedForms(s string) []string {
	if len(s) < minEncodedLen {
		return nil
	}
	b := []byte(s)
	var out []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		out = append(out, enc.EncodeToString(b), enc.WithPadding(base64.NoPadding).EncodeToString(b))
		raw := enc.WithPadding(base64.NoPadding)
		for k := range 3 {
			// Character i of the encoding of k filler bytes and s
			// holds bits [6i, 6i+6): those within s's bits
			// [8k, 8k+8n) depend on s alone.
			e := raw.EncodeToString(append(make([]byte, k), b...))
			start, end := (8*k+5)/6, 8*(k+len(b))/6
			if end > start {
				out = append(out, e[start:end])
			}
		}
	}
	h := hex.EncodeToString(b)
	out = append(out, h, strings.ToUpper(h))
	q := url.QueryEscape(s)
	for _, u := range []string{q, strings.ReplaceAll(q, "+", "%20"), url.PathEscape(s), encodeURIComponent(s)} {
		out = append(out, u, lowerPercent(u))
	}
	seen := map[string]bool{s: true}
	forms := out[:0]
	for _, f := range out {
		if len(f) >= minEncodedLen && !seen[f] {
			seen[f] = true
			forms = append(forms, f)
		}
	}
	return forms
}

// encodeURIComponent escapes s as JavaScript's encodeURIComponent does:
// every byte but A-Z a-z 0-9 - _ . ! ~ * ' ( ) as %XX.
func encodeURIComponent(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			sb.WriteByte(c)
			continue
		}
		sb.WriteByte('%')
		sb.WriteByte(hexDigits[c>>4])
		sb.WriteByte(hexDigits[c&15])
	}
	return sb.String()
}

// lowerPercent returns u with the hex digits of its %XX escapes in lower
// case.
func lowerPercent(u string) string {
	b := []byte(u)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerHex(b[i+1]), lowerHex(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if 'A' <= c && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// literalIndex finds every occurrence of a set of literals in one pass
// over the text (the literals of a Redactor are its secrets and their
// encoded forms, about twenty per secret: a bytes.Index per literal was
// as many passes). Literals of two bytes or more are found through their
// first two bytes; a one-byte literal (WithMinSecretLen(1)) by
// bytes.IndexByte.
type literalIndex struct {
	firsts [4]uint64     // bit c: some literal starts with byte c
	pairs  *[1024]uint64 // bit k: some literal starts with the two bytes k (large sets only)
	byPair map[uint16][][]byte
	single [][]byte
	// next holds more literals (those Redactor.With added to a base).
	next *literalIndex
}

// pairFilterMin is the number of literals from which an index keeps the
// two-byte filter (8 KiB, too much to build for each Redactor.With).
const pairFilterMin = 16

func newLiteralIndex(lits []string, next *literalIndex) *literalIndex {
	x := &literalIndex{byPair: map[uint16][][]byte{}, next: next}
	if len(lits) >= pairFilterMin {
		x.pairs = new([1024]uint64)
	}
	for _, l := range lits {
		if len(l) < 2 {
			x.single = append(x.single, []byte(l))
			continue
		}
		x.firsts[l[0]/64] |= 1 << (l[0] % 64)
		k := uint16(l[0])<<8 | uint16(l[1])
		if x.pairs != nil {
			x.pairs[k/64] |= 1 << (k % 64)
		}
		x.byPair[k] = append(x.byPair[k], []byte(l))
	}
	return x
}

// has reports whether lit is one of the literals.
func (x *literalIndex) has(lit string) bool {
	for ; x != nil; x = x.next {
		if len(lit) < 2 {
			for _, l := range x.single {
				if string(l) == lit {
					return true
				}
			}
			continue
		}
		for _, l := range x.byPair[uint16(lit[0])<<8|uint16(lit[1])] {
			if string(l) == lit {
				return true
			}
		}
	}
	return false
}

// find appends the span of every occurrence of every literal in b.
func (x *literalIndex) find(b []byte, out []span) []span {
	if x == nil {
		return out
	}
	out = x.next.find(b, out)
	for _, l := range x.single {
		for off := 0; ; {
			i := bytes.IndexByte(b[off:], l[0])
			if i < 0 {
				break
			}
			out = append(out, span{off + i, off + i + 1})
			off += i + 1
		}
	}
	if len(x.byPair) == 0 {
		return out
	}
	for i := 0; i+1 < len(b); i++ {
		c := b[i]
		if x.firsts[c/64]&(1<<(c%64)) == 0 {
			continue
		}
		k := uint16(c)<<8 | uint16(b[i+1])
		if x.pairs != nil && x.pairs[k/64]&(1<<(k%64)) == 0 {
			continue
		}
		for _, l := range x.byPair[k] {
			if bytes.HasPrefix(b[i:], l) {
				out = append(out, span{i, i + len(l)})
			}
		}
	}
	return out
}
