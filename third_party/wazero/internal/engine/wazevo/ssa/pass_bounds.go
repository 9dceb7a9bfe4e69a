package ssa

// wasmbox patch 24: bounds checks that a dominating check makes redundant.

// MarkBoundsCheck marks i, an OpcodeExitIfTrueWithCode, as the bounds check
// of a memory access, made by the frontend in the one shape that
// passRedundantBoundsChecks reads: the exit's condition is
//
//	icmp lt_u memLen, iadd(uextend(base, 32, 64), iconst(ceil))
//
// where memLen is the memory's length in bytes at that point.
func (i *Instruction) MarkBoundsCheck() *Instruction {
	if i.opcode != OpcodeExitIfTrueWithCode {
		panic("BUG: MarkBoundsCheck on " + i.opcode.String())
	}
	i.u2 = boundsCheckMark
	return i
}

const boundsCheckMark = 1

// boundsCheckOf returns the base value and the ceiling of the marked
// bounds check i, ok=false if i is not one or its condition does not have
// the marked shape.
func (b *builder) boundsCheckOf(i *Instruction) (base ValueID, ceil uint64, ok bool) {
	if i.opcode != OpcodeExitIfTrueWithCode || i.u2 != boundsCheckMark {
		return 0, 0, false
	}
	cmp := b.InstructionOfValue(b.resolveAlias(i.v2))
	if cmp == nil || cmp.opcode != OpcodeIcmp || IntegerCmpCond(cmp.u1) != IntegerCmpCondUnsignedLessThan {
		return 0, 0, false
	}
	add := b.InstructionOfValue(b.resolveAlias(cmp.v2))
	if add == nil || add.opcode != OpcodeIadd {
		return 0, 0, false
	}
	ext, c := b.InstructionOfValue(b.resolveAlias(add.v)), b.InstructionOfValue(b.resolveAlias(add.v2))
	if ext == nil || ext.opcode != OpcodeUExtend || c == nil || c.opcode != OpcodeIconst {
		return 0, 0, false
	}
	if from, to := ext.ExtendFromToBits(); from != 32 || to != 64 {
		return 0, 0, false
	}
	return b.resolveAlias(ext.v).ID(), c.ConstantVal(), true
}

// passRedundantBoundsChecks removes each marked bounds check that a check
// of the same base value with at least its ceiling dominates.
//
// It is sound because a memory's length never decreases: once base+ceil
// was within the memory, at the dominating check, it stays so, across
// calls, memory.grow and loop iterations. base is an SSA value, so it is
// the same number wherever it is used. The frontend already drops a check
// that an earlier one in the same block, or along a chain of single
// predecessors, covers (knownSafeBounds); what it cannot see is a check
// before a loop of a value the loop does not change. During the lowering
// such a value is read inside the loop as a loop header's parameter, which
// passRedundantPhiEliminationOpt only later finds to be the value from
// before the loop: so every iteration checked it again (CPython's eval
// loop checked the address of its C frame's use_tracing flag at every
// opcode).
//
// The walk is a preorder of the dominator tree with an undo log: each
// block and instruction is visited once, and the state is one ceiling per
// value.
func passRedundantBoundsChecks(b *builder) {
	n := b.basicBlocksPool.Allocated()
	if n == 0 {
		return
	}
	// The dominator tree's children, as lists threaded through two slices
	// indexed by block ID.
	head := resetInt32s(b.bceHead, n)
	next := resetInt32s(b.bceNext, n)
	b.bceHead, b.bceNext = head, next
	var entry *basicBlock
	for _, blk := range b.reversePostOrderedBasicBlocks {
		idom := b.dominators[blk.id]
		if idom == nil || idom == blk {
			entry = blk
			continue
		}
		next[blk.id] = head[idom.id]
		head[idom.id] = int32(blk.id)
	}
	if entry == nil {
		return
	}

	// known[v] is the largest ceiling checked for base value v on the
	// path of dominators to the current block.
	known := b.bceKnown
	if nv := int(b.nextValueID); cap(known) < nv {
		known = make([]uint64, nv)
	} else {
		known = known[:nv]
		clear(known)
	}
	undo := b.bceUndo[:0]
	stack := append(b.bceStack[:0], bceFrame{blk: entry, mark: -1})
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f.mark >= 0 {
			for len(undo) > int(f.mark) {
				u := undo[len(undo)-1]
				undo = undo[:len(undo)-1]
				known[u.v] = u.ceil
			}
			continue
		}
		blk := f.blk
		stack = append(stack, bceFrame{blk: blk, mark: int32(len(undo))})
		for cur := blk.rootInstr; cur != nil; {
			nxt := cur.next
			if base, ceil, ok := b.boundsCheckOf(cur); ok && int(base) < len(known) {
				if ceil <= known[base] {
					// Covered by a dominating check: unlink it (its
					// condition is then dead code).
					if prev := cur.prev; prev != nil {
						prev.next = nxt
					} else {
						blk.rootInstr = nxt
					}
					if nxt != nil {
						nxt.prev = cur.prev
					} else {
						blk.currentInstr = cur.prev
					}
				} else {
					undo = append(undo, bceUndo{v: base, ceil: known[base]})
					known[base] = ceil
				}
			}
			cur = nxt
		}
		for c := head[blk.id]; c >= 0; c = next[c] {
			stack = append(stack, bceFrame{blk: b.basicBlocksPool.View(int(c)), mark: -1})
		}
	}
	b.bceKnown, b.bceUndo, b.bceStack = known, undo[:0], stack[:0]
}

type (
	// bceFrame is a block to enter (mark -1) or, to leave, with the
	// length of the undo log when it was entered.
	bceFrame struct {
		blk  *basicBlock
		mark int32
	}
	bceUndo struct {
		v    ValueID
		ceil uint64
	}
)

func resetInt32s(s []int32, n int) []int32 {
	s = s[:0]
	for i := 0; i < n; i++ {
		s = append(s, -1)
	}
	return s
}
