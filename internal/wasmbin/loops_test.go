package wasmbin

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
)

// meterDoc is the sequence the doc comment of InstrumentLoops documents,
// for the fuel global 1 and sched_yield at function index 0: what
// InstrumentLoops must insert after every loop of loopModule.
var meterDoc = []byte{
	0x23, 0x01, // global.get $fuel
	0x41, 0x01, // i32.const 1
	0x6b,       // i32.sub
	0x24, 0x01, // global.set $fuel
	0x23, 0x01, // global.get $fuel
	0x45,       // i32.eqz
	0x04, 0x40, // if
	0x10, 0x00, // call $sched_yield
	0x1a,                   // drop
	0x41, 0x80, 0x80, 0x04, // i32.const 65536 (Fuel)
	0x24, 0x01, // global.set $fuel
	0x0b, // end
}

// chargeDoc is the sequence the doc comment of InstrumentLoops documents
// before a bulk instruction of memory, for the fuel global 1, the size
// global 2 and sched_yield at function index 0; chargeTableDoc the same
// before one of a table.
var chargeDoc = []byte{
	0x24, 0x02, // global.set $n
	0x23, 0x01, // global.get $fuel
	0x23, 0x02, // global.get $n
	0x41, 0x06, // i32.const 6
	0x76,       // i32.shr_u
	0x6b,       // i32.sub
	0x41, 0x01, // i32.const 1
	0x6b,       // i32.sub
	0x24, 0x01, // global.set $fuel
	0x23, 0x01, // global.get $fuel
	0x41, 0x00, // i32.const 0
	0x4c,       // i32.le_s
	0x04, 0x40, // if
	0x10, 0x00, // call $sched_yield
	0x1a,                   // drop
	0x41, 0x80, 0x80, 0x04, // i32.const 65536 (Fuel)
	0x24, 0x01, // global.set $fuel
	0x0b,       // end
	0x23, 0x02, // global.get $n
}

var chargeTableDoc = func() []byte {
	b := bytes.Clone(chargeDoc)
	b[7] = 3 // i32.const 3
	return b
}()

// isBulk says whether the instruction in is one InstrumentLoops charges
// for, and of what.
func isBulk(in []byte) (memory, table bool) {
	if len(in) < 2 || in[0] != 0xfc {
		return false, false
	}
	return bulkOf(in[1:])
}

// lfunc is a function of loopModule: (i32) -> result, with extra locals
// (one value type each) and a body as a list of instructions. An
// instruction starting with 0x03 is a loop: the test expects the meter
// after it.
type lfunc struct {
	name   string
	result byte
	locals []byte
	body   [][]byte
}

// Types of loopModule: 0 is sched_yield's () -> i32, 1..69 fillers, and
// typeIV, (i32) -> i32, at 70 so that a block type naming it takes two
// bytes of signed LEB128 (0xc6 0x00).
const typeIV = 70

var (
	typeIVBlock = []byte{0xc6, 0x00} // s33 LEB128 of 70
	typeIL      = []byte{0x60, 1, tI32, 1, tI64}
)

// loopModule assembles a module that imports sched_yield (function 0),
// has a funcref table whose element 0 is the first of funcs, two pages of
// memory, one i32 global (so the fuel global is global 1) and exports
// every function by name. With meter set, every loop instruction is
// followed by it and the module has the fuel global: what InstrumentLoops
// must make of the module without.
func loopModule(funcs []lfunc, meter []byte) []byte {
	types := [][]byte{{0x60, 0, 1, tI32}}
	for len(types) < typeIV {
		types = append(types, []byte{0x60, 0, 0})
	}
	types = append(types, []byte{0x60, 1, tI32, 1, tI32}, typeIL)
	var fsec, exps, bodies [][]byte
	bulk := false
	for i, f := range funcs {
		t := byte(typeIV)
		if f.result == tI64 {
			t = typeIV + 1
		}
		fsec = append(fsec, []byte{t})
		exps = append(exps, export(f.name, KindFunc, uint32(1+i)))
		var locals [][]byte
		for _, l := range f.locals {
			locals = append(locals, []byte{1, l})
		}
		code := vec(locals...)
		if meter != nil && !fixtureLoopFirst(f.body) {
			code = append(code, meter...) // the entry's check
		}
		for _, in := range f.body {
			if meter != nil {
				switch mem, tab := isBulk(in); {
				case mem:
					code, bulk = append(code, chargeDoc...), true
				case tab:
					code, bulk = append(code, chargeTableDoc...), true
				}
			}
			code = append(code, in...)
			if meter != nil && in[0] == 0x03 {
				code = append(code, meter...)
			}
		}
		code = append(code, opEnd)
		bodies = append(bodies, cat(AppendUleb(nil, uint32(len(code))), code))
	}
	globals := [][]byte{global(tI32, true, i32(7))}
	if meter != nil {
		globals = append(globals, global(tI32, true, i32(Fuel)))
		exps = append(exps, export(ExportFuel, KindGlobal, 1))
	}
	if bulk {
		globals = append(globals, global(tI32, true, i32(0)))
	}
	return Encode([]Section{
		sec(SecType, vec(types...)),
		sec(SecImport, vec(cat(str(yieldModule), str(yieldName), []byte{KindFunc, 0}))),
		sec(SecFunction, vec(fsec...)),
		sec(SecTable, vec([]byte{0x70, 0, 1})),
		sec(SecMemory, vec(memory(2, -1))),
		sec(SecGlobal, vec(globals...)),
		sec(SecExport, vec(exps...)),
		sec(SecElement, vec(cat([]byte{0}, i32(0), vec([]byte{1})))),
		sec(SecCode, vec(bodies...)),
	})
}

// fixtureLoopFirst is scanLoopFirst's answer for a body of loopModule: a
// loop comes before any other control instruction but block.
func fixtureLoopFirst(body [][]byte) bool {
	for _, in := range body {
		switch op := in[0]; {
		case op == 0x03:
			return true
		case op == 0x00 || (op >= 0x04 && op <= 0x13):
			return false
		}
	}
	return false
}

// Instructions.
func lget(i byte) []byte  { return []byte{0x20, i} }
func lset(i byte) []byte  { return []byte{0x21, i} }
func ltee(i byte) []byte  { return []byte{0x22, i} }
func ci32(v int32) []byte { return AppendSleb([]byte{opI32Const}, v) }
func ci64(v int64) []byte { return i64(v)[:len(i64(v))-1] }
func op(b ...byte) []byte { return b }
func loopOf(bt ...byte) []byte {
	if len(bt) == 0 {
		bt = []byte{0x40}
	}
	return append([]byte{0x03}, bt...)
}

