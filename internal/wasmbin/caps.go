package wasmbin

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// ErrRefused is wrapped by the error of a module that exceeds a cap (see
// Caps).
var ErrRefused = errors.New("module refused")

// CapError reports a module over one of its caps, as in
//
//	module refused: function 12 declares 50000000 locals (cap 50000)
type CapError struct {
	What string // "function 12 declares", "the code section is", ...
	N    uint64 // what the module has
	Unit string // "locals", "bytes", ...
	Cap  uint64
}

func (e *CapError) Error() string {
	return fmt.Sprintf("%v: %s %d %s (cap %d)", ErrRefused, e.What, e.N, e.Unit, e.Cap)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *CapError) Is(target error) bool { return target == ErrRefused }

// Shape is what a module declares that makes the host allocate when the
// module is decoded, compiled or instantiated. Every field is a count or a
// size read from the binary without decoding code; sums are 64-bit so that
// no count can wrap.
type Shape struct {
	Size           uint64 // the binary, bytes
	Types          uint64 // entries of the type section
	MaxTypeArity   uint64 // the most params + results of one function type
	Imports        uint64
	Functions      uint64 // defined (not imported) functions
	Tables         uint64 // imported and defined
	MaxTableMin    uint64 // the largest declared initial size of a table, entries
	MaxTableMax    uint64 // the largest declared maximum of a table (0 when none declares one)
	UnboundedTable bool   // a table declares no maximum
	Memories       uint64 // imported and defined
	Globals        uint64 // defined (not imported) globals
	Exports        uint64
	ElemSegments   uint64
	ElemEntries    uint64 // the sum of the lengths of the element segments
	MaxElemEntries uint64 // the longest element segment
	DataSegments   uint64
	DataBytes      uint64 // the sum of the sizes of the data segments
	MaxDataBytes   uint64 // the largest data segment
	CodeBytes      uint64 // the code section, bytes
	// MaxFunc holds the largest of each measure over the function bodies,
	// and MaxFuncAt the index (among the defined functions) of the body
	// that has it.
	MaxFunc, MaxFuncAt FuncShape
	CustomBytes        uint64 // the sum of the custom sections, bytes
}

// Caps bound what a module may declare. Zero fields are not checked.
type Caps struct {
	Size         uint64 // bytes of the whole binary
	Types        uint64
	TypeArity    uint64 // params + results of one function type
	Imports      uint64
	Functions    uint64
	Tables       uint64
	TableSize    uint64 // entries of one table: its minimum is refused past it, its maximum lowered to it
	Memories     uint64
	Globals      uint64
	Exports      uint64
	ElemSegments uint64
	ElemEntries  uint64 // the sum over every element segment
	DataSegments uint64
	DataBytes    uint64    // the sum over every data segment
	CodeBytes    uint64    // the code section
	Func         FuncShape // each function body
	CustomBytes  uint64    // the sum over every custom section
}

// Check returns a *CapError for the first cap s exceeds, nil if none.
func (c Caps) Check(s Shape) error {
	checks := []struct {
		n, cap     uint64
		what, unit string
	}{
		{s.Size, c.Size, "the module is", "bytes"},
		{s.Types, c.Types, "the module declares", "types"},
		{s.MaxTypeArity, c.TypeArity, "a function type has", "params and results"},
		{s.Imports, c.Imports, "the module declares", "imports"},
		{s.Functions, c.Functions, "the module declares", "functions"},
		{s.Tables, c.Tables, "the module declares", "tables"},
		{s.MaxTableMin, c.TableSize, "a table declares an initial size of", "entries"},
		{s.Memories, c.Memories, "the module declares", "memories"},
		{s.Globals, c.Globals, "the module declares", "globals"},
		{s.Exports, c.Exports, "the module declares", "exports"},
		{s.ElemSegments, c.ElemSegments, "the module declares", "element segments"},
		{s.ElemEntries, c.ElemEntries, "the element segments hold", "entries"},
		{s.DataSegments, c.DataSegments, "the module declares", "data segments"},
		{s.DataBytes, c.DataBytes, "the data segments hold", "bytes"},
		{s.CodeBytes, c.CodeBytes, "the code section is", "bytes"},
		{s.CustomBytes, c.CustomBytes, "the custom sections are", "bytes"},
	}
	f, at := s.MaxFunc, s.MaxFuncAt
	fn := func(i uint64, verb string) string { return fmt.Sprintf("function %d %s", i, verb) }
	checks = append(checks, []struct {
		n, cap     uint64
		what, unit string
	}{
		{f.Bytes, c.Func.Bytes, fn(at.Bytes, "is"), "bytes"},
		{f.Locals, c.Func.Locals, fn(at.Locals, "declares"), "locals"},
		{f.Instrs, c.Func.Instrs, fn(at.Instrs, "has"), "instructions"},
		{f.Branches, c.Func.Branches, fn(at.Branches, "has"), "blocks, loops, ifs and branches"},
		{f.BrTargets, c.Func.BrTargets, fn(at.BrTargets, "has"), "br_table targets"},
		{f.Depth, c.Func.Depth, fn(at.Depth, "nests blocks"), "deep"},
		{f.Calls, c.Func.Calls, fn(at.Calls, "has"), "calls"},
		{f.MemOps, c.Func.MemOps, fn(at.MemOps, "has"), "memory accesses"},
		{f.Phis, c.Func.Phis, fn(at.Phis, "would make"), "SSA block parameters (branches × locals)"},
		{f.Cost, c.Func.Cost, fn(at.Cost, "would take about"), "bytes to compile"},
	}...)
	for _, k := range checks {
		if k.cap != 0 && k.n > k.cap {
			return &CapError{What: k.what, N: k.n, Unit: k.unit, Cap: k.cap}
		}
	}
	return nil
}

