package wasmbin

import "fmt"

// Segment is an active data segment of memory 0 with a constant offset.
type Segment struct {
	Offset uint32
	Data   []byte
}

// DataSegments parses a data section body. ok is false (and the error nil)
// when some segment is not an active segment of memory 0 with a constant
// i32 offset: passive, with an explicit memory index, or with an offset
// that is not a lone i32.const (read from a global, or an extended
// constant expression). A segment's offset is the i32 read as unsigned, as
// wasm does. The data of the segments alias body.
func DataSegments(body []byte) (segs []Segment, ok bool, err error) {
	r := &reader{b: body}
	n := r.count()
	segs = make([]Segment, 0, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		if flags := r.u32(); flags != 0 {
			return nil, false, nil // passive, or an explicit memory index
		}
		if r.err == nil && len(r.b) == 0 {
			r.fail("segment %d: truncated", i)
		}
		if r.err != nil {
			break
		}
		if r.b[0] != opI32Const {
			return nil, false, nil // global.get or another expression
		}
		off, k, err := Sleb(r.b[1:])
		if err != nil {
			return nil, false, fmt.Errorf("%w: segment %d offset: %v", ErrMalformed, i, err)
		}
		r.b = r.b[1+k:]
		if len(r.b) == 0 {
			r.fail("segment %d: truncated", i)
			break
		}
		if r.b[0] != opEnd {
			return nil, false, nil // a longer constant expression
		}
		r.b = r.b[1:]
		data := r.bytes(r.u32())
		segs = append(segs, Segment{Offset: uint32(off), Data: data})
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes after the last data segment", len(r.b))
	}
	if r.err != nil {
		return nil, false, r.err
	}
	return segs, true, nil
}

// AppendDataSection appends the body of a data section holding segs, each
// an active segment of memory 0 at a constant offset, to b.
func AppendDataSection(b []byte, segs []Segment) []byte {
	b = AppendUleb(b, uint32(len(segs)))
	for _, s := range segs {
		b = append(b, 0, opI32Const)
		b = AppendSleb(b, int32(s.Offset))
		b = append(b, opEnd)
		b = AppendUleb(b, uint32(len(s.Data)))
		b = append(b, s.Data...)
	}
	return b
}

// Export is an entry of the export section.
type Export struct {
	Name  string
	Kind  byte
	Index uint32
}

// Exports parses an export section body.
func Exports(body []byte) ([]Export, error) {
	r := &reader{b: body}
	n := r.count()
	out := make([]Export, 0, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		e := Export{Name: r.name(), Kind: r.byte1(), Index: r.u32()}
		out = append(out, e)
	}
	return out, r.err
}

// AppendExport appends the encoding of e to b.
func AppendExport(b []byte, e Export) []byte {
	b = AppendUleb(b, uint32(len(e.Name)))
	b = append(b, e.Name...)
	b = append(b, e.Kind)
	return AppendUleb(b, e.Index)
}

// Global is a global the module defines.
type Global struct {
	Index   uint32 // in the global index space (after imported globals)
	Type    byte   // value type: 0x7f i32, 0x7e i64, 0x7d f32, 0x7c f64, ...
	Mutable bool
}

// Import is an entry of the import section.
type Import struct {
	Module, Name string
	Kind         byte   // KindFunc, KindTable, KindMemory, KindGlobal or kindTag
	Type         uint32 // the type index of a function or tag
}

// Imports parses the import section of secs (none without one).
func Imports(secs []Section) ([]Import, error) {
	ii := Find(secs, SecImport)
	if ii < 0 {
		return nil, nil
	}
	r := &reader{b: secs[ii].Body}
	n := r.count()
	out := make([]Import, 0, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		im := Import{Module: r.name(), Name: r.name(), Kind: r.byte1()}
		switch im.Kind {
		case KindFunc:
			im.Type = r.u32()
		case KindTable:
			r.byte1()
			r.limits()
		case KindMemory:
			r.limits()
		case KindGlobal:
			r.byte1()
			r.byte1()
		case kindTag: // exception handling: an attribute, then a type
			r.byte1()
			im.Type = r.u32()
		default:
			r.fail("import kind %d", im.Kind)
		}
		out = append(out, im)
	}
	return out, r.finish()
}

