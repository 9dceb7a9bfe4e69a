package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/third_party/wazero"
)

// callTableModule is a module with a funcref table (min 4, max 16) that
// holds a, b from 0 and nothing else, a passive segment holding c, and
// exported functions that call through the table and change it:
//
//	a(x) = x+1 and c(x) = x*10 are (i32) -> i32, b() = 100 is () -> i32
//	call(idx, x) = call_indirect (i32) -> i32 at idx with x
//	set(idx) stores c at idx, setnull(idx) a null (table.set)
//	grow(n) = table.grow n entries of a (the old size, or -1)
//	init(dst) copies the passive segment to dst (table.init), drop() drops it
//	load(addr) = i32.load at addr (one page of memory)
func callTableModule() []byte {
	uleb := runtimetest.ULEB
	vec := func(items ...[]byte) []byte {
		b := uleb(nil, uint64(len(items)))
		for _, it := range items {
			b = append(b, it...)
		}
		return b
	}
	section := func(id byte, body []byte) []byte {
		return append(uleb([]byte{id}, uint64(len(body))), body...)
	}
	name := func(s string) []byte { return append(uleb(nil, uint64(len(s))), s...) }
	i32 := runtimetest.I32
	const (
		tI32I32  = 0 // (i32) -> i32
		tVoidI32 = 1 // () -> i32
		tCall    = 2 // (i32, i32) -> i32
		tVoid    = 3 // () -> ()
	)
	types := vec(
		[]byte{0x60, 1, i32, 1, i32},
		[]byte{0x60, 0, 1, i32},
		[]byte{0x60, 2, i32, i32, 1, i32},
		[]byte{0x60, 0, 0},
	)
	get0, get1 := []byte{0x20, 0}, []byte{0x20, 1}
	cat := runtimetest.Cat
	funcs := []struct {
		typ    byte
		export string
		body   []byte
	}{
		{tI32I32, "a", cat(get0, runtimetest.I32Const(1), []byte{0x6a})},                                                                // 0
		{tVoidI32, "b", runtimetest.I32Const(100)},                                                                                      // 1
		{tI32I32, "c", cat(get0, runtimetest.I32Const(10), []byte{0x6c})},                                                               // 2
		{tCall, "call", cat(get1, get0, []byte{0x11, tI32I32, 0})},                                                                      // 3
		{tI32I32, "set", cat(get0, []byte{0xd2, 2, 0x26, 0}, runtimetest.I32Const(0))},                                                  // 4
		{tI32I32, "setnull", cat(get0, []byte{0xd0, 0x70, 0x26, 0}, runtimetest.I32Const(0))},                                           // 5
		{tI32I32, "grow", cat([]byte{0xd2, 0}, get0, []byte{0xfc, 15, 0})},                                                              // 6
		{tI32I32, "init", cat(get0, runtimetest.I32Const(0), runtimetest.I32Const(1), []byte{0xfc, 12, 1, 0}, runtimetest.I32Const(0))}, // 7
		{tVoid, "drop", []byte{0xfc, 13, 1}},                                                                                            // 8
		{tI32I32, "load", cat(get0, []byte{0x28, 2, 0})},                                                                                // 9
	}
	var fsec, exports, code [][]byte
	for i, f := range funcs {
		fsec = append(fsec, []byte{f.typ})
		exports = append(exports, append(append(name(f.export), 0x00), uleb(nil, uint64(i))...))
		body := append([]byte{0}, f.body...) // no locals
		body = append(body, runtimetest.OpEnd)
		code = append(code, append(uleb(nil, uint64(len(body))), body...))
	}
	elems := vec(
		cat([]byte{0x00}, runtimetest.I32Const(0), []byte{runtimetest.OpEnd}, vec([]byte{0}, []byte{1})), // active at 0: a, b
		cat([]byte{0x01, 0x00}, vec([]byte{2})),                                                          // passive: c
	)
	return cat(
		[]byte{0, 'a', 's', 'm', 1, 0, 0, 0},
		section(1, types),
		section(3, vec(fsec...)),
		section(4, vec([]byte{0x70, 0x01, 4, 16})),
		section(5, vec([]byte{0x00, 1})),
		section(7, vec(exports...)),
		section(9, elems),
		section(10, vec(code...)),
	)
}

