package frontend

import (
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/ssa"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/leb128"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

// Bulk instructions in chunks (wasmbox patch). wasmbox's
// wasmbin.InstrumentLoops charges a bulk instruction fuel for its size
// before it runs, but the instruction itself runs whole: one memory.copy
// or memory.fill of all of a 4 GiB memory is a single memmove of ~0.5 s,
// which no kill, deadline or garbage collection of the host can cut. In a
// module so metered (it exports its fuel global as "wasmbox.fuel" and
// imports sched_yield), a memory.copy or memory.fill of more than
// bulkChunk bytes runs as memmoves of bulkChunk bytes with a fuel check
// after each, so that the host, which stores 1 in the fuel to end a
// guest, is heard within one chunk. The bounds checks still come first:
// an instruction that traps writes nothing.

// bulkChunk is the size of one memmove of a chunked bulk instruction:
// ~30-100 µs.
const bulkChunk = 1 << 20

// fuelExport is the export of the fuel global of wasmbin.InstrumentLoops.
const fuelExport = "wasmbox.fuel"

// bulkFuel is the fuel check a chunked bulk instruction makes.
type bulkFuel struct {
	ok                    bool
	offset, yield, refill uint32
}

// bulkFuelOf finds the fuel of a module metered by wasmbin.InstrumentLoops:
// the exported mutable i32 global of the module's own (its refill is its
// initial value) and the import wasi_snapshot_preview1.sched_yield of type
// () -> i32.
func (c *Compiler) bulkFuelOf() bulkFuel {
	if c.bulkFuelDone {
		return c.bulkFuel
	}
	c.bulkFuelDone = true
	if !c.fuelCheck {
		return bulkFuel{}
	}
	m := c.m
	var g wasm.Index
	found := false
	for i := range m.ExportSection {
		if e := &m.ExportSection[i]; e.Name == fuelExport && e.Type == wasm.ExternTypeGlobal {
			g, found = e.Index, true
		}
	}
	if !found || g < m.ImportGlobalCount || int(g-m.ImportGlobalCount) >= len(m.GlobalSection) {
		return bulkFuel{}
	}
	gl := &m.GlobalSection[g-m.ImportGlobalCount]
	if gl.Type.ValType != wasm.ValueTypeI32 || !gl.Type.Mutable || len(gl.Init.Data) < 2 || gl.Init.Data[0] != wasm.OpcodeI32Const {
		return bulkFuel{}
	}
	refill, _, err := leb128.LoadInt32(gl.Init.Data[1:])
	if err != nil || refill <= 0 {
		return bulkFuel{}
	}
	var fn wasm.Index
	for i := range m.ImportSection {
		imp := &m.ImportSection[i]
		if imp.Type != wasm.ExternTypeFunc {
			continue
		}
		if imp.Module == "wasi_snapshot_preview1" && imp.Name == "sched_yield" {
			if ft := c.importedFunctionType(fn); ft != nil && len(ft.Params) == 0 && len(ft.Results) == 1 && ft.Results[0] == wasm.ValueTypeI32 {
				c.bulkFuel = bulkFuel{ok: true, offset: uint32(c.offset.GlobalInstanceOffset(g)), yield: fn, refill: uint32(refill)}
				return c.bulkFuel
			}
		}
		fn++
	}
	return bulkFuel{}
}

// insertBulkFuelCheck inserts the fuel check of f in the current block.
func (c *Compiler) insertBulkFuelCheck(f bulkFuel) {
	c.ssaBuilder.AllocateInstruction().
		AsFuelCheck(c.execCtxPtrValue, c.moduleCtxPtrValue, f.offset, f.yield, f.refill).
		Insert(c.ssaBuilder)
}

// chunkedMemmove is memory.copy's memmove of size bytes from src to dst
// (absolute addresses, bounds already checked) in chunks of bulkChunk
// with a fuel check after each: forward when dst is below src, backward
// from the end otherwise, so that overlapping ranges copy as one memmove
// does. A copy of bulkChunk bytes or less is one memmove.
func (c *Compiler) chunkedMemmove(f bulkFuel, dst, src, size ssa.Value) {
	b := c.ssaBuilder
	chunk := b.AllocateInstruction().AsIconst64(bulkChunk).Insert(b).Return()
	zero := b.AllocateInstruction().AsIconst64(0).Insert(b).Return()

	bigBlk, smallBlk := b.AllocateBasicBlock(), b.AllocateBasicBlock()
	fwdBlk, backBlk := b.AllocateBasicBlock(), b.AllocateBasicBlock()
	followBlk := b.AllocateBasicBlock()
	fwdI := fwdBlk.AddParam(b, ssa.TypeI64)
	backRem := backBlk.AddParam(b, ssa.TypeI64)

	big := b.AllocateInstruction().AsIcmp(size, chunk, ssa.IntegerCmpCondUnsignedGreaterThan).Insert(b).Return()
	b.AllocateInstruction().AsBrnz(big, ssa.ValuesNil, bigBlk).Insert(b)
	c.insertJumpToBlock(ssa.ValuesNil, smallBlk)

	b.SetCurrentBlock(smallBlk)
	c.callMemmove(dst, src, size)
	c.insertJumpToBlock(ssa.ValuesNil, followBlk)

	b.SetCurrentBlock(bigBlk)
	backward := b.AllocateInstruction().AsIcmp(dst, src, ssa.IntegerCmpCondUnsignedGreaterThan).Insert(b).Return()
	b.AllocateInstruction().AsBrnz(backward, c.allocateVarLengthValues(1, size), backBlk).Insert(b)
	c.insertJumpToBlock(c.allocateVarLengthValues(1, zero), fwdBlk)

	// Forward: i from 0.
	b.SetCurrentBlock(fwdBlk)
	rest := b.AllocateInstruction().AsIsub(size, fwdI).Insert(b).Return()
	short := b.AllocateInstruction().AsIcmp(rest, chunk, ssa.IntegerCmpCondUnsignedLessThan).Insert(b).Return()
	n := b.AllocateInstruction().AsSelect(short, rest, chunk).Insert(b).Return()
	d := b.AllocateInstruction().AsIadd(dst, fwdI).Insert(b).Return()
	s := b.AllocateInstruction().AsIadd(src, fwdI).Insert(b).Return()
	c.callMemmove(d, s, n)
	next := b.AllocateInstruction().AsIadd(fwdI, n).Insert(b).Return()
	c.insertBulkFuelCheck(f)
	more := b.AllocateInstruction().AsIcmp(next, size, ssa.IntegerCmpCondUnsignedLessThan).Insert(b).Return()
	b.AllocateInstruction().AsBrnz(more, c.allocateVarLengthValues(1, next), fwdBlk).Insert(b)
	c.insertJumpToBlock(ssa.ValuesNil, followBlk)

	// Backward: what is left to copy, from size down.
	b.SetCurrentBlock(backBlk)
	short = b.AllocateInstruction().AsIcmp(backRem, chunk, ssa.IntegerCmpCondUnsignedLessThan).Insert(b).Return()
	n = b.AllocateInstruction().AsSelect(short, backRem, chunk).Insert(b).Return()
	rem := b.AllocateInstruction().AsIsub(backRem, n).Insert(b).Return()
	d = b.AllocateInstruction().AsIadd(dst, rem).Insert(b).Return()
	s = b.AllocateInstruction().AsIadd(src, rem).Insert(b).Return()
	c.callMemmove(d, s, n)
	c.insertBulkFuelCheck(f)
	more = b.AllocateInstruction().AsIcmp(rem, zero, ssa.IntegerCmpCondNotEqual).Insert(b).Return()
	b.AllocateInstruction().AsBrnz(more, c.allocateVarLengthValues(1, rem), backBlk).Insert(b)
	c.insertJumpToBlock(ssa.ValuesNil, followBlk)

	b.SetCurrentBlock(followBlk)
	b.Seal(bigBlk)
	b.Seal(smallBlk)
	b.Seal(fwdBlk)
	b.Seal(backBlk)
	b.Seal(followBlk)
	// The checks call the host: what was loaded of the memory and the
	// globals is loaded again where it is next used.
	c.forgetAfterCall()
}

// chunkedFillRest is the rest of a memory.fill of size bytes at addr
// (absolute, bounds already checked) whose first bulkChunk bytes are
// filled: memmoves of bulkChunk bytes from the start, which holds the
// value, each followed by a fuel check. Nothing is done for a fill of
// bulkChunk bytes or less.
func (c *Compiler) chunkedFillRest(f bulkFuel, addr, size ssa.Value) {
	b := c.ssaBuilder
	chunk := b.AllocateInstruction().AsIconst64(bulkChunk).Insert(b).Return()
	loopBlk, followBlk := b.AllocateBasicBlock(), b.AllocateBasicBlock()
	i := loopBlk.AddParam(b, ssa.TypeI64)

	big := b.AllocateInstruction().AsIcmp(size, chunk, ssa.IntegerCmpCondUnsignedGreaterThan).Insert(b).Return()
	b.AllocateInstruction().AsBrnz(big, c.allocateVarLengthValues(1, chunk), loopBlk).Insert(b)
	c.insertJumpToBlock(ssa.ValuesNil, followBlk)

	b.SetCurrentBlock(loopBlk)
	rest := b.AllocateInstruction().AsIsub(size, i).Insert(b).Return()
	short := b.AllocateInstruction().AsIcmp(rest, chunk, ssa.IntegerCmpCondUnsignedLessThan).Insert(b).Return()
	n := b.AllocateInstruction().AsSelect(short, rest, chunk).Insert(b).Return()
	d := b.AllocateInstruction().AsIadd(addr, i).Insert(b).Return()
	c.callMemmove(d, addr, n)
	next := b.AllocateInstruction().AsIadd(i, n).Insert(b).Return()
	c.insertBulkFuelCheck(f)
	more := b.AllocateInstruction().AsIcmp(next, size, ssa.IntegerCmpCondUnsignedLessThan).Insert(b).Return()
	b.AllocateInstruction().AsBrnz(more, c.allocateVarLengthValues(1, next), loopBlk).Insert(b)
	c.insertJumpToBlock(ssa.ValuesNil, followBlk)

	b.SetCurrentBlock(followBlk)
	b.Seal(loopBlk)
	b.Seal(followBlk)
	c.forgetAfterCall()
}
