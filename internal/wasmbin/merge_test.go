package wasmbin

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"
)

// dataModule builds a module with one exported memory of one page and the
// given active data segments, with or without a data count section.
func dataModule(segs []Segment, dataCount bool) []byte {
	secs := []Section{
		sec(SecMemory, vec(memory(1, -1))),
		sec(SecExport, vec(export("mem", KindMemory, 0))),
	}
	if dataCount {
		secs = append(secs, sec(SecDataCount, AppendUleb(nil, uint32(len(segs)))))
	}
	return Encode(append(secs, sec(SecData, AppendDataSection(nil, segs))))
}

// memoryOf instantiates mod with wazero and returns its memory image.
func memoryOf(t *testing.T, mod []byte) []byte {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	m, err := r.Instantiate(ctx, mod)
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	mem, ok := m.Memory().Read(0, m.Memory().Size())
	if !ok {
		t.Fatal("read memory")
	}
	return bytes.Clone(mem)
}

func TestMergeSameMemory(t *testing.T) {
	segs := []Segment{
		{Offset: 5000, Data: []byte("far away")},
		{Offset: 100, Data: []byte("hello")},
		{Offset: 110, Data: []byte("world")},
		{Offset: 112, Data: []byte("XY")}, // overlaps "world": later wins
		{Offset: 60000, Data: []byte("end")},
		{Offset: 0, Data: []byte{}},
		{Offset: 200, Data: []byte{0, 0, 7}},
	}
	tests := []struct {
		gap  int
		want int
	}{{0, 6}, {100, 3}, {5000, 2}, {1 << 20, 1}}
	for _, dc := range []bool{false, true} {
		in := dataModule(segs, dc)
		want := memoryOf(t, in)
		for _, tt := range tests {
			out, st, err := MergeDataSegments(in, tt.gap)
			if err != nil {
				t.Fatal(err)
			}
			if st.SegmentsIn != len(segs) || st.SegmentsOut != tt.want || st.Skipped != "" {
				t.Errorf("gap %d: stats %+v, want %d -> %d", tt.gap, st, len(segs), tt.want)
			}
			if got := memoryOf(t, out); !bytes.Equal(got, want) {
				t.Errorf("gap %d datacount %v: memory image differs", tt.gap, dc)
			}
			secs, err := Sections(out)
			if err != nil {
				t.Fatal(err)
			}
			if i := Find(secs, SecDataCount); dc != (i >= 0) || (dc && !bytes.Equal(secs[i].Body, AppendUleb(nil, uint32(tt.want)))) {
				t.Errorf("gap %d datacount %v: data count section inconsistent", tt.gap, dc)
			}
		}
	}
}

// TestMergeGolden pins the merged bytes of a small case.
func TestMergeGolden(t *testing.T) {
	in := dataModule([]Segment{{Offset: 8, Data: []byte("cd")}, {Offset: 4, Data: []byte("ab")}, {Offset: 100, Data: []byte("z")}}, false)
	out, st, err := MergeDataSegments(in, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := dataModule([]Segment{{Offset: 4, Data: []byte("ab\x00\x00cd")}, {Offset: 100, Data: []byte("z")}}, false)
	if !bytes.Equal(out, want) || st != (MergeStats{SegmentsIn: 3, SegmentsOut: 2}) {
		t.Errorf("MergeDataSegments = % x, %+v\nwant % x", out, st, want)
	}
}

func TestMergeSkips(t *testing.T) {
	passive := Encode([]Section{
		sec(SecMemory, vec(memory(1, -1))),
		sec(SecDataCount, []byte{1}),
		sec(SecData, vec(cat([]byte{1}, str("hi")))),
	})
	noData := Encode([]Section{sec(SecMemory, vec(memory(1, -1)))})
	for _, tt := range []struct {
		name, skipped string
		mod           []byte
	}{
		{"passive", "a segment is not active with a constant offset for memory 0", passive},
		{"no data", "no data section", noData},
	} {
		out, st, err := MergeDataSegments(tt.mod, DefaultGap)
		if err != nil || !bytes.Equal(out, tt.mod) || st.Skipped != tt.skipped {
			t.Errorf("%s: err=%v changed=%v stats=%+v", tt.name, err, !bytes.Equal(out, tt.mod), st)
		}
	}
}

func TestMergeMalformed(t *testing.T) {
	good := dataModule([]Segment{{Offset: 1, Data: []byte("ab")}}, true)
	for i := range good {
		for _, cut := range [][]byte{good[:i], append(bytes.Clone(good[:i]), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)} {
			out, _, err := MergeDataSegments(cut, DefaultGap)
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("cut at %d: error %v does not wrap ErrMalformed", i, err)
			}
			if (err == nil) == (out == nil) {
				t.Fatalf("cut at %d: module %v with error %v", i, out != nil, err)
			}
		}
	}
}

// TestMergeGoModule merges the committed coreutils module again: make wasm
// already merged it, so nothing changes, byte for byte.
func TestMergeGoModule(t *testing.T) {
	b := readCoreutils(t)
	out, st, err := MergeDataSegments(b, DefaultGap)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, b) || st.SegmentsIn != st.SegmentsOut {
		t.Errorf("merge of a merged module changed it: %+v", st)
	}
}
