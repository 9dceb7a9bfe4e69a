package wasmbin

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
)

const tFuncref = 0x70

// refsModule names functions in every way a module can: direct calls, a
// table filled by an index segment and by an expression segment, ref.func
// in code and in a global's initializer, exports, the start function and
// the name section. It imports env.add100 (i32) -> i32 and the immutable
// i32 global env.g (so that imports of other kinds are in the count).
//
//	0 env.add100 (import)
//	1 double(x)  = x + x
//	2 viaCall(x) = double(add100(x))
//	3 viaTable(x) = table[0](x) + table[3](x)   ;; double, viaCall
//	4 start: global 1 = 7 + env.g
//	5 refFunc(x) = (table[2] = ref.func 2; table[2](x))
//	6 fromGlobal(x) = (table[1] = global 2; table[1](x))   ;; global 2 = ref.func 1
func refsModule() []byte {
	typeI32I32 := []byte{0x60, 1, tI32, 1, tI32}
	callInd := func(slot byte) []byte {
		return []byte{0x20, 0, opI32Const, slot, 0x11, 0, 0} // local.get 0; i32.const slot; call_indirect type 0 table 0
	}
	body := func(code ...[]byte) []byte {
		b := cat(append([][]byte{{0}}, code...)...)
		return cat(AppendUleb(nil, uint32(len(b)+1)), b, []byte{opEnd})
	}
	names := cat(str("name"),
		[]byte{1}, AppendUleb(nil, uint32(len(vec(cat([]byte{1}, str("double")), cat([]byte{2}, str("viaCall")))))),
		vec(cat([]byte{1}, str("double")), cat([]byte{2}, str("viaCall"))))
	code := cat(AppendUleb(nil, 6),
		body([]byte{0x20, 0, 0x20, 0, 0x6a}),
		body([]byte{0x20, 0, 0x10, 0, 0x10, 1}),
		body(callInd(0), callInd(3), []byte{0x6a}),
		body([]byte{opI32Const, 7, opGlobal, 0, 0x6a, 0x24, 1}),
		body([]byte{opI32Const, 2, opRefFunc, 2, 0x26, 0}, callInd(2)),
		body([]byte{opI32Const, 1, opGlobal, 2, 0x26, 0}, callInd(1)),
	)
	return Encode([]Section{
		sec(SecType, vec(typeI32I32, []byte{0x60, 0, 0})),
		sec(SecImport, vec(
			cat(str("env"), str("add100"), []byte{KindFunc, 0}),
			cat(str("env"), str("g"), []byte{KindGlobal, tI32, 0}))),
		sec(SecFunction, vec([]byte{0}, []byte{0}, []byte{0}, []byte{1}, []byte{0}, []byte{0})),
		sec(SecTable, vec(cat([]byte{tFuncref}, memory(4, -1)))),
		sec(SecMemory, vec(memory(1, -1))),
		sec(SecGlobal, vec(
			global(tI32, true, i32(0)),
			cat([]byte{tFuncref, 0}, []byte{opRefFunc, 1, opEnd}))),
		sec(SecExport, vec(
			export("double", KindFunc, 1), export("viaCall", KindFunc, 2), export("viaTable", KindFunc, 3),
			export("refFunc", KindFunc, 5), export("fromGlobal", KindFunc, 6), export("out", KindGlobal, 1))),
		sec(SecStart, []byte{4}),
		sec(SecElement, vec(
			cat([]byte{0}, i32(0), vec([]byte{1}, []byte{2})),        // active, indexes: table[0..1] = double, viaCall
			cat([]byte{4}, i32(3), vec([]byte{opRefFunc, 2, opEnd})), // active, expressions: table[3] = viaCall
			cat([]byte{3, 0}, vec([]byte{5})),                        // declarative
		)),
		sec(SecCode, code),
		sec(SecCustom, names),
	})
}

// refsEnv exports add100 and the global g = 5.
func refsEnv() []byte {
	return Encode([]Section{
		sec(SecType, vec([]byte{0x60, 1, tI32, 1, tI32})),
		sec(SecFunction, vec([]byte{0})),
		sec(SecGlobal, vec(global(tI32, false, i32(5)))),
		sec(SecExport, vec(export("add100", KindFunc, 0), export("g", KindGlobal, 0))),
		sec(SecCode, vec(cat([]byte{8, 0, 0x20, 0, opI32Const}, AppendSleb(nil, 100), []byte{0x6a, opEnd}))),
	})
}

