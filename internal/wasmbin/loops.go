package wasmbin

import "fmt"

// Fuel is how many loop iterations an instrumented guest runs between two
// calls to the host (see InstrumentLoops).
const Fuel = 1 << 16

// StraightLine is how many instructions InstrumentLoops lets run between
// two checks of the fuel in code without loops (see InstrumentLoops).
const StraightLine = 1000

// ExportFuel is the name under which InstrumentLoops exports the fuel
// global, so that the host can spend a running guest's fuel: stored as 1,
// the fuel makes the guest's next check call sched_yield (see
// InstrumentLoops). A module that exports the name itself is refused.
const ExportFuel = "wasmbox.fuel"

// The import InstrumentLoops calls. WASI's sched_yield takes nothing and
// returns an errno; every Go wasip1 program imports it.
const (
	yieldModule = "wasi_snapshot_preview1"
	yieldName   = "sched_yield"
)

// kindTag is the import kind of a tag (the exception handling proposal).
const kindTag = 4

// InstrumentLoops returns the module with fuel metering at the head of
// every loop: a new mutable i32 global, the fuel, and after every loop
// instruction
//
//	global.get $fuel
//	i32.const 1
//	i32.sub
//	global.set $fuel
//	global.get $fuel
//	i32.eqz
//	if
//	  call $sched_yield   ;; the host: ends the guest if its context is done
//	  drop
//	  i32.const Fuel
//	  global.set $fuel
//	end
//
// so that a guest calls the host at least every Fuel loop iterations. The
// same check goes at the entry of every function, unless its body enters a
// loop unconditionally first (only blocks and straight-line code before
// it, as in most of Go's functions, which so pay nothing more): recursion
// needs no loop, a call chain bounded by the stack can still take
// exponential time (f calling itself twice), and a function may call a
// leaf thousands of times in straight-line code, from a loop. And it goes
// after every StraightLine instructions of code without one (counted in
// the order of the code, whatever its branches): one loop iteration, or one
// call, then spends at most about StraightLine instructions per unit of
// fuel, whatever its body. So a guest runs at most about Fuel *
// StraightLine instructions without a host call. There the host can end
// it (wasmbox's sched_yield does when the call's context is done), and the
// Go scheduler can preempt the goroutine that runs it: compiled guest code
// is not preemptible, and a garbage collection of the host waits for every
// goroutine to reach a preemption point.
//
// A loop iteration that runs one bulk instruction (memory.fill,
// memory.copy, memory.init, table.fill, table.copy, table.init) can take
// milliseconds: 4 GiB filled at once. Counted as one iteration, a loop of
// them would run Fuel of them, minutes, before the host could end it, and
// the host's garbage collection would wait for it as long. So each such
// instruction first spends fuel for its size, one unit and one more per 64
// bytes (per 8 elements of a table: a small one costs ~150 ns, more than a
// loop iteration, so none is free), from a second new global that holds
// the size:
//
//	global.set $n        ;; the size, from the top of the stack
//	global.get $fuel
//	global.get $n
//	i32.const 6          ;; 3 for a table instruction
//	i32.shr_u
//	i32.sub
//	i32.const 1
//	i32.sub
//	global.set $fuel
//	global.get $fuel
//	i32.const 0
//	i32.le_s
//	if
//	  call $sched_yield
//	  drop
//	  i32.const Fuel
//	  global.set $fuel
//	end
//	global.get $n        ;; the size back
//
// (the fuel stays within [1, Fuel] after either sequence, so the loops'
// check, which yields when the fuel reaches 0, still does). The size
// global is added only to a module that has such an instruction.
//
// The fuel counts instructions, not time: a loop iteration of cache
// misses, or of host calls that each take long, can take far longer than
// another of the same length. So the fuel global is exported as
// ExportFuel, and a host that stores 1 in it while the guest runs gets a
// call of sched_yield at the guest's next check, within StraightLine
// instructions. The store races with the guest's own decrement (a
// read-modify-write of the same global), which can overwrite it: a host
// repeats it until the guest yields. It must store 1, not 0: the checks
// yield when a decrement reaches 0, and 0 decremented is -1.
//
// wazero's own way (RuntimeConfig.WithCloseOnContextDone) leaves the
// compiled code at every loop header for Go, to check whether the module
// was closed; loop-heavy code (a Go program branches to its function's loop
// at every jump) runs several times slower. Decrementing a counter costs
// almost nothing.
//
// ok is false, and the error nil, for a module this does not apply to: it
// does not import wasi_snapshot_preview1.sched_yield as () -> i32, or its
// code uses an instruction this decoder does not know (exception handling,
// a prefix it does not decode). Run such a module with wazero's check. A
// malformed module is an error.
func InstrumentLoops(b []byte) (out []byte, ok bool, err error) {
	secs, err := Sections(b)
	if err != nil {
		return nil, false, err
	}
	yield, found, err := yieldImport(secs)
	if err != nil || !found {
		return nil, false, err
	}
	globals, err := Globals(secs)
	if err != nil {
		return nil, false, err
	}
	imported, _, err := importCounts(secs)
	if err != nil {
		return nil, false, err
	}
	fuel := imported + uint32(len(globals))
	size := fuel + 1
	// The fuel and size globals take the first indices past the module's
	// own: a module that names them (invalid as given) would be valid
	// after the rewrite, and could set its own fuel and never yield.
	var exps []Export
	if xi := Find(secs, SecExport); xi >= 0 {
		if exps, err = Exports(secs[xi].Body); err != nil {
			return nil, false, err
		}
		for _, e := range exps {
			if e.Kind == KindGlobal && e.Index >= fuel {
				return nil, false, fmt.Errorf("%w: export %q of global %d, past the module's %d", ErrMalformed, e.Name, e.Index, fuel)
			}
			if e.Name == ExportFuel {
				return nil, false, fmt.Errorf("%w: it exports %q, the name of the fuel global", ErrRefused, ExportFuel)
			}
		}
	}
	ci := Find(secs, SecCode)
	var code []byte
	var bulk bool
	if ci >= 0 {
		var known bool
		code, known, bulk, err = instrumentCode(secs[ci].Body, meters{
			globals: fuel,
			loop:    meter(fuel, yield),
			memory:  charge(fuel, size, yield, memoryShift),
			table:   charge(fuel, size, yield, tableShift),
		})
		if err != nil || !known {
			return nil, false, err
		}
	}

	// The fuel global, after the module's own, and the size global.
	added := uint32(1)
	if bulk {
		added = 2
	}
	gbody := AppendUleb(nil, uint32(len(globals))+added)
	if gi := Find(secs, SecGlobal); gi >= 0 {
		r := &reader{b: secs[gi].Body}
		r.count()
		gbody = append(gbody, r.b...)
	}
	gbody = append(gbody, 0x7f, 1, opI32Const)
	gbody = AppendSleb(gbody, Fuel)
	gbody = append(gbody, opEnd)
	if bulk {
		gbody = append(gbody, 0x7f, 1, opI32Const, 0, opEnd)
	}
	secs = replaceSection(secs, SecGlobal, gbody)
	// The fuel global, exported for the host (see ExportFuel).
	xbody := AppendUleb(nil, uint32(len(exps))+1)
	for _, e := range exps {
		xbody = AppendExport(xbody, e)
	}
	xbody = AppendExport(xbody, Export{Name: ExportFuel, Kind: KindGlobal, Index: fuel})
	secs = replaceSection(secs, SecExport, xbody)
	if ci >= 0 {
		secs = replaceSection(secs, SecCode, code)
	}
	return Encode(secs), true, nil
}