var (
	end      = op(opEnd)
	i32Add   = op(0x6a)
	i32Sub   = op(0x6b)
	brIf0    = op(0x0d, 0)
	decrTee0 = [][]byte{lget(0), ci32(1), i32Sub, ltee(0), brIf0} // n--; br_if 0 (n != 0)
)

func flat(parts ...[][]byte) [][]byte {
	var out [][]byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// brTable is br_table with 130 labels (a two-byte count), label k%3 at
// index k, default 2.
func brTable() []byte {
	b := append([]byte{0x0e}, AppendUleb(nil, 130)...)
	for k := 0; k < 130; k++ {
		b = append(b, byte(k%3))
	}
	return append(b, 2)
}

// f32 and f64 bit patterns whose bytes include 0x03 (loop) and 0x0b (end):
// a decoder that does not skip them whole sees loops that are not there.
func cf32(bits uint32) []byte {
	return []byte{opF32Const, byte(bits), byte(bits >> 8), byte(bits >> 16), byte(bits >> 24)}
}

func cf64(bits uint64) []byte { return f64(bits)[:9] }

// simdBytes are 16-byte immediates full of loop and end opcodes.
var (
	simdA = []byte{3, 0x0b, 3, 3, 0x0b, 0x0b, 3, 0x0b, 0x40, 3, 0x0b, 1, 2, 3, 4, 5}
	simdB = []byte{9, 8, 7, 6, 5, 4, 3, 0x0b, 3, 0x0b, 0x40, 0x0b, 3, 3, 2, 1}
	// lanes of i8x16.shuffle, each < 32
	simdLanes = []byte{0, 17, 2, 19, 3, 21, 6, 23, 3, 11, 10, 27, 3, 11, 14, 31}
)

// loopFuncs are the functions of the main test module, each (i32 n) with
// a result that depends on n, and the yields a run with n makes.
var loopFuncs = []struct {
	lfunc
	yields func(n uint64) uint64 // how many times the meter runs
}{
	{lfunc{name: "double", result: tI32, body: [][]byte{lget(0), ci32(2), op(0x6c)}}, nil},
	// do { acc++ } while (--n != 0): the meter runs n times.
	{lfunc{name: "count", result: tI32, locals: []byte{tI32}, body: flat(
		[][]byte{loopOf(), lget(1), ci32(1), i32Add, lset(1)}, decrTee0, [][]byte{end, lget(1)})},
		func(n uint64) uint64 { return n }},
	// n times an inner loop of n: the meter runs n + n*n times.
	{lfunc{name: "nested", result: tI32, locals: []byte{tI32, tI32, tI32}, body: [][]byte{
		lget(0), lset(1),
		loopOf(),
		lget(0), lset(2),
		loopOf(),
		lget(3), ci32(1), i32Add, lset(3),
		lget(2), ci32(1), i32Sub, ltee(2), brIf0,
		end,
		lget(1), ci32(1), i32Sub, ltee(1), brIf0,
		end,
		lget(3),
	}}, func(n uint64) uint64 { return n + n*n }},
	// A loop with a parameter and a result (a type index block type):
	// acc = 0; loop (param i32) (result i32) acc += 3 while --n.
	{lfunc{name: "multi", result: tI32, body: flat(
		[][]byte{ci32(0), loopOf(typeIVBlock...), ci32(3), i32Add}, decrTee0, [][]byte{end})},
		func(n uint64) uint64 { return n }},
	// A loop around a br_table of 130 labels.
	{lfunc{name: "brtable", result: tI32, locals: []byte{tI32}, body: flat([][]byte{
		loopOf(),
		op(0x02, 0x40), op(0x02, 0x40), op(0x02, 0x40),
		lget(0), ci32(3), op(0x70), // i32.rem_u
		brTable(),
		end, lget(1), ci32(1), i32Add, lset(1), op(0x0c, 1), // case 0: acc += 1
		end, lget(1), ci32(10), i32Add, lset(1), // case 1: acc += 10
		end, // case 2
	}, decrTee0, [][]byte{end, lget(1)})}, func(n uint64) uint64 { return n }},
	// acc = double(acc) + 1 through call_indirect, n times.
	{lfunc{name: "indirect", result: tI32, locals: []byte{tI32}, body: flat([][]byte{
		loopOf(),
		lget(1), ci32(0), op(0x11, typeIV, 0), ci32(1), i32Add, lset(1),
	}, decrTee0, [][]byte{end, lget(1)})}, func(n uint64) uint64 { return 2 * n }}, // and double's entry
	// Loads and stores with offsets of two and three bytes of LEB128.
	{lfunc{name: "memory", result: tI32, body: [][]byte{
		ci32(0), lget(0), op(0x36, 2, 0xe8, 0x07), // i32.store offset=1000
		ci32(0), ci64(0x0123456789abcdef), op(0x37, 3, 0xf0, 0xa2, 0x04), // i64.store offset=70000
		loopOf(), end,
		ci32(0), op(0x28, 2, 0xe8, 0x07), // i32.load offset=1000
		ci32(0), op(0x35, 2, 0xf0, 0xa2, 0x04), // i64.load32_u offset=70000
		op(0xa7), i32Add, // i32.wrap_i64
	}}, func(uint64) uint64 { return 1 }},
	// i64.const with ten-byte LEB128 values.
	{lfunc{name: "i64big", result: tI64, body: [][]byte{
		lget(0), op(0xad), // i64.extend_i32_u
		ci64(0x7fffffffffffffff), op(0x85), // i64.xor
		ci64(-1 << 62), op(0x7c), // i64.add
		ci64(-0x7ffffffffffffff3), op(0x7e), // i64.mul
		loopOf(), end,
	}}, func(uint64) uint64 { return 1 }},
	// f32/f64 consts and the saturating truncations of the 0xFC prefix.
	{lfunc{name: "floats", result: tI64, body: [][]byte{
		cf32(0x4040_0b03), op(0xfc, 0), // i32.trunc_sat_f32_s: 3
		cf32(0x4f80_0003), op(0xfc, 1), // i32.trunc_sat_f32_u: saturates
		i32Add, lget(0), i32Add, op(0xac), // i64.extend_i32_s
		cf64(0x4008_0b03_0000_0003), op(0xfc, 6), // i64.trunc_sat_f64_s: 3
		op(0x7c),
		loopOf(), end,
	}}, func(uint64) uint64 { return 1 }},
	// memory.fill and memory.copy.
	{lfunc{name: "bulk", result: tI32, body: [][]byte{
		ci32(100), lget(0), ci32(16), op(0xfc, 11, 0), // memory.fill
		ci32(200), ci32(100), ci32(16), op(0xfc, 10, 0, 0), // memory.copy
		loopOf(), end,
		ci32(0), op(0x28, 2, 0xcc, 0x01), // i32.load offset=204
	}}, func(uint64) uint64 { return 1 }},
	// table.fill and table.copy of no elements (the table's one element
	// is the function "indirect" calls), and a memory.fill whose
	// sub-opcode is a two-byte LEB128 (valid: it need not be the
	// shortest): each is charged.
	{lfunc{name: "tablebulk", result: tI32, body: [][]byte{
		ci32(0), op(0xd0, 0x70), ci32(0), op(0xfc, 17, 0), // table.fill 0: ref.null func, n = 0
		ci32(0), ci32(0), ci32(0), op(0xfc, 14, 0, 0), // table.copy 0 0, n = 0
		ci32(300), ci32(9), ci32(4), op(0xfc, 0x8b, 0x00, 0), // memory.fill
		loopOf(), end,
		ci32(0), op(0x28, 2, 0xac, 0x02), // i32.load offset=300
	}}, func(uint64) uint64 { return 1 }},
	// SIMD: v128.const, i8x16.shuffle, v128.load, i32x4.splat, i32x4.add
	// (a two-byte sub-opcode) and i32x4.extract_lane.
	{lfunc{name: "simd", result: tI32, body: [][]byte{
		cat([]byte{0xfd, 12}, simdA), cat([]byte{0xfd, 12}, simdB),
		cat([]byte{0xfd, 13}, simdLanes),
		lget(0), op(0xfd, 17), op(0xfd, 0xae, 0x01), // i32x4.splat, i32x4.add
		ci32(0), op(0xfd, 0, 4, 0xac, 0x02), op(0xfd, 0xae, 0x01), // v128.load offset=300
		loopOf(), end,
		op(0xfd, 27, 2), // i32x4.extract_lane 2
	}}, func(uint64) uint64 { return 1 }},
}

func lfuncs() []lfunc {
	out := make([]lfunc, len(loopFuncs))
	for i, f := range loopFuncs {
		out[i] = f.lfunc
	}
	return out
}

func TestMeterSequence(t *testing.T) {
	if got := meter(1, 0); !bytes.Equal(got, meterDoc) {
		t.Fatalf("meter(1, 0) = % x, want % x", got, meterDoc)
	}
	// Indices past 127 take two bytes of LEB128.
	want := cat([]byte{0x23, 0x80, 0x01, 0x41, 0x01, 0x6b, 0x24, 0x80, 0x01, 0x23, 0x80, 0x01, 0x45, 0x04, 0x40,
		0x10, 0xc8, 0x01, 0x1a, 0x41, 0x80, 0x80, 0x04, 0x24, 0x80, 0x01, 0x0b})
	if got := meter(128, 200); !bytes.Equal(got, want) {
		t.Fatalf("meter(128, 200) = % x, want % x", got, want)
	}
}

func TestChargeSequence(t *testing.T) {
	if got := charge(1, 2, 0, memoryShift); !bytes.Equal(got, chargeDoc) {
		t.Fatalf("charge(1, 2, 0, memoryShift) = % x, want % x", got, chargeDoc)
	}
	if got := charge(1, 2, 0, tableShift); !bytes.Equal(got, chargeTableDoc) {
		t.Fatalf("charge(1, 2, 0, tableShift) = % x, want % x", got, chargeTableDoc)
	}
	for _, tc := range []struct {
		code       []byte
		mem, table bool
	}{
		{[]byte{8, 0, 0}, true, false},             // memory.init
		{[]byte{10, 0, 0}, true, false},            // memory.copy
		{[]byte{11, 0}, true, false},               // memory.fill
		{[]byte{0x8b, 0x80, 0x00, 0}, true, false}, // memory.fill, three bytes of LEB128
		{[]byte{12, 0, 0}, false, true},            // table.init
		{[]byte{14, 0, 0}, false, true},            // table.copy
		{[]byte{17, 0}, false, true},               // table.fill
		{[]byte{9, 0}, false, false},               // data.drop
		{[]byte{15, 0}, false, false},              // table.grow
		{[]byte{16, 0}, false, false},              // table.size
		{[]byte{0}, false, false},                  // i32.trunc_sat_f32_s
		{[]byte{0x8b}, false, false},               // truncated
		{nil, false, false},
	} {
		if mem, table := bulkOf(tc.code); mem != tc.mem || table != tc.table {
			t.Errorf("bulkOf(% x) = %v, %v; want %v, %v", tc.code, mem, table, tc.mem, tc.table)
		}
	}
}

// TestInstrumentLoopsBytes: the output is the module with the fuel global
// and the documented sequence after every loop, byte for byte.
func TestInstrumentLoopsBytes(t *testing.T) {
	in := loopModule(lfuncs(), nil)
	out, ok, err := InstrumentLoops(in)
	if err != nil || !ok {
		t.Fatalf("InstrumentLoops = %v, %v", ok, err)
	}
	if want := loopModule(lfuncs(), meterDoc); !bytes.Equal(out, want) {
		t.Fatalf("output differs from the module with the meter by hand\n got % x\nwant % x", out, want)
	}
	secs, err := Sections(out)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Globals(secs)
	// lfuncs' "bulk" has memory.fill and memory.copy: the size global too.
	if err != nil || len(g) != 3 || g[1] != (Global{Index: 1, Type: tI32, Mutable: true}) || g[2] != (Global{Index: 2, Type: tI32, Mutable: true}) {
		t.Errorf("Globals = %+v, %v; want the fuel global at index 1 and the size global at 2", g, err)
	}
}

// TestInstrumentLoopsIndices: the fuel global comes after the imported
// and the defined globals, the call goes to sched_yield's index among
// the imported functions, the global section is added when the module
// has none (at its place in the section order), and a module without
// code gets the global alone.
func TestInstrumentLoopsIndices(t *testing.T) {
	imports := vec(
		cat(str("env"), str("f"), []byte{KindFunc, 1}),
		cat(str("env"), str("g"), []byte{KindGlobal, tI32, 0}),
		cat(str("env"), str("mem"), []byte{KindMemory}, memory(1, -1)),
		cat(str("env"), str("tab"), []byte{KindTable, 0x70}, memory(1, -1)),
		cat(str("env"), str("h"), []byte{KindGlobal, tI64, 1}),
		cat(str(yieldModule), str(yieldName), []byte{KindFunc, 0}),
		cat(str(yieldModule), str(yieldName), []byte{KindFunc, 0}), // only the first counts
	)
	types := sec(SecType, vec([]byte{0x60, 0, 1, tI32}, []byte{0x60, 0, 0}))
	body := cat([]byte{0}, loopOf(), op(0x0c, 0), end, end) // loop br 0 end
	bodyWant := func(m []byte) []byte {
		return cat([]byte{0}, loopOf(), m, op(0x0c, 0), end, end)
	}
	code := func(b []byte) Section { return sec(SecCode, vec(cat(AppendUleb(nil, uint32(len(b))), b))) }
	exp := sec(SecExport, vec(export("run", KindFunc, 3)))
	// The fuel global exported, after the module's own exports.
	expFuel := func(idx uint32) Section {
		return sec(SecExport, vec(export("run", KindFunc, 3), export(ExportFuel, KindGlobal, idx)))
	}
	fuelInit := global(tI32, true, i32(Fuel))
	tests := []struct {
		name    string
		in, out []Section
	}{
		{
			"globals",
			[]Section{types, sec(SecImport, imports), sec(SecFunction, vec([]byte{1})),
				sec(SecGlobal, vec(global(tI32, false, i32(1)), global(tF64, true, f64(0)))), exp, code(body)},
			[]Section{types, sec(SecImport, imports), sec(SecFunction, vec([]byte{1})),
				sec(SecGlobal, vec(global(tI32, false, i32(1)), global(tF64, true, f64(0)), fuelInit)), expFuel(4),
				code(bodyWant(meter(4, 1)))},
		},
		{
			"no global section",
			[]Section{types, sec(SecImport, imports), sec(SecFunction, vec([]byte{1})), exp, code(body)},
			[]Section{types, sec(SecImport, imports), sec(SecFunction, vec([]byte{1})),
				sec(SecGlobal, vec(fuelInit)), expFuel(2), code(bodyWant(meter(2, 1)))},
		},
		{
			"no code",
			[]Section{types, sec(SecImport, imports), sec(SecCustom, str("name"))},
			// A custom section may stand anywhere: the global and export
			// sections go last.
			[]Section{types, sec(SecImport, imports), sec(SecCustom, str("name")), sec(SecGlobal, vec(fuelInit)),
				sec(SecExport, vec(export(ExportFuel, KindGlobal, 2)))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ok, err := InstrumentLoops(Encode(tt.in))
			if err != nil || !ok {
				t.Fatalf("InstrumentLoops = %v, %v", ok, err)
			}
			if want := Encode(tt.out); !bytes.Equal(out, want) {
				t.Fatalf("got  % x\nwant % x", out, want)
			}
		})
	}
}

// TestInstrumentLoopsDecodes: instructions of every prefix the decoder
// knows, with immediates that contain loop and end bytes, come through
// unchanged, and only real loops get the meter.
func TestInstrumentLoopsDecodes(t *testing.T) {
	tests := []struct {
		name string
		body [][]byte
	}{
		{"atomics", [][]byte{
			op(0xfe, 3, 0),                                  // atomic.fence
			ci32(0), ci32(1), op(0xfe, 0x1e, 2, 0x83, 0x01), // i32.atomic.rmw.add offset=131
			op(0x1a),
			ci32(0), ci32(3), op(0xfe, 0, 2, 3), // memory.atomic.notify offset=3
			op(0x1a), loopOf(), end,
		}},
		{"select-typed", [][]byte{ci32(3), ci32(11), ci32(1), op(0x1c, 1, tI32), op(0x1a), loopOf(), end}},
		{"ref", [][]byte{op(opRefNull, 0x70), op(0xd1), op(0x1a), op(opRefFunc, 3), op(0x1a), loopOf(), end}},
		{"table", [][]byte{ci32(0), op(0x25, 0), op(0x1a), op(0xfc, 16, 0), op(0x1a), loopOf(), end}},
		{"lane-load", [][]byte{ci32(0), cat([]byte{0xfd, 12}, simdA), op(0xfd, 84, 0, 3, 11), op(0x1a), loopOf(), end}},
		{"block types", [][]byte{op(0x02, 0x7b), cat([]byte{0xfd, 12}, simdB), end, op(0x1a), loopOf(tI64), ci64(3), end, op(0x1a)}},
		{"deep loops", [][]byte{loopOf(), loopOf(), loopOf(), op(0x0c, 2), end, end, end}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := []lfunc{{name: "f", result: tI32, body: append(tt.body, ci32(0))}}
			out, ok, err := InstrumentLoops(loopModule(f, nil))
			if err != nil || !ok {
				t.Fatalf("InstrumentLoops = %v, %v", ok, err)
			}
			if want := loopModule(f, meterDoc); !bytes.Equal(out, want) {
				t.Fatalf("got  % x\nwant % x", out, want)
			}
		})
	}
}

