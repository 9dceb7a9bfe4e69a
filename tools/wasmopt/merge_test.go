package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/tetratelabs/wazero"
)

// module builds a wasm module with one exported memory of one page and the
// given active data segments.
func module(segs []segment, dataCount bool) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = appendSection(b, 5, []byte{1, 0, 1})                   // memory: min 1 page
	b = appendSection(b, 7, []byte{1, 3, 'm', 'e', 'm', 2, 0}) // export "mem"
	if dataCount {
		b = appendSection(b, secDataCount, appendUleb(nil, uint32(len(segs))))
	}
	var body []byte
	body = appendUleb(body, uint32(len(segs)))
	for _, s := range segs {
		body = append(body, 0, opI32Const)
		body = appendSleb(body, int32(s.offset))
		body = append(body, opEnd)
		body = appendUleb(body, uint32(len(s.data)))
		body = append(body, s.data...)
	}
	return appendSection(b, secData, body)
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
	segs := []segment{
		{offset: 5000, data: []byte("far away")},
		{offset: 100, data: []byte("hello")},
		{offset: 110, data: []byte("world")},
		{offset: 112, data: []byte("XY")}, // overlaps "world": later wins
		{offset: 60000, data: []byte("end")},
		{offset: 0, data: []byte{}},
		{offset: 200, data: []byte{0, 0, 7}},
	}
	tests := []struct {
		gap  int
		want int
	}{{0, 6}, {100, 3}, {5000, 2}, {1 << 20, 1}}
	for _, dc := range []bool{false, true} {
		in := module(segs, dc)
		want := memoryOf(t, in)
		for _, tt := range tests {
			out, st, err := MergeDataSegments(in, tt.gap)
			if err != nil {
				t.Fatal(err)
			}
			if st.SegmentsIn != len(segs) || st.SegmentsOut != tt.want {
				t.Errorf("gap %d: stats %+v, want %d -> %d", tt.gap, st, len(segs), tt.want)
			}
			if got := memoryOf(t, out); !bytes.Equal(got, want) {
				t.Errorf("gap %d datacount %v: memory image differs", tt.gap, dc)
			}
		}
	}
}

func TestMergeSkipsPassive(t *testing.T) {
	mod := []byte("\x00asm\x01\x00\x00\x00")
	mod = appendSection(mod, 5, []byte{1, 0, 1})
	mod = appendSection(mod, secDataCount, []byte{1})
	mod = appendSection(mod, secData, []byte{1, 1, 2, 'h', 'i'}) // one passive segment
	out, st, err := MergeDataSegments(mod, DefaultGap)
	if err != nil || !bytes.Equal(out, mod) || st.Skipped == "" {
		t.Fatalf("passive: err=%v changed=%v stats=%+v", err, !bytes.Equal(out, mod), st)
	}
}

func TestMergeMalformed(t *testing.T) {
	good := module([]segment{{offset: 1, data: []byte("ab")}}, true)
	for i := range good {
		for _, cut := range [][]byte{good[:i], append(bytes.Clone(good[:i]), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)} {
			out, _, err := MergeDataSegments(cut, DefaultGap)
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("cut at %d: error %v does not wrap ErrMalformed", i, err)
			}
			if err == nil && out == nil {
				t.Fatalf("cut at %d: nil module without error", i)
			}
		}
	}
}

func FuzzMerge(f *testing.F) {
	f.Add(module([]segment{{offset: 1, data: []byte("ab")}, {offset: 9, data: []byte("c")}}, true), 4)
	f.Fuzz(func(t *testing.T, mod []byte, gap int) {
		if gap < 0 || gap > 1<<16 {
			return
		}
		out, _, err := MergeDataSegments(mod, gap)
		if err == nil && out == nil {
			t.Fatal("nil module without error")
		}
	})
}

func TestLEB(t *testing.T) {
	for _, v := range []int32{0, 1, -1, 63, 64, -64, -65, 1 << 20, -1 << 31, 1<<31 - 1} {
		got, n, err := sleb(appendSleb(nil, v))
		if err != nil || got != v || n != len(appendSleb(nil, v)) {
			t.Errorf("sleb(%d) = %d, %d, %v", v, got, n, err)
		}
	}
	for _, v := range []uint32{0, 127, 128, 1 << 31, 1<<32 - 1} {
		got, _, err := uleb(appendUleb(nil, v))
		if err != nil || got != v {
			t.Errorf("uleb(%d) = %d, %v", v, got, err)
		}
	}
}

func TestSetMinMemory(t *testing.T) {
	in := module([]segment{{offset: 10, data: []byte("x")}}, false)
	want := memoryOf(t, in)
	out, err := SetMinMemory(in, 3)
	if err != nil {
		t.Fatal(err)
	}
	got := memoryOf(t, out)
	if len(got) != 3*65536 || !bytes.Equal(got[:len(want)], want) {
		t.Fatalf("memory %d bytes, want %d with the same image", len(got), 3*65536)
	}
	// Never below the declared minimum, never above the maximum.
	if out, _ := SetMinMemory(in, 0); !bytes.Equal(out, in) {
		t.Error("min-pages 0 changed the module")
	}
	withMax := []byte("\x00asm\x01\x00\x00\x00")
	withMax = appendSection(withMax, 5, []byte{1, 1, 1, 2}) // min 1, max 2
	withMax = appendSection(withMax, 7, []byte{1, 3, 'm', 'e', 'm', 2, 0})
	out, err = SetMinMemory(withMax, 10)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(memoryOf(t, out)); n != 2*65536 {
		t.Errorf("memory with max 2 pages: %d bytes", n)
	}
	if _, err := SetMinMemory([]byte("junk"), 3); !errors.Is(err, ErrMalformed) {
		t.Errorf("junk: %v", err)
	}
}
