package wasmbin

import (
	"bytes"
	"errors"
	"math"
	"os"
	"reflect"
	"testing"
)

func TestUleb(t *testing.T) {
	for _, v := range []uint32{0, 1, 63, 64, 127, 128, 300, 1<<14 - 1, 1 << 14, 1 << 21, 1 << 28, 1 << 31, math.MaxUint32} {
		enc := AppendUleb(nil, v)
		got, n, err := Uleb(append(enc, 0xaa)) // a following byte is not read
		if err != nil || got != v || n != len(enc) {
			t.Errorf("Uleb(AppendUleb(%d)) = %d, %d, %v; want %d bytes", v, got, n, err, len(enc))
		}
	}
	tests := []struct {
		in   []byte
		want uint32
		n    int
		err  string
	}{
		{in: []byte{0}, want: 0, n: 1},
		{in: []byte{0x80, 0x00}, want: 0, n: 2}, // padded: allowed
		{in: []byte{0xe5, 0x8e, 0x26}, want: 624485, n: 3},
		{in: []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, want: math.MaxUint32, n: 5},
		{in: []byte{0x80, 0x80, 0x80, 0x80, 0x00}, want: 0, n: 5},
		{in: nil, err: "truncated LEB128"},
		{in: []byte{0x80}, err: "truncated LEB128"},
		{in: []byte{0xff, 0xff, 0xff, 0xff}, err: "truncated LEB128"},
		{in: []byte{0xff, 0xff, 0xff, 0xff, 0x1f}, err: "LEB128 overflows u32"},
		{in: []byte{0x80, 0x80, 0x80, 0x80, 0x10}, err: "LEB128 overflows u32"},
		{in: []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, err: "LEB128 too long"},
	}
	for _, tt := range tests {
		got, n, err := Uleb(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Uleb(% x) = %d, %d, %v; want error %q", tt.in, got, n, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want || n != tt.n {
			t.Errorf("Uleb(% x) = %d, %d, %v; want %d, %d", tt.in, got, n, err, tt.want, tt.n)
		}
	}
}

func TestSleb(t *testing.T) {
	for _, v := range []int32{0, 1, -1, 63, 64, -64, -65, 8191, -8192, 1 << 20, -1 << 20, math.MinInt32, math.MaxInt32} {
		enc := AppendSleb(nil, v)
		got, n, err := Sleb(append(enc, 0xaa))
		if err != nil || got != v || n != len(enc) {
			t.Errorf("Sleb(AppendSleb(%d)) = %d, %d, %v; want %d bytes", v, got, n, err, len(enc))
		}
	}
	tests := []struct {
		in   []byte
		want int32
		n    int
		err  string
	}{
		{in: []byte{0x7f}, want: -1, n: 1},
		{in: []byte{0x40}, want: -64, n: 1},
		{in: []byte{0xff, 0x7f}, want: -1, n: 2}, // padded
		{in: []byte{0x80, 0x80, 0x80, 0x80, 0x78}, want: math.MinInt32, n: 5},
		{in: []byte{0xff, 0xff, 0xff, 0xff, 0x07}, want: math.MaxInt32, n: 5},
		{in: []byte{0xff, 0xff, 0xff, 0xff, 0x7f}, want: -1, n: 5},
		{in: nil, err: "truncated LEB128"},
		{in: []byte{0xff}, err: "truncated LEB128"},
		{in: []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, err: "LEB128 overflows i32"},  // 2^32-1
		{in: []byte{0x80, 0x80, 0x80, 0x80, 0x08}, err: "LEB128 overflows i32"},  // 2^31
		{in: []byte{0x80, 0x80, 0x80, 0x80, 0x70}, err: "LEB128 overflows i32"},  // -2^32
		{in: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, err: "LEB128 too long"}, // 6 bytes
	}
	for _, tt := range tests {
		got, n, err := Sleb(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Sleb(% x) = %d, %d, %v; want error %q", tt.in, got, n, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want || n != tt.n {
			t.Errorf("Sleb(% x) = %d, %d, %v; want %d, %d", tt.in, got, n, err, tt.want, tt.n)
		}
	}
}