// newYieldRuntime is a compiler runtime with a wasi_snapshot_preview1
// whose sched_yield counts its calls.
func newYieldRuntime(t *testing.T) (wazero.Runtime, *atomic.Int64) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	t.Cleanup(func() { rt.Close(ctx) })
	calls := new(atomic.Int64)
	_, err := rt.NewHostModuleBuilder(yieldModule).NewFunctionBuilder().
		WithFunc(func(context.Context) int32 { calls.Add(1); return 0 }).
		Export(yieldName).Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rt, calls
}

// TestInstrumentLoopsRun runs every function of the module with and
// without the meter: same results, and sched_yield called once every Fuel
// loop iterations.
func TestInstrumentLoopsRun(t *testing.T) {
	ctx := context.Background()
	rt, calls := newYieldRuntime(t)
	plainBin := loopModule(lfuncs(), nil)
	meteredBin, ok, err := InstrumentLoops(plainBin)
	if err != nil || !ok {
		t.Fatalf("InstrumentLoops = %v, %v", ok, err)
	}
	plain, err := rt.CompileModule(ctx, plainBin)
	if err != nil {
		t.Fatal(err)
	}
	metered, err := rt.CompileModule(ctx, meteredBin)
	if err != nil {
		t.Fatal(err)
	}
	instance := func(c wazero.CompiledModule) api.Module {
		t.Helper()
		m, err := rt.InstantiateModule(ctx, c, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close(ctx) })
		return m
	}
	call := func(m api.Module, name string, n uint64) uint64 {
		t.Helper()
		res, err := m.ExportedFunction(name).Call(ctx, n)
		if err != nil {
			t.Fatalf("%s(%d): %v", name, n, err)
		}
		return res[0]
	}
	for _, f := range loopFuncs[1:] {
		for _, n := range []uint64{1, 2, 7, 255, 300} {
			want := call(instance(plain), f.name, n)
			if calls.Load() != 0 {
				t.Fatalf("%s(%d): the plain module called sched_yield", f.name, n)
			}
			if got := call(instance(metered), f.name, n); got != want {
				t.Errorf("%s(%d) = %#x metered, %#x plain", f.name, n, got, want)
			}
			if c := calls.Swap(0); uint64(c) != f.yields(n)/Fuel {
				t.Errorf("%s(%d): %d sched_yield calls in %d loop iterations", f.name, n, c, f.yields(n))
			}
		}
	}

	// Yields: one every Fuel loop iterations, counted across the calls
	// of an instance.
	yields := []struct {
		fn    string
		n     uint64
		want  uint64
		calls int // how often fn(n) is called on one instance
	}{
		{"count", Fuel - 1, 0, 1},
		{"count", Fuel, 1, 1},
		{"count", Fuel + 1, 1, 1},
		{"count", 3*Fuel + 5, 3, 1},
		{"count", Fuel / 2, 1, 2},
		{"count", Fuel/2 - 1, 0, 2},
		{"multi", 3*Fuel + 5, 3, 1},
		{"brtable", 2*Fuel + 1, 2, 1},
		{"indirect", Fuel / 2, 1, 1}, // the loop's check and double's entry: two per iteration
		{"indirect", Fuel/2 - 1, 0, 1},
		{"nested", 512, (512 + 512*512) / Fuel, 1},
		{"nested", 256, 1, 1}, // 256 + 65536 iterations
		{"nested", 255, 0, 1}, // 255 + 65025 iterations
	}
	for _, y := range yields {
		m, p := instance(metered), instance(plain)
		for i := 0; i < y.calls; i++ {
			if got, want := call(m, y.fn, y.n), call(p, y.fn, y.n); got != want {
				t.Errorf("%s(%d) = %#x metered, %#x plain", y.fn, y.n, got, want)
			}
		}
		if c := calls.Swap(0); uint64(c) != y.want {
			t.Errorf("%d × %s(%d): %d sched_yield calls, want %d", y.calls, y.fn, y.n, c, y.want)
		}
	}
}

