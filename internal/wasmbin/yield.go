package wasmbin

import (
	"fmt"
	"math"
)

// AddYieldImport returns the module with an import of
// wasi_snapshot_preview1.sched_yield of type () -> i32, so that
// InstrumentLoops applies to it: a module that does not import sched_yield
// (a C or Rust program rarely does) would otherwise run under wazero's
// slower termination check.
//
// The import goes after the module's own imports, so it takes the function
// index N, N being the number of functions the module imports; every
// function the module defines moves up by one. Every place that names a
// function index is rewritten: call, return_call and ref.func in code,
// element segments, global initializers, exports, the start function and
// the function, local and label names of the "name" section. A type
// () -> i32 is added at the end of the type section when the module has
// none. A module that already has the import is returned unchanged.
//
// ok is false, and the error nil, for a module this does not apply to: it
// imports a tag or sched_yield with another type, uses types or tables of
// proposals this does not decode (GC, function references), or code this
// decoder does not know. A malformed module is an error.
func AddYieldImport(b []byte) (out []byte, ok bool, err error) {
	secs, err := Sections(b)
	if err != nil {
		return nil, false, err
	}
	if _, found, err := yieldImport(secs); err != nil || found {
		return b, found, err
	}
	ims, err := Imports(secs)
	if err != nil {
		return nil, false, err
	}
	var nfuncs uint32
	for _, im := range ims {
		switch {
		case im.Kind == kindTag:
			return nil, false, nil
		case im.Module == yieldModule && im.Name == yieldName:
			return nil, false, nil // imported with another type
		case im.Kind == KindFunc:
			nfuncs++
		}
	}
	if Find(secs, 13 /* tag */) >= 0 {
		return nil, false, nil
	}
	rw := shifter{from: nfuncs, types: math.MaxUint32}

	// The type () -> i32.
	typeIdx, types, known, err := yieldType(secs)
	if err != nil || !known {
		return nil, false, err
	}
	if ti := Find(secs, SecType); ti < 0 || typeIdx == (&reader{b: secs[ti].Body}).count() {
		// Appended: a module that names the type index it takes was
		// invalid as given, and would be valid after the rewrite.
		rw.types = typeIdx
		for _, im := range ims {
			if im.Kind == KindFunc && im.Type >= typeIdx {
				return nil, false, fmt.Errorf("%w: import %s.%s of type %d, past the type section", ErrMalformed, im.Module, im.Name, im.Type)
			}
		}
	}
	secs = replaceSection(secs, SecType, types)

	// The import, after the module's own.
	imBody := AppendUleb(nil, uint32(len(ims)+1))
	if ii := Find(secs, SecImport); ii >= 0 {
		r := &reader{b: secs[ii].Body}
		r.count()
		imBody = append(imBody, r.b...)
	}
	imBody = appendName(imBody, yieldModule)
	imBody = appendName(imBody, yieldName)
	imBody = AppendUleb(append(imBody, KindFunc), typeIdx)
	secs = replaceSection(secs, SecImport, imBody)

	for i := range secs {
		s := &secs[i]
		var body []byte
		var known = true
		switch s.ID {
		case SecTable:
			known, err = rw.checkTables(s.Body)
			body = s.Body
		case SecFunction:
			err = rw.checkFunctions(s.Body)
			body = s.Body
		case SecGlobal:
			body, known, err = rw.globals(s.Body)
		case SecExport:
			body, err = rw.exports(s.Body)
		case SecStart:
			body, err = rw.start(s.Body)
		case SecElement:
			body, known, err = rw.elements(s.Body)
		case SecCode:
			body, known, err = rw.code(s.Body)
		case SecCustom:
			body = rw.custom(s.Body)
		default:
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("%w (section %d)", err, s.ID)
		}
		if !known {
			return nil, false, nil
		}
		if body == nil { // a custom section left out
			s.ID = 0xff
			continue
		}
		*s = Section{ID: s.ID, Body: body, sizeLen: s.sizeLen}
	}
	kept := secs[:0]
	for _, s := range secs {
		if s.ID != 0xff {
			kept = append(kept, s)
		}
	}
	return Encode(kept), true, nil
}

