package wasmbin

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
)

// fuelGuest is a module that imports sched_yield (function 0), has one
// page of memory (at most 100) and an exported mutable i32 global "g", and
// exports functions (i32 n) -> i32 that each run a loop of n iterations
// and then return: "size" memory.size, "last" the i32 at the memory's last
// word, "global" g, and "calls" size(n) + g through a call (so that it has
// an entry check too).
func fuelGuest() []byte {
	loop := flat([][]byte{loopOf()}, decrTee0, [][]byte{end})
	size := op(0x3f, 0) // memory.size
	body := func(parts ...[][]byte) []byte {
		code := vec()
		for _, in := range flat(parts...) {
			code = append(code, in...)
		}
		code = append(code, opEnd)
		return cat(AppendUleb(nil, uint32(len(code))), code)
	}
	return Encode([]Section{
		sec(SecType, vec([]byte{0x60, 0, 1, tI32}, []byte{0x60, 1, tI32, 1, tI32})),
		sec(SecImport, vec(cat(str(yieldModule), str(yieldName), []byte{KindFunc, 0}))),
		sec(SecFunction, vec([]byte{1}, []byte{1}, []byte{1}, []byte{1})),
		sec(SecMemory, vec(memory(1, 100))),
		sec(SecGlobal, vec(global(tI32, true, i32(0)))),
		sec(SecExport, vec(export("size", KindFunc, 1), export("last", KindFunc, 2),
			export("global", KindFunc, 3), export("calls", KindFunc, 4),
			export("memory", KindMemory, 0), export("g", KindGlobal, 0))),
		sec(SecCode, vec(
			body(loop, [][]byte{size}),
			// i32.load ((memory.size << 16) - 4)
			body(loop, [][]byte{size, ci32(16), op(0x74), ci32(4), i32Sub, op(0x28, 2, 0)}),
			body(loop, [][]byte{op(0x23, 0)}),
			body([][]byte{lget(0), op(0x10, 1), op(0x23, 0), i32Add}),
		)),
	})
}

// fuelYield is what every kind of yield does on its call number n: grow
// the guest's memory by a page, write n+1000 at its new last word and set
// g to n*100.
func fuelYield(t *testing.T, guest api.Module, n int32) {
	mem := guest.Memory()
	if _, ok := mem.Grow(1); !ok {
		t.Error("memory.grow in the yield failed")
		return
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(n+1000))
	mem.Write(mem.Size()-4, b[:])
	guest.ExportedGlobal("g").(api.MutableGlobal).Set(api.EncodeI32(n * 100))
}

// TestFuelCheckYields runs metered loops whose yield is each kind of
// import that wazero's compiled fuel check (third_party/wazero patch 14)
// calls from its out-of-line path: a Go module function (wasmbox's WASI), a
// Go function, and a Wasm function of another module. The yield is called
// exactly once in Fuel iterations, and what it changes is seen after it:
// the grown memory (its size, a word written in the new page) and a
// global. A compiled check that dropped the call, or kept the memory's old
// base or length or the global's old value in a register, fails here.
func TestFuelCheckYields(t *testing.T) {
	ctx := context.Background()
	bin, ok, err := InstrumentLoops(fuelGuest())
	if err != nil || !ok {
		t.Fatalf("InstrumentLoops = %v, %v", ok, err)
	}
	kinds := []struct {
		name  string
		setup func(rt wazero.Runtime, calls *atomic.Int32, guest *api.Module) error
	}{
		{"go module function", func(rt wazero.Runtime, calls *atomic.Int32, guest *api.Module) error {
			_, err := rt.NewHostModuleBuilder(yieldModule).NewFunctionBuilder().
				WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, m api.Module, stack []uint64) {
					if m != *guest {
						t.Errorf("the yield's caller is %v, not the guest", m)
					}
					fuelYield(t, m, calls.Add(1))
					stack[0] = 0
				}), nil, []api.ValueType{api.ValueTypeI32}).Export(yieldName).Instantiate(ctx)
			return err
		}},
		{"go function", func(rt wazero.Runtime, calls *atomic.Int32, guest *api.Module) error {
			_, err := rt.NewHostModuleBuilder(yieldModule).NewFunctionBuilder().
				WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
					fuelYield(t, *guest, calls.Add(1))
					stack[0] = 0
				}), nil, []api.ValueType{api.ValueTypeI32}).Export(yieldName).Instantiate(ctx)
			return err
		}},
		{"wasm function", func(rt wazero.Runtime, calls *atomic.Int32, guest *api.Module) error {
			if _, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().
				WithFunc(func(context.Context) { fuelYield(t, *guest, calls.Add(1)) }).
				Export("hook").Instantiate(ctx); err != nil {
				return err
			}
			// sched_yield() -> i32 { hook(); return 0 }
			yield := Encode([]Section{
				sec(SecType, vec([]byte{0x60, 0, 0}, []byte{0x60, 0, 1, tI32})),
				sec(SecImport, vec(cat(str("env"), str("hook"), []byte{KindFunc, 0}))),
				sec(SecFunction, vec([]byte{1})),
				sec(SecExport, vec(export(yieldName, KindFunc, 1))),
				sec(SecCode, vec(cat([]byte{6, 0}, op(0x10, 0), ci32(0), end))),
			})
			_, err := rt.InstantiateWithConfig(ctx, yield, wazero.NewModuleConfig().WithName(yieldModule))
			return err
		}},
	}
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
			defer rt.Close(ctx)
			calls := new(atomic.Int32)
			var guest api.Module
			if err := kind.setup(rt, calls, &guest); err != nil {
				t.Fatal(err)
			}
			compiled, err := rt.CompileModule(ctx, bin)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				fn    string
				n     uint64
				want  uint32
				calls int32
			}{
				{"size", Fuel - 1, 1, 0},
				{"size", Fuel, 2, 1},
				{"size", 2*Fuel + 3, 3, 2},
				{"last", Fuel - 1, 0, 0},
				{"last", Fuel, 1001, 1},
				{"last", 3 * Fuel, 1003, 3},
				{"global", Fuel, 100, 1},
				{"global", 2 * Fuel, 200, 2},
				{"calls", Fuel - 2, 1, 0},
				{"calls", Fuel - 1, 2 + 100, 1}, // the entry check of calls, then size's loop
			} {
				m, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
				if err != nil {
					t.Fatal(err)
				}
				guest = m
				calls.Store(0)
				res, err := m.ExportedFunction(tc.fn).Call(ctx, tc.n)
				if err != nil {
					t.Fatalf("%s(%d): %v", tc.fn, tc.n, err)
				}
				if uint32(res[0]) != tc.want || calls.Load() != tc.calls {
					t.Errorf("%s(%d) = %d with %d yields, want %d with %d", tc.fn, tc.n, uint32(res[0]), calls.Load(), tc.want, tc.calls)
				}
				m.Close(ctx)
			}
		})
	}
}