// TestInstrumentLoopsNotApplicable: modules the metering does not apply
// to give ok = false and no error.
func TestInstrumentLoopsNotApplicable(t *testing.T) {
	loopBody := cat([]byte{0}, loopOf(), end, end)
	withImport := func(mod, name string, typ []byte, body []byte) []byte {
		return Encode([]Section{
			sec(SecType, vec(typ, []byte{0x60, 0, 0})),
			sec(SecImport, vec(cat(str(mod), str(name), []byte{KindFunc, 0}))),
			sec(SecFunction, vec([]byte{1})),
			sec(SecMemory, vec(memory(1, -1))),
			sec(SecCode, vec(cat(AppendUleb(nil, uint32(len(body))), body))),
		})
	}
	yieldType := []byte{0x60, 0, 1, tI32}
	body := func(ins ...[]byte) []byte { return cat(append(append([][]byte{{0}}, ins...), end)...) }
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty module", header},
		{"no import section", Encode([]Section{
			sec(SecType, vec([]byte{0x60, 0, 0})), sec(SecFunction, vec([]byte{0})),
			sec(SecCode, vec(cat([]byte{byte(len(loopBody))}, loopBody))),
		})},
		{"other import only", withImport("env", yieldName, yieldType, loopBody)},
		{"other name", withImport(yieldModule, "fd_write", yieldType, loopBody)},
		{"sched_yield () -> ()", withImport(yieldModule, yieldName, []byte{0x60, 0, 0}, loopBody)},
		{"sched_yield (i32) -> i32", withImport(yieldModule, yieldName, []byte{0x60, 1, tI32, 1, tI32}, loopBody)},
		{"sched_yield () -> i64", withImport(yieldModule, yieldName, []byte{0x60, 0, 1, tI64}, loopBody)},
		{"sched_yield () -> (i32, i32)", withImport(yieldModule, yieldName, []byte{0x60, 0, 2, tI32, tI32}, loopBody)},
		{"a GC type before", withImport(yieldModule, yieldName, []byte{0x5f, 0}, loopBody)},
		// Exception handling: a tag import, before or after sched_yield.
		{"tag import after", Encode([]Section{
			sec(SecType, vec(yieldType, []byte{0x60, 0, 0})),
			sec(SecImport, vec(cat(str(yieldModule), str(yieldName), []byte{KindFunc, 0}),
				cat(str("env"), str("e"), []byte{4, 0, 1}))),
		})},
		{"tag import before", Encode([]Section{
			sec(SecType, vec(yieldType, []byte{0x60, 0, 0})),
			sec(SecImport, vec(cat(str("env"), str("e"), []byte{4, 0, 1}),
				cat(str(yieldModule), str(yieldName), []byte{KindFunc, 0}))),
		})},
		{"try", withImport(yieldModule, yieldName, yieldType, body(loopOf(), op(0x06, 0x40), end, end))},
		{"throw", withImport(yieldModule, yieldName, yieldType, body(op(0x08, 0)))},
		{"try_table", withImport(yieldModule, yieldName, yieldType, body(op(0x1f, 0x40, 0), end))},
		{"GC prefix", withImport(yieldModule, yieldName, yieldType, body(loopOf(), op(0xfb, 0, 0), end))},
		{"0xFC 18", withImport(yieldModule, yieldName, yieldType, body(op(0xfc, 18)))},
		{"0xFC 0x80 0x01", withImport(yieldModule, yieldName, yieldType, body(op(0xfc, 0x80, 0x01)))},
		{"0xFD 276", withImport(yieldModule, yieldName, yieldType, body(op(0xfd, 0x94, 0x02)))},
		{"0xFE 4", withImport(yieldModule, yieldName, yieldType, body(op(0xfe, 4)))},
		{"0xFE 0x4f", withImport(yieldModule, yieldName, yieldType, body(op(0xfe, 0x4f, 2, 0)))},
		{"0xff", withImport(yieldModule, yieldName, yieldType, body(op(0xff)))},
		{"0xc5", withImport(yieldModule, yieldName, yieldType, body(op(0xc5)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ok, err := InstrumentLoops(tt.b)
			if err != nil || ok || out != nil {
				t.Fatalf("InstrumentLoops = %d bytes, %v, %v; want nil, false, nil", len(out), ok, err)
			}
		})
	}
	// The applicable twin of the cases above is instrumented.
	if _, ok, err := InstrumentLoops(withImport(yieldModule, yieldName, yieldType, loopBody)); err != nil || !ok {
		t.Fatalf("InstrumentLoops of the valid twin = %v, %v", ok, err)
	}
}

