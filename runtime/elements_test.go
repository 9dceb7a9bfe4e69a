package runtime

import (
	"context"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
)

// uleb appends v as unsigned LEB128.
func uleb(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func section(id byte, content []byte) []byte {
	return append(uleb([]byte{id}, uint32(len(content))), content...)
}

// elementsModule is a module with one imported function (index 0, "env"
// "imp", returning 7) and n local functions (function i+1 returns 1000+i),
// a funcref table filled by one active segment of expressions, and an
// export call(i) = call_indirect of table[i]. entries are the segment's
// expressions.
func elementsModule(n int, entries [][]byte) []byte {
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	// Types: 0 () -> i32, 1 (i32) -> i32.
	m = append(m, section(1, []byte{2, 0x60, 0, 1, 0x7f, 0x60, 1, 0x7f, 1, 0x7f})...)
	m = append(m, section(2, []byte{1, 3, 'e', 'n', 'v', 3, 'i', 'm', 'p', 0, 0})...)
	funcs := uleb(nil, uint32(n+1))
	for i := 0; i < n; i++ {
		funcs = append(funcs, 0)
	}
	m = append(m, section(3, append(funcs, 1))...)
	m = append(m, section(4, uleb([]byte{1, 0x70, 0}, uint32(len(entries))))...)
	m = append(m, section(7, []byte{1, 4, 'c', 'a', 'l', 'l', 0, byte(n + 1)})...) // n+1 < 128 here
	elem := []byte{1, 4, 0x41, 0, 0x0b}
	elem = uleb(elem, uint32(len(entries)))
	for _, e := range entries {
		elem = append(elem, e...)
	}
	m = append(m, section(9, elem)...)
	code := uleb(nil, uint32(n+1))
	for i := 0; i < n; i++ {
		body := append([]byte{0, 0x41}, sleb(int32(1000+i))...)
		body = append(body, 0x0b)
		code = append(uleb(code, uint32(len(body))), body...)
	}
	call := []byte{0, 0x20, 0, 0x11, 0, 0, 0x0b}
	code = append(uleb(code, uint32(len(call))), call...)
	return append(m, section(10, code)...)
}

func sleb(v int32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// TestElementSegmentRefs checks third_party/wazero's batch fill of element
// segments (PATCHES.md): a table filled from ref.func (one- and two-byte
// indexes, a padded index), ref.null and an imported function calls the
// right function at every slot, and a null slot traps.
func TestElementSegmentRefs(t *testing.T) {
	const n = 100 // local functions 1..100
	ctx := context.Background()
	for _, cfg := range []struct {
		name string
		cfg  wazero.RuntimeConfig
	}{{"compiler", wazero.NewRuntimeConfigCompiler()}, {"interpreter", wazero.NewRuntimeConfigInterpreter()}} {
		t.Run(cfg.name, func(t *testing.T) {
			// Slots: every local function in reverse order, then the
			// import, a null, a padded ref.func 1, and function 130 of a
			// bigger module below.
			var entries [][]byte
			var want []int32
			for i := n; i >= 1; i-- {
				entries = append(entries, append(uleb([]byte{0xd2}, uint32(i)), 0x0b))
				want = append(want, int32(1000+i-1))
			}
			entries = append(entries, []byte{0xd2, 0, 0x0b}, []byte{0xd0, 0x70, 0x0b}, []byte{0xd2, 0x81, 0x00, 0x0b})
			want = append(want, 7, -1, 1000)
			check(t, ctx, cfg.cfg, elementsModule(n, entries), want)
		})
	}
	// Indexes of two LEB bytes (>= 128), in a module of 200 functions.
	t.Run("two-byte indexes", func(t *testing.T) {
		const big = 200
		var entries [][]byte
		var want []int32
		for _, i := range []int{130, 1, 199, 128, 127} {
			entries = append(entries, append(uleb([]byte{0xd2}, uint32(i)), 0x0b))
			want = append(want, int32(1000+i-1))
		}
		check(t, ctx, wazero.NewRuntimeConfigCompiler(), elementsModuleBig(big, entries), want)
	})
}

// elementsModuleBig is elementsModule with the export's index encoded for
// any n.
func elementsModuleBig(n int, entries [][]byte) []byte {
	m := elementsModule(n, entries)
	// Re-encode the export section: find it by its known prefix.
	old := section(7, []byte{1, 4, 'c', 'a', 'l', 'l', 0, byte(n + 1)})
	exp := section(7, uleb([]byte{1, 4, 'c', 'a', 'l', 'l', 0}, uint32(n+1)))
	for i := 0; i+len(old) <= len(m); i++ {
		if string(m[i:i+len(old)]) == string(old) {
			return append(append(append([]byte(nil), m[:i]...), exp...), m[i+len(old):]...)
		}
	}
	panic("no export section")
}

func check(t *testing.T, ctx context.Context, cfg wazero.RuntimeConfig, bin []byte, want []int32) {
	t.Helper()
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	defer r.Close(ctx)
	if _, err := r.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithFunc(func() int32 { return 7 }).Export("imp").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ { // a second instance from the same compiled code
		mod, err := r.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			t.Fatal(err)
		}
		call := mod.ExportedFunction("call")
		for i, w := range want {
			res, err := call.Call(ctx, api.EncodeI32(int32(i)))
			switch {
			case w == -1:
				if err == nil {
					t.Fatalf("slot %d (null): got %v, want a trap", i, res)
				}
			case err != nil:
				t.Fatalf("slot %d: %v", i, err)
			case int32(res[0]) != w:
				t.Fatalf("slot %d: got %d, want %d", i, int32(res[0]), w)
			}
		}
		mod.Close(ctx)
	}
}
