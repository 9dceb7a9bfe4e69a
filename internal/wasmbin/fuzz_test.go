package wasmbin

import (
	"bytes"
	"errors"
	"testing"
)

// seeds are the hand-built modules of the tests.
func seeds() [][]byte {
	var out [][]byte
	p := newReactorParts()
	out = append(out, p.module(), envModule(), header,
		dataModule([]Segment{{Offset: 1, Data: []byte("ab")}, {Offset: 9, Data: []byte("c")}}, true),
		dataModule([]Segment{{Offset: 65535, Data: []byte("ab")}}, false))
	p.dataCount = &Section{ID: SecDataCount, Body: []byte{2}}
	p.start = &Section{ID: SecStart, Body: []byte{0}}
	out = append(out, p.module())
	p = newReactorParts()
	p.data.Body = vec(seg(0, "a"), cat([]byte{0, opGlobal, 0, opEnd}, str("hi")), cat([]byte{1}, str("p")))
	p.memory.Body = vec(memory(1, 2))
	out = append(out, p.module())
	out = append(out, tableModule(nil, vec(table(1, -1), table(2, 9))),
		codeModule([]byte{1, 3, tI64, 0x02, 0x40, 0x0e, 1, 0, 0, 0x28, 2, 0, opEnd, opEnd}))
	return out
}

// FuzzSections: no panic on any input, and a binary that parses encodes
// back to itself; the section parsers never panic on what it yields.
func FuzzSections(f *testing.F) {
	for _, s := range seeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		secs, err := Sections(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if out := Encode(secs); !bytes.Equal(out, b) {
			t.Fatalf("Encode(Sections(b)) = % x, want % x", out, b)
		}
		for _, s := range secs {
			switch s.ID {
			case SecData:
				DataSegments(s.Body)
			case SecExport:
				Exports(s.Body)
			}
		}
		Globals(secs)
		Memories(secs)
		caps := Caps{TableSize: 3, Func: FuncShape{Locals: 5}}
		if out, err := ApplyCaps(b, caps); err == nil {
			s, err := ModuleShape(out)
			if err != nil {
				t.Fatalf("ApplyCaps output does not parse: %v", err)
			}
			if s.Tables > 0 && (s.UnboundedTable || s.MaxTableMax > 3) {
				t.Fatalf("ApplyCaps left a table maximum over the cap: %+v", s)
			}
		} else if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrRefused) {
			t.Fatalf("ApplyCaps: error %v is neither malformed nor refused", err)
		}
		if out, err := SetMinMemory(secs, 100); err == nil {
			if _, err := Sections(Encode(out)); err != nil {
				t.Fatalf("SetMinMemory output does not parse: %v", err)
			}
		}
		if out, _, err := MergeDataSegments(b, 64); err == nil {
			if _, err := Sections(out); err != nil {
				t.Fatalf("MergeDataSegments output does not parse: %v", err)
			}
		}
	})
}

// FuzzPrepareReactor: no panic on any input, and a prepared binary parses,
// has no data section, exports its globals, and its segments fit.
func FuzzPrepareReactor(f *testing.F) {
	for _, s := range seeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, ok, err := PrepareReactor(b)
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
		if !ok {
			if r != nil {
				t.Fatal("a Reactor without ok")
			}
			return
		}
		if err != nil {
			t.Fatal("ok with an error")
		}
		secs, err := Sections(r.Binary)
		if err != nil {
			t.Fatalf("Binary does not parse: %v", err)
		}
		if Find(secs, SecData) >= 0 {
			t.Fatal("Binary has a data section")
		}
		exports, err := Exports(secs[Find(secs, SecExport)].Body)
		if err != nil {
			t.Fatalf("Binary's exports do not parse: %v", err)
		}
		have := map[string]bool{}
		for _, e := range exports {
			have[e.Name] = e.Kind == KindGlobal
		}
		for _, g := range r.Globals {
			if !have[g] {
				t.Fatalf("global export %s missing", g)
			}
		}
		for _, s := range r.Segments {
			if uint64(s.Offset)+uint64(len(s.Data)) > uint64(r.MinPages)*65536 {
				t.Fatalf("segment at %d (%d bytes) past %d pages", s.Offset, len(s.Data), r.MinPages)
			}
		}
	})
}