// TestInstrumentLoopsMalformed: malformed modules are errors wrapping
// ErrMalformed.
func TestInstrumentLoopsMalformed(t *testing.T) {
	yieldType := []byte{0x60, 0, 1, tI32}
	mod := func(code []byte, extra ...Section) []byte {
		secs := []Section{
			sec(SecType, vec(yieldType, []byte{0x60, 0, 0})),
			sec(SecImport, vec(cat(str(yieldModule), str(yieldName), []byte{KindFunc, 0}))),
			sec(SecFunction, vec([]byte{1})),
		}
		secs = append(secs, extra...)
		return Encode(append(secs, sec(SecCode, code)))
	}
	fn := func(body ...byte) []byte { return cat(AppendUleb(nil, uint32(len(body))), body) }
	valid := mod(vec(fn(0, 0x03, 0x40, 0x0b, 0x0b)))
	tests := []struct {
		name string
		b    []byte
	}{
		{"bad header", []byte("\x00asm\x02\x00\x00\x00")},
		{"truncated module", valid[:len(valid)-2]},
		{"truncated code section", mod([]byte{1, 10, 0, 0x03})},
		{"body size past the end", mod(vec(cat([]byte{0x85, 0x80, 0x80, 0x80, 0x00}, []byte{0, 0x0b})))},
		{"count past the end", mod([]byte{5, 3, 0, 0x0b})},
		{"bytes after the last body", mod(cat(vec(fn(0, 0x0b)), []byte{0x0b}))},
		{"truncated locals", mod(vec(fn(2, 1)))},
		{"truncated block type", mod(vec(fn(0, 0x03)))},
		{"truncated i32.const", mod(vec(fn(0, 0x41, 0x80)))},
		{"over-long i32.const", mod(vec(fn(0, 0x41, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x0b)))},
		{"truncated i64.const", mod(vec(fn(0, 0x42, 0xff, 0xff)))},
		{"truncated f64.const", mod(vec(fn(0, 0x44, 1, 2, 3)))},
		{"truncated v128.const", mod(vec(fn(0, 0xfd, 12, 1, 2, 3)))},
		{"truncated memarg", mod(vec(fn(0, 0x28, 2)))},
		{"truncated br_table", mod(vec(fn(0, 0x0e, 3, 0, 0)))},
		{"br_table count past the end", mod(vec(fn(0, 0x0e, 0xff, 0xff, 0xff, 0xff, 0x0f)))},
		{"import past the type section", Encode([]Section{
			sec(SecType, vec(yieldType)),
			sec(SecImport, vec(cat(str(yieldModule), str(yieldName), []byte{KindFunc, 5}))),
		})},
		{"import without a type section", Encode([]Section{
			sec(SecImport, vec(cat(str(yieldModule), str(yieldName), []byte{KindFunc, 0}))),
		})},
		{"truncated import", Encode([]Section{sec(SecImport, []byte{1, 3, 'a'})})},
		{"bad global section", mod(vec(fn(0, 0x0b)), sec(SecGlobal, []byte{1, tI32, 2, 0x41, 0, 0x0b}))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ok, err := InstrumentLoops(tt.b)
			if !errors.Is(err, ErrMalformed) || ok || out != nil {
				t.Fatalf("InstrumentLoops = %d bytes, %v, %v; want an error wrapping ErrMalformed", len(out), ok, err)
			}
		})
	}
	if _, ok, err := InstrumentLoops(valid); err != nil || !ok {
		t.Fatalf("InstrumentLoops of the valid twin = %v, %v", ok, err)
	}
}