// meter is the code InstrumentLoops puts after every loop instruction.
func meter(fuel, yield uint32) []byte {
	m := []byte{opGlobal}
	m = AppendUleb(m, fuel)
	m = append(m, opI32Const, 1, 0x6b /* i32.sub */, 0x24 /* global.set */)
	m = AppendUleb(m, fuel)
	m = append(m, opGlobal)
	m = AppendUleb(m, fuel)
	m = append(m, 0x45 /* i32.eqz */, 0x04, 0x40 /* if */, 0x10 /* call */)
	m = AppendUleb(m, yield)
	m = append(m, 0x1a /* drop */, opI32Const)
	m = AppendSleb(m, Fuel)
	m = append(m, 0x24 /* global.set */)
	m = AppendUleb(m, fuel)
	return append(m, opEnd)
}

// The fuel a bulk instruction spends: its size shifted right by these
// (one unit per 64 bytes of memory, per 8 elements of a table).
const (
	memoryShift = 6
	tableShift  = 3
)

// charge is the code InstrumentLoops puts before every bulk instruction:
// fuel spent for the size on the top of the stack, which it leaves there.
func charge(fuel, size, yield uint32, shift byte) []byte {
	m := []byte{0x24 /* global.set */}
	m = AppendUleb(m, size)
	m = append(m, opGlobal)
	m = AppendUleb(m, fuel)
	m = append(m, opGlobal)
	m = AppendUleb(m, size)
	m = append(m, opI32Const, shift, 0x76 /* i32.shr_u */, 0x6b /* i32.sub */, opI32Const, 1, 0x6b /* i32.sub */, 0x24 /* global.set */)
	m = AppendUleb(m, fuel)
	m = append(m, opGlobal)
	m = AppendUleb(m, fuel)
	m = append(m, opI32Const, 0, 0x4c /* i32.le_s */, 0x04, 0x40 /* if */, 0x10 /* call */)
	m = AppendUleb(m, yield)
	m = append(m, 0x1a /* drop */, opI32Const)
	m = AppendSleb(m, Fuel)
	m = append(m, 0x24 /* global.set */)
	m = AppendUleb(m, fuel)
	m = append(m, opEnd, opGlobal)
	return AppendUleb(m, size)
}

