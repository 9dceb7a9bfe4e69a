package amd64

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm/binary"
)

// compileDispatch compiles mod's function 0, a loop whose header has a fuel
// check, and returns the machine, its listing and the header's label.
func compileDispatch(t *testing.T, mod runtimetest.Module) (mach *machine, listing string, header int) {
	t.Helper()
	m, err := binary.DecodeModule(mod.Encode(), api.CoreFeaturesV2, 65536, false, false, false)
	if err != nil {
		t.Fatal(err)
	}
	mach = compileOne(t, m, 0)
	listing = mach.Format()
	h := regexp.MustCompile(`(?m)^L(\d+) \(SSA Block: blk\d+\):\n\tfuel_check`).FindStringSubmatch(listing)
	if h == nil {
		t.Fatalf("no loop header with a fuel check:\n%s", listing)
	}
	header, _ = strconv.Atoi(h[1])
	return mach, listing, header
}

// wasmbox patch 23: the handlers of an interpreter's loop (runtimetest's
// bytecode machine: a loop header with a fuel check, an opcode load and a
// br_table, six handlers that branch back) end with a copy of the header,
// not a jump to it: no `jmp` to the header's label is left, and each
// handler has an indirect jump of its own. Upstream had one indirect jump
// and a jmp back to it from every handler.
func TestHandlersDispatchThemselves(t *testing.T) {
	_, listing, header := compileDispatch(t, runtimetest.BytecodeMachine())
	if jumps := regexp.MustCompile(`(?m)^\tjmp L`+strconv.Itoa(header)+`$`).FindAllString(listing, -1); len(jumps) > 0 {
		t.Errorf("%d jumps to the dispatch L%d, want none:\n%s", len(jumps), header, listing)
	}
	// The header's own, the five handlers that loop (halt returns), and
	// the taken side of jnz.
	if n := strings.Count(listing, "\tfuel_check"); n < 7 {
		t.Errorf("%d fuel checks, want at least 7 (the header and a copy per branch back):\n%s", n, listing)
	}
	if n := len(regexp.MustCompile(`(?m)^\tjmp %\w+$`).FindAllString(listing, -1)); n < 7 {
		t.Errorf("%d indirect jumps, want at least 7:\n%s", n, listing)
	}
}

// A br_table's dispatch is copied at most dispatchMaxCopies times, and no
// more instructions are copied into a function than a quarter of it plus
// dispatchBudgetFloor: a loop over k handlers that each add work and
// branch back, with small handlers (the budget binds) and large ones (the
// copies' bound binds). The function's instructions after the copies, less
// what they added, are those before.
func TestDispatchCopiesBounded(t *testing.T) {
	for _, c := range []struct {
		name          string
		handlers, ops int
		bound         string
	}{
		{"budget", 2000, 1, "budget"},
		{"copies", 700, 20, "copies"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cat := runtimetest.Cat
			i32 := runtimetest.I32Const
			var body []byte
			body = append(body, runtimetest.OpLoop, runtimetest.OpBlockVoid)
			body = append(body, runtimetest.FuelCheck(1000)...)
			for range c.handlers {
				body = append(body, runtimetest.OpBlock, runtimetest.OpBlockVoid)
			}
			table := runtimetest.ULEB([]byte{runtimetest.OpLocalGet, 0, runtimetest.OpBrTable}, uint64(c.handlers))
			for k := range c.handlers {
				table = runtimetest.ULEB(table, uint64(k))
			}
			body = runtimetest.ULEB(append(body, table...), uint64(c.handlers-1))
			for k := range c.handlers {
				body = append(body, runtimetest.OpEnd)
				for j := range c.ops {
					body = cat(body, []byte{runtimetest.OpLocalGet, 1}, i32(int32(k*c.ops+j)), []byte{runtimetest.OpI32Add, runtimetest.OpLocalSet, 1})
				}
				body = runtimetest.ULEB(append(body, runtimetest.OpBr), uint64(c.handlers-1-k))
			}
			body = append(body, runtimetest.OpEnd, runtimetest.OpUnreachable)
			mod := runtimetest.Module{
				Imports: []runtimetest.Import{{Module: "env", Name: "yield", Type: runtimetest.FuncType{Results: []byte{runtimetest.I32}}}},
				Globals: []int32{1000},
				Funcs: []runtimetest.Func{{
					Type:   runtimetest.FuncType{Params: []byte{runtimetest.I32}, Results: []byte{runtimetest.I32}},
					Locals: []byte{runtimetest.I32},
					Body:   body,
				}},
			}
			mach, _, header := compileDispatch(t, mod)
			after, copies := 0, -1 // the header's own fuel check is not a copy
			for cur := mach.rootInstr; cur != nil; cur = cur.next {
				after++
				if cur.kind == fuelCheck {
					copies++
				}
			}
			_, _, n := mach.dispatchBody(mach.labelPositionPool.Get(header))
			if n == 0 {
				t.Fatal("the header is not a dispatch")
			}
			before := after - copies*(n-1) // each copy took a jmp's place
			budget := before>>dispatchBudgetShift + dispatchBudgetFloor
			t.Logf("%d instructions, %d copies of %d", before, copies, n)
			if copies > dispatchMaxCopies || copies*n > budget {
				t.Errorf("%d copies of %d instructions into %d: over %d copies or %d instructions", copies, n, before, dispatchMaxCopies, budget)
			}
			switch c.bound {
			case "budget":
				if copies == 0 || copies*n <= budget-n {
					t.Errorf("%d copies of %d: the budget %d does not bind", copies, n, budget)
				}
			case "copies":
				if copies != dispatchMaxCopies {
					t.Errorf("%d copies, want %d", copies, dispatchMaxCopies)
				}
			}
		})
	}
}

// wasmbox patch 23, Go's shape: runtimetest's state machine dispatches on
// the state its branches back set, as a Go function does on PC_B, and
// those jumps stay jumps to the header (copies there grow Go's code by a
// tenth): six jmps to the header, its fuel check and its indirect jump the
// only ones. The bytecode machine's header loads the opcode itself, and
// is copied (TestHandlersDispatchThemselves).
func TestDispatchOnSetIndexKeepsItsJumps(t *testing.T) {
	_, listing, header := compileDispatch(t, runtimetest.StateMachine())
	if jumps := regexp.MustCompile(`(?m)^\tjmp L`+strconv.Itoa(header)+`$`).FindAllString(listing, -1); len(jumps) != 6 {
		t.Errorf("%d jumps to the dispatch L%d, want 6:\n%s", len(jumps), header, listing)
	}
	if n := strings.Count(listing, "\tfuel_check"); n != 1 {
		t.Errorf("%d fuel checks, want 1:\n%s", n, listing)
	}
	if n := len(regexp.MustCompile(`(?m)^\tjmp %\w+$`).FindAllString(listing, -1)); n != 1 {
		t.Errorf("%d indirect jumps, want 1:\n%s", n, listing)
	}
}
