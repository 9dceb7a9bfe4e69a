package runtimetest

import "bytes"

// Hostile modules: each asks the host for more than a sandbox should give
// (tests of the runtime's caps on modules). They are built here rather
// than committed, since most are large.

// raw assembles a module from sections given as (id, body) pairs.
func raw(sections ...[]byte) []byte {
	out := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	return append(out, bytes.Join(sections, nil)...)
}

func sec(id byte, body ...[]byte) []byte {
	b := bytes.Join(body, nil)
	return append(ULEB([]byte{id}, uint64(len(b))), b...)
}

func vec(n int, items ...[]byte) []byte {
	return append(ULEB(nil, uint64(n)), bytes.Join(items, nil)...)
}

func str(s string) []byte { return append(ULEB(nil, uint64(len(s))), s...) }

// exitingModule is a module importing proc_exit (function 0), with one
// memory page, whose _start (function 1, type () -> ()) runs body (an
// expression without the final end) after the given extra sections.
func exitingModule(table, elem []byte, locals []byte, body []byte) []byte {
	types := sec(1, vec(2, []byte{0x60, 1, I32, 0}, []byte{0x60, 0, 0}))
	imports := sec(2, vec(1, str("wasi_snapshot_preview1"), str("proc_exit"), []byte{0x00, 0x00}))
	funcs := sec(3, vec(1, []byte{0x01}))
	mem := sec(5, vec(1, []byte{0x00, 0x01}))
	exports := sec(7, vec(2, str("_start"), []byte{0x00, 0x01}, str("memory"), []byte{0x02, 0x00}))
	if locals == nil {
		locals = []byte{0}
	}
	fn := append(append(append([]byte(nil), locals...), body...), OpEnd)
	code := sec(10, vec(1, ULEB(nil, uint64(len(fn))), fn))
	var tsec, esec []byte
	if table != nil {
		tsec = sec(4, table)
	}
	if elem != nil {
		esec = sec(9, elem)
	}
	return raw(types, imports, funcs, tsec, mem, exports, esec, code)
}

// growLoop is "loop: grow; if the result is -1 exit(code) else continue",
// or with exit < 0 a loop that ignores the result and grows forever.
func growLoop(grow []byte, exit int32) []byte {
	var b []byte
	b = append(b, OpLoop, OpBlockVoid)
	b = append(b, grow...)
	if exit < 0 {
		b = append(b, OpDrop, OpBr, 0x00, OpEnd)
		return b
	}
	b = append(b, I32Const(-1)...)
	b = append(b, OpI32Eq, 0x04, OpBlockVoid) // if
	b = append(b, I32Const(exit)...)
	b = append(b, Call(0)...)
	b = append(b, OpEnd, OpBr, 0x00, OpEnd)
	return b
}

// TableGrow returns a module with a funcref table (initial size 0, no
// maximum) whose _start grows the table by delta entries at a time:
// forever, ignoring failures, when exit < 0 (each entry costs the host 8
// bytes: without a cap, this takes the host's memory); else until
// table.grow returns -1, and then exits with status exit.
func TableGrow(delta uint32, exit int32) []byte {
	table := vec(1, []byte{0x70, 0x00, 0x00})
	grow := append([]byte{0xd0, 0x70}, I32Const(int32(delta))...) // ref.null func; i32.const delta
	grow = append(grow, 0xfc, 15, 0x00)                           // table.grow 0
	return exitingModule(table, nil, nil, growLoop(grow, exit))
}

// MemoryGrow returns a module whose _start grows its memory by pages
// pages at a time until memory.grow returns -1, and then exits with status
// exit (or, with exit < 0, keeps trying forever).
func MemoryGrow(pages uint32, exit int32) []byte {
	grow := append(I32Const(int32(pages)), OpMemoryGrow, 0x00)
	return exitingModule(nil, nil, nil, growLoop(grow, exit))
}

// ManyLocals returns a module whose _start declares n i64 locals and exits
// 0.
func ManyLocals(n uint32) []byte {
	return exitingModule(nil, nil, append(ULEB([]byte{1}, uint64(n)), I64), append(I32Const(0), Call(0)...))
}

// BigFunction returns a module whose _start is n bytes of nop and then
// exits 0.
func BigFunction(n int) []byte {
	return exitingModule(nil, nil, nil, append(bytes.Repeat([]byte{0x01}, n), append(I32Const(0), Call(0)...)...))
}

// BigElem returns a module with a table of tableMin entries and one
// active element segment at 0 of n references to function 1, whose _start
// exits 0 (instantiation fails when n > tableMin).
func BigElem(n, tableMin uint32) []byte {
	table := vec(1, ULEB([]byte{0x70, 0x00}, uint64(tableMin)))
	elem := vec(1, []byte{0x00}, I32Const(0), []byte{OpEnd}, ULEB(nil, uint64(n)), bytes.Repeat([]byte{0x01}, int(n)))
	return exitingModule(table, elem, nil, append(I32Const(0), Call(0)...))
}

