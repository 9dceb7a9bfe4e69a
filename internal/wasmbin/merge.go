package wasmbin

import "slices"

// DefaultGap is the largest run of zeros that MergeDataSegments fills to
// join two segments. Larger gaps stay gaps: they would only grow the file.
const DefaultGap = 4096

// MergeStats describes what MergeDataSegments did.
type MergeStats struct {
	SegmentsIn, SegmentsOut int
	// Skipped is why nothing was merged ("" when it merged).
	Skipped string
}

// MergeDataSegments returns the module b with its active data segments
// merged into as few segments as gap allows: segments at most gap bytes
// apart become one, the bytes between them zeros. The result has the same
// initial memory image, since memory starts zeroed and overlapping
// segments keep wasm's "later wins".
//
// The Go linker writes one data segment per run of non-zero bytes, so a Go
// wasip1 program carries tens of thousands of them, and a runtime spends
// most of an instantiation applying them one by one.
//
// A module with no data section, or with a segment DataSegments does not
// accept (code may refer to segments by index), is returned as is, with
// Skipped saying why. Every other section keeps its bytes; the data count
// section, when present, is kept consistent. A binary it cannot parse is
// an error wrapping ErrMalformed.
func MergeDataSegments(b []byte, gap int) ([]byte, MergeStats, error) {
	var st MergeStats
	secs, err := Sections(b)
	if err != nil {
		return nil, st, err
	}
	di := Find(secs, SecData)
	if di < 0 {
		st.Skipped = "no data section"
		return b, st, nil
	}
	segs, ok, err := DataSegments(secs[di].Body)
	if err != nil {
		return nil, st, err
	}
	if !ok {
		st.Skipped = "a segment is not active with a constant offset for memory 0"
		return b, st, nil
	}
	merged := mergeSegments(segs, max(gap, 0))
	st.SegmentsIn, st.SegmentsOut = len(segs), len(merged)
	out := make([]Section, len(secs))
	for i, s := range secs {
		switch s.ID {
		case SecData:
			s = Section{ID: SecData, Body: AppendDataSection(nil, merged)}
		case SecDataCount:
			s = Section{ID: SecDataCount, Body: AppendUleb(nil, uint32(len(merged)))}
		}
		out[i] = s
	}
	return Encode(out), st, nil
}

// mergeSegments groups segments whose byte ranges are at most gap apart and
// builds one segment per group. Within a group the segments are copied in
// their original order, so overlapping segments keep wasm's "later wins".
func mergeSegments(segs []Segment, gap int) []Segment {
	order := make([]int, len(segs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch oa, ob := segs[a].Offset, segs[b].Offset; {
		case oa < ob:
			return -1
		case oa > ob:
			return 1
		}
		return 0
	})
	var out []Segment
	for i := 0; i < len(order); {
		start := uint64(segs[order[i]].Offset)
		end := start + uint64(len(segs[order[i]].Data))
		j := i + 1
		for ; j < len(order); j++ {
			s := segs[order[j]]
			if uint64(s.Offset) > end+uint64(gap) {
				break
			}
			end = max(end, uint64(s.Offset)+uint64(len(s.Data)))
		}
		group := slices.Clone(order[i:j])
		slices.Sort(group) // original order
		buf := make([]byte, end-start)
		for _, k := range group {
			copy(buf[uint64(segs[k].Offset)-start:], segs[k].Data)
		}
		out = append(out, Segment{Offset: uint32(start), Data: buf})
		i = j
	}
	return out
}