// ModuleShape reads the shape of a module. Every section is parsed to its
// end (code only as far as the local declarations of each body), so that
// what it does not understand is an error wrapping ErrMalformed rather
// than a count it missed.
func ModuleShape(b []byte) (Shape, error) {
	s := Shape{Size: uint64(len(b))}
	var typeParams []uint64 // params of each type
	var funcTypes []uint32  // type of each defined function
	secs, err := Sections(b)
	if err != nil {
		return s, err
	}
	for _, sec := range secs {
		r := &reader{b: sec.Body}
		switch sec.ID {
		case SecCustom:
			s.CustomBytes += uint64(len(sec.Body))
			r.b = nil
		case SecType:
			s.Types = uint64(r.count())
			for i := uint64(0); i < s.Types && r.err == nil; i++ {
				if form := r.byte1(); form != 0x60 && r.err == nil {
					r.fail("type %d: form %#x", i, form)
				}
				p := uint64(len(r.bytes(r.count())))
				typeParams = append(typeParams, p)
				p += uint64(len(r.bytes(r.count())))
				s.MaxTypeArity = max(s.MaxTypeArity, p)
			}
		case SecImport:
			s.Imports = uint64(r.count())
			for i := uint64(0); i < s.Imports && r.err == nil; i++ {
				r.name()
				r.name()
				switch kind := r.byte1(); kind {
				case KindFunc:
					r.u32()
				case KindTable:
					r.byte1()
					s.table(r.limits())
				case KindMemory:
					r.limits()
					s.Memories++
				case KindGlobal:
					r.byte1()
					r.byte1()
				case kindTag:
					r.byte1()
					r.u32()
				default:
					r.fail("import %d: kind %d", i, kind)
				}
			}
		case SecFunction:
			s.Functions = uint64(r.count())
			for i := uint64(0); i < s.Functions && r.err == nil; i++ {
				funcTypes = append(funcTypes, r.u32())
			}
		case SecTable:
			n := r.count()
			for i := uint32(0); i < n && r.err == nil; i++ {
				r.byte1()
				s.table(r.limits())
			}
		case SecMemory:
			n := r.count()
			for i := uint32(0); i < n && r.err == nil; i++ {
				r.limits()
				s.Memories++
			}
		case SecGlobal:
			s.Globals = uint64(r.count())
			for i := uint64(0); i < s.Globals && r.err == nil; i++ {
				r.byte1()
				r.byte1()
				r.constExpr()
			}
		case SecExport:
			s.Exports = uint64(r.count())
			for i := uint64(0); i < s.Exports && r.err == nil; i++ {
				r.name()
				r.byte1()
				r.u32()
			}
		case SecStart, SecDataCount:
			r.u32()
		case SecElement:
			s.ElemSegments = uint64(r.count())
			for i := uint64(0); i < s.ElemSegments && r.err == nil; i++ {
				n := r.elemSegment(i)
				s.ElemEntries += n
				s.MaxElemEntries = max(s.MaxElemEntries, n)
			}
		case SecCode:
			s.CodeBytes = uint64(len(sec.Body))
			n := r.count()
			for i := uint64(0); i < uint64(n) && r.err == nil; i++ {
				body := r.bytes(r.u32())
				if r.err != nil {
					break
				}
				var params uint64
				if i < uint64(len(funcTypes)) && uint64(funcTypes[i]) < uint64(len(typeParams)) {
					params = typeParams[funcTypes[i]]
				}
				f, err := funcShape(body, params)
				if err != nil {
					return s, fmt.Errorf("function body %d: %w", i, err)
				}
				s.addFunc(i, f)
			}
		case SecData:
			s.DataSegments = uint64(r.count())
			for i := uint64(0); i < s.DataSegments && r.err == nil; i++ {
				switch flags := r.u32(); flags {
				case 0:
					r.constExpr()
				case 1:
				case 2:
					r.u32()
					r.constExpr()
				default:
					r.fail("data segment %d: flags %d", i, flags)
				}
				n := uint64(len(r.bytes(r.u32())))
				s.DataBytes += n
				s.MaxDataBytes = max(s.MaxDataBytes, n)
			}
		case 13: // tag (exception handling): an attribute and a type each
			n := r.count()
			for i := uint32(0); i < n && r.err == nil; i++ {
				r.byte1()
				r.u32()
			}
		default:
			r.fail("unknown section id %d", sec.ID)
		}
		if r.err == nil && len(r.b) != 0 {
			r.fail("%d bytes after the end of section %d", len(r.b), sec.ID)
		}
		if r.err != nil {
			return s, r.err
		}
	}
	return s, nil
}