// yieldType finds the type () -> i32, or appends it. It returns the type
// index and the type section's new body. known is false for a type section
// with entries other than plain function types.
func yieldType(secs []Section) (idx uint32, body []byte, known bool, err error) {
	var n uint32
	var rest []byte
	found := false
	if ti := Find(secs, SecType); ti >= 0 {
		r := &reader{b: secs[ti].Body}
		n = r.count()
		rest = r.b
		for i := uint32(0); i < n && r.err == nil; i++ {
			if r.byte1() != 0x60 {
				if r.err != nil {
					break
				}
				return 0, nil, false, nil
			}
			params := r.bytes(r.count())
			results := r.bytes(r.count())
			if !found && r.err == nil && len(params) == 0 && len(results) == 1 && results[0] == 0x7f {
				idx, found = i, true
			}
		}
		if r.err == nil && len(r.b) != 0 {
			r.fail("%d bytes after the type section", len(r.b))
		}
		if r.err != nil {
			return 0, nil, false, r.err
		}
	}
	if found {
		return idx, append(AppendUleb(nil, n), rest...), true, nil
	}
	body = AppendUleb(nil, n+1)
	body = append(body, rest...)
	body = append(body, 0x60, 0, 1, 0x7f)
	return n, body, true, nil
}

// shifter moves every function index from on up by one. A type index
// from types on (the index of the type AddYieldImport appended) is
// refused.
type shifter struct{ from, types uint32 }

// checkType refuses a type index the module did not have.
func (s shifter) checkType(idx uint32) error {
	if idx >= s.types {
		return fmt.Errorf("%w: type %d, past the type section", ErrMalformed, idx)
	}
	return nil
}

// checkFunctions checks the type indices of the function section.
func (s shifter) checkFunctions(body []byte) error {
	r := &reader{b: body}
	for n, i := r.count(), uint32(0); i < n && r.err == nil; i++ {
		if err := s.checkType(r.u32()); err != nil && r.err == nil {
			return err
		}
	}
	return r.err
}

func (s shifter) fn(i uint32) uint32 {
	if i >= s.from {
		return i + 1
	}
	return i
}

// appendFn reads a function index from r and appends it, shifted.
func (s shifter) appendFn(out []byte, r *reader) []byte {
	return AppendUleb(out, s.fn(r.u32()))
}

// constExpr copies a constant expression from r, shifting ref.func.
func (s shifter) constExpr(out []byte, r *reader) []byte {
	e := r.constExpr()
	if r.err != nil {
		return out
	}
	er := &reader{b: e}
	for len(er.b) > 0 && er.err == nil {
		start := er.b
		op := er.byte1()
		if op == opRefFunc {
			out = s.appendFn(append(out, op), er)
			continue
		}
		skipImmediates(er, op)
		out = append(out, start[:len(start)-len(er.b)]...)
	}
	if er.err != nil {
		r.err = er.err
	}
	return out
}

// checkTables reports whether every table type is one this decodes
// (a reference type and limits, no initializer expression).
func (s shifter) checkTables(body []byte) (bool, error) {
	r := &reader{b: body}
	for n, i := r.count(), uint32(0); i < n && r.err == nil; i++ {
		if len(r.b) > 0 && r.b[0] == 0x40 { // function references: an initializer
			return false, nil
		}
		r.byte1()
		r.limits()
	}
	return true, r.finish()
}

func (s shifter) globals(body []byte) ([]byte, bool, error) {
	r := &reader{b: body}
	n := r.count()
	out := AppendUleb(make([]byte, 0, len(body)+8), n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		t := r.byte1()
		if t == 0x63 || t == 0x64 { // (ref null? ht): typed references
			return nil, false, nil
		}
		out = append(out, t, r.byte1())
		out = s.constExpr(out, r)
	}
	return out, true, r.finish()
}

func (s shifter) exports(body []byte) ([]byte, error) {
	r := &reader{b: body}
	n := r.count()
	out := AppendUleb(make([]byte, 0, len(body)+8), n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		name := r.name()
		kind := r.byte1()
		idx := r.u32()
		if kind == KindFunc {
			idx = s.fn(idx)
		}
		out = AppendExport(out, Export{Name: name, Kind: kind, Index: idx})
	}
	return out, r.finish()
}

func (s shifter) start(body []byte) ([]byte, error) {
	r := &reader{b: body}
	out := s.appendFn(nil, r)
	return out, r.finish()
}

