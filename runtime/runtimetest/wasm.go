// Package runtimetest holds helpers for tests of wasmbox and its embedders,
// in the spirit of net/http/httptest: a tiny WebAssembly binary encoder for
// hand-assembled guest modules (a spin loop, a memory hog, a module that
// imports a missing host function, ...) and a builder for the Go wasip1
// guest programs under testdata/guests.
//
// Nothing here stands in for a real component: the encoder writes genuine
// WebAssembly 1.0 binaries that wazero compiles and runs, and the guest
// builder runs the real Go toolchain.
package runtimetest

import "bytes"

// Value types of the WebAssembly binary format.
const (
	I32 byte = 0x7f
	I64 byte = 0x7e
)

// Opcodes used by the modules of this package.
const (
	OpUnreachable byte = 0x00
	OpLoop        byte = 0x03
	OpBr          byte = 0x0c
	OpBrIf        byte = 0x0d
	OpEnd         byte = 0x0b
	OpDrop        byte = 0x1a
	OpCall        byte = 0x10
	OpLocalGet    byte = 0x20
	OpI32Const    byte = 0x41
	OpI32Eq       byte = 0x46
	OpI32Add      byte = 0x6a
	OpMemoryGrow  byte = 0x40
	OpBlockVoid   byte = 0x40 // block type "empty" after OpLoop/OpBlock
	OpReturn      byte = 0x0f

	OpNop          byte = 0x01
	OpBlock        byte = 0x02
	OpBrTable      byte = 0x0e
	OpIf           byte = 0x04
	OpElse         byte = 0x05
	OpCallIndirect byte = 0x11
	OpLocalSet     byte = 0x21
	OpLocalTee     byte = 0x22
	OpGlobalGet    byte = 0x23
	OpGlobalSet    byte = 0x24
	OpI32Load      byte = 0x28
	OpI64Load      byte = 0x29
	OpI32Load8S    byte = 0x2c
	OpI32Load8U    byte = 0x2d
	OpI32Load16S   byte = 0x2e
	OpI32Store     byte = 0x36
	OpI64Store     byte = 0x37
	OpI32Store8    byte = 0x3a
	OpI32Store16   byte = 0x3b
	OpMemorySize   byte = 0x3f
	OpI64Const     byte = 0x42
	OpF64Const     byte = 0x44
	OpI32Eqz       byte = 0x45
	OpI32Sub       byte = 0x6b
	OpI32Mul       byte = 0x6c
	OpI32And       byte = 0x71
	OpI32Xor       byte = 0x73
	OpI32Shl       byte = 0x74
	OpF64Mul       byte = 0xa2
	OpI32TruncF64S byte = 0xaa // i32.trunc_f64_s
	OpF64FromI32S  byte = 0xb7 // f64.convert_i32_s
)

// FuncType is a function signature.
type FuncType struct {
	Params, Results []byte
}

// Import is an imported function.
type Import struct {
	Module, Name string
	Type         FuncType
}

// Func is a function defined by the module: its signature, extra locals
// (one value type per local) and its body (instructions without the final
// end opcode, which the encoder adds).
type Func struct {
	Type   FuncType
	Locals []byte
	Body   []byte
	// Export, when not empty, exports the function under this name.
	Export string
}

// Module describes a module to encode. Function indices start with the
// imports, in order, followed by Funcs.
type Module struct {
	Imports []Import
	Funcs   []Func
	// MemoryMin is the initial memory size in 64 KiB pages; a module has a
	// memory, exported as "memory", when MemoryMin > 0 or HasMemory is set.
	MemoryMin uint32
	// MemoryMax is the maximum in pages; 0 means no maximum.
	MemoryMax uint32
	HasMemory bool
	// ImportMemory, when not empty, is the module name of an imported
	// memory ("memory", with MemoryMin and MemoryMax as its limits) that
	// the module uses instead of a memory of its own.
	ImportMemory string
	// Data is written at address 0 of memory by an active data segment.
	Data []byte
	// Table, when not empty, gives the module a funcref table holding
	// these functions from index 0 (for call_indirect).
	Table []uint32
	// Globals are mutable i32 globals of the module, with these initial
	// values (global indices from 0).
	Globals []int32
	// GlobalExports, where not empty, exports global i under
	// GlobalExports[i].
	GlobalExports []string
	// Start, when not nil, is the start function (the start section): a
	// function index, imports first.
	Start *uint32
}