// meters are the sequences instrumentFunc inserts: after every loop, and
// before every bulk instruction of memory and of tables.
type meters struct {
	globals             uint32 // the module's own globals: the indices code may name
	loop, memory, table []byte
}

// bulkOf says whether the instruction at code (after its 0xFC prefix) is
// a bulk instruction whose cost grows with its size, and of what.
func bulkOf(code []byte) (memory, table bool) {
	r := &reader{b: code}
	sub := r.u32() // LEB128, which need not be the shortest encoding
	if r.err != nil {
		return false, false
	}
	switch sub {
	case 8, 10, 11: // memory.init, memory.copy, memory.fill
		return true, false
	case 12, 14, 17: // table.init, table.copy, table.fill
		return false, true
	}
	return false, false
}

// yieldImport finds the function index of the sched_yield import, with
// the type () -> i32.
func yieldImport(secs []Section) (idx uint32, found bool, err error) {
	ims, err := Imports(secs)
	if err != nil {
		return 0, false, err
	}
	var funcs uint32
	typeIdx := int64(-1)
	for _, im := range ims {
		switch im.Kind {
		case KindFunc:
			if im.Module == yieldModule && im.Name == yieldName && typeIdx < 0 {
				idx, typeIdx = funcs, int64(im.Type)
			}
			funcs++
		case kindTag:
			// Exception handling: a valid module this does not apply
			// to, not a malformed one.
			return 0, false, nil
		}
	}
	if typeIdx < 0 {
		return 0, false, nil
	}
	ti := Find(secs, SecType)
	if ti < 0 {
		return 0, false, fmt.Errorf("%w: an import refers to a missing type section", ErrMalformed)
	}
	tr := &reader{b: secs[ti].Body}
	nt := tr.count()
	for i := uint32(0); i < nt && tr.err == nil; i++ {
		if tr.byte1() != 0x60 {
			return 0, false, nil // not a plain function type (GC proposal)
		}
		params := tr.bytes(tr.count())
		results := tr.bytes(tr.count())
		if int64(i) == typeIdx {
			return idx, tr.err == nil && len(params) == 0 && len(results) == 1 && results[0] == 0x7f, tr.err
		}
	}
	if tr.err != nil {
		return 0, false, tr.err
	}
	return 0, false, fmt.Errorf("%w: import of type %d past the type section", ErrMalformed, typeIdx)
}