func TestAppendUlebWidth(t *testing.T) {
	tests := []struct {
		v     uint32
		width int
		want  []byte
	}{
		{0, 0, []byte{0}},
		{0, 1, []byte{0}},
		{5, 5, []byte{0x85, 0x80, 0x80, 0x80, 0x00}},
		{300, 2, []byte{0xac, 0x02}},
		{300, 1, []byte{0xac, 0x02}}, // does not fit: wider
		{300, 9, []byte{0xac, 0x82, 0x80, 0x80, 0x00}},
		{math.MaxUint32, 5, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
	}
	for _, tt := range tests {
		got := appendUlebWidth(nil, tt.v, tt.width)
		if !bytes.Equal(got, tt.want) {
			t.Errorf("appendUlebWidth(%d, %d) = % x, want % x", tt.v, tt.width, got, tt.want)
		}
		if v, n, err := Uleb(got); err != nil || v != tt.v || n != len(got) {
			t.Errorf("Uleb(% x) = %d, %d, %v", got, v, n, err)
		}
	}
}

func TestSectionsRoundTrip(t *testing.T) {
	padded := append([]byte(nil), header...)
	padded = append(padded, SecType, 0x84, 0x80, 0x80, 0x80, 0x00, 1, 0x60, 0, 0) // size 4 in 5 bytes
	padded = append(padded, SecCustom, 0x85, 0x00, 4, 'n', 'a', 'm', 'e')         // size 5 in 2 bytes
	padded = append(padded, SecMemory, 0x03, 1, 0, 1)
	tests := []struct {
		name string
		in   []byte
		ids  []byte
	}{
		{"empty module", header, nil},
		{"reactor", newReactorParts().module(), []byte{SecType, SecImport, SecFunction, SecMemory, SecGlobal, SecExport, SecCode, SecData}},
		{"padded sizes", padded, []byte{SecType, SecCustom, SecMemory}},
		{"empty bodies", cat(header, []byte{SecCustom, 0, SecCustom, 0}), []byte{SecCustom, SecCustom}},
	}
	for _, tt := range tests {
		secs, err := Sections(tt.in)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		var ids []byte
		for _, s := range secs {
			ids = append(ids, s.ID)
		}
		if !bytes.Equal(ids, tt.ids) {
			t.Errorf("%s: section ids % x, want % x", tt.name, ids, tt.ids)
		}
		if out := Encode(secs); !bytes.Equal(out, tt.in) {
			t.Errorf("%s: Encode(Sections(b)) = % x, want % x", tt.name, out, tt.in)
		}
	}

	// A replaced body keeps the width of the size it replaces when it fits.
	secs, err := Sections(padded)
	if err != nil {
		t.Fatal(err)
	}
	secs[0].Body = vec([]byte{0x60, 0, 1, tI32})
	secs[1] = Section{ID: SecCustom, Body: str("x")}
	want := cat(header,
		[]byte{SecType, 0x85, 0x80, 0x80, 0x80, 0x00, 1, 0x60, 0, 1, tI32},
		[]byte{SecCustom, 2, 1, 'x'}, // a new Section: shortest size
		[]byte{SecMemory, 3, 1, 0, 1})
	if out := Encode(secs); !bytes.Equal(out, want) {
		t.Errorf("Encode after replacing bodies = % x, want % x", out, want)
	}
}

func TestSectionsMalformed(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"nil", nil},
		{"short header", []byte("\x00asm\x01\x00\x00")},
		{"bad magic", []byte("\x00ASM\x01\x00\x00\x00")},
		{"version 2", []byte("\x00asm\x02\x00\x00\x00")},
		{"id without size", cat(header, []byte{SecType})},
		{"truncated size", cat(header, []byte{SecType, 0x80})},
		{"size overflows u32", cat(header, []byte{SecType, 0xff, 0xff, 0xff, 0xff, 0x7f})},
		{"body overruns", cat(header, []byte{SecType, 3, 0, 0})},
		{"huge size", cat(header, []byte{SecType, 0xff, 0xff, 0xff, 0xff, 0x0f, 0})},
	}
	for _, tt := range tests {
		secs, err := Sections(tt.in)
		if !errors.Is(err, ErrMalformed) || secs != nil {
			t.Errorf("%s: Sections = %v, %v; want ErrMalformed", tt.name, secs, err)
		}
	}
}

func TestFind(t *testing.T) {
	secs := []Section{sec(SecCustom, nil), sec(SecType, nil), sec(SecCustom, []byte{1})}
	for _, tt := range []struct {
		id   byte
		want int
	}{{SecCustom, 0}, {SecType, 1}, {SecData, -1}} {
		if got := Find(secs, tt.id); got != tt.want {
			t.Errorf("Find(%d) = %d, want %d", tt.id, got, tt.want)
		}
	}
}

