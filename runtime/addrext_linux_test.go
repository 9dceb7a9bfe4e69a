package runtime_test

import (
	"context"
	"math"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental"
)

// fencedMemory backs a linear memory with a mapping of the test's own that
// has fenceBytes of readable memory before the memory's first byte, filled
// with fenceByte: an access the compiler computes below the memory reads
// the fence instead of faulting (or reaching another allocation of the
// process), so that the test sees the wrong byte and fails.
type fencedMemory struct {
	region []byte // fence + reserve
	size   uint64
}

const (
	fenceBytes = 2<<30 + 1<<16 // reaches memBase - 2 GiB
	fenceByte  = 0xA5
)

func newFencedMemory(t *testing.T, reserve uint64) *fencedMemory {
	t.Helper()
	// MAP_NORESERVE: only the pages the test touches become memory.
	b, err := unix.Mmap(-1, 0, int(fenceBytes+reserve), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err != nil {
		t.Skipf("cannot map %d bytes of address space: %v", fenceBytes+reserve, err)
	}
	t.Cleanup(func() { _ = unix.Munmap(b) })
	return &fencedMemory{region: b}
}

// fence fills n bytes of the fence from below bytes below the memory.
func (m *fencedMemory) fence(below, n int) {
	for i := fenceBytes - below; i < fenceBytes-below+n; i++ {
		m.region[i] = fenceByte
	}
}

func (m *fencedMemory) Reallocate(size uint64) []byte {
	if fenceBytes+size > uint64(len(m.region)) {
		return nil
	}
	m.size = size
	return m.region[fenceBytes : fenceBytes+size : len(m.region)]
}

func (m *fencedMemory) Free() {}

// attackByte instantiates m as "attack" in rt and returns the byte that
// its function f reads.
func attackByte(ctx context.Context, t *testing.T, rt wazero.Runtime, m runtimetest.Module) byte {
	t.Helper()
	mod, err := rt.InstantiateWithConfig(ctx, m.Encode(), wazero.NewModuleConfig().WithName("attack"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := mod.ExportedFunction("f").Call(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return byte(res[0])
}

// The amd64 backend folds the zero extension of a 32-bit address into an
// x86 address by using the address's register whole, where an earlier
// check of the same value has proven the access in bounds (after a call,
// which makes the computed address stale): the register's upper half must
// be zero. Two lowerings broke that (wazero patch 19):
//   - i32.load8_s and i32.load16_s sign-extended the loaded byte or half to
//     all 64 bits: an access through the value reached up to 32 KiB below
//     the linear memory. It takes a 4 GiB memory (whose last 32 KiB such a
//     value addresses) that is imported: the code reads a module's own
//     memory's length as 32 bits, 0 for 4 GiB, and every access to it
//     traps.
//   - the zero extension of a constant was folded as a sign extension: an
//     access at a constant address of 2 GiB or more reached exactly 2 GiB
//     below the memory, with any memory grown past 2 GiB (exec --memory, a
//     library MemoryLimit).
//
// Each case stores 0x5a at its address, reads it once (checked), calls a
// function, and reads it again: that read must give 0x5a, not the fence
// below the memory.
func TestAddressExtensionInRegisters(t *testing.T) {
	if testing.Short() {
		t.Skip("maps 6 GiB of address space")
	}
	i32 := runtimetest.I32Const
	cat := runtimetest.Cat
	get := func(i byte) []byte { return []byte{runtimetest.OpLocalGet, i} }
	set := func(i byte) []byte { return []byte{runtimetest.OpLocalSet, i} }
	mem := func(op byte) []byte { return []byte{op, 0, 0} } // align 0, offset 0
	// again reads the byte at local 0, calls $nop (function 0), and reads
	// the byte again.
	again := cat(get(0), mem(runtimetest.OpI32Load8U), []byte{runtimetest.OpDrop}, runtimetest.Call(0), get(0), mem(runtimetest.OpI32Load8U))
	cases := []struct {
		name     string
		imported bool   // the memory is another module's (its length is 64 bits in the code; a module's own is 32)
		pages    uint32 // the memory's initial size
		grow     uint32 // pages memory.grow adds first
		below    int    // where the broken code reads: bytes below the memory
		body     []byte
	}{
		{
			// v = i32.load8_s of 0xff: -1, the address 0xffffffff.
			name: "load8_s", imported: true, pages: 65536, below: 1,
			body: cat(i32(0), i32(-1), mem(runtimetest.OpI32Store8), i32(-1), i32(0x5a), mem(runtimetest.OpI32Store8),
				i32(0), mem(runtimetest.OpI32Load8S), set(0), again),
		},
		{
			// v = i32.load16_s of 0x8000: the address 0xffff8000.
			name: "load16_s", imported: true, pages: 65536, below: 0x8000,
			body: cat(i32(0), i32(-0x8000), mem(runtimetest.OpI32Store16), i32(-0x8000), i32(0x5a), mem(runtimetest.OpI32Store8),
				i32(0), mem(runtimetest.OpI32Load16S), set(0), again),
		},
		{
			// The constant 0x80000000 in a local, past the memory's
			// initial size and within its grown one.
			name: "const", pages: 1, grow: 32768, below: 2 << 30,
			body: cat(i32(-0x8000_0000), set(0), get(0), i32(0x5a), mem(runtimetest.OpI32Store8), again),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := c.body
			if c.grow > 0 {
				body = cat(i32(int32(c.grow)), []byte{runtimetest.OpMemoryGrow, 0, runtimetest.OpDrop}, body)
			}
			m := runtimetest.Module{
				MemoryMin: c.pages, MemoryMax: 65536,
				Funcs: []runtimetest.Func{
					{},
					{Type: runtimetest.FuncType{Results: []byte{runtimetest.I32}}, Locals: []byte{runtimetest.I32}, Body: body, Export: "f"},
				},
			}
			fm := newFencedMemory(t, 4<<30)
			fm.fence(c.below, 1)
			ctx := experimental.WithMemoryAllocator(context.Background(),
				experimental.MemoryAllocatorFunc(func(_, _ uint64) experimental.LinearMemory { return fm }))
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
			defer rt.Close(ctx)
			if c.imported {
				owner := runtimetest.Module{MemoryMin: c.pages, MemoryMax: 65536}
				if _, err := rt.InstantiateWithConfig(ctx, owner.Encode(), wazero.NewModuleConfig().WithName("m")); err != nil {
					t.Fatal(err)
				}
				m.ImportMemory = "m"
			}
			if got := attackByte(ctx, t, rt, m); got != 0x5a {
				t.Errorf("read %#x, want 0x5a: the access reached %d bytes below the memory", got, c.below)
			}
		})
	}
}

// The i32 result of a Go host function is its first integer result, which
// the amd64 trampoline back to the Wasm code returns in RAX: it loaded the
// host's uint64 whole (wazero patch 19 (c)), and wazero's reflective host
// functions store a negative int32 sign-extended (uint64(int64)), as a
// GoFunction storing uint64(someInt32) does. Such a value, used as an
// address after a check of it, reached 2 GiB below a memory grown past
// 2 GiB. What makes the checked address stale and keeps the value in RAX
// is a fuel check (patch 14), which preserves every register and which
// any module can write (a mutable i32 global, an imported () -> i32): a
// call would move the value to a callee-saved register with a 32-bit mov.
func TestHostResultUpperHalf(t *testing.T) {
	if testing.Short() {
		t.Skip("maps 6 GiB of address space")
	}
	i32 := runtimetest.I32Const
	cat := runtimetest.Cat
	mem := func(op byte) []byte { return []byte{op, 0, 0} }
	// fuel is wasmbin.InstrumentLoops' meter on global 0, with the host
	// function (0) as its yield: one fuelCheck instruction.
	fuel := runtimetest.FuelCheck(1000)
	hosts := []struct {
		name string
		add  func(wazero.HostFunctionBuilder) wazero.HostFunctionBuilder
	}{
		{"WithFunc", func(b wazero.HostFunctionBuilder) wazero.HostFunctionBuilder {
			return b.WithFunc(func() int32 { return math.MinInt32 })
		}},
		{"GoFunction", func(b wazero.HostFunctionBuilder) wazero.HostFunctionBuilder {
			return b.WithGoFunction(api.GoFunc(func(_ context.Context, stack []uint64) {
				v := int32(math.MinInt32)
				stack[0] = uint64(v) // sign-extended
			}), nil, []api.ValueType{api.ValueTypeI32})
		}},
	}
	for _, h := range hosts {
		t.Run(h.name, func(t *testing.T) {
			// v = the host's -2^31, the address 0x80000000.
			body := cat(i32(32768), []byte{runtimetest.OpMemoryGrow, 0, runtimetest.OpDrop},
				i32(-0x8000_0000), i32(0x5a), mem(runtimetest.OpI32Store8),
				runtimetest.Call(0), []byte{runtimetest.OpLocalTee, 0, runtimetest.OpLocalGet, 0},
				mem(runtimetest.OpI32Load8U), []byte{runtimetest.OpDrop}, fuel, mem(runtimetest.OpI32Load8U))
			m := runtimetest.Module{
				Imports:   []runtimetest.Import{{Module: "env", Name: "neg", Type: runtimetest.FuncType{Results: []byte{runtimetest.I32}}}},
				MemoryMin: 1, MemoryMax: 65536,
				Globals: []int32{1000},
				Funcs: []runtimetest.Func{
					{Type: runtimetest.FuncType{Results: []byte{runtimetest.I32}}, Locals: []byte{runtimetest.I32}, Body: body, Export: "f"},
				},
			}
			fm := newFencedMemory(t, 4<<30)
			fm.fence(2<<30, 1)
			ctx := experimental.WithMemoryAllocator(context.Background(),
				experimental.MemoryAllocatorFunc(func(_, _ uint64) experimental.LinearMemory { return fm }))
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
			defer rt.Close(ctx)
			if _, err := h.add(rt.NewHostModuleBuilder("env").NewFunctionBuilder()).Export("neg").Instantiate(ctx); err != nil {
				t.Fatal(err)
			}
			if got := attackByte(ctx, t, rt, m); got != 0x5a {
				t.Errorf("read %#x, want 0x5a: the access reached 2 GiB below the memory", got)
			}
		})
	}
}

// An access at a constant address within the memory's minimum has no
// bounds check (wazero patch 13); at 2 GiB or more, the address or the
// offset does not fit an x86 displacement (sign-extended), and an offset
// of 2 GiB or more takes lowerToAddressMode's own path when the address
// is shared by two accesses (a checked address, reused). Each case stores
// a byte through such an access and the test reads it back from Go: it
// must be in the memory at the address, and the fence below the memory
// (where a sign-extended displacement reaches) must be untouched. Then
// the same through a store and a load of an address in a parameter.
func TestConstantAddressHighOffsets(t *testing.T) {
	if testing.Short() {
		t.Skip("maps 6 GiB of address space")
	}
	const pages = 65535 // 4 GiB - 64 KiB: no check up to there
	cases := []struct {
		name string
		addr int32
		off  uint32
	}{
		{"addr2G", -0x8000_0000, 0},
		{"off2G", 0, 0x8000_0000},
		{"sum2G", 0x7fff_ffff, 1},
		{"addrAndOff2G", 0x10, 0x8000_0000},
		{"addr4G", -0x1_0001, 0}, // 0xfffeffff, the last byte below the minimum
		{"off4G", 0x7fff_0000, 0x7fff_ffff},
	}
	i32 := runtimetest.I32Const
	memarg := func(op byte, off uint32) []byte { return runtimetest.ULEB([]byte{op, 0}, uint64(off)) }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ea := uint64(uint32(c.addr)) + uint64(c.off)
			store := append(append(i32(c.addr), i32(0x5a)...), memarg(0x3a, c.off)...) // i32.store8
			load := append(i32(c.addr), memarg(0x2d, c.off)...)                        // i32.load8_u
			m := runtimetest.Module{
				MemoryMin: pages, MemoryMax: 65536,
				Funcs: []runtimetest.Func{
					{Body: store, Export: "store"},
					{Type: runtimetest.FuncType{Results: []byte{runtimetest.I32}}, Body: load, Export: "load"},
					{
						Type: runtimetest.FuncType{Params: []byte{runtimetest.I32}, Results: []byte{runtimetest.I32}},
						Body: append(append(append([]byte{runtimetest.OpLocalGet, 0}, i32(0x5a)...), memarg(0x3a, c.off)...),
							append([]byte{runtimetest.OpLocalGet, 0}, memarg(0x2d, c.off)...)...),
						Export: "dyn",
					},
				},
			}
			fm := newFencedMemory(t, 4<<30)
			// Where a displacement taken as signed reaches: 4 GiB below
			// the address, within the fence for these addresses.
			below := int(uint64(4<<30) - ea)
			if below <= fenceBytes {
				fm.fence(below, 1)
			}
			ctx := experimental.WithMemoryAllocator(context.Background(),
				experimental.MemoryAllocatorFunc(func(_, _ uint64) experimental.LinearMemory { return fm }))
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
			defer rt.Close(ctx)
			mod, err := rt.InstantiateWithConfig(ctx, m.Encode(), wazero.NewModuleConfig().WithName("const"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := mod.ExportedFunction("store").Call(ctx); err != nil {
				t.Fatal(err)
			}
			if got, ok := mod.Memory().ReadByte(uint32(ea)); !ok || got != 0x5a {
				t.Errorf("memory[%#x] = %#x (%v), want 0x5a", ea, got, ok)
			}
			if below <= fenceBytes {
				if got := fm.region[fenceBytes-below]; got != fenceByte {
					t.Errorf("the fence %d bytes below the memory was written: %#x", below, got)
				}
			}
			res, err := mod.ExportedFunction("load").Call(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if byte(res[0]) != 0x5a {
				t.Errorf("load = %#x, want 0x5a", res[0])
			}
			mod.Memory().WriteByte(uint32(ea), 0)
			res, err = mod.ExportedFunction("dyn").Call(ctx, uint64(uint32(c.addr)))
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := mod.Memory().ReadByte(uint32(ea)); !ok || got != 0x5a || byte(res[0]) != 0x5a {
				t.Errorf("dyn: memory[%#x] = %#x (%v), load = %#x, want 0x5a", ea, got, ok, res[0])
			}
			if below <= fenceBytes {
				if got := fm.region[fenceBytes-below]; got != fenceByte {
					t.Errorf("dyn: the fence %d bytes below the memory was written: %#x", below, got)
				}
			}
		})
	}
}