// sectionOrder is the position of each known section id in a module.
var sectionOrder = map[byte]int{
	SecType: 1, SecImport: 2, SecFunction: 3, SecTable: 4, SecMemory: 5, 13 /* tag */ : 6,
	SecGlobal: 7, SecExport: 8, SecStart: 9, SecElement: 10, SecDataCount: 11, SecCode: 12, SecData: 13,
}

// replaceSection sets the body of the section id, adding the section at
// its place in the order when the module has none.
func replaceSection(secs []Section, id byte, body []byte) []Section {
	out := append([]Section(nil), secs...)
	if i := Find(out, id); i >= 0 {
		out[i] = Section{ID: id, Body: body, sizeLen: out[i].sizeLen}
		return out
	}
	at := len(out)
	for i, s := range out {
		if o, known := sectionOrder[s.ID]; known && s.ID != SecCustom && o > sectionOrder[id] {
			at = i
			break
		}
	}
	return append(out[:at], append([]Section{{ID: id, Body: body}}, out[at:]...)...)
}

// instrumentCode rewrites a code section body, inserting ms.loop after
// every loop's block type and the charges before bulk instructions; bulk
// says whether it met any.
func instrumentCode(body []byte, ms meters) (out []byte, known, bulk bool, err error) {
	out, known, err = rewriteCode(body, len(body)/8, func(out, fbody []byte) ([]byte, bool, error) {
		out, b, known, err := instrumentFunc(out, fbody, ms)
		bulk = bulk || b
		return out, known, err
	})
	return out, known, bulk, err
}

// rewriteCode rewrites each function body of a code section body with fn,
// which appends the new body to out (known false: an instruction it does
// not decode). grow is a guess of how many bytes the rewrite adds.
func rewriteCode(body []byte, grow int, fn func(out, fbody []byte) ([]byte, bool, error)) (out []byte, known bool, err error) {
	r := &reader{b: body}
	n := r.count()
	out = AppendUleb(make([]byte, 0, len(body)+grow), n)
	var f []byte
	for i := uint32(0); i < n && r.err == nil; i++ {
		fbody := r.bytes(r.u32())
		if r.err != nil {
			break
		}
		f, known, err = fn(f[:0], fbody)
		if err != nil {
			return nil, false, fmt.Errorf("function body %d: %w", i, err)
		}
		if !known {
			return nil, false, nil
		}
		out = AppendUleb(out, uint32(len(f)))
		out = append(out, f...)
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes after the last function body", len(r.b))
	}
	if r.err != nil {
		return nil, false, r.err
	}
	return out, true, nil
}