// Cat joins pieces of code.
func Cat(bs ...[]byte) (out []byte) {
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// ULEB appends the unsigned LEB128 encoding of v.
func ULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

// SLEB appends the signed LEB128 encoding of v.
func SLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// I32Const returns the instruction "i32.const v".
func I32Const(v int32) []byte { return SLEB([]byte{OpI32Const}, int64(v)) }

// Call returns the instruction "call idx".
func Call(idx uint32) []byte { return ULEB([]byte{OpCall}, uint64(idx)) }

// Encode returns the binary encoding of m.
func (m Module) Encode() []byte {
	var out bytes.Buffer
	out.Write([]byte{0, 'a', 's', 'm', 1, 0, 0, 0})

	// Types: one per import and per function, no deduplication needed.
	var types [][]byte
	addType := func(t FuncType) uint32 {
		b := []byte{0x60}
		b = ULEB(b, uint64(len(t.Params)))
		b = append(b, t.Params...)
		b = ULEB(b, uint64(len(t.Results)))
		b = append(b, t.Results...)
		for i, e := range types {
			if bytes.Equal(e, b) {
				return uint32(i)
			}
		}
		types = append(types, b)
		return uint32(len(types) - 1)
	}
	importTypes := make([]uint32, len(m.Imports))
	for i, im := range m.Imports {
		importTypes[i] = addType(im.Type)
	}
	funcTypes := make([]uint32, len(m.Funcs))
	for i, f := range m.Funcs {
		funcTypes[i] = addType(f.Type)
	}
	section := func(id byte, body []byte) {
		out.WriteByte(id)
		out.Write(ULEB(nil, uint64(len(body))))
		out.Write(body)
	}
	vec := func(items [][]byte) []byte {
		b := ULEB(nil, uint64(len(items)))
		for _, it := range items {
			b = append(b, it...)
		}
		return b
	}
	name := func(b []byte, s string) []byte {
		b = ULEB(b, uint64(len(s)))
		return append(b, s...)
	}
	if len(types) > 0 {
		section(1, vec(types))
	}
	limits := func() (b []byte) {
		if m.MemoryMax > 0 {
			b = append(b, 0x01)
			b = ULEB(b, uint64(m.MemoryMin))
			return ULEB(b, uint64(m.MemoryMax))
		}
		b = append(b, 0x00)
		return ULEB(b, uint64(m.MemoryMin))
	}
	if len(m.Imports) > 0 || m.ImportMemory != "" {
		var items [][]byte
		for i, im := range m.Imports {
			b := name(nil, im.Module)
			b = name(b, im.Name)
			b = append(b, 0x00)
			b = ULEB(b, uint64(importTypes[i]))
			items = append(items, b)
		}
		if m.ImportMemory != "" {
			b := name(nil, m.ImportMemory)
			b = name(b, "memory")
			b = append(b, 0x02)
			items = append(items, append(b, limits()...))
		}
		section(2, vec(items))
	}
	if len(m.Funcs) > 0 {
		var items [][]byte
		for _, t := range funcTypes {
			items = append(items, ULEB(nil, uint64(t)))
		}
		section(3, vec(items))
	}
	if len(m.Table) > 0 {
		b := []byte{0x70, 0x00}
		b = ULEB(b, uint64(len(m.Table)))
		section(4, vec([][]byte{b}))
	}
	hasMem := m.ImportMemory == "" && (m.HasMemory || m.MemoryMin > 0 || len(m.Data) > 0)
	if hasMem {
		section(5, vec([][]byte{limits()}))
	}
	if len(m.Globals) > 0 {
		var items [][]byte
		for _, g := range m.Globals {
			b := append([]byte{I32, 0x01}, I32Const(g)...)
			items = append(items, append(b, OpEnd))
		}
		section(6, vec(items))
	}
	var exports [][]byte
	if hasMem {
		b := name(nil, "memory")
		b = append(b, 0x02, 0x00)
		exports = append(exports, b)
	}
	for i, n := range m.GlobalExports {
		if n != "" {
			exports = append(exports, ULEB(append(name(nil, n), 0x03), uint64(i)))
		}
	}
	for i, f := range m.Funcs {
		if f.Export == "" {
			continue
		}
		b := name(nil, f.Export)
		b = append(b, 0x00)
		b = ULEB(b, uint64(len(m.Imports)+i))
		exports = append(exports, b)
	}
	if len(exports) > 0 {
		section(7, vec(exports))
	}
	if m.Start != nil {
		section(8, ULEB(nil, uint64(*m.Start)))
	}
	if len(m.Table) > 0 {
		b := append([]byte{0x00}, I32Const(0)...)
		b = append(b, OpEnd)
		b = ULEB(b, uint64(len(m.Table)))
		for _, f := range m.Table {
			b = ULEB(b, uint64(f))
		}
		section(9, vec([][]byte{b}))
	}
	if len(m.Funcs) > 0 {
		var items [][]byte
		for _, f := range m.Funcs {
			var body []byte
			body = ULEB(body, uint64(len(f.Locals)))
			for _, l := range f.Locals {
				body = append(body, 0x01, l)
			}
			body = append(body, f.Body...)
			body = append(body, OpEnd)
			items = append(items, ULEB(nil, uint64(len(body))), body)
		}
		// items holds (size, body) pairs: the count is the number of funcs.
		b := ULEB(nil, uint64(len(m.Funcs)))
		for _, it := range items {
			b = append(b, it...)
		}
		section(10, b)
	}
	if len(m.Data) > 0 {
		b := ULEB(nil, 1)
		b = append(b, 0x00)
		b = append(b, I32Const(0)...)
		b = append(b, OpEnd)
		b = ULEB(b, uint64(len(m.Data)))
		b = append(b, m.Data...)
		section(11, b)
	}
	return out.Bytes()
}

var (
	procExit = Import{Module: "wasi_snapshot_preview1", Name: "proc_exit", Type: FuncType{Params: []byte{I32}}}
	// SchedYield is WASI's sched_yield, the import that makes the runtime
	// meter a module's loops (see internal/wasmbin.InstrumentLoops).
	SchedYield = Import{Module: "wasi_snapshot_preview1", Name: "sched_yield", Type: FuncType{Results: []byte{I32}}}
	start      = FuncType{}
)

// Trivial returns a module whose _start returns at once (exit status 0).
func Trivial() []byte {
	return Module{HasMemory: true, MemoryMin: 1, Funcs: []Func{{Type: start, Export: "_start"}}}.Encode()
}

// Spin returns a module whose _start loops forever without any host call:
// only a context deadline or cancel (close-on-context-done) can stop it.
func Spin() []byte {
	body := []byte{OpLoop, OpBlockVoid, OpBr, 0x00, OpEnd}
	return Module{HasMemory: true, MemoryMin: 1, Funcs: []Func{{Type: start, Export: "_start", Body: body}}}.Encode()
}

// SpinMetered is Spin in a module that imports sched_yield (and never calls
// it): the runtime meters its loop with fuel instead of wazero's
// per-iteration check, as it does for every Go guest.
func SpinMetered() []byte {
	body := []byte{OpLoop, OpBlockVoid, OpBr, 0x00, OpEnd}
	return Module{
		Imports:   []Import{SchedYield},
		HasMemory: true, MemoryMin: 1,
		Funcs: []Func{{Type: start, Export: "_start", Body: body}},
	}.Encode()
}

// Recurse returns a module whose _start calls f(62), where f(n) calls
// f(n-1) twice unless n is 0: 2^63 calls without a loop or a host call,
// and never more than 63 frames deep. It ends only by a deadline or a
// cancel, which a check at loop headers alone never sees.
func Recurse() []byte { return recurse(nil) }

// RecurseMetered is Recurse in a module that imports sched_yield (and never
// calls it): the runtime meters it as it does every Go guest.
func RecurseMetered() []byte { return recurse([]Import{SchedYield}) }

func recurse(imports []Import) []byte {
	f := uint32(len(imports) + 1)
	fBody := []byte{0x20, 0x00, 0x45, 0x04, 0x40, 0x0f, OpEnd} // if n == 0 { return }
	for i := 0; i < 2; i++ {
		fBody = append(fBody, 0x20, 0x00)
		fBody = append(fBody, I32Const(1)...)
		fBody = append(fBody, 0x6b) // i32.sub
		fBody = append(fBody, Call(f)...)
	}
	return Module{
		Imports:   imports,
		HasMemory: true, MemoryMin: 1,
		Funcs: []Func{
			{Type: start, Export: "_start", Body: append(I32Const(62), Call(f)...)},
			{Type: FuncType{Params: []byte{I32}}, Body: fBody},
		},
	}.Encode()
}

// CallTree returns a module whose _start calls f0, where f(i) calls f(i+1)
// twice for i < depth and f(depth) makes no call: 2^depth calls of the
// leaf, with no loop, recursion or host call. With sched_yield imported
// (metered), f(depth-1) calls only a function that makes no calls, which
// is the shape that needs no entry check (see
// internal/wasmbin.InstrumentLoops); every other level keeps one.
func CallTree(depth int, metered bool) []byte {
	var imports []Import
	if metered {
		imports = []Import{SchedYield}
	}
	base := uint32(len(imports) + 1) // f0's index
	funcs := []Func{{Type: start, Export: "_start", Body: Call(base)}}
	for i := 0; i < depth; i++ {
		funcs = append(funcs, Func{Type: start, Body: append(Call(base+uint32(i)+1), Call(base+uint32(i)+1)...)})
	}
	funcs = append(funcs, Func{Type: start, Body: append(I32Const(1), OpDrop)})
	return Module{Imports: imports, HasMemory: true, MemoryMin: 1, Funcs: funcs}.Encode()
}

// MutualRecursion returns a module whose _start calls a(62), where a(n)
// calls b(n-1) twice and b(n) calls a(n-1) twice unless n is 0: 2^62
// calls without a loop, 62 frames deep.
func MutualRecursion(metered bool) []byte {
	var imports []Import
	if metered {
		imports = []Import{SchedYield}
	}
	a := uint32(len(imports) + 1)
	body := func(callee uint32) []byte {
		b := []byte{OpLocalGet, 0x00, 0x45, 0x04, 0x40, OpReturn, OpEnd} // if n == 0 { return }
		for i := 0; i < 2; i++ {
			b = append(b, OpLocalGet, 0x00)
			b = append(b, I32Const(1)...)
			b = append(b, 0x6b) // i32.sub
			b = append(b, Call(callee)...)
		}
		return b
	}
	return Module{
		Imports:   imports,
		HasMemory: true, MemoryMin: 1,
		Funcs: []Func{
			{Type: start, Export: "_start", Body: append(I32Const(62), Call(a)...)},
			{Type: FuncType{Params: []byte{I32}}, Body: body(a + 1)},
			{Type: FuncType{Params: []byte{I32}}, Body: body(a)},
		},
	}.Encode()
}

// IndirectRecursion is Recurse with f calling itself through a table
// (call_indirect): 2^62 calls without a loop or a direct call.
func IndirectRecursion(metered bool) []byte {
	var imports []Import
	if metered {
		imports = []Import{SchedYield}
	}
	f := uint32(len(imports) + 1)
	// The type of f, (i32) -> (): types are numbered in the order of the
	// imports and then the functions, so it follows sched_yield's and
	// _start's, or _start's alone.
	typeF := byte(1)
	if metered {
		typeF = 2
	}
	body := []byte{OpLocalGet, 0x00, 0x45, 0x04, 0x40, OpReturn, OpEnd} // if n == 0 { return }
	for i := 0; i < 2; i++ {
		body = append(body, OpLocalGet, 0x00)
		body = append(body, I32Const(1)...)
		body = append(body, 0x6b)              // i32.sub
		body = append(body, I32Const(0)...)    // table index 0: f
		body = append(body, 0x11, typeF, 0x00) // call_indirect (type f) table 0
	}
	return Module{
		Imports:   imports,
		HasMemory: true, MemoryMin: 1,
		Table: []uint32{f},
		Funcs: []Func{
			{Type: start, Export: "_start", Body: append(I32Const(62), Call(f)...)},
			{Type: FuncType{Params: []byte{I32}}, Body: body},
		},
	}.Encode()
}

// Exit returns a module whose _start calls proc_exit(code).
func Exit(code uint32) []byte {
	body := append(I32Const(int32(code)), Call(0)...)
	return Module{
		Imports:   []Import{procExit},
		HasMemory: true, MemoryMin: 1,
		Funcs: []Func{{Type: start, Export: "_start", Body: body}},
	}.Encode()
}

// Hog returns a module whose _start grows its memory one page at a time
// until memory.grow fails, then traps with unreachable. Under a memory
// limit it ends in a trap once the limit is reached.
func Hog() []byte {
	// loop
	//   i32.const 1; memory.grow; i32.const -1; i32.eq; br_if 1 (exit loop)
	//   br 0
	// end
	// unreachable
	var body []byte
	body = append(body, 0x02, OpBlockVoid) // block
	body = append(body, OpLoop, OpBlockVoid)
	body = append(body, I32Const(1)...)
	body = append(body, OpMemoryGrow, 0x00)
	body = append(body, I32Const(-1)...)
	body = append(body, OpI32Eq, OpBrIf, 0x01, OpBr, 0x00, OpEnd, OpEnd)
	body = append(body, OpUnreachable)
	return Module{HasMemory: true, MemoryMin: 1, Funcs: []Func{{Type: start, Export: "_start", Body: body}}}.Encode()
}

// BigMemory returns a module that declares an initial memory of pages
// pages and exits 0 at once: instantiating it needs pages*64 KiB.
func BigMemory(pages uint32) []byte {
	return Module{MemoryMin: pages, Funcs: []Func{{Type: start, Export: "_start"}}}.Encode()
}

// MissingImport returns a module that imports functions no runtime of
// wasmbox provides: env.foo and wasi_snapshot_preview1.no_such_call.
func MissingImport() []byte {
	return Module{
		Imports: []Import{
			{Module: "env", Name: "foo", Type: FuncType{}},
			{Module: "wasi_snapshot_preview1", Name: "no_such_call", Type: FuncType{Results: []byte{I32}}},
		},
		HasMemory: true, MemoryMin: 1,
		Funcs: []Func{{Type: start, Export: "_start"}},
	}.Encode()
}

// SpawnRaw returns a module that calls wasmbox.spawn(reqPtr, reqLen,
// statusPtr) with req placed at address 0 of its memory and exits with
// errno*256 + status: the errno in the high byte, the u32 status (read back
// from statusPtr) in the low byte. Pointers may be chosen out of bounds to
// test EFAULT.
func SpawnRaw(req []byte, reqPtr, reqLen, statusPtr uint32) []byte {
	spawn := Import{Module: "wasmbox", Name: "spawn", Type: FuncType{Params: []byte{I32, I32, I32}, Results: []byte{I32}}}
	// local0 = spawn(...)
	// proc_exit(local0*256 + (i32.load statusPtr) & 0xff) (load only when in bounds)
	var body []byte
	body = append(body, I32Const(int32(reqPtr))...)
	body = append(body, I32Const(int32(reqLen))...)
	body = append(body, I32Const(int32(statusPtr))...)
	body = append(body, Call(1)...)
	body = append(body, 0x21, 0x00) // local.set 0
	body = append(body, OpLocalGet, 0x00)
	body = append(body, I32Const(256)...)
	body = append(body, 0x6c) // i32.mul
	if uint64(statusPtr)+4 <= 65536 {
		body = append(body, I32Const(int32(statusPtr))...)
		body = append(body, 0x28, 0x02, 0x00) // i32.load align=2 offset=0
		body = append(body, I32Const(0xff)...)
		body = append(body, 0x71) // i32.and
		body = append(body, OpI32Add)
	}
	body = append(body, Call(0)...)
	return Module{
		Imports:   []Import{procExit, spawn},
		MemoryMin: 1,
		Data:      req,
		Funcs:     []Func{{Type: start, Export: "_start", Locals: []byte{I32}, Body: body}},
	}.Encode()
}

// ForkCall returns a module whose _start calls the wasmbox function name
// (a call of ForkABI) with args and exits with errno*256 + the byte at
// address 0 (what proc_self or fd_dup wrote there, say). It exports no
// __stack_pointer and no wasmbox_fork_child: fork itself is ENOSYS.
func ForkCall(name string, args ...int32) []byte {
	params := make([]byte, len(args))
	for i := range params {
		params[i] = I32
	}
	imp := Import{Module: "wasmbox", Name: name, Type: FuncType{Params: params, Results: []byte{I32}}}
	var body []byte
	for _, a := range args {
		body = append(body, I32Const(a)...)
	}
	body = append(body, Call(1)...)
	body = append(body, I32Const(256)...)
	body = append(body, 0x6c) // i32.mul
	body = append(body, I32Const(0)...)
	body = append(body, 0x2d, 0x00, 0x00) // i32.load8_u offset=0
	body = append(body, OpI32Add)
	body = append(body, Call(0)...)
	return Module{
		Imports:   []Import{procExit, imp},
		MemoryMin: 1,
		Funcs:     []Func{{Type: start, Export: "_start", Body: body}},
	}.Encode()
}

// Scribbler returns a module with an exported __stack_pointer and a memory
// of two pages whose export scribble writes every word of its memory over
// and over, forever, without a host call: a call of it is always touching
// memory when it is stopped.
func Scribbler() []byte {
	var body []byte
	body = append(body, OpLoop, OpBlockVoid)
	body = append(body, OpLocalGet, 0x00, OpLocalGet, 0x00)
	body = append(body, 0x36, 0x02, 0x00) // i32.store align=4 offset=0
	body = append(body, OpLocalGet, 0x00)
	body = append(body, I32Const(4)...)
	body = append(body, OpI32Add)
	body = append(body, I32Const(2*65536-1)...)
	body = append(body, OpI32And, OpLocalSet, 0x00)
	body = append(body, OpBr, 0x00, OpEnd)
	return Module{
		MemoryMin:     2,
		Globals:       []int32{65536},
		GlobalExports: []string{"__stack_pointer"},
		Funcs:         []Func{{Type: FuncType{}, Locals: []byte{I32}, Export: "scribble", Body: body}},
	}.Encode()
}