// FuncShape measures one function body: what the compiler's time and
// memory grow with.
type FuncShape struct {
	Bytes     uint64 // the body
	Locals    uint64 // locals declared (not counting params)
	Instrs    uint64
	Branches  uint64 // block, loop, if, else, br, br_if, br_table
	BrTargets uint64 // the targets of every br_table
	Depth     uint64 // the deepest nesting of blocks, loops and ifs
	Calls     uint64 // calls, and instructions the compiler turns into calls to the host (memory.grow, table.*, bulk memory)
	MemOps    uint64 // loads, stores and atomic accesses
	Vars      uint64 // params and locals: the variables of SSA construction
	// Phis bounds the block parameters (phis) wazero's SSA construction
	// may create: one per basic block and variable, the basic blocks
	// being at most Branches + BrTargets (every block, loop, if, else,
	// br_if and br_table target starts one). A variable read inside n
	// nested loops is a parameter of each of their headers, so 3000
	// nested loops around 10,000 locals are 30 million (49 KB of wasm).
	Phis uint64
	// Cost estimates the bytes of Go heap wazero's optimizing compiler
	// (v1.12) takes to compile the body: the counts above weighted by
	// what each cost in measurements (see CostOf).
	Cost uint64
}

// Weights of FuncShape.Cost, in bytes of compiler heap: the peak Go heap
// of compiling one function made of a single kind of instruction,
// divided by the count (wazero v1.12, amd64): 1 MB of i32.add chains,
// loads, ifs, calls and br_table targets.
const (
	costInstr    = 180
	costMemOp    = 4800
	costBranch   = 7600
	costCall     = 1400
	costBrTarget = 2400
)

// costPhi is the compiler heap of one block parameter (FuncShape.Phis):
// 3000 nested loops around 300 i64 locals that each loop changes (real
// phis, through register allocation) measured 990 MiB for a million, and
// read-only locals (phis the SSA passes remove) a tenth of that.
const costPhi = 1024

// costCodeByte is the compiler heap per byte of the code section that is
// kept until the module's code is copied out (machine code, relocations,
// per-function results of the workers).
const costCodeByte = 16

// CompileBytes estimates the Go heap a compile of a module of shape s
// takes with the given number of compilation workers: each worker holds
// at most one function's compiler state at a time, the largest function's
// (FuncShape.Cost plus the block parameters of FuncShape.Phis; the largest
// of each over the module's bodies, so an upper bound), and the machine
// code of every function is kept until the end. It is what a compile
// admits against a memory budget (runtime.CompileCost).
func CompileBytes(s Shape, workers int) uint64 {
	w := uint64(max(workers, 1))
	if s.Functions < w {
		w = max(s.Functions, 1)
	}
	perFunc := s.MaxFunc.Cost + mulSat(s.MaxFunc.Phis, costPhi)
	return mulSat(w, perFunc) + mulSat(s.CodeBytes, costCodeByte)
}

