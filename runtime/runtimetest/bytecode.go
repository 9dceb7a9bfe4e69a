package runtimetest

// BytecodeMachine is a bytecode interpreter in the shape of CPython's eval
// loop compiled to wasm: a loop whose header spends fuel (InstrumentLoops'
// meter on global 0, yielding to host function 0), loads the opcode at pc
// and dispatches with a br_table; each handler branches back to the
// header. Its one parameter is the first pc, its result the accumulator.
// Opcodes (each with a one-byte operand n but halt and jacc):
//
//	0 halt; 1 acc += n; 2 acc *= n; 3 cnt = n; 4 if --cnt != 0 { pc = n };
//	5 pc = acc; any other: halt
func BytecodeMachine() Module {
	i32 := I32Const
	cat := Cat
	const pc, acc, cnt = 0, 1, 2
	get, set := localGet, localSet
	br := func(d byte) []byte { return []byte{OpBr, d} }
	operand := cat(get(pc), []byte{OpI32Load8U, 0, 1})
	next := cat(get(pc), i32(2), []byte{OpI32Add}, set(pc))
	blocks := []byte{}
	for range 6 {
		blocks = append(blocks, OpBlock, OpBlockVoid)
	}
	body := cat(
		[]byte{OpLoop, OpBlockVoid}, FuelCheck(1000), blocks,
		get(pc), []byte{OpI32Load8U, 0, 0},
		// br_table: opcodes 0..5 to the blocks halt (depth 5) .. jacc (0), default halt
		[]byte{OpBrTable, 6, 5, 4, 3, 2, 1, 0, 5},
		[]byte{OpEnd}, // jacc, in 5 blocks
		get(acc), set(pc), br(5),
		[]byte{OpEnd}, // jnz, in 4 blocks
		get(cnt), i32(1), []byte{OpI32Sub, OpLocalTee, cnt, OpIf, OpBlockVoid},
		operand, set(pc), br(5), []byte{OpEnd},
		next, br(4),
		[]byte{OpEnd}, // set, in 3
		operand, set(cnt), next, br(3),
		[]byte{OpEnd}, // mul, in 2
		get(acc), operand, []byte{OpI32Mul}, set(acc), next, br(2),
		[]byte{OpEnd}, // add, in 1
		get(acc), operand, []byte{OpI32Add}, set(acc), next, br(1),
		[]byte{OpEnd}, // halt
		get(acc), []byte{OpReturn},
		[]byte{OpEnd, OpUnreachable}, // the loop
	)
	return Module{
		Imports:   []Import{{Module: "env", Name: "yield", Type: FuncType{Results: []byte{I32}}}},
		MemoryMin: 1,
		Globals:   []int32{1000},
		Funcs: []Func{{
			Type:   FuncType{Params: []byte{I32}, Results: []byte{I32}},
			Locals: []byte{I32, I32},
			Body:   body, Export: "run",
		}},
	}
}

// RunBytecode is BytecodeMachine's semantics in Go: the accumulator, the
// number of dispatches, and whether the run loads an opcode outside the
// memory (the wasm traps).
func RunBytecode(mem []byte, pc uint32) (acc uint32, dispatches int, oob bool) {
	var cnt uint32
	for {
		dispatches++
		if pc >= uint32(len(mem)) {
			return acc, dispatches, true
		}
		n := func() uint32 { return uint32(mem[pc+1]) }
		switch mem[pc] {
		case 1:
			acc += n()
			pc += 2
		case 2:
			acc *= n()
			pc += 2
		case 3:
			cnt = n()
			pc += 2
		case 4:
			if cnt--; cnt != 0 {
				pc = n()
			} else {
				pc += 2
			}
		case 5:
			pc = acc
		default:
			return acc, dispatches, false
		}
	}
}

func localGet(l byte) []byte { return []byte{OpLocalGet, l} }
func localSet(l byte) []byte { return []byte{OpLocalSet, l} }
func localTee(l byte) []byte { return []byte{OpLocalTee, l} }