// elements rewrites the element section (all eight segment encodings).
func (s shifter) elements(body []byte) ([]byte, bool, error) {
	r := &reader{b: body}
	n := r.count()
	out := AppendUleb(make([]byte, 0, len(body)+len(body)/16), n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		flags := r.u32()
		if flags > 7 {
			r.fail("element segment flags %d", flags)
			break
		}
		out = AppendUleb(out, flags)
		if flags&3 == 2 { // a table index
			out = AppendUleb(out, r.u32())
		}
		if flags&1 == 0 { // active: an offset
			out = s.constExpr(out, r)
		}
		if flags&3 != 0 { // an element kind or reference type
			t := r.byte1()
			if t == 0x63 || t == 0x64 {
				return nil, false, nil
			}
			out = append(out, t)
		}
		m := r.count()
		out = AppendUleb(out, m)
		for j := uint32(0); j < m && r.err == nil; j++ {
			if flags&4 == 0 {
				out = s.appendFn(out, r)
			} else {
				out = s.constExpr(out, r)
			}
		}
	}
	return out, true, r.finish()
}

// code rewrites the function bodies.
func (s shifter) code(body []byte) ([]byte, bool, error) {
	return rewriteCode(body, len(body)/32, s.function)
}

func (s shifter) function(out, body []byte) ([]byte, bool, error) {
	r := &reader{b: body}
	for n, i := r.count(), uint32(0); i < n && r.err == nil; i++ {
		r.u32()
		r.byte1()
	}
	if r.err != nil {
		return nil, false, r.err
	}
	out = append(out, body[:len(body)-len(r.b)]...)
	for len(r.b) > 0 && r.err == nil {
		start := r.b
		op := r.byte1()
		switch op {
		case 0x10, 0x12, opRefFunc: // call, return_call, ref.func
			out = s.appendFn(append(out, op), r)
			continue
		case 0x11, 0x13: // call_indirect, return_call_indirect
			pr := &reader{b: r.b}
			if idx := pr.u32(); pr.err == nil {
				if err := s.checkType(idx); err != nil {
					return nil, false, err
				}
			}
		case 0x02, 0x03, 0x04: // block, loop, if: a type index as block type
			if len(r.b) > 0 && r.b[0] != 0x40 && (r.b[0] < 0x6f || r.b[0] > 0x7f) {
				pr := &reader{b: r.b}
				if v := pr.s33(); pr.err == nil && v >= 0 {
					if err := s.checkType(uint32(min(v, math.MaxUint32))); err != nil {
						return nil, false, err
					}
				}
			}
		}
		if !skipImmediates(r, op) {
			return nil, false, nil
		}
		out = append(out, start[:len(start)-len(r.b)]...)
	}
	return out, true, r.err
}

// custom rewrites the function indices of the "name" section; other
// custom sections are kept as they are. A name section this cannot parse
// is left out (nil): names only serve stack traces.
func (s shifter) custom(body []byte) []byte {
	r := &reader{b: body}
	if r.name() != "name" || r.err != nil {
		return body
	}
	out := append([]byte(nil), body[:len(body)-len(r.b)]...)
	for len(r.b) > 0 && r.err == nil {
		id := r.byte1()
		sub := r.bytes(r.u32())
		if r.err != nil {
			break
		}
		var nb []byte
		sr := &reader{b: sub}
		switch id {
		case 1: // function names: a name map
			n := sr.count()
			nb = AppendUleb(nil, n)
			for i := uint32(0); i < n && sr.err == nil; i++ {
				nb = s.appendFn(nb, sr)
				nb = appendName(nb, sr.name())
			}
		case 2, 3: // local and label names: an indirect name map
			n := sr.count()
			nb = AppendUleb(nil, n)
			for i := uint32(0); i < n && sr.err == nil; i++ {
				nb = s.appendFn(nb, sr)
				m := sr.count()
				nb = AppendUleb(nb, m)
				for j := uint32(0); j < m && sr.err == nil; j++ {
					nb = AppendUleb(nb, sr.u32())
					nb = appendName(nb, sr.name())
				}
			}
		default:
			nb = sub
			sr.b = nil
		}
		if sr.finish() != nil {
			return nil
		}
		out = append(append(out, id), AppendUleb(nil, uint32(len(nb)))...)
		out = append(out, nb...)
	}
	if r.err != nil {
		return nil
	}
	return out
}

// finish reports the reader's error, or bytes left over.
func (r *reader) finish() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes after the last entry", len(r.b))
	}
	return r.err
}

// appendName encodes a name (a length, then the bytes).
func appendName(b []byte, s string) []byte { return append(AppendUleb(b, uint32(len(s))), s...) }