// CostOf is the estimated compile cost of a body with f's counts.
func CostOf(f FuncShape) uint64 {
	return f.Instrs*costInstr + f.MemOps*costMemOp + f.Branches*costBranch + f.Calls*costCall + f.BrTargets*costBrTarget
}

// funcShape measures a function body, decoding every instruction. An
// instruction the decoder does not know (a proposal wazero does not enable
// by default) is an error wrapping ErrMalformed.
func funcShape(body []byte, params uint64) (FuncShape, error) {
	f := FuncShape{Bytes: uint64(len(body))}
	r := &reader{b: body}
	for n, i := r.count(), uint32(0); i < n && r.err == nil; i++ {
		f.Locals += uint64(r.u32())
		r.byte1()
	}
	var depth uint64
	for len(r.b) > 0 && r.err == nil {
		op := r.byte1()
		f.Instrs++
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			f.Branches++
			depth++
			f.Depth = max(f.Depth, depth)
		case op == 0x05 || op == 0x0c || op == 0x0d: // else, br, br_if
			f.Branches++
		case op == 0x0e: // br_table
			f.Branches++
			if n, _, err := Uleb(r.b); err == nil {
				f.BrTargets += uint64(n)
			}
		case op == opEnd:
			depth = max(depth, 1) - 1
		case op >= 0x10 && op <= 0x13, op == 0x40: // calls, memory.grow
			f.Calls++
		case op >= 0x28 && op <= 0x3e:
			f.MemOps++
		case op == 0xfc || op == 0xfe:
			if sub, _, err := Uleb(r.b); err == nil {
				switch {
				case op == 0xfe:
					f.MemOps++
				case sub >= 8:
					f.Calls++ // bulk memory and table instructions
				}
			}
		case op == opVecPrefix:
			if sub, _, err := Uleb(r.b); err == nil && (sub <= 11 || (sub >= 84 && sub <= 93)) {
				f.MemOps++
			}
		}
		if !skipImmediates(r, op) && r.err == nil {
			return f, fmt.Errorf("%w: opcode %#x at offset %d", ErrMalformed, op, len(body)-len(r.b)-1)
		}
	}
	f.Vars = params + f.Locals
	f.Phis = mulSat(f.Branches+f.BrTargets, f.Vars)
	f.Cost = CostOf(f)
	return f, r.err
}