// instrumentFunc copies one function body (locals, then code) to out with
// the meter after every loop and the charge before every bulk
// instruction (bulk: there was one).
func instrumentFunc(out, body []byte, ms meters) (_ []byte, bulk, known bool, err error) {
	r := &reader{b: body}
	for n, i := r.count(), uint32(0); i < n && r.err == nil; i++ {
		r.u32()   // count
		r.byte1() // type
	}
	if r.err != nil {
		return nil, false, false, r.err
	}
	out = append(out, body[:len(body)-len(r.b)]...)
	loopFirst, known := scanLoopFirst(r.b)
	if !known {
		return nil, false, false, nil
	}
	if !loopFirst {
		out = append(out, ms.loop...)
	}
	since := 0 // a bound on the instructions any path ran since its last check
	// dead: the code here never runs (after br, br_table, return or
	// unreachable, to the end of its block): not counted.
	dead := false
	// frames: the enclosing blocks, ifs and loops (and the body): since at
	// their start, the largest since at a branch to their end, and whether
	// they start in dead code.
	type frame struct {
		op           byte
		entry, brMax int
		dead         bool
	}
	frames := []frame{{op: 0}}
	branch := func(l uint32) {
		if !dead && int(l) < len(frames) {
			f := &frames[len(frames)-1-int(l)]
			f.brMax = max(f.brMax, since)
		}
	}
	for len(r.b) > 0 && r.err == nil {
		start := r.b
		op := r.byte1()
		known := skipImmediates(r, op)
		if r.err != nil {
			break
		}
		if !known {
			return nil, false, false, nil
		}
		if op == 0x23 || op == 0x24 { // global.get, global.set
			g := &reader{b: start[1:]}
			if idx := g.u32(); idx >= ms.globals {
				return nil, false, false, fmt.Errorf("%w: global %d, past the module's %d", ErrMalformed, idx, ms.globals)
			}
		}
		if !dead {
			if since >= StraightLine {
				out, since = append(out, ms.loop...), 0
			}
			since++
		}
		if op == 0xfc {
			switch mem, tab := bulkOf(start[1:]); {
			case mem:
				out, bulk = append(out, ms.memory...), true
			case tab:
				out, bulk = append(out, ms.table...), true
			}
		}
		out = append(out, start[:len(start)-len(r.b)]...)
		imm := &reader{b: start[1:]}
		switch op {
		case 0x02, 0x04: // block, if
			frames = append(frames, frame{op: op, entry: since, dead: dead})
		case 0x03: // loop
			frames = append(frames, frame{op: op, dead: dead})
			out, since = append(out, ms.loop...), 0
		case 0x05: // else: the then arm's end reaches the if's end
			f := &frames[len(frames)-1]
			if !f.dead {
				if !dead {
					f.brMax = max(f.brMax, since)
				}
				f.op, since, dead = 0x02, f.entry, false
			}
		case 0x0b: // end
			f := frames[len(frames)-1]
			if len(frames) > 1 {
				frames = frames[:len(frames)-1]
			}
			switch {
			case f.dead || f.op == 0x03:
				// Still dead; or a loop's end, which only its fall-through
				// reaches (a branch to a loop goes to its check).
			case f.op == 0x02 || f.op == 0x04:
				n := f.brMax
				if !dead {
					n = max(n, since)
				}
				if f.op == 0x04 { // no else: the false path goes straight to the end
					n = max(n, f.entry)
				}
				since, dead = n, false
			}
		case 0x0c: // br
			branch(imm.u32())
			dead = true
		case 0x0d: // br_if
			branch(imm.u32())
		case 0x0e: // br_table
			for n, i := imm.count(), uint32(0); i <= n && imm.err == nil; i++ {
				branch(imm.u32())
			}
			dead = true
		case 0x00, 0x0f, 0x12, 0x13: // unreachable, return, return_call(_indirect)
			dead = true
		}
	}
	return out, bulk, true, r.err
}

// scanLoopFirst reports whether code (a function's instructions) enters
// a loop before any branch, call or other control instruction but block.
// known is false for code with an instruction skipImmediates does not
// know; a malformed body is reported by the caller's own pass.
func scanLoopFirst(code []byte) (loopFirst, known bool) {
	r := &reader{b: code}
	prefix := true
	for len(r.b) > 0 && r.err == nil {
		op := r.byte1()
		if prefix {
			// Straight-line code and blocks may come before the loop;
			// a branch, a call, if/else/end or return ends the prefix.
			switch {
			case op == 0x03:
				loopFirst, prefix = true, false
			case op == 0x00 || (op >= 0x04 && op <= 0x13):
				prefix = false
			}
		}
		if !skipImmediates(r, op) {
			return false, false
		}
	}
	return loopFirst, true
}

