package main

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// DefaultGap is the largest run of zeros that MergeDataSegments fills to
// join two segments. Larger gaps stay gaps: they would only grow the file.
const DefaultGap = 4096

// ErrMalformed reports a module that is not a well-formed wasm binary.
var ErrMalformed = errors.New("malformed wasm module")

// Stats describes what MergeDataSegments did.
type Stats struct {
	SegmentsIn, SegmentsOut int
	// Skipped is why nothing was merged ("" when it merged).
	Skipped string
}

const (
	secMemory    = 5
	secData      = 11
	secDataCount = 12
	opI32Const   = 0x41
	opEnd        = 0x0b
)

type segment struct {
	offset uint32
	data   []byte
}

// MergeDataSegments returns mod with its active data segments merged into
// as few segments as the gap allows. The result has the same initial
// memory image. It returns an error wrapping ErrMalformed for a binary it
// cannot parse.
func MergeDataSegments(mod []byte, gap int) ([]byte, Stats, error) {
	var st Stats
	if len(mod) < 8 || !bytes.Equal(mod[:8], []byte("\x00asm\x01\x00\x00\x00")) {
		return nil, st, fmt.Errorf("%w: bad header", ErrMalformed)
	}
	type section struct {
		id       byte
		start    int // of the section id byte
		body     []byte
		bodyFrom int
	}
	var secs []section
	for p := 8; p < len(mod); {
		id := mod[p]
		size, n, err := uleb(mod[p+1:])
		if err != nil {
			return nil, st, fmt.Errorf("%w: section at %d: %v", ErrMalformed, p, err)
		}
		from := p + 1 + n
		if uint64(from)+uint64(size) > uint64(len(mod)) {
			return nil, st, fmt.Errorf("%w: section %d at %d overruns the file", ErrMalformed, id, p)
		}
		secs = append(secs, section{id: id, start: p, body: mod[from : from+int(size)], bodyFrom: from})
		p = from + int(size)
	}
	di := slices.IndexFunc(secs, func(s section) bool { return s.id == secData })
	if di < 0 {
		st.Skipped = "no data section"
		return mod, st, nil
	}
	segs, err := parseData(secs[di].body)
	if err != nil {
		return nil, st, err
	}
	st.SegmentsIn = len(segs)
	if segs == nil {
		st.Skipped = "a segment is not active with a constant offset for memory 0"
		st.SegmentsOut = st.SegmentsIn
		return mod, st, nil
	}
	merged := mergeSegments(segs, gap)
	st.SegmentsOut = len(merged)

	var body []byte
	body = appendUleb(body, uint32(len(merged)))
	for _, s := range merged {
		body = append(body, 0, opI32Const)
		body = appendSleb(body, int32(s.offset))
		body = append(body, opEnd)
		body = appendUleb(body, uint32(len(s.data)))
		body = append(body, s.data...)
	}
	out := make([]byte, 0, len(mod)+len(body)-len(secs[di].body))
	out = append(out, mod[:8]...)
	for _, s := range secs {
		switch s.id {
		case secData:
			out = appendSection(out, secData, body)
		case secDataCount:
			out = appendSection(out, secDataCount, appendUleb(nil, uint32(len(merged))))
		default:
			out = append(out, mod[s.start:s.bodyFrom+len(s.body)]...)
		}
	}
	return out, st, nil
}

// SetMinMemory returns mod with the minimum size of its memory 0 raised
// to at least pages (64 KiB each), within its maximum if it has one.
//
// A Go program grows its memory during runtime initialization; a runtime
// such as wazero grows a memory by reallocating and copying it. Declaring
// the size the program reaches anyway as the initial size makes every
// instantiation allocate once instead. The Go runtime finds its heap
// through memory.size, so extra initial pages are simply used first.
func SetMinMemory(mod []byte, pages uint32) ([]byte, error) {
	if len(mod) < 8 || !bytes.Equal(mod[:8], []byte("\x00asm\x01\x00\x00\x00")) {
		return nil, fmt.Errorf("%w: bad header", ErrMalformed)
	}
	for p := 8; p < len(mod); {
		id := mod[p]
		size, n, err := uleb(mod[p+1:])
		if err != nil || uint64(p+1+n)+uint64(size) > uint64(len(mod)) {
			return nil, fmt.Errorf("%w: section at %d", ErrMalformed, p)
		}
		from, to := p+1+n, p+1+n+int(size)
		if id != secMemory {
			p = to
			continue
		}
		body := mod[from:to]
		count, k, err := uleb(body)
		if err != nil || count != 1 || k >= len(body) {
			return mod, nil // no memory or several: leave it alone
		}
		flags := body[k]
		if flags > 1 {
			return mod, nil // shared or 64-bit memory
		}
		min, m, err := uleb(body[k+1:])
		if err != nil {
			return nil, fmt.Errorf("%w: memory limits", ErrMalformed)
		}
		rest := body[k+1+m:]
		newMin := max(min, pages)
		if flags == 1 {
			maxPages, _, err := uleb(rest)
			if err != nil {
				return nil, fmt.Errorf("%w: memory limits", ErrMalformed)
			}
			newMin = min32(newMin, maxPages)
		}
		nb := appendUleb(nil, 1)
		nb = append(nb, flags)
		nb = appendUleb(nb, newMin)
		nb = append(nb, rest...)
		out := append([]byte(nil), mod[:p]...)
		out = appendSection(out, secMemory, nb)
		return append(out, mod[to:]...), nil
	}
	return mod, nil
}