// importCounts counts the globals and memories secs imports.
func importCounts(secs []Section) (globals, memories uint32, err error) {
	ims, err := Imports(secs)
	for _, im := range ims {
		switch im.Kind {
		case KindGlobal:
			globals++
		case KindMemory:
			memories++
		}
	}
	return globals, memories, err
}

// Globals returns the globals the module defines (not the imported ones).
func Globals(secs []Section) ([]Global, error) {
	base, _, err := importCounts(secs)
	if err != nil {
		return nil, err
	}
	i := Find(secs, SecGlobal)
	if i < 0 {
		return nil, nil
	}
	r := &reader{b: secs[i].Body}
	n := r.count()
	out := make([]Global, 0, n)
	for k := uint32(0); k < n && r.err == nil; k++ {
		g := Global{Index: base + k, Type: r.byte1()}
		switch mut := r.byte1(); mut {
		case 0:
		case 1:
			g.Mutable = true
		default:
			r.fail("global %d: mutability %#x", g.Index, mut)
		}
		r.constExpr()
		out = append(out, g)
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes after the last global", len(r.b))
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

// Memories returns the limits of the memories the module defines (not the
// imported ones), in index order after the imported ones.
func Memories(secs []Section) ([]Limits, error) {
	i := Find(secs, SecMemory)
	if i < 0 {
		return nil, nil
	}
	r := &reader{b: secs[i].Body}
	n := r.count()
	out := make([]Limits, 0, n)
	for k := uint32(0); k < n && r.err == nil; k++ {
		out = append(out, r.limits())
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes after the last memory", len(r.b))
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

// MinMemory returns the initial size in pages of the module's one memory;
// ok is false for a module with no memory of its own, an imported one,
// several, or a shared or 64-bit one.
func MinMemory(secs []Section) (pages uint32, ok bool, err error) {
	mems, err := Memories(secs)
	if err != nil || len(mems) != 1 {
		return 0, false, err
	}
	_, imported, err := importCounts(secs)
	if err != nil || imported != 0 {
		return 0, false, err
	}
	m := mems[0]
	if m.Shared || m.Is64 {
		return 0, false, nil
	}
	return uint32(m.Min), true, nil
}

// SetMinMemory returns the module with the initial size of its memory
// raised to at least pages (never past its maximum). A module whose memory
// MinMemory does not report is returned unchanged. The new memory section
// keeps the encoding of the maximum; secs itself is not modified.
//
// A Go program grows its memory during runtime initialization; a runtime
// such as wazero grows a memory by reallocating and copying it. Declaring
// the size the program reaches anyway as the initial size makes every
// instantiation allocate once instead. The Go runtime finds its heap
// through memory.size, so extra initial pages are simply used first.
func SetMinMemory(secs []Section, pages uint32) ([]Section, error) {
	cur, ok, err := MinMemory(secs)
	if err != nil || !ok || cur >= pages {
		return secs, err
	}
	i := Find(secs, SecMemory)
	r := &reader{b: secs[i].Body}
	r.count()
	flags := r.byte1()
	r.u32()
	rest := r.b // the maximum, if any, kept as encoded
	newMin := pages
	if flags&1 != 0 {
		newMin = min(newMin, r.u32())
	}
	if r.err != nil {
		return nil, r.err
	}
	body := AppendUleb(nil, 1)
	body = append(body, flags)
	body = AppendUleb(body, newMin)
	body = append(body, rest...)
	out := append([]Section(nil), secs...)
	out[i] = Section{ID: SecMemory, Body: body}
	return out, nil
}