// skipImmediates reads the immediates of the instruction op. It returns
// false for an instruction it does not know.
func skipImmediates(r *reader, op byte) bool {
	switch {
	case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
		r.blockType()
	case op == 0x0c || op == 0x0d: // br, br_if
		r.u32()
	case op == 0x0e: // br_table
		for n, i := r.count(), uint32(0); i < n && r.err == nil; i++ {
			r.u32()
		}
		r.u32()
	case op == 0x10 || op == 0x12: // call, return_call
		r.u32()
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
		r.u32()
		r.u32()
	case op == 0x1c: // select t*
		for n, i := r.count(), uint32(0); i < n && r.err == nil; i++ {
			r.byte1()
		}
	case op >= 0x20 && op <= 0x26: // local.*, global.*, table.get/set
		r.u32()
	case op >= 0x28 && op <= 0x3e: // loads and stores
		r.memarg()
	case op == 0x3f || op == 0x40: // memory.size, memory.grow
		r.u32()
	case op == opI32Const:
		r.u32v()
	case op == opI64Const:
		r.u64v()
	case op == opF32Const:
		r.bytes(4)
	case op == opF64Const:
		r.bytes(8)
	case op == opRefNull:
		r.byte1()
	case op == opRefFunc:
		r.u32()
	case op == 0xfc:
		return r.prefixFC()
	case op == 0xfd:
		return r.prefixFD()
	case op == 0xfe:
		return r.prefixFE()
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0b || op == 0x0f || op == 0x1a || op == 0x1b:
		// unreachable, nop, else, end, return, drop, select
	case op >= 0x45 && op <= 0xc4: // numeric instructions
	case op == 0xd1: // ref.is_null
	default:
		return false // exception handling, GC and other proposals
	}
	return true
}

func (r *reader) blockType() {
	if len(r.b) == 0 {
		r.fail("truncated block type")
		return
	}
	switch c := r.b[0]; {
	case c == 0x40 || (c >= 0x6f && c <= 0x7f): // empty or a value type
		r.b = r.b[1:]
	default: // a type index, as a signed 33-bit LEB128
		r.skipLeb(5)
	}
}

func (r *reader) memarg() {
	align := r.u32()
	if align&0x40 != 0 { // multi-memory: a memory index follows
		r.u32()
	}
	r.u64v() // offset (memory64 allows 64 bits)
}

// prefixFC: saturating truncation, bulk memory and table instructions.
func (r *reader) prefixFC() bool {
	switch sub := r.u32(); {
	case sub <= 7: // trunc_sat
	case sub == 8: // memory.init data mem
		r.u32()
		r.u32()
	case sub == 9: // data.drop
		r.u32()
	case sub == 10: // memory.copy mem mem
		r.u32()
		r.u32()
	case sub == 11: // memory.fill mem
		r.u32()
	case sub == 12 || sub == 14: // table.init elem table, table.copy t t
		r.u32()
		r.u32()
	case sub == 13 || sub == 15 || sub == 16 || sub == 17: // elem.drop, table.grow/size/fill
		r.u32()
	default:
		return false
	}
	return true
}

// prefixFD: fixed-width SIMD.
func (r *reader) prefixFD() bool {
	switch sub := r.u32(); {
	case sub <= 11 || sub == 92 || sub == 93: // v128 loads and stores
		r.memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract/replace lane
		r.byte1()
	case sub >= 84 && sub <= 91: // load/store lane
		r.memarg()
		r.byte1()
	case sub <= 275: // every other SIMD instruction has no immediate
	default:
		return false
	}
	return true
}

// prefixFE: threads (atomic memory accesses, wait/notify, fence).
func (r *reader) prefixFE() bool {
	switch sub := r.u32(); {
	case sub == 3: // atomic.fence
		r.byte1()
	case sub <= 2 || (sub >= 0x10 && sub <= 0x4e): // wait/notify and atomic accesses
		r.memarg()
	default:
		return false
	}
	return true
}
