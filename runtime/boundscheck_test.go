package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/third_party/wazero"
)

// Loads and stores at constant addresses run without a bounds check when
// they end within the memory's minimum size (third_party/wazero patch 13).
// Run by the compiler: the data they reach is right, and every access that
// ends past the current memory still traps, before and after memory.grow.
func TestConstantAddressAccesses(t *testing.T) {
	const page = 65536
	i32 := runtimetest.I32Const
	load := func(addr int32, off uint32) []byte { // i32.load align=2 offset=off
		return runtimetest.ULEB(append(i32(addr), 0x28, 2), uint64(off))
	}
	store := func(addr, v int32, off uint32) []byte { // i32.store
		return runtimetest.ULEB(append(append(i32(addr), i32(v)...), 0x36, 2), uint64(off))
	}
	grow := append(i32(1), runtimetest.OpMemoryGrow, 0, runtimetest.OpDrop)
	ret := runtimetest.FuncType{Results: []byte{runtimetest.I32}}
	cat := runtimetest.Cat
	funcs := []struct {
		name string
		body []byte
		want uint32 // the result, when trap is empty
		trap bool
	}{
		{"static", cat(store(100, 42, 0), load(96, 4)), 42, false},
		{"data", load(8, 0), 0x04030201, false},
		{"lastword", cat(store(page-4, 7, 0), load(0, page-4)), 7, false},
		{"pastmin", load(page-3, 0), 0, true},
		{"offsetpastmin", load(0, page), 0, true},
		{"negative", load(-4, 0), 0, true},
		{"storepastmin", cat(store(page-2, 1, 0), i32(0)), 0, true},
		{"grown", cat(grow, store(page, 9, 0), load(0, page)), 9, false},
		{"pastgrown", cat(grow, load(0, 2*page)), 0, true},
	}
	m := runtimetest.Module{MemoryMin: 1, MemoryMax: 4, Data: []byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}}
	for _, f := range funcs {
		m.Funcs = append(m.Funcs, runtimetest.Func{Type: ret, Export: f.name, Body: f.body})
	}
	run := freshCaller(t, m.Encode())
	for _, f := range funcs {
		// A fresh instance each: "grown" grows the memory.
		res, err := run(f.name)
		checkAccess(t, f.name, res, err, f.want, f.trap)
	}
}

// freshCaller compiles bin with the compiler and returns a function that
// calls one of its exports in a fresh instance: an access test may grow the
// memory or trap.
func freshCaller(t *testing.T, bin []byte) func(name string, args ...uint64) ([]uint64, error) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	t.Cleanup(func() { rt.Close(ctx) })
	cm, err := rt.CompileModule(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	return func(name string, args ...uint64) ([]uint64, error) {
		mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			t.Fatal(err)
		}
		defer mod.Close(ctx)
		return mod.ExportedFunction(name).Call(ctx, args...)
	}
}

// checkAccess reports a call whose result is not want, or, when trap is
// set, that did not end in an out of bounds trap.
func checkAccess(t *testing.T, call string, res []uint64, err error, want uint32, trap bool) {
	t.Helper()
	switch {
	case trap && (err == nil || !strings.Contains(err.Error(), "out of bounds memory access")):
		t.Errorf("%s: result %v, err %v, want an out of bounds trap", call, res, err)
	case !trap && err != nil:
		t.Errorf("%s: %v", call, err)
	case !trap && uint32(res[0]) != want:
		t.Errorf("%s = %#x, want %#x", call, res[0], want)
	}
}
