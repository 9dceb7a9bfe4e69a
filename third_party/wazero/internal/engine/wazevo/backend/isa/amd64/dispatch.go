package amd64

import "github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/backend/regalloc"

// Dispatch duplication (wasmbox patch 23). An interpreter's loop compiled to
// wasm (CPython's eval loop, a C interpreter's switch) is a loop header that
// ends in a br_table, and every handler ends with a jump back to it. duplicateDispatch copies such a
// header, after register allocation, in place of each unconditional jump to
// it: the handler dispatches the next opcode itself, one jmp less per
// opcode, and each copy's indirect jump has a branch-predictor entry of its
// own (what computed gotos give a native build). Every predecessor that
// jumps to a block has, by then, its values where the block's start state
// has them (the register allocator reconciled each edge), so a copy of the
// block's instructions is the block. The copies share the jump table.
//
// Only a dispatch that computes its index itself is copied (CPython's
// masks the opcode word its handlers load: `and $255; sub $2`; the
// bytecode machine of the tests loads the opcode). A dispatch on an index
// its predecessors set as it is (every Go function's, where each jump is
// `PC_B = k; br loop`) keeps its jumps: copies there made Go's machine code
// 12-16% larger (coreutils.wasm 33.5 -> 37.5 and 38.8 MB) and its compile
// 1.2-1.6% longer, for a gain only in instructions (Go's gzip -7.5% by
// cachegrind with a direct jmp to the entry; tools/SPEED.md, stop 36), and
// finding which of them set a constant cost a scan at each.

// dispatchMaxInstructions bounds the size of a block that is copied,
// dispatchMaxCopies the copies of one block, and dispatchBudgetShift and
// dispatchBudgetFloor the instructions copied into a function: at most its
// instruction count shifted right by the shift (a quarter), plus the floor,
// so that no function's code grows by more than that, whatever its shape.
const (
	dispatchMaxInstructions = 16
	dispatchMaxCopies       = 512
	dispatchBudgetShift     = 2
	dispatchBudgetFloor     = 8 * dispatchMaxInstructions
)

// dispatchCopy is what duplicateDispatch knows of a jump target: the first
// and last instruction to copy (nil when the target is not a dispatch that
// is copied), their number, and the copies made so far.
type dispatchCopy struct {
	seen        bool
	first, last *instruction
	n, copies   int
}

// dispatchBody returns the first and last instruction of pos's block, and
// their number, when it is a dispatch that can be copied: at most
// dispatchMaxInstructions position-independent instructions that end with
// an indirect jmp followed by the jump table (lowerBrTable), with no label
// of its own within.
func (m *machine) dispatchBody(pos *labelPosition) (first, last *instruction, n int) {
	if pos == nil || pos.sb == nil || pos.sb.ReturnBlock() || pos.begin == nil {
		return nil, nil, 0
	}
	for cur := pos.begin; cur != nil && cur != pos.end.next; cur = cur.next {
		switch cur.kind {
		case nop0:
			if cur.nop0Label() != 0 && cur != pos.begin {
				return nil, nil, 0
			}
			continue
		case jmp:
			if cur.op1.kind != operandKindReg {
				return nil, nil, 0
			}
			// The jump table follows: its label and the island, the
			// block's last instruction.
			if t := cur.next; t == nil || t.kind != nop0 || t.next == nil || t.next.kind != jmpTableIsland || lastInstr(pos) != t.next {
				return nil, nil, 0
			}
			if first == nil {
				first = cur
			}
			return first, cur, n + 1
		case sourceOffsetInfo, aluRmiR, aluRM, unaryRmR, not, neg, imm, movRR, movzxRmR, movsxRmR, mov64MR, movRM,
			lea, shiftR, cmpRmiR, setcc, cmove, jmpIf, fuelCheck, trapIf:
			// Position-independent: what refers to a label or an
			// out-of-line path (a trap stub, a fuel check's slow path) is
			// resolved for each copy by Encode.
		default:
			return nil, nil, 0
		}
		if n++; n >= dispatchMaxInstructions {
			return nil, nil, 0
		}
		if first == nil {
			first = cur
		}
	}
	return nil, nil, 0
}