// TestAddYieldImportRun: the module with the import added (and then
// metered) computes what the original does through every kind of function
// reference, keeps its function names, and calls sched_yield only from the
// meter.
func TestAddYieldImportRun(t *testing.T) {
	ctx := context.Background()
	orig := refsModule()
	added, ok, err := AddYieldImport(orig)
	if err != nil || !ok {
		t.Fatalf("AddYieldImport = %v, %v", ok, err)
	}
	again, ok, err := AddYieldImport(added)
	if err != nil || !ok || !bytes.Equal(again, added) {
		t.Fatalf("AddYieldImport of its own output = %v, %v, changed %v", ok, err, !bytes.Equal(again, added))
	}
	metered, ok, err := InstrumentLoops(added)
	if err != nil || !ok {
		t.Fatalf("InstrumentLoops after AddYieldImport = %v, %v", ok, err)
	}
	secs, _ := Sections(added)
	if idx := yieldIndex(t, secs); idx != 1 {
		t.Fatalf("sched_yield is function %d, want 1 (after the one imported function)", idx)
	}

	rt, calls := newYieldRuntime(t)
	if _, err := rt.InstantiateWithConfig(ctx, refsEnv(), wazero.NewModuleConfig().WithName("env")); err != nil {
		t.Fatal(err)
	}
	run := func(bin []byte) map[string][]uint64 {
		t.Helper()
		c, err := rt.CompileModule(ctx, bin)
		if err != nil {
			t.Fatalf("compile: %v", err)
		}
		if got := c.ExportedFunctions()["double"].Name(); got != "double" {
			t.Errorf("function double is named %q", got)
		}
		if got := c.ExportedFunctions()["viaCall"].Name(); got != "viaCall" {
			t.Errorf("function viaCall is named %q", got)
		}
		m, err := rt.InstantiateModule(ctx, c, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			t.Fatalf("instantiate: %v", err)
		}
		defer m.Close(ctx)
		res := map[string][]uint64{"out": {uint64(api.DecodeI32(m.ExportedGlobal("out").Get()))}}
		for _, fn := range []string{"double", "viaCall", "viaTable", "refFunc", "fromGlobal"} {
			for _, x := range []uint64{0, 1, 21} {
				r, err := m.ExportedFunction(fn).Call(ctx, x)
				if err != nil {
					t.Fatalf("%s(%d): %v", fn, x, err)
				}
				res[fn] = append(res[fn], r[0])
			}
		}
		return res
	}
	want := run(orig)
	if want["out"][0] != 12 || want["viaTable"][1] != 2+202 || want["refFunc"][2] != 2*121 || want["fromGlobal"][2] != 42 {
		t.Fatalf("the original module computes %v", want)
	}
	for name, bin := range map[string][]byte{"added": added, "metered": metered} {
		got := run(bin)
		for k, v := range want {
			if !equalU64(got[k], v) {
				t.Errorf("%s: %s = %v, want %v", name, k, got[k], v)
			}
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d sched_yield calls from loop-free code", n)
	}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// recursionModule exports f(n), which calls f(n-1) twice unless n is 0,
// and counts its calls in the exported global "calls". No loops.
func recursionModule(imports ...[]byte) []byte {
	f := byte(len(imports))
	secs := []Section{sec(SecType, vec([]byte{0x60, 1, tI32, 0}, []byte{0x60, 0, 1, tI32}))}
	if len(imports) > 0 {
		secs = append(secs, sec(SecImport, vec(imports...)))
	}
	return Encode(append(secs,
		sec(SecFunction, vec([]byte{0})),
		sec(SecGlobal, vec(global(tI32, true, i32(0)))),
		sec(SecExport, vec(export("f", KindFunc, uint32(f)), export("calls", KindGlobal, 0))),
		sec(SecCode, vec(cat([]byte{30, 0},
			[]byte{opGlobal, 0, opI32Const, 1, 0x6a, 0x24, 0},
			[]byte{0x20, 0, 0x45, 0x04, 0x40, 0x0f, opEnd},
			[]byte{0x20, 0, opI32Const, 1, 0x6b, 0x10, f},
			[]byte{0x20, 0, opI32Const, 1, 0x6b, 0x10, f},
			[]byte{opEnd}))),
	))
}

// TestMeterRecursion: recursion without loops calls sched_yield once every
// Fuel calls, whether the module imported sched_yield or got it from
// AddYieldImport.
func TestMeterRecursion(t *testing.T) {
	ctx := context.Background()
	rt, calls := newYieldRuntime(t)
	plain := recursionModule()
	withImport := recursionModule(cat(str(yieldModule), str(yieldName), []byte{KindFunc, 1}))
	added, ok, err := AddYieldImport(plain)
	if err != nil || !ok {
		t.Fatalf("AddYieldImport = %v, %v", ok, err)
	}
	if _, ok, _ := InstrumentLoops(plain); ok {
		t.Fatal("InstrumentLoops applies to a module without the import")
	}
	for name, bin := range map[string][]byte{"imported": withImport, "added": added} {
		metered, ok, err := InstrumentLoops(bin)
		if err != nil || !ok {
			t.Fatalf("%s: InstrumentLoops = %v, %v", name, ok, err)
		}
		m, err := rt.InstantiateWithConfig(ctx, metered, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		const n = 18 // 2^19 - 1 calls
		if _, err := m.ExportedFunction("f").Call(ctx, n); err != nil {
			t.Fatal(err)
		}
		fcalls := uint64(api.DecodeI32(m.ExportedGlobal("calls").Get()))
		if fcalls != 1<<(n+1)-1 {
			t.Fatalf("%s: %d calls of f", name, fcalls)
		}
		if got := calls.Swap(0); uint64(got) != fcalls/Fuel {
			t.Errorf("%s: %d sched_yield calls in %d calls of f, want %d", name, got, fcalls, fcalls/Fuel)
		}
		m.Close(ctx)
	}
}

// TestAddYieldImportNotApplicable: modules this does not apply to give
// ok = false, no error, no output.
func TestAddYieldImportNotApplicable(t *testing.T) {
	for name, bin := range map[string][]byte{
		"sched_yield of another type": Encode([]Section{
			sec(SecType, vec([]byte{0x60, 0, 0})),
			sec(SecImport, vec(cat(str(yieldModule), str(yieldName), []byte{KindFunc, 0}))),
		}),
		"tag import": Encode([]Section{
			sec(SecType, vec([]byte{0x60, 0, 0})),
			sec(SecImport, vec(cat(str("env"), str("t"), []byte{kindTag, 0, 0}))),
		}),
		"GC type":        Encode([]Section{sec(SecType, vec([]byte{0x5f, 0}))}),
		"unknown opcode": codeModule([]byte{0, 0x06, 0x40, opEnd, opEnd}), // try (legacy exception handling)
		"table initializer": Encode([]Section{
			sec(SecTable, vec(cat([]byte{0x40, 0, tFuncref}, memory(1, -1), []byte{opRefNull, tFuncref, opEnd}))),
		}),
	} {
		out, ok, err := AddYieldImport(bin)
		if ok || err != nil || out != nil {
			t.Errorf("%s: AddYieldImport = %d bytes, %v, %v", name, len(out), ok, err)
		}
	}
}

// FuzzAddYieldImport: no panic, every error wraps ErrMalformed, and an
// output parses, has the import, and is its own fixed point.
func FuzzAddYieldImport(f *testing.F) {
	for _, s := range seeds() {
		f.Add(s)
	}
	f.Add(refsModule())
	f.Add(recursionModule())
	f.Fuzz(func(t *testing.T, b []byte) {
		out, ok, err := AddYieldImport(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if !ok {
			if out != nil {
				t.Fatal("output without ok")
			}
			return
		}
		secs, err := Sections(out)
		if err != nil {
			t.Fatalf("output does not parse: %v", err)
		}
		if _, found, err := yieldImport(secs); err != nil || !found {
			t.Fatalf("output has no sched_yield import: %v, %v", found, err)
		}
		again, ok, err := AddYieldImport(out)
		if err != nil || !ok || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: %v, %v", ok, err)
		}
	})
}

// TestAddYieldImportRefusesAppendedType: a module that names the type
// index AddYieldImport's appended () -> i32 takes was invalid as given
// and would be valid after the rewrite; it is refused as malformed. A
// type index the module has is kept.
func TestAddYieldImportRefusesAppendedType(t *testing.T) {
	body := func(code ...byte) []byte { return cat([]byte{0}, code, []byte{opEnd}) }
	fn := func(typ byte) []byte {
		return Encode([]Section{
			sec(SecType, vec([]byte{0x60, 0, 0})),
			sec(SecFunction, vec([]byte{typ})),
			sec(SecCode, vec(cat([]byte{2}, body()))),
		})
	}
	for name, bin := range map[string][]byte{
		"call_indirect":        codeModule(body(opI32Const, 0, 0x11, 1, 0)),
		"return_call_indirect": codeModule(body(opI32Const, 0, 0x13, 1, 0)),
		"block type":           codeModule(body(0x02, 0x01, opEnd)),
		"loop type (longer)":   codeModule(body(0x03, 0x81, 0x00, opEnd)),
		"function":             fn(1),
		"import": Encode([]Section{
			sec(SecType, vec([]byte{0x60, 0, 0})),
			sec(SecImport, vec(cat(str("env"), str("f"), []byte{KindFunc, 1}))),
		}),
	} {
		out, ok, err := AddYieldImport(bin)
		if !errors.Is(err, ErrMalformed) || ok || out != nil {
			t.Errorf("%s: AddYieldImport = %d bytes, %v, %v; want ErrMalformed", name, len(out), ok, err)
		}
	}
	for name, bin := range map[string][]byte{
		"call_indirect of type 0": codeModule(body(opI32Const, 0, 0x11, 0, 0)),
		"block of type 0":         codeModule(body(0x02, 0x00, opEnd)),
		"block of a value type":   codeModule(body(0x02, tI32, opI32Const, 1, opEnd, 0x1a)),
		"function of type 0":      fn(0),
	} {
		if _, ok, err := AddYieldImport(bin); !ok || err != nil {
			t.Errorf("%s: AddYieldImport = %v, %v", name, ok, err)
		}
	}
}