// TestInstrumentLoopsToolModules instruments the committed tool modules:
// every one applies (Go programs import sched_yield), the output is
// deterministic and compiles.
func TestInstrumentLoopsToolModules(t *testing.T) {
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfigCompiler()
	if dir, err := os.UserCacheDir(); err == nil {
		if cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(dir, "wasmbox-test", "wasmbin-loops")); err == nil {
			defer cache.Close(ctx)
			cfg = cfg.WithCompilationCache(cache)
		}
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	defer rt.Close(ctx)
	for _, name := range []string{"coreutils", "jq", "awk"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "..", "wasm", name+".wasm"))
			if errors.Is(err, os.ErrNotExist) {
				t.Skipf("no ../../wasm/%s.wasm", name)
			}
			if err != nil {
				t.Fatal(err)
			}
			out, ok, err := InstrumentLoops(b)
			if err != nil || !ok {
				t.Fatalf("InstrumentLoops = %v, %v", ok, err)
			}
			again, _, _ := InstrumentLoops(b)
			if !bytes.Equal(out, again) {
				t.Fatal("two runs give different bytes")
			}
			inSecs, _ := Sections(b)
			outSecs, err := Sections(out)
			if err != nil {
				t.Fatal(err)
			}
			gi, _ := Globals(inSecs)
			go_, err := Globals(outSecs)
			if err != nil || len(go_) < len(gi)+1 || len(go_) > len(gi)+2 {
				t.Fatalf("%d globals after, %d before (%v)", len(go_), len(gi), err)
			}
			fuel := go_[len(gi)].Index
			// Go code has loops, and every one is metered.
			loops := bytes.Count(out, meter(fuel, yieldIndex(t, inSecs)))
			if len(go_) == len(gi)+2 {
				// Go's runtime clears and copies with memory.fill and
				// memory.copy: each is charged.
				if n := bytes.Count(out, charge(fuel, fuel+1, yieldIndex(t, inSecs), memoryShift)); n == 0 {
					t.Fatal("a size global, but no bulk instruction charged")
				} else {
					t.Logf("%d bulk instructions charged", n)
				}
			}
			if loops == 0 {
				t.Fatal("no loop metered")
			}
			t.Logf("%d loops metered, %d -> %d bytes", loops, len(b), len(out))
			if _, err := rt.CompileModule(ctx, out); err != nil {
				t.Fatalf("wazero does not compile the output: %v", err)
			}
		})
	}
}

