package wasmbin

// A tiny encoder for hand-assembled test modules. Every helper returns a
// Section built as a literal, so Encode writes the shortest sizes.

// vec encodes a vector: its length, then the elements.
func vec(elems ...[]byte) []byte {
	b := AppendUleb(nil, uint32(len(elems)))
	for _, e := range elems {
		b = append(b, e...)
	}
	return b
}

// str encodes a name.
func str(s string) []byte { return append(AppendUleb(nil, uint32(len(s))), s...) }

// cat concatenates byte strings.
func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func sec(id byte, body []byte) Section { return Section{ID: id, Body: body} }

// i32 and i64 encode an i32.const or i64.const constant expression.
func i32(v int32) []byte { return append(AppendSleb([]byte{opI32Const}, v), opEnd) }

func i64(v int64) []byte {
	b := []byte{opI64Const}
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(append(b, c), opEnd)
		}
		b = append(b, c|0x80)
	}
}

func f64(bits uint64) []byte {
	b := []byte{opF64Const}
	for i := 0; i < 8; i++ {
		b = append(b, byte(bits>>(8*i)))
	}
	return append(b, opEnd)
}

// export encodes an export entry.
func export(name string, kind byte, index uint32) []byte {
	return AppendExport(nil, Export{Name: name, Kind: kind, Index: index})
}

// global encodes a global entry of the global section.
func global(typ byte, mutable bool, init []byte) []byte {
	m := byte(0)
	if mutable {
		m = 1
	}
	return cat([]byte{typ, m}, init)
}

// seg encodes an active segment of memory 0 at a constant offset.
func seg(offset int32, data string) []byte {
	return cat([]byte{0}, i32(offset), str(data))
}

// memory encodes limits of a memory without (max < 0) or with a maximum.
func memory(min uint32, max int64) []byte {
	if max < 0 {
		return AppendUleb([]byte{0}, min)
	}
	return AppendUleb(AppendUleb([]byte{1}, min), uint32(max))
}

const (
	tI32 = 0x7f
	tI64 = 0x7e
	tF64 = 0x7c
)

// reactorParts are the sections of a small valid reactor module: an
// imported immutable i32 global env.g (so defined globals start at index
// 1), _initialize and wasmbox_run, one memory of one page exported as
// "memory", four globals (index 1 i32 mut 42, 2 i64 const -5, 3 i64 mut
// -7, 4 f64 mut 1.5) and two data segments.
type reactorParts struct {
	imports, types, funcs, memory, globals, exports, start, dataCount, code, data *Section
}

func newReactorParts() reactorParts {
	p := func(s Section) *Section { return &s }
	return reactorParts{
		types: p(sec(SecType, vec(
			[]byte{0x60, 0, 0},       // () -> ()
			[]byte{0x60, 0, 1, tI32}, // () -> i32
		))),
		imports: p(sec(SecImport, vec(cat(str("env"), str("g"), []byte{KindGlobal, tI32, 0})))),
		funcs:   p(sec(SecFunction, vec([]byte{0}, []byte{1}))),
		memory:  p(sec(SecMemory, vec(memory(1, -1)))),
		globals: p(sec(SecGlobal, vec(
			global(tI32, true, i32(42)),
			global(tI64, false, i64(-5)),
			global(tI64, true, i64(-7)),
			global(tF64, true, f64(0x3ff8000000000000)), // 1.5
		))),
		exports: p(sec(SecExport, vec(
			export(ExportInitialize, KindFunc, 0),
			export(ExportRun, KindFunc, 1),
			export("memory", KindMemory, 0),
		))),
		code: p(sec(SecCode, vec(
			[]byte{2, 0, opEnd},
			[]byte{4, 0, opI32Const, 3, opEnd},
		))),
		data: p(sec(SecData, vec(seg(16, "hello"), seg(1000, "world")))),
	}
}

// module encodes the parts in section order, leaving out nil ones.
func (p reactorParts) module() []byte {
	var secs []Section
	for _, s := range []*Section{p.types, p.imports, p.funcs, p.memory, p.globals, p.exports, p.start, p.dataCount, p.code, p.data} {
		if s != nil {
			secs = append(secs, *s)
		}
	}
	return Encode(secs)
}

// envModule exports the i32 global "g" = 7 that the reactor imports.
func envModule() []byte {
	return Encode([]Section{
		sec(SecGlobal, vec(global(tI32, false, i32(7)))),
		sec(SecExport, vec(export("g", KindGlobal, 0))),
	})
}