func TestDataSegments(t *testing.T) {
	tests := []struct {
		name      string
		body      []byte
		want      []Segment
		ok        bool
		malformed bool
	}{
		{name: "two segments", body: vec(seg(16, "hello"), seg(1000, "world")), ok: true,
			want: []Segment{{16, []byte("hello")}, {1000, []byte("world")}}},
		{name: "none", body: vec(), ok: true, want: []Segment{}},
		{name: "empty data", body: vec(seg(3, "")), ok: true, want: []Segment{{3, []byte{}}}},
		{name: "negative offset reads unsigned", body: vec(seg(-1, "x")), ok: true,
			want: []Segment{{math.MaxUint32, []byte("x")}}},
		{name: "passive", body: vec(seg(0, "a"), cat([]byte{1}, str("hi")))},
		{name: "explicit memory index", body: vec(cat([]byte{2, 0}, i32(8), str("hi")))},
		{name: "offset from a global", body: vec(cat([]byte{0, opGlobal, 0, opEnd}, str("hi")))},
		{name: "extended constant offset", body: vec(cat([]byte{0, opI32Const, 1, opI32Const, 2, opI32Add, opEnd}, str("hi")))},
		{name: "i64 offset", body: vec(cat([]byte{0}, i64(8), str("hi")))},
		{name: "trailing bytes", body: cat(vec(seg(0, "a")), []byte{0}), malformed: true},
		{name: "data overruns", body: vec(cat([]byte{0}, i32(0), []byte{5, 'a'})), malformed: true},
		{name: "count past the bytes", body: []byte{0x7f, 0}, malformed: true},
		{name: "truncated after flags", body: []byte{1, 0}, malformed: true},
		{name: "truncated after offset", body: []byte{1, 0, opI32Const, 4}, malformed: true},
		{name: "bad offset", body: []byte{1, 0, opI32Const, 0xff, 0xff, 0xff, 0xff, 0x0f, opEnd, 0}, malformed: true},
		{name: "bad flags", body: []byte{1, 0xff}, malformed: true},
		{name: "empty body", body: nil, malformed: true},
	}
	for _, tt := range tests {
		segs, ok, err := DataSegments(tt.body)
		if tt.malformed {
			if !errors.Is(err, ErrMalformed) || ok || segs != nil {
				t.Errorf("%s: %v, %v, %v; want ErrMalformed", tt.name, segs, ok, err)
			}
			continue
		}
		if err != nil || ok != tt.ok || !reflect.DeepEqual(segs, tt.want) {
			t.Errorf("%s: %v, %v, %v; want %v, %v", tt.name, segs, ok, err, tt.want, tt.ok)
		}
		if ok {
			if got := AppendDataSection(nil, segs); !bytes.Equal(got, tt.body) {
				t.Errorf("%s: AppendDataSection = % x, want % x", tt.name, got, tt.body)
			}
		}
	}
}

func TestExports(t *testing.T) {
	want := []Export{{"_start", KindFunc, 3}, {"memory", KindMemory, 0}, {"", KindGlobal, 300}, {"t", KindTable, 1}}
	var body []byte
	for _, e := range want {
		body = AppendExport(body, e)
	}
	body = cat(AppendUleb(nil, uint32(len(want))), body)
	if !bytes.Equal(body, vec(export("_start", 0, 3), export("memory", 2, 0), export("", 3, 300), export("t", 1, 1))) {
		t.Fatalf("encoding % x", body)
	}
	got, err := Exports(body)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Exports = %v, %v; want %v", got, err, want)
	}
	for i := range body {
		if _, err := Exports(body[:i]); !errors.Is(err, ErrMalformed) {
			t.Errorf("cut at %d: %v, want ErrMalformed", i, err)
		}
	}
}