func yieldIndex(t *testing.T, secs []Section) uint32 {
	t.Helper()
	idx, found, err := yieldImport(secs)
	if err != nil || !found {
		t.Fatalf("yieldImport = %v, %v", found, err)
	}
	return idx
}

// FuzzInstrumentLoops: no panic, every error wraps ErrMalformed, and an
// instrumented module parses and has one more global (two with the size
// global of bulk instructions).
func FuzzInstrumentLoops(f *testing.F) {
	for _, s := range seeds() {
		f.Add(s)
	}
	f.Add(loopModule(lfuncs(), nil))
	for _, fn := range loopFuncs {
		f.Add(loopModule([]lfunc{fn.lfunc}, nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, ok, err := InstrumentLoops(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			if ok || out != nil {
				t.Fatal("output with an error")
			}
			return
		}
		if !ok {
			if out != nil {
				t.Fatal("output without ok")
			}
			return
		}
		inSecs, err := Sections(b)
		if err != nil {
			t.Fatalf("ok for a module Sections refuses: %v", err)
		}
		outSecs, err := Sections(out)
		if err != nil {
			t.Fatalf("output does not parse: %v", err)
		}
		gi, err := Globals(inSecs)
		if err != nil {
			t.Fatalf("ok for a module Globals refuses: %v", err)
		}
		g, err := Globals(outSecs)
		if err != nil {
			t.Fatalf("output's globals do not parse: %v", err)
		}
		if len(g) < len(gi)+1 || len(g) > len(gi)+2 {
			t.Fatalf("%d globals after, %d before", len(g), len(gi))
		}
		for _, added := range g[len(gi):] {
			if added.Type != tI32 || !added.Mutable {
				t.Fatalf("an added global (fuel or size) is %+v", added)
			}
		}
	})
}

// TestInstrumentLoopsEntryChecks: which functions get the check at their
// entry: every one, leaves too (a caller may call a leaf thousands of
// times in straight-line code), unless it enters a loop first.
func TestInstrumentLoopsEntryChecks(t *testing.T) {
	call := func(f byte) []byte { return op(0x10, f) }
	funcs := []struct {
		lfunc
		entry bool
	}{
		{lfunc{name: "leaf", result: tI32, body: [][]byte{lget(0)}}, true},                                     // 1
		{lfunc{name: "callsLeaf", result: tI32, body: [][]byte{lget(0), call(1), call(1)}}, true},              // 2
		{lfunc{name: "callsCaller", result: tI32, body: [][]byte{lget(0), call(2)}}, true},                     // 3
		{lfunc{name: "self", result: tI32, body: [][]byte{lget(0), call(4)}}, true},                            // 4
		{lfunc{name: "import", result: tI32, body: [][]byte{call(0), op(0x1a), lget(0)}}, true},                // 5
		{lfunc{name: "indirect", result: tI32, body: [][]byte{lget(0), ci32(0), op(0x11, typeIV, 0)}}, true},   // 6
		{lfunc{name: "leafAndCaller", result: tI32, body: [][]byte{lget(0), call(1), call(3)}}, true},          // 7
		{lfunc{name: "loopFirst", result: tI32, body: flat([][]byte{loopOf(), end, lget(0), call(3)})}, false}, // 8
		{lfunc{name: "leafWithLoop", result: tI32, body: flat([][]byte{lget(0), loopOf(), end})}, false},       // 9
		{lfunc{name: "callsLeafWithLoop", result: tI32, body: [][]byte{lget(0), call(9), call(1)}}, true},      // 10
		{lfunc{name: "tailCallsCaller", result: tI32, body: [][]byte{lget(0), op(0x12, 3)}}, true},             // 11
		{lfunc{name: "tailCallsLeaf", result: tI32, body: [][]byte{lget(0), op(0x12, 1)}}, true},               // 12
	}
	var lf []lfunc
	for _, f := range funcs {
		lf = append(lf, f.lfunc)
	}
	out, ok, err := InstrumentLoops(loopModule(lf, nil))
	if err != nil || !ok {
		t.Fatalf("InstrumentLoops = %v, %v", ok, err)
	}
	secs, err := Sections(out)
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{b: secs[Find(secs, SecCode)].Body}
	for i, n := 0, r.count(); uint32(i) < n; i++ {
		code, err := testFuncCode(r.bytes(r.u32()))
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.HasPrefix(code, meterDoc); got != funcs[i].entry {
			t.Errorf("%s: entry check %v, want %v", funcs[i].name, got, funcs[i].entry)
		}
	}
}

// testFuncCode returns the code of a function body, after its locals.
func testFuncCode(body []byte) ([]byte, error) {
	r := &reader{b: body}
	for n, i := r.count(), uint32(0); i < n && r.err == nil; i++ {
		r.u32()   // count
		r.byte1() // type
	}
	return r.b, r.err
}

// TestInstrumentLoopsStraightLine: code without loops gets a check after
// every StraightLine instructions, besides the entry's; a loop's check
// starts the count again.
func TestInstrumentLoopsStraightLine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		body   [][]byte
		checks int
	}{
		// With the local.get and the end that close each body: N
		// instructions run before a check, the entry's or another.
		{"short", repeat(StraightLine-2, lget(0), op(0x1a)), 1},
		{"one more", repeat(StraightLine-1, lget(0), op(0x1a)), 2},
		{"three", repeat(3*StraightLine-2, lget(0), op(0x1a)), 3},
		// The loop comes first (straight-line code before it): its check
		// is the entry's, and starts the count again.
		{"a loop between", flat(repeat(StraightLine/2, lget(0), op(0x1a)), [][]byte{loopOf(), end},
			repeat(StraightLine-3, lget(0), op(0x1a))), 1},
		{"a loop, then more", flat(repeat(StraightLine/2, lget(0), op(0x1a)), [][]byte{loopOf(), end},
			repeat(StraightLine-2, lget(0), op(0x1a))), 2},
		// Before the first loop, too.
		{"a long prefix", flat(repeat(StraightLine+1, lget(0), op(0x1a)), [][]byte{loopOf(), end}), 2},
		// Code after a br, to its block's end, never runs: not counted
		// (CPython's eval loop, whose handlers each end in a br, had
		// checks all over its handlers, 8% slower).
		{"dead code after a br", flat([][]byte{op(0x02, 0x40)}, repeat(StraightLine/2, lget(0), op(0x1a)),
			[][]byte{op(0x0c, 0)}, repeat(3*StraightLine, lget(0), op(0x1a)), [][]byte{end},
			repeat(StraightLine/2-10, lget(0), op(0x1a))), 1},
		{"live code after a br_if", flat([][]byte{op(0x02, 0x40)}, repeat(StraightLine/2, lget(0), op(0x1a)),
			[][]byte{ci32(0), op(0x0d, 0)}, repeat(StraightLine, lget(0), op(0x1a)), [][]byte{end}), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := []lfunc{{name: "f", result: tI32, body: append(tc.body, lget(0))}}
			out, ok, err := InstrumentLoops(loopModule(f, nil))
			if err != nil || !ok {
				t.Fatalf("InstrumentLoops = %v, %v", ok, err)
			}
			if n := bytes.Count(out, meterDoc); n != tc.checks {
				t.Errorf("%d checks, want %d", n, tc.checks)
			}
		})
	}
}

