package wasmbin

import "fmt"

// Segment is an active data segment of memory 0 with a constant offset.
type Segment struct {
	Offset uint32
	Data   []byte
}

// DataSegments parses a data section body. ok is false (and the error nil)
// when some segment is not an active segment of memory 0 with a constant
// i32 offset: passive, another memory, or an offset read from a global.
func DataSegments(body []byte) (segs []Segment, ok bool, err error) {
	r := &reader{b: body}
	n := r.count()
	segs = make([]Segment, 0, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		if flags := r.u32(); flags != 0 {
			return nil, r.err == nil, r.err
		}
		if len(r.b) == 0 || r.b[0] != opI32Const {
			return nil, r.err == nil, r.err
		}
		off, k, err := Sleb(r.b[1:])
		if err != nil {
			return nil, false, fmt.Errorf("%w: segment %d offset: %v", ErrMalformed, i, err)
		}
		r.b = r.b[1+k:]
		if len(r.b) == 0 || r.b[0] != opEnd {
			return nil, true, nil // a longer constant expression
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

// importedGlobals counts the globals an import section body imports.
func importedGlobals(body []byte) (uint32, error) {
	r := &reader{b: body}
	n := r.count()
	var globals uint32
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.name()
		r.name()
		switch kind := r.byte1(); kind {
		case KindFunc:
			r.u32()
		case KindTable:
			r.byte1()
			r.limits()
		case KindMemory:
			r.limits()
		case KindGlobal:
			r.byte1()
			r.byte1()
			globals++
		default:
			r.fail("import kind %d", kind)
		}
	}
	return globals, r.err
}

// Globals returns the globals the module defines (not the imported ones).
func Globals(secs []Section) ([]Global, error) {
	var base uint32
	if i := Find(secs, SecImport); i >= 0 {
		n, err := importedGlobals(secs[i].Body)
		if err != nil {
			return nil, err
		}
		base = n
	}
	i := Find(secs, SecGlobal)
	if i < 0 {
		return nil, nil
	}
	r := &reader{b: secs[i].Body}
	n := r.count()
	out := make([]Global, 0, n)
	for k := uint32(0); k < n && r.err == nil; k++ {
		g := Global{Index: base + k, Type: r.byte1(), Mutable: r.byte1() == 1}
		r.constExpr()
		out = append(out, g)
	}
	return out, r.err
}

// MinMemory returns the initial size in pages of the module's one memory;
// ok is false for a module with no memory of its own, several, or a
// shared or 64-bit one.
func MinMemory(secs []Section) (pages uint32, ok bool, err error) {
	i := Find(secs, SecMemory)
	if i < 0 {
		return 0, false, nil
	}
	r := &reader{b: secs[i].Body}
	if r.count() != 1 {
		return 0, false, r.err
	}
	min, flags := r.limits()
	if r.err != nil {
		return 0, false, r.err
	}
	return min, flags <= 1, nil
}

// SetMinMemory returns the module with the initial size of its memory
// raised to at least pages (never past its maximum). A module whose memory
// MinMemory does not report is returned unchanged.
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
	newMin := pages
	var maxPages uint32
	if flags&1 != 0 {
		maxPages = r.u32()
		newMin = min(newMin, maxPages)
	}
	if r.err != nil {
		return nil, r.err
	}
	body := AppendUleb(nil, 1)
	body = append(body, flags)
	body = AppendUleb(body, newMin)
	if flags&1 != 0 {
		body = AppendUleb(body, maxPages)
	}
	out := append([]Section(nil), secs...)
	out[i] = Section{ID: SecMemory, Body: body}
	return out, nil
}
