package ssa

import (
	"math/rand/v2"
	"testing"
)

// Patch 24 drops a bounds check because another dominates it, so the
// immediate dominators decide what is checked. They are compared here with
// the textbook fixed point (dom(n) = {n} + the intersection of dom(p) over
// n's predecessors) on random control-flow graphs, irreducible ones
// included, with unreachable blocks dropped as the passes drop them.
func TestDominatorsAgainstFixedPoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 24))
	for iter := 0; iter < 3000; iter++ {
		b := NewBuilder().(*builder)
		b.Init(&Signature{})
		n := 2 + rng.IntN(25)
		blks := make([]*basicBlock, n)
		for i := range blks {
			blks[i] = b.allocateBasicBlock()
		}
		for _, blk := range blks {
			b.SetCurrentBlock(blk)
			switch rng.IntN(4) {
			case 0:
				b.InsertInstruction(b.AllocateInstruction().AsJump(ValuesNil, b.ReturnBlock()))
			case 1:
				b.InsertInstruction(b.AllocateInstruction().AsJump(ValuesNil, blks[rng.IntN(n)]))
			default:
				c := b.AllocateInstruction().AsIconst32(0)
				b.InsertInstruction(c)
				// Two different targets: wazevo has no two edges of
				// one branch pair to the same block.
				s1 := rng.IntN(n)
				s2 := (s1 + 1 + rng.IntN(n-1)) % n
				br := b.AllocateInstruction()
				br.AsBrz(c.Return(), ValuesNil, blks[s1])
				b.InsertInstruction(br)
				b.InsertInstruction(b.AllocateInstruction().AsJump(ValuesNil, blks[s2]))
			}
		}
		for _, blk := range blks {
			b.Seal(blk)
		}
		passSortSuccessors(b)
		passDeadBlockEliminationOpt(b)
		passCalculateImmediateDominators(b)

		// The fixed point over the reachable blocks, as bit sets.
		reach := map[*basicBlock]bool{}
		var walk func(*basicBlock)
		walk = func(x *basicBlock) {
			if reach[x] || x.ReturnBlock() {
				return
			}
			reach[x] = true
			for _, s := range x.success {
				walk(s)
			}
		}
		walk(blks[0])
		dom := make([]uint64, n)
		for i := range dom {
			dom[i] = 1<<n - 1
		}
		dom[0] = 1
		for changed := true; changed; {
			changed = false
			for i, blk := range blks[1:] {
				i++
				if !reach[blk] {
					continue
				}
				d := uint64(1<<n - 1)
				for _, p := range blk.preds {
					if reach[p.blk] {
						d &= dom[p.blk.id]
					}
				}
				d |= 1 << i
				if d != dom[i] {
					dom[i], changed = d, true
				}
			}
		}
		for i, blk := range blks {
			if !reach[blk] || i == 0 {
				continue
			}
			// The immediate dominator is the strict dominator whose
			// own dominators are all of the block's strict ones.
			var want *basicBlock
			strict := dom[i] &^ (1 << i)
			for j := 0; j < n; j++ {
				if strict&(1<<j) != 0 && dom[j] == strict {
					want = blks[j]
				}
			}
			if got := b.dominators[blk.id]; got != want {
				t.Fatalf("graph %d, block %d: idom %v, want %v", iter, i, got, want)
			}
		}
	}
}