func TestGlobals(t *testing.T) {
	imports := sec(SecImport, vec(
		cat(str("env"), str("f"), []byte{KindFunc, 0}),
		cat(str("env"), str("g0"), []byte{KindGlobal, tI32, 0}),
		cat(str("env"), str("t"), []byte{KindTable, 0x70, 1, 1, 2}),
		cat(str("env"), str("m"), []byte{KindMemory, 0, 1}),
		cat(str("env"), str("g1"), []byte{KindGlobal, tI64, 1}),
	))
	v128 := cat([]byte{0x7b, 1, opVecPrefix, vecV128Const}, make([]byte, 16), []byte{opEnd})
	defined := sec(SecGlobal, vec(
		global(tI32, true, i32(-3)),
		global(tI64, false, i64(math.MinInt64)),
		global(tF64, true, f64(1)),
		global(0x7d, false, []byte{opF32Const, 0, 0, 0, 0, opEnd}),
		global(tI32, false, []byte{opGlobal, 0, opEnd}),
		global(tI32, true, []byte{opI32Const, 1, opI32Const, 2, opI32Mul, opEnd}),
		global(0x70, true, []byte{opRefNull, 0x70, opEnd}),
		global(0x70, false, []byte{opRefFunc, 0, opEnd}),
		v128,
	))
	want := []Global{
		{2, tI32, true}, {3, tI64, false}, {4, tF64, true}, {5, 0x7d, false}, {6, tI32, false},
		{7, tI32, true}, {8, 0x70, true}, {9, 0x70, false}, {10, 0x7b, true},
	}
	got, err := Globals([]Section{imports, defined})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Globals = %v, %v; want %v", got, err, want)
	}
	for i := range want {
		want[i].Index -= 2
	}
	if got, err := Globals([]Section{defined}); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Globals without imports = %v, %v; want %v", got, err, want)
	}
	if got, err := Globals([]Section{imports}); err != nil || got != nil {
		t.Errorf("Globals without a global section = %v, %v", got, err)
	}

	bad := []struct {
		name string
		secs []Section
	}{
		{"mutability 2", []Section{sec(SecGlobal, vec([]byte{tI32, 2, opI32Const, 0, opEnd}))}},
		{"unknown opcode", []Section{sec(SecGlobal, vec([]byte{tI32, 0, 0x20, 0, opEnd}))}},
		{"unterminated", []Section{sec(SecGlobal, vec([]byte{tI32, 0, opI32Const, 0}))}},
		{"long LEB", []Section{sec(SecGlobal, vec([]byte{tI32, 0, opI32Const, 0x80, 0x80, 0x80, 0x80, 0x80, 0, opEnd}))}},
		{"other vector opcode", []Section{sec(SecGlobal, vec(cat([]byte{0x7b, 0, opVecPrefix, 13}, make([]byte, 16), []byte{opEnd})))}},
		{"trailing bytes", []Section{sec(SecGlobal, cat(vec(global(tI32, false, i32(0))), []byte{0}))}},
		{"import kind 9", []Section{sec(SecImport, vec(cat(str("a"), str("b"), []byte{9, 0}))), defined}},
		{"truncated import", []Section{sec(SecImport, vec(cat(str("a"), str("b"), []byte{KindGlobal, tI32}))), defined}},
	}
	for _, tt := range bad {
		if got, err := Globals(tt.secs); !errors.Is(err, ErrMalformed) || got != nil {
			t.Errorf("%s: Globals = %v, %v; want ErrMalformed", tt.name, got, err)
		}
	}
}