// repeat is n copies of the instruction pair a, b (a value pushed and
// dropped: 2n instructions).
func repeat(n int, a, b []byte) [][]byte {
	out := make([][]byte, 0, n)
	for range n / 2 {
		out = append(out, a, b)
	}
	if n%2 == 1 {
		out = append(out, op(0x01)) // nop
	}
	return out
}

// TestInstrumentLoopsRefusesAddedGlobals: the fuel and size globals take
// the first indices past the module's own. A module whose code or exports
// name them is invalid as given; the rewrite would make it valid, and the
// guest could keep its own fuel from ever reaching 0. It is malformed.
func TestInstrumentLoopsRefusesAddedGlobals(t *testing.T) {
	for _, tc := range []struct {
		name string
		body [][]byte
	}{
		{"global.set of the fuel", [][]byte{ci32(1000), op(0x24, 1)}},
		{"global.get of the fuel", [][]byte{op(0x23, 1), op(0x1a)}},
		{"global.set of the size", [][]byte{ci32(0), op(0x24, 2)}},
		{"a longer LEB128", [][]byte{ci32(1000), op(0x24, 0x81, 0x00)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := []lfunc{{name: "f", result: tI32, body: append(tc.body, lget(0))}}
			out, ok, err := InstrumentLoops(loopModule(f, nil))
			if !errors.Is(err, ErrMalformed) || ok || out != nil {
				t.Fatalf("InstrumentLoops = %v, %v; want ErrMalformed", ok, err)
			}
		})
	}
	// The module's own global (0) is fine.
	f := []lfunc{{name: "f", result: tI32, body: [][]byte{ci32(5), op(0x24, 0), op(0x23, 0)}}}
	if _, ok, err := InstrumentLoops(loopModule(f, nil)); err != nil || !ok {
		t.Fatalf("InstrumentLoops of a module setting its own global = %v, %v", ok, err)
	}
	// An export of the fuel's index.
	types := sec(SecType, vec([]byte{0x60, 0, 1, tI32}, []byte{0x60, 0, 0}))
	imports := sec(SecImport, vec(cat(str(yieldModule), str(yieldName), []byte{KindFunc, 0})))
	body := cat([]byte{0}, loopOf(), end, end)
	bin := Encode([]Section{types, imports, sec(SecFunction, vec([]byte{1})),
		sec(SecExport, vec(export("fuel", KindGlobal, 0))),
		sec(SecCode, vec(cat(AppendUleb(nil, uint32(len(body))), body)))})
	if out, ok, err := InstrumentLoops(bin); !errors.Is(err, ErrMalformed) || ok || out != nil {
		t.Fatalf("InstrumentLoops of a module exporting global 0 (it has none) = %v, %v; want ErrMalformed", ok, err)
	}
	// A function exported under the fuel global's name: the host would
	// find the guest's export, not the fuel.
	bin = Encode([]Section{types, imports, sec(SecFunction, vec([]byte{1})),
		sec(SecExport, vec(export(ExportFuel, KindFunc, 1))),
		sec(SecCode, vec(cat(AppendUleb(nil, uint32(len(body))), body)))})
	if out, ok, err := InstrumentLoops(bin); !errors.Is(err, ErrRefused) || ok || out != nil {
		t.Fatalf("InstrumentLoops of a module exporting %q = %v, %v; want ErrRefused", ExportFuel, ok, err)
	}
}

// TestInstrumentLoopsSkippedBlocks: the count of instructions since the
// last check follows the paths of the code, not only its order. Straight-
// line code cut by blocks that a br skips, each block placed where the
// count in code order put the check (after its br 0): every check sat in
// code that never ran, and 40,000 instructions ran on the one check of
// the function's entry (a review of the metering found it). Now a block's
// end counts from its branches too, so the checks land on the path that
// runs: 2,000 calls make about 80,000 checks, one yield.
func TestInstrumentLoopsSkippedBlocks(t *testing.T) {
	var body [][]byte
	body = append(body, repeat(996, lget(0), op(0x1a))...)
	const segments = 40
	for i := range segments {
		body = append(body, op(0x02, 0x40), op(0x0c, 0), op(0x01), op(0x01), op(0x01), op(0x01), op(0x01), end)
		if i < segments-1 {
			body = append(body, repeat(992, lget(0), op(0x1a))...)
		}
	}
	body = append(body, lget(0))
	f := []lfunc{{name: "skips", result: tI32, body: body}}
	out, ok, err := InstrumentLoops(loopModule(f, nil))
	if err != nil || !ok {
		t.Fatalf("InstrumentLoops = %v, %v", ok, err)
	}
	afterBr := bytes.Count(out, cat(op(0x0c, 0, 0x01, 0x01), meterDoc))
	ctx := context.Background()
	rt, calls := newYieldRuntime(t)
	m, err := rt.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	for range 2000 {
		if _, err := m.ExportedFunction("skips").Call(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	if c := calls.Load(); c < 1 {
		t.Errorf("2,000 calls of 40,000 instructions each: %d yields, want at least 1 (%d of the %d checks in skipped blocks)",
			c, afterBr, bytes.Count(out, meterDoc))
	}
}
