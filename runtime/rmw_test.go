package runtime_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/third_party/wazero"
)

// A store of an operation on a load of the same address compiles to one
// instruction with a memory destination (third_party/wazero patch 21):
// each operation, of 32 and 64 bits, with a constant and a register
// operand, and the shapes that must not fold (a subtraction from the
// loaded value, a store to another offset, another store between the load
// and the store), give what the operations give.
func TestStoreOfLoadOperation(t *testing.T) {
	i32ops := map[string]byte{"add": 0x6a, "sub": 0x6b, "and": 0x71, "or": 0x72, "xor": 0x73}
	i64ops := map[string]byte{"add": 0x7c, "sub": 0x7d, "and": 0x83, "or": 0x84, "xor": 0x85}
	eval := func(op string, a, b uint64) uint64 {
		switch op {
		case "add":
			return a + b
		case "sub":
			return a - b
		case "and":
			return a & b
		case "or":
			return a | b
		}
		return a ^ b
	}
	const addr, mem0, mem1 = 64, uint64(0xf0f0_1234_8765_4321), uint64(0x0ff0_0000_ffff_0001)
	type fcase struct {
		name string
		body []byte
		want func() (at64, at72 uint64)
	}
	var cases []fcase
	// The address is a parameter: a constant one is a new value at each
	// access (patch 13), and the load and the store would not share it.
	at := []byte{runtimetest.OpLocalGet, 1}
	for _, wide := range []bool{false, true} {
		for name := range i32ops {
			op, load, store, mask, size, al := i32ops[name], byte(runtimetest.OpI32Load), byte(runtimetest.OpI32Store), uint64(0xffff_ffff), "32", byte(2)
			if wide {
				op, load, store, mask, size, al = i64ops[name], runtimetest.OpI64Load, runtimetest.OpI64Store, ^uint64(0), "64", 3
			}
			konst := []byte{0x41, 0x7b} // i32.const -5
			if wide {
				konst = []byte{runtimetest.OpI64Const, 0x7b}
			}
			param := []byte{runtimetest.OpLocalGet, 0}
			if !wide {
				param = append(param, 0xa7) // i32.wrap_i64
			}
			lo := func(v uint64) uint64 { return v &^ mask }
			m, n := name, name
			cases = append(cases,
				// *addr = *addr OP -5
				fcase{size + "/" + name + "/const", append(append(append(at, append(at, load, al, 0)...), konst...), op, store, al, 0),
					func() (uint64, uint64) {
						return lo(mem0) | eval(m, mem0&mask, uint64(0xffff_ffff_ffff_fffb)&mask)&mask, mem1
					}},
				// *addr = *addr OP p
				fcase{size + "/" + name + "/reg", append(append(append(at, append(at, load, al, 0)...), param...), op, store, al, 0),
					func() (uint64, uint64) { return lo(mem0) | eval(n, mem0&mask, 0x1111_2222_3333_4444&mask)&mask, mem1 }},
				// *addr = p OP *addr (sub: not the same as *addr -= p)
				fcase{size + "/" + name + "/swapped", append(append(append(at, param...), append(at, load, al, 0)...), op, store, al, 0),
					func() (uint64, uint64) { return lo(mem0) | eval(n, 0x1111_2222_3333_4444&mask, mem0&mask)&mask, mem1 }},
				// *(addr+8) = *addr OP -5: another address
				fcase{size + "/" + name + "/elsewhere", append(append(append(at, append(at, load, al, 0)...), konst...), op, store, al, 8),
					func() (uint64, uint64) {
						return mem0, lo(mem1) | eval(m, mem0&mask, uint64(0xffff_ffff_ffff_fffb)&mask)&mask
					}},
			)
		}
	}
	// v = *addr; *addr = 7; *addr = v + 1: the store between makes the
	// load's value stale at the last store.
	cases = append(cases, fcase{"between", append(append(append(append(at, append(at, runtimetest.OpI64Load, 3, 0)...),
		append(at, runtimetest.OpI64Const, 7, runtimetest.OpI64Store, 3, 0)...), runtimetest.OpI64Const, 1), 0x7c, runtimetest.OpI64Store, 3, 0),
		func() (uint64, uint64) { return mem0 + 1, mem1 }})

	var m runtimetest.Module
	m.MemoryMin = 1
	for _, c := range cases {
		m.Funcs = append(m.Funcs, runtimetest.Func{Type: runtimetest.FuncType{Params: []byte{0x7e, runtimetest.I32}}, Body: c.body, Export: c.name})
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	buf, _ := mod.Memory().Read(0, 128)
	for _, c := range cases {
		binary.LittleEndian.PutUint64(buf[addr:], mem0)
		binary.LittleEndian.PutUint64(buf[addr+8:], mem1)
		if _, err := mod.ExportedFunction(c.name).Call(ctx, 0x1111_2222_3333_4444, addr); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		w64, w72 := c.want()
		if g64, g72 := binary.LittleEndian.Uint64(buf[addr:]), binary.LittleEndian.Uint64(buf[addr+8:]); g64 != w64 || g72 != w72 {
			t.Errorf("%s: memory %#x %#x, want %#x %#x", c.name, g64, g72, w64, w72)
		}
	}
}