func TestMinMemory(t *testing.T) {
	mem := func(body []byte) []Section { return []Section{sec(SecType, vec()), sec(SecMemory, body)} }
	importMem := sec(SecImport, vec(cat(str("env"), str("memory"), []byte{KindMemory}, memory(1, -1))))
	tests := []struct {
		name  string
		secs  []Section
		pages uint32
		ok    bool
		// raised is SetMinMemory(secs, 10)'s memory section body, nil
		// for an unchanged module.
		raised    []byte
		malformed bool
	}{
		{name: "no memory", secs: []Section{sec(SecType, vec())}},
		{name: "no max", secs: mem(vec(memory(2, -1))), pages: 2, ok: true, raised: vec(memory(10, -1))},
		{name: "max above", secs: mem(vec(memory(2, 300))), pages: 2, ok: true, raised: vec(memory(10, 300))},
		{name: "max clamps", secs: mem(vec(memory(2, 3))), pages: 2, ok: true, raised: vec(memory(3, 3))},
		{name: "max kept as encoded", secs: mem([]byte{1, 1, 2, 0x8c, 0x80, 0x00}), pages: 2, ok: true,
			raised: []byte{1, 1, 10, 0x8c, 0x80, 0x00}},
		{name: "already large", secs: mem(vec(memory(10, -1))), pages: 10, ok: true},
		{name: "larger", secs: mem(vec(memory(70000, -1))), pages: 70000, ok: true},
		{name: "padded min", secs: mem([]byte{1, 0, 0x82, 0x80, 0x00}), pages: 2, ok: true, raised: vec(memory(10, -1))},
		{name: "zero memories", secs: mem(vec())},
		{name: "two memories", secs: mem(vec(memory(1, -1), memory(2, -1)))},
		{name: "shared", secs: mem(vec([]byte{3, 1, 2}))},
		{name: "64-bit", secs: mem(vec([]byte{4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}))},
		{name: "imported and defined", secs: []Section{importMem, sec(SecMemory, vec(memory(1, -1)))}},
		{name: "imported only", secs: []Section{importMem}},
		{name: "truncated limits", secs: mem([]byte{1, 1, 2}), malformed: true},
		{name: "bad flags", secs: mem([]byte{1, 8, 2}), malformed: true},
		{name: "count past the bytes", secs: mem([]byte{9, 0, 1}), malformed: true},
		{name: "trailing bytes", secs: mem([]byte{1, 0, 1, 0}), malformed: true},
		{name: "u64 overflow", secs: mem([]byte{1, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}), malformed: true},
	}
	for _, tt := range tests {
		pages, ok, err := MinMemory(tt.secs)
		if tt.malformed {
			if !errors.Is(err, ErrMalformed) || ok {
				t.Errorf("%s: MinMemory = %d, %v, %v; want ErrMalformed", tt.name, pages, ok, err)
			}
			if _, err := SetMinMemory(tt.secs, 10); !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: SetMinMemory: %v, want ErrMalformed", tt.name, err)
			}
			continue
		}
		if err != nil || pages != tt.pages || ok != tt.ok {
			t.Errorf("%s: MinMemory = %d, %v, %v; want %d, %v", tt.name, pages, ok, err, tt.pages, tt.ok)
		}
		before := Encode(tt.secs)
		out, err := SetMinMemory(tt.secs, 10)
		if err != nil {
			t.Errorf("%s: SetMinMemory: %v", tt.name, err)
			continue
		}
		if !bytes.Equal(Encode(tt.secs), before) {
			t.Errorf("%s: SetMinMemory modified its input", tt.name)
		}
		if tt.raised == nil {
			if !bytes.Equal(Encode(out), before) {
				t.Errorf("%s: SetMinMemory changed the module", tt.name)
			}
			continue
		}
		if i := Find(out, SecMemory); i < 0 || !bytes.Equal(out[i].Body, tt.raised) {
			t.Errorf("%s: SetMinMemory memory section = % x, want % x", tt.name, out[i].Body, tt.raised)
		}
		if p, ok, err := MinMemory(out); err != nil || !ok || p != min(10, max(tt.pages, memMax(t, out))) {
			t.Errorf("%s: MinMemory after SetMinMemory = %d, %v, %v", tt.name, p, ok, err)
		}
	}
}

// memMax returns the maximum of the one memory of secs, or 10.
func memMax(t *testing.T, secs []Section) uint32 {
	mems, err := Memories(secs)
	if err != nil || len(mems) != 1 {
		t.Fatalf("Memories = %v, %v", mems, err)
	}
	if !mems[0].HasMax {
		return 10
	}
	return uint32(mems[0].Max)
}

func TestMemories(t *testing.T) {
	secs := []Section{sec(SecMemory, vec(memory(1, -1), memory(2, 5), []byte{3, 1, 4}, []byte{5, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x81, 0x80, 0x80, 0x80, 0x80, 0x01}))}
	want := []Limits{
		{Min: 1},
		{Min: 2, Max: 5, HasMax: true},
		{Min: 1, Max: 4, HasMax: true, Shared: true},
		{Min: 1 << 35, Max: 1<<35 + 1, HasMax: true, Is64: true},
	}
	got, err := Memories(secs)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Memories = %+v, %v; want %+v", got, err, want)
	}
	if got, err := Memories(nil); got != nil || err != nil {
		t.Errorf("Memories(nil) = %v, %v", got, err)
	}
}

// TestGoModule runs the parsers over a real Go wasip1 module, when the
// committed modules are there.
func TestGoModule(t *testing.T) {
	b := readCoreutils(t)
	secs, err := Sections(b)
	if err != nil {
		t.Fatal(err)
	}
	if out := Encode(secs); !bytes.Equal(out, b) {
		t.Fatalf("Encode(Sections(coreutils.wasm)) differs: %d bytes, want %d", len(out), len(b))
	}
	segs, ok, err := DataSegments(secs[Find(secs, SecData)].Body)
	if err != nil || !ok || len(segs) == 0 {
		t.Fatalf("DataSegments: %d segments, %v, %v", len(segs), ok, err)
	}
	if pages, ok, err := MinMemory(secs); err != nil || !ok || pages != 128 {
		t.Errorf("MinMemory = %d, %v, %v; want the 128 pages of make wasm", pages, ok, err)
	}
	if g, err := Globals(secs); err != nil || len(g) == 0 {
		t.Errorf("Globals: %d, %v", len(g), err)
	}
}

func readCoreutils(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../../wasm/coreutils.wasm")
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("no ../../wasm/coreutils.wasm")
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}