// call_indirect keeps its three checks (table bounds, null entry, type)
// and sees every change of the table, and loads keep their bounds check,
// with the checks' exits out of line (third_party/wazero patch 15): each
// trap is the right one, and the stack trace names the function whose
// check failed.
func TestCallIndirectTraps(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	mod, err := rt.InstantiateWithConfig(ctx, callTableModule(), wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	const (
		oob      = "invalid table access"
		mismatch = "indirect call type mismatch"
		memOOB   = "out of bounds memory access"
	)
	call := func(fn string, args ...uint64) (uint64, error) {
		res, err := mod.ExportedFunction(fn).Call(ctx, args...)
		if err != nil || len(res) == 0 {
			return 0, err
		}
		return res[0], nil
	}
	u := func(v int32) uint64 { return uint64(uint32(v)) }
	steps := []struct {
		what string
		fn   string
		args []uint64
		want uint64
		trap string // the trap's message, when not empty
	}{
		{"a at 0", "call", []uint64{0, 5}, 6, ""},
		{"b at 1 has another type", "call", []uint64{1, 5}, 0, mismatch},
		{"2 is null", "call", []uint64{2, 5}, 0, oob},
		{"4 is past the table", "call", []uint64{4, 5}, 0, oob},
		{"-1 is past the table", "call", []uint64{u(-1), 5}, 0, oob},
		{"table.set c at 2", "set", []uint64{2}, 0, ""},
		{"c at 2", "call", []uint64{2, 5}, 50, ""},
		{"table.set null at 0", "setnull", []uint64{0}, 0, ""},
		{"0 is null", "call", []uint64{0, 5}, 0, oob},
		{"table.set c at 1", "set", []uint64{1}, 0, ""},
		{"c at 1", "call", []uint64{1, 7}, 70, ""},
		{"table.grow 3 of a", "grow", []uint64{3}, 4, ""},
		{"a at 6, grown", "call", []uint64{6, 5}, 6, ""},
		{"7 is past the grown table", "call", []uint64{7, 5}, 0, oob},
		{"table.grow 12 fails", "grow", []uint64{12}, u(-1), ""},
		{"7 is still past the table", "call", []uint64{7, 5}, 0, oob},
		{"table.grow 9 to the maximum", "grow", []uint64{9}, 7, ""},
		{"a at 15, grown", "call", []uint64{15, 8}, 9, ""},
		{"16 is past the table", "call", []uint64{16, 5}, 0, oob},
		{"table.setnull at 3", "setnull", []uint64{3}, 0, ""},
		{"table.init c at 3", "init", []uint64{3}, 0, ""},
		{"c at 3", "call", []uint64{3, 2}, 20, ""},
		{"table.setnull at 3 again", "setnull", []uint64{3}, 0, ""},
		{"elem.drop", "drop", nil, 0, ""},
		{"table.init of a dropped segment", "init", []uint64{3}, 0, oob},
		{"3 is still null", "call", []uint64{3, 2}, 0, oob},
		{"last word of memory", "load", []uint64{65532}, 0, ""},
		{"load past memory", "load", []uint64{65533}, 0, memOOB},
	}
	// The function indices, in the stack traces of the traps.
	index := map[string]string{"call": "3", "init": "7", "load": "9"}
	for _, s := range steps {
		got, err := call(s.fn, s.args...)
		switch {
		case s.trap != "" && (err == nil || !strings.Contains(err.Error(), s.trap)):
			t.Errorf("%s: result %d, err %v, want the trap %q", s.what, got, err, s.trap)
		case s.trap != "" && !strings.Contains(err.Error(), "wasm stack trace:\n\t.$"+index[s.fn]+"("):
			t.Errorf("%s: the stack trace does not start in %s: %v", s.what, s.fn, err)
		case s.trap == "" && err != nil:
			t.Errorf("%s: %v", s.what, err)
		case s.trap == "" && got != s.want:
			t.Errorf("%s = %d, want %d", s.what, got, s.want)
		}
	}
}

// Integer division keeps its traps with their exits out of line (patch
// 15): by zero, and the signed overflow of MinInt / -1, where the
// remainder is 0; i32 and i64.
func TestDivisionTraps(t *testing.T) {
	const (
		byZero   = "integer divide by zero"
		overflow = "integer overflow"
	)
	ops := []struct {
		name string
		op   byte
		typ  byte
	}{
		{"i32.div_s", 0x6d, runtimetest.I32}, {"i32.div_u", 0x6e, runtimetest.I32},
		{"i32.rem_s", 0x6f, runtimetest.I32}, {"i32.rem_u", 0x70, runtimetest.I32},
		{"i64.div_s", 0x7f, runtimetest.I64}, {"i64.div_u", 0x80, runtimetest.I64},
		{"i64.rem_s", 0x81, runtimetest.I64}, {"i64.rem_u", 0x82, runtimetest.I64},
	}
	var m runtimetest.Module
	for _, o := range ops {
		m.Funcs = append(m.Funcs, runtimetest.Func{
			Type:   runtimetest.FuncType{Params: []byte{o.typ, o.typ}, Results: []byte{o.typ}},
			Export: o.name,
			Body:   []byte{runtimetest.OpLocalGet, 0, runtimetest.OpLocalGet, 1, o.op},
		})
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	mod, err := rt.InstantiateWithConfig(ctx, m.Encode(), wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	minI32, minI64 := uint64(uint32(1)<<31), uint64(1)<<63
	neg1I32, neg1I64 := uint64(^uint32(0)), ^uint64(0)
	for _, c := range []struct {
		fn   string
		x, y uint64
		want uint64
		trap string
	}{
		{"i32.div_s", 7, 2, 3, ""}, {"i32.div_s", 7, 0, 0, byZero}, {"i32.div_s", minI32, neg1I32, 0, overflow},
		{"i32.div_s", minI32, 1, minI32, ""}, {"i32.div_s", 6, neg1I32, uint64(uint32(0xfffffffa)), ""},
		{"i32.div_u", 7, 2, 3, ""}, {"i32.div_u", 7, 0, 0, byZero}, {"i32.div_u", minI32, neg1I32, 0, ""},
		{"i32.rem_s", 7, 2, 1, ""}, {"i32.rem_s", 7, 0, 0, byZero}, {"i32.rem_s", minI32, neg1I32, 0, ""},
		{"i32.rem_u", 7, 2, 1, ""}, {"i32.rem_u", 7, 0, 0, byZero},
		{"i64.div_s", 7, 2, 3, ""}, {"i64.div_s", 7, 0, 0, byZero}, {"i64.div_s", minI64, neg1I64, 0, overflow},
		{"i64.div_s", minI64, 1, minI64, ""},
		{"i64.div_u", 7, 2, 3, ""}, {"i64.div_u", 7, 0, 0, byZero},
		{"i64.rem_s", 7, 2, 1, ""}, {"i64.rem_s", 7, 0, 0, byZero}, {"i64.rem_s", minI64, neg1I64, 0, ""},
		{"i64.rem_u", 7, 2, 1, ""}, {"i64.rem_u", 7, 0, 0, byZero},
	} {
		res, err := mod.ExportedFunction(c.fn).Call(ctx, c.x, c.y)
		switch {
		case c.trap != "" && (err == nil || !strings.Contains(err.Error(), c.trap)):
			t.Errorf("%s(%#x, %#x): result %v, err %v, want the trap %q", c.fn, c.x, c.y, res, err, c.trap)
		case c.trap == "" && err != nil:
			t.Errorf("%s(%#x, %#x): %v", c.fn, c.x, c.y, err)
		case c.trap == "" && res[0] != c.want:
			t.Errorf("%s(%#x, %#x) = %#x, want %#x", c.fn, c.x, c.y, res[0], c.want)
		}
	}
}