// mulSat is a*b, or the largest uint64 when that overflows.
func mulSat(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

// addFunc adds the measures of function i to the shape.
func (s *Shape) addFunc(i uint64, f FuncShape) {
	up := func(m, at *uint64, v uint64) {
		if v > *m {
			*m, *at = v, i
		}
	}
	m, at := &s.MaxFunc, &s.MaxFuncAt
	up(&m.Bytes, &at.Bytes, f.Bytes)
	up(&m.Locals, &at.Locals, f.Locals)
	up(&m.Instrs, &at.Instrs, f.Instrs)
	up(&m.Branches, &at.Branches, f.Branches)
	up(&m.BrTargets, &at.BrTargets, f.BrTargets)
	up(&m.Depth, &at.Depth, f.Depth)
	up(&m.Calls, &at.Calls, f.Calls)
	up(&m.MemOps, &at.MemOps, f.MemOps)
	up(&m.Vars, &at.Vars, f.Vars)
	up(&m.Phis, &at.Phis, f.Phis)
	up(&m.Cost, &at.Cost, f.Cost)
}

// table adds a table's limits to the shape.
func (s *Shape) table(l Limits) {
	s.Tables++
	s.MaxTableMin = max(s.MaxTableMin, l.Min)
	if l.HasMax {
		s.MaxTableMax = max(s.MaxTableMax, l.Max)
	} else {
		s.UnboundedTable = true
	}
}

// elemSegment reads one element segment and returns its length.
func (r *reader) elemSegment(i uint64) uint64 {
	flags := r.u32()
	if flags > 7 {
		r.fail("element segment %d: flags %d", i, flags)
		return 0
	}
	if flags&3 == 2 { // active with an explicit table index
		r.u32()
	}
	if flags&1 == 0 { // active: an offset
		r.constExpr()
	}
	if flags&3 != 0 { // an element kind or a reference type
		r.byte1()
	}
	n := r.count()
	for k := uint32(0); k < n && r.err == nil; k++ {
		if flags&4 != 0 {
			r.constExpr()
		} else {
			r.u32()
		}
	}
	return uint64(n)
}

// ApplyCaps checks a module against caps and returns it with the maximum
// of every table lowered to caps.TableSize (a table without a maximum gets
// that one), so that table.grow fails past the cap as it does past a
// declared maximum, and a valid module keeps working. A module over a cap
// is an error wrapping ErrRefused (a *CapError); one this cannot parse, an
// error wrapping ErrMalformed. A module whose tables need no change is
// returned as it is.
func ApplyCaps(b []byte, caps Caps) ([]byte, error) {
	s, err := ModuleShape(b)
	if err != nil {
		return nil, err
	}
	if err := caps.Check(s); err != nil {
		return nil, err
	}
	if caps.TableSize == 0 || s.Tables == 0 || (!s.UnboundedTable && s.MaxTableMax <= caps.TableSize) {
		return b, nil
	}
	secs, err := Sections(b)
	if err != nil {
		return nil, err
	}
	out := append([]Section(nil), secs...)
	for i, sec := range secs {
		switch sec.ID {
		case SecTable:
			r := &reader{b: sec.Body}
			n := r.count()
			body := AppendUleb(nil, n)
			for k := uint32(0); k < n && r.err == nil; k++ {
				body = append(body, r.byte1())
				body = appendLimits(body, r.limits(), caps.TableSize)
			}
			if r.err != nil {
				return nil, r.err
			}
			out[i] = Section{ID: SecTable, Body: body, sizeLen: sec.sizeLen}
		case SecImport:
			body, err := capImportedTables(sec.Body, caps.TableSize)
			if err != nil {
				return nil, err
			}
			out[i] = Section{ID: SecImport, Body: body, sizeLen: sec.sizeLen}
		}
	}
	return Encode(out), nil
}

// capImportedTables rewrites an import section with the maximum of every
// imported table lowered to limit.
func capImportedTables(body []byte, limit uint64) ([]byte, error) {
	r := &reader{b: body}
	n := r.count()
	out := AppendUleb(make([]byte, 0, len(body)+8), n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		start := r.b
		r.name()
		r.name()
		kind := r.byte1()
		switch kind {
		case KindFunc:
			r.u32()
		case KindTable:
			r.byte1()
			head := start[:len(start)-len(r.b)]
			l := r.limits()
			if r.err == nil {
				out = append(out, head...)
				out = appendLimits(out, l, limit)
			}
			continue
		case KindMemory:
			r.limits()
		case KindGlobal:
			r.byte1()
			r.byte1()
		case kindTag:
			r.byte1()
			r.u32()
		default:
			r.fail("import %d: kind %d", i, kind)
		}
		out = append(out, start[:len(start)-len(r.b)]...)
	}
	return out, r.err
}

// appendLimits appends table limits with the maximum lowered to limit.
func appendLimits(b []byte, l Limits, limit uint64) []byte {
	if !l.HasMax || l.Max > limit {
		l.Max, l.HasMax = limit, true
	}
	flags := byte(1)
	if l.Shared {
		flags |= 2
	}
	if l.Is64 {
		flags |= 4
		return appendU64(appendU64(append(b, flags), l.Min), l.Max)
	}
	return AppendUleb(AppendUleb(append(b, flags), uint32(l.Min)), uint32(l.Max))
}

func appendU64(b []byte, v uint64) []byte {
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

// DefaultCaps are the caps wasmbox compiles modules under. See the package
// documentation of runtime for how they were chosen.
var DefaultCaps = Caps{
	Size:         64 << 20,
	Types:        1 << 16,
	TypeArity:    1000,
	Imports:      10_000,
	Functions:    100_000,
	Tables:       16,
	TableSize:    1 << 18,
	Memories:     1,
	Globals:      1 << 16,
	Exports:      100_000,
	ElemSegments: 10_000,
	ElemEntries:  1 << 18,
	DataSegments: 100_000,
	DataBytes:    32 << 20,
	CodeBytes:    32 << 20,
	Func: FuncShape{
		Bytes:     1 << 20,
		Locals:    50_000,
		Instrs:    512 << 10,
		Branches:  28_000,
		BrTargets: 48 << 10,
		Depth:     12_288,
		Calls:     16_384,
		MemOps:    128 << 10,
		Phis:      600_000,
		Cost:      512 << 20,
	},
	CustomBytes: 32 << 20,
}