// TestFuelCheckYieldPanics: a yield that panics ends the guest with its
// error, as an inline call did (wasmbox's sched_yield ends a guest whose
// context is done that way); the instance can be called again.
func TestFuelCheckYieldPanics(t *testing.T) {
	ctx := context.Background()
	bin, ok, err := InstrumentLoops(fuelGuest())
	if err != nil || !ok {
		t.Fatalf("InstrumentLoops = %v, %v", ok, err)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	boom := errors.New("boom from the yield")
	var calls atomic.Int32
	if _, err := rt.NewHostModuleBuilder(yieldModule).NewFunctionBuilder().
		WithFunc(func(context.Context) int32 {
			if calls.Add(1) == 1 {
				panic(boom)
			}
			return 0
		}).Export(yieldName).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := rt.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ExportedFunction("size").Call(ctx, 3*Fuel); err == nil || !strings.Contains(err.Error(), boom.Error()) {
		t.Fatalf("size(3*Fuel) = %v, want the yield's panic", err)
	}
	// The fuel global was not refilled by the failed yield: it is at 0,
	// so the next check decrements it to -1 and the next yield comes
	// 2^32 checks later. One call with few iterations must still work.
	if res, err := m.ExportedFunction("size").Call(ctx, 10); err != nil || res[0] != 1 {
		t.Fatalf("size(10) after the panic = %v, %v", res, err)
	}
}

// TestFuelCheckReloads: a meter in the middle of straight-line code (not
// after a loop or at an entry, where InstrumentLoops puts it, but valid
// all the same) behaves as a call: the memory's base and length and the
// global that the code read before it are read again after it, since the
// yield may have grown the memory and set the global.
func TestFuelCheckReloads(t *testing.T) {
	ctx := context.Background()
	// Global 0 is g, global 1 the fuel at 1: the first meter yields.
	code := cat(vec(), ci32(0), op(0x28, 2, 0), op(0x1a), // i32.load 0; drop
		op(0x23, 0), op(0x1a), // global.get g; drop
		meter(1, 0),
		op(0x3f, 0), ci32(16), op(0x74), ci32(4), i32Sub, op(0x28, 2, 0), // i32.load at the last word
		op(0x23, 0), i32Add, end)
	bin := Encode([]Section{
		sec(SecType, vec([]byte{0x60, 0, 1, tI32})),
		sec(SecImport, vec(cat(str(yieldModule), str(yieldName), []byte{KindFunc, 0}))),
		sec(SecFunction, vec([]byte{0})),
		sec(SecMemory, vec(memory(1, 100))),
		sec(SecGlobal, vec(global(tI32, true, i32(0)), global(tI32, true, i32(1)))),
		sec(SecExport, vec(export("inline", KindFunc, 1), export("g", KindGlobal, 0))),
		sec(SecCode, vec(cat(AppendUleb(nil, uint32(len(code))), code))),
	})
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	var calls atomic.Int32
	if _, err := rt.NewHostModuleBuilder(yieldModule).NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, m api.Module, stack []uint64) {
			fuelYield(t, m, calls.Add(1))
			stack[0] = 0
		}), nil, []api.ValueType{api.ValueTypeI32}).Export(yieldName).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := rt.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.ExportedFunction("inline").Call(ctx)
	if err != nil || uint32(res[0]) != 1001+100 || calls.Load() != 1 {
		t.Fatalf("inline() = %v, %v with %d yields, want 1101 with 1", res, err, calls.Load())
	}
}