// BigData returns Module{MemoryMin: pages} with a data segment of n bytes
// at address 0, whose _start returns at once.
func BigData(n int, pages uint32) []byte {
	return Module{MemoryMin: pages, Data: make([]byte, n), Funcs: []Func{{Type: start, Export: "_start"}}}.Encode()
}

// ManyFunctions returns a module with n empty functions, the first of them
// exported as _start.
func ManyFunctions(n int) []byte {
	fs := make([]Func, n)
	fs[0] = Func{Type: start, Export: "_start"}
	return Module{HasMemory: true, MemoryMin: 1, Funcs: fs}.Encode()
}

// NestedLoops returns a module whose _start nests depth loops around a
// body that reads each of its locals i64 locals (local.get; drop), then
// exits 0. Small to write (depth 3000 and 10,000 locals is 49 KB) and
// under every per-count cap, it makes wazero's SSA builder give every
// enclosing loop header a block parameter per local read inside it: depth
// × locals values, gigabytes of compiler heap. With phis, the body adds 1
// to each local instead and every loop ends with a branch back to its
// header that is never taken (br_if on 0), so that those parameters are
// real phis that survive to register allocation.
func NestedLoops(depth, locals int, phis bool) []byte {
	var body []byte
	for range depth {
		body = append(body, OpLoop, OpBlockVoid)
	}
	for i := range locals {
		body = ULEB(append(body, OpLocalGet), uint64(i))
		if phis {
			body = append(body, opI64Const, 1, opI64Add)
			body = ULEB(append(body, opLocalSet), uint64(i))
		} else {
			body = append(body, OpDrop)
		}
	}
	for range depth {
		if phis {
			body = append(body, I32Const(0)...)
			body = append(body, OpBrIf, 0)
		}
		body = append(body, OpEnd)
	}
	return exitingModule(nil, nil, localDecl(locals), readLocalsAndExit(body, 0))
}

const (
	opI64Const byte = 0x42
	opI64Add   byte = 0x7c
	opLocalSet byte = 0x21
)

// IfChain returns a module whose _start runs n ifs in sequence, the k-th
// adding 1 to local k%locals (i64), and then reads every local: each of
// the n merges is a place where SSA construction looks for each local.
func IfChain(n, locals int) []byte {
	var body []byte
	for k := range n {
		body = append(body, I32Const(int32(k&1))...)
		body = append(body, opIf, OpBlockVoid)
		body = ULEB(append(body, OpLocalGet), uint64(k%locals))
		body = append(body, opI64Const, 1, opI64Add)
		body = ULEB(append(body, opLocalSet), uint64(k%locals))
		body = append(body, OpEnd)
	}
	return exitingModule(nil, nil, localDecl(locals), readLocalsAndExit(body, locals))
}

// BrTable returns a module whose _start changes each of its locals (i64)
// inside blocks nested depth deep, then leaves them with a br_table of
// targets labels (cycling over the blocks) and reads every local after
// each block: every target is a trampoline block carrying every local.
func BrTable(targets, depth, locals int) []byte {
	var body []byte
	for range depth {
		body = append(body, opBlock, OpBlockVoid)
	}
	for i := range locals {
		body = ULEB(append(body, OpLocalGet), uint64(i))
		body = append(body, opI64Const, 1, opI64Add)
		body = ULEB(append(body, opLocalSet), uint64(i))
	}
	body = append(body, I32Const(0)...)
	body = ULEB(append(body, opBrTable), uint64(targets))
	for k := range targets {
		body = ULEB(body, uint64(k%depth))
	}
	body = append(body, 0) // default
	for range depth {
		body = append(body, OpEnd)
		for i := range locals {
			body = ULEB(append(body, OpLocalGet), uint64(i))
			body = append(body, OpDrop)
		}
	}
	return exitingModule(nil, nil, localDecl(locals), readLocalsAndExit(body, 0))
}

func localDecl(locals int) []byte {
	if locals == 0 {
		return nil
	}
	return append(ULEB([]byte{1}, uint64(locals)), I64)
}

// readLocalsAndExit appends reading locals locals, and exit(0).
func readLocalsAndExit(body []byte, locals int) []byte {
	for i := range locals {
		body = ULEB(append(body, OpLocalGet), uint64(i))
		body = append(body, OpDrop)
	}
	body = append(body, I32Const(0)...)
	return append(body, Call(0)...)
}

const (
	opBlock   byte = 0x02
	opIf      byte = 0x04
	opBrTable byte = 0x0e
)