func min32(a, b uint32) uint32 {
	if a < b {
		return a
	}
	return b
}

// parseData parses a data section body. It returns nil segments (and no
// error) when some segment is not mergeable.
func parseData(b []byte) ([]segment, error) {
	count, n, err := uleb(b)
	if err != nil {
		return nil, fmt.Errorf("%w: data count: %v", ErrMalformed, err)
	}
	b = b[n:]
	if uint64(count) > uint64(len(b)) {
		return nil, fmt.Errorf("%w: %d data segments in %d bytes", ErrMalformed, count, len(b))
	}
	segs := make([]segment, 0, count)
	for i := uint32(0); i < count; i++ {
		flags, n, err := uleb(b)
		if err != nil {
			return nil, fmt.Errorf("%w: segment %d: %v", ErrMalformed, i, err)
		}
		if flags != 0 {
			return nil, nil // passive or explicit memory index
		}
		b = b[n:]
		if len(b) == 0 || b[0] != opI32Const {
			return nil, nil // offset is not a constant
		}
		off, n, err := sleb(b[1:])
		if err != nil {
			return nil, fmt.Errorf("%w: segment %d offset: %v", ErrMalformed, i, err)
		}
		b = b[1+n:]
		if len(b) == 0 || b[0] != opEnd {
			return nil, nil // a longer constant expression
		}
		b = b[1:]
		size, n, err := uleb(b)
		if err != nil || uint64(n)+uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("%w: segment %d data overruns the section", ErrMalformed, i)
		}
		segs = append(segs, segment{offset: uint32(off), data: b[n : n+int(size)]})
		b = b[n+int(size):]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last data segment", ErrMalformed, len(b))
	}
	return segs, nil
}

// mergeSegments groups segments whose byte ranges are at most gap apart and
// builds one segment per group. Within a group the segments are copied in
// their original order, so overlapping segments keep wasm's "later wins".
func mergeSegments(segs []segment, gap int) []segment {
	order := make([]int, len(segs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmpU32(segs[a].offset, segs[b].offset)
	})
	var out []segment
	for i := 0; i < len(order); {
		start := uint64(segs[order[i]].offset)
		end := start + uint64(len(segs[order[i]].data))
		j := i + 1
		for ; j < len(order); j++ {
			s := segs[order[j]]
			if uint64(s.offset) > end+uint64(gap) {
				break
			}
			end = max(end, uint64(s.offset)+uint64(len(s.data)))
		}
		group := slices.Clone(order[i:j])
		slices.Sort(group) // original order
		buf := make([]byte, end-start)
		for _, k := range group {
			copy(buf[uint64(segs[k].offset)-start:], segs[k].data)
		}
		out = append(out, segment{offset: uint32(start), data: buf})
		i = j
	}
	return out
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func appendSection(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = appendUleb(out, uint32(len(body)))
	return append(out, body...)
}

func uleb(b []byte) (uint32, int, error) {
	var v uint64
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0, errors.New("truncated LEB128")
		}
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if v > 0xffffffff {
				return 0, 0, errors.New("LEB128 overflows u32")
			}
			return uint32(v), i + 1, nil
		}
	}
	return 0, 0, errors.New("LEB128 too long")
}

func sleb(b []byte) (int32, int, error) {
	var v int64
	var shift uint
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0, errors.New("truncated LEB128")
		}
		v |= int64(b[i]&0x7f) << shift
		shift += 7
		if b[i]&0x80 == 0 {
			if shift < 64 && b[i]&0x40 != 0 {
				v |= -1 << shift
			}
			if v < -1<<31 || v > 1<<31-1 {
				return 0, 0, errors.New("LEB128 overflows i32")
			}
			return int32(v), i + 1, nil
		}
	}
	return 0, 0, errors.New("LEB128 too long")
}

func appendUleb(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func appendSleb(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