// indexFromPredecessors reports whether the dispatch from first to last
// (lowerBrTable's sequence at its end: `imm max, M; cmp M, v; cmovnb M, v;
// lea table, A; add (A,v,8), A; jmp A`) dispatches on the index v as its
// predecessors set it: no instruction of the block before the sequence may
// write v.
func indexFromPredecessors(first, last *instruction) bool {
	add := last.prev
	if add == nil || add.kind != aluRmiR || aluRmiROpcode(add.u1) != aluRmiROpcodeAdd || add.op1.kind != operandKindMem {
		return false
	}
	addr := add.prev
	if addr == nil || addr.kind != lea || addr.op1.kind != operandKindLabel {
		return false
	}
	cmov := addr.prev
	if cmov == nil || cmov.kind != cmove || cmov.op1.kind != operandKindReg {
		return false
	}
	cmp := cmov.prev
	if cmp == nil || cmp.kind != cmpRmiR || cmp.op1.kind != operandKindReg || cmp.op2.reg().RealReg() != cmov.op2.reg().RealReg() {
		return false
	}
	bound := cmp.prev
	if bound == nil || bound.kind != imm || bound.op2.reg().RealReg() != cmp.op1.reg().RealReg() {
		return false
	}
	index := cmp.op2.reg().RealReg()
	for cur := first; cur != bound; cur = cur.next {
		if cur == nil || writesReg(cur, index) {
			return false
		}
	}
	return true
}

// writesReg reports whether i, after register allocation, may write
// register r: the destination of the kinds that dispatchBody copies (the
// two-address ones, whose Defs is empty, included; `sub $4, %ebx` writes
// ebx), and any register for every other kind.
func writesReg(i *instruction, r regalloc.RealReg) bool {
	switch i.kind {
	case nop0, sourceOffsetInfo, cmpRmiR, aluRM, movRM, fuelCheck, trapIf, jmpIf:
		return false
	case movRR, imm, zeros, unaryRmR, mov64MR, movsxRmR, movzxRmR, lea, setcc, aluRmiR, shiftR, cmove:
		return i.op2.kind == operandKindReg && i.op2.reg().RealReg() == r
	case not, neg:
		return i.op1.kind == operandKindReg && i.op1.reg().RealReg() == r
	}
	return true
}

// duplicateDispatch replaces each `jmp L` to a dispatch block L (see
// dispatchBody) with a copy of L's instructions, within the bounds above.
func (m *machine) duplicateDispatch() {
	if m.jmpTableTargetsNext == 0 {
		return // no br_table: most functions
	}
	budget := -1 // counted at the first copy
	// Indexed by the SSA block's label (the targets that can be one).
	n := int(m.maxSSABlockID) + 1
	if cap(m.dispatchCopies) < n {
		m.dispatchCopies = make([]dispatchCopy, n)
	}
	m.dispatchCopies = m.dispatchCopies[:n]
	clear(m.dispatchCopies)
	for _, pos := range m.orderedSSABlockLabelPos {
		jmpInstr := lastInstr(pos)
		if pos.sb == nil || jmpInstr == nil || jmpInstr.kind != jmp || jmpInstr.op1.kind != operandKindLabel {
			continue
		}
		target := jmpInstr.op1.label()
		if int(target) >= n {
			continue // not an SSA block (labelReturn among them)
		}
		d := &m.dispatchCopies[target]
		if !d.seen {
			d.seen = true
			d.first, d.last, d.n = m.dispatchBody(m.labelPositionPool.Get(int(target)))
			// A dispatch on an index its predecessors set (Go's `PC_B =
			// k; br loop`) keeps its jumps: see the comment at the top.
			if d.first != nil && indexFromPredecessors(d.first, d.last) {
				d.first = nil
			}
		}
		if d.first == nil || d.copies >= dispatchMaxCopies {
			continue
		}
		if budget < 0 {
			budget = 0
			for cur := m.rootInstr; cur != nil; cur = cur.next {
				budget++
			}
			budget = budget>>dispatchBudgetShift + dispatchBudgetFloor
		}
		if d.n > budget {
			continue
		}
		d.copies++
		budget -= d.n
		// The copies, linked in the jmp's place.
		var head, tail *instruction
		link := func(c *instruction) {
			c.prev, c.next = tail, nil
			if tail == nil {
				head = c
			} else {
				tail.next = c
			}
			tail = c
		}
		for cur := d.first; ; cur = cur.next {
			if cur.kind != nop0 {
				c := m.allocateInstr()
				*c = *cur
				link(c)
			}
			if cur == d.last {
				break
			}
		}
		head.prev, tail.next = jmpInstr.prev, jmpInstr.next
		if head.prev != nil {
			head.prev.next = head
		} else {
			m.rootInstr = head
		}
		if tail.next != nil {
			tail.next.prev = tail
		}
		if pos.begin == jmpInstr {
			pos.begin = head
		}
		if pos.end == jmpInstr {
			pos.end = tail
		}
	}
}

// lastInstr returns the last instruction of pos's block that is not a nop0,
// or nil.
func lastInstr(pos *labelPosition) *instruction {
	if pos.begin == nil || pos.end == nil {
		return nil
	}
	for cur := pos.end; ; cur = cur.prev {
		if cur.kind != nop0 {
			return cur
		}
		if cur == pos.begin || cur.prev == nil {
			return nil
		}
	}
}