// FuelCheck is wasmbin.InstrumentLoops' meter, which the compiler lowers to
// one fuel check: global 0 is the fuel, function 0 (an imported () -> i32)
// the yield, and refill what the fuel is set to after it.
func FuelCheck(refill int32) []byte {
	return Cat([]byte{OpGlobalGet, 0}, I32Const(1), []byte{OpI32Sub, OpGlobalSet, 0, OpGlobalGet, 0, OpI32Eqz,
		OpIf, OpBlockVoid}, Call(0), []byte{OpDrop}, I32Const(refill),
		[]byte{OpGlobalSet, 0, OpEnd})
}

// StateMachine is a loop in the shape of a Go function compiled to wasm:
// its header spends fuel (as BytecodeMachine's) and dispatches on a state
// with a br_table, and each state's code sets the next state to a constant
// and branches back (Go's `PC_B = k; br loop`), one of them to a state
// past the table's end (its default, which returns). Its one parameter is
// a count n > 0, its result the accumulator; RunStateMachine is the same in
// Go.
func StateMachine() Module {
	i32 := I32Const
	cat := Cat
	const n, state, acc = 0, 1, 2
	get, tee, set := localGet, localTee, localSet
	next := func(s int32, depth byte) []byte { return cat(i32(s), set(state), []byte{OpBr, depth}) }
	body := cat(
		[]byte{OpLoop, OpBlockVoid}, FuelCheck(1000),
		[]byte{OpBlock, OpBlockVoid, OpBlock, OpBlockVoid, OpBlock, OpBlockVoid, OpBlock, OpBlockVoid, OpBlock, OpBlockVoid},
		get(state), []byte{OpBrTable, 4, 0, 1, 2, 3, 4},
		[]byte{OpEnd}, // state 0, in 4 blocks: acc = acc*3 + 1; if --n == 0 { state 7 } else { state 1 }
		get(acc), i32(3), []byte{OpI32Mul}, i32(1), []byte{OpI32Add}, set(acc),
		get(n), i32(1), []byte{OpI32Sub}, tee(n), []byte{OpI32Eqz, OpIf, OpBlockVoid}, next(7, 5), []byte{OpEnd},
		next(1, 4),
		[]byte{OpEnd}, // state 1, in 3: acc ^= n; state 2
		get(acc), get(n), []byte{OpI32Xor}, set(acc), next(2, 3),
		[]byte{OpEnd}, // state 2, in 2: acc += 7; if acc&1 { state 0 } else { state 3 }
		get(acc), i32(7), []byte{OpI32Add}, tee(acc), i32(1), []byte{OpI32And, OpIf, OpBlockVoid}, next(0, 3), []byte{OpEnd},
		next(3, 2),
		[]byte{OpEnd}, // state 3, in 1: acc -= n; state 0
		get(acc), get(n), []byte{OpI32Sub}, set(acc), next(0, 1),
		[]byte{OpEnd}, // the default: return acc
		get(acc), []byte{OpReturn},
		[]byte{OpEnd, OpUnreachable},
	)
	return Module{
		Imports: []Import{{Module: "env", Name: "yield", Type: FuncType{Results: []byte{I32}}}},
		Globals: []int32{1000},
		Funcs: []Func{{
			Type:   FuncType{Params: []byte{I32}, Results: []byte{I32}},
			Locals: []byte{I32, I32},
			Body:   body, Export: "run",
		}},
	}
}

// RunStateMachine is StateMachine in Go: the accumulator and the number of
// dispatches.
func RunStateMachine(n uint32) (acc uint32, dispatches int) {
	state := uint32(0)
	for {
		dispatches++
		switch state {
		case 0:
			acc = acc*3 + 1
			if n--; n == 0 {
				state = 7
			} else {
				state = 1
			}
		case 1:
			acc ^= n
			state = 2
		case 2:
			if acc += 7; acc&1 != 0 {
				state = 0
			} else {
				state = 3
			}
		case 3:
			acc -= n
			state = 0
		default:
			return acc, dispatches
		}
	}
}
