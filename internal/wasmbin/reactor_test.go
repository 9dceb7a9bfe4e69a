package wasmbin

import (
	"bytes"
	"context"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
)

func TestPrepareReactor(t *testing.T) {
	p := newReactorParts()
	r, ok, err := PrepareReactor(p.module())
	if err != nil || !ok {
		t.Fatalf("PrepareReactor = %v, %v", ok, err)
	}
	wantSegs := []Segment{{16, []byte("hello")}, {1000, []byte("world")}}
	wantGlobals := []string{"wasmbox.global.1", "wasmbox.global.3", "wasmbox.global.4"}
	if !reflect.DeepEqual(r.Segments, wantSegs) || !reflect.DeepEqual(r.Globals, wantGlobals) || r.MinPages != 1 {
		t.Errorf("Reactor = segments %v, globals %q, %d pages; want %v, %q, 1", r.Segments, r.Globals, r.MinPages, wantSegs, wantGlobals)
	}

	// The binary is the module without its data section and with three
	// more exports; every other section is unchanged.
	secs, err := Sections(r.Binary)
	if err != nil {
		t.Fatal(err)
	}
	if Find(secs, SecData) >= 0 {
		t.Error("the data section is still there")
	}
	p.data = nil
	p.exports = &Section{ID: SecExport, Body: vec(
		export(ExportInitialize, KindFunc, 0),
		export(ExportRun, KindFunc, 1),
		export("memory", KindMemory, 0),
		export("wasmbox.global.1", KindGlobal, 1),
		export("wasmbox.global.3", KindGlobal, 3),
		export("wasmbox.global.4", KindGlobal, 4),
	)}
	if want := p.module(); !bytes.Equal(r.Binary, want) {
		t.Errorf("Binary = % x\nwant     % x", r.Binary, want)
	}

	// wazero accepts it, instantiation applies no data, and the globals
	// are exported mutable with their initial values.
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	if _, err := rt.InstantiateWithConfig(ctx, envModule(), wazero.NewModuleConfig().WithName("env")); err != nil {
		t.Fatal(err)
	}
	compiled, err := rt.CompileModule(ctx, r.Binary)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{
		"wasmbox.global.1": 42,
		"wasmbox.global.3": uint64(math.MaxUint64 - 6), // -7
		"wasmbox.global.4": math.Float64bits(1.5),
	}
	for _, name := range r.Globals {
		g, ok := mod.ExportedGlobal(name).(api.MutableGlobal)
		if !ok {
			t.Errorf("%s: %T, not an api.MutableGlobal", name, mod.ExportedGlobal(name))
			continue
		}
		if got := g.Get(); got != want[name] {
			t.Errorf("%s = %#x, want %#x", name, got, want[name])
		}
	}
	mem, ok := mod.Memory().Read(0, mod.Memory().Size())
	if !ok || len(mem) != 65536 || !bytes.Equal(mem, make([]byte, 65536)) {
		t.Errorf("memory of %d bytes is not all zero: data was applied", len(mem))
	}
	res, err := mod.ExportedFunction(ExportRun).Call(ctx)
	if err != nil || len(res) != 1 || res[0] != 3 {
		t.Errorf("wasmbox_run = %v, %v", res, err)
	}
}

// TestPrepareReactorNoData: a module without a data section is prepared
// with no segments; one without mutable globals exports none.
func TestPrepareReactorNoData(t *testing.T) {
	p := newReactorParts()
	p.data = nil
	p.globals = &Section{ID: SecGlobal, Body: vec(global(tI32, false, i32(1)))}
	r, ok, err := PrepareReactor(p.module())
	if err != nil || !ok || len(r.Segments) != 0 || len(r.Globals) != 0 {
		t.Fatalf("PrepareReactor = %+v, %v, %v", r, ok, err)
	}
}

func TestPrepareReactorNotApplicable(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *reactorParts)
	}{
		{"no exports", func(p *reactorParts) { p.exports = nil }},
		{"no _initialize", func(p *reactorParts) {
			p.exports.Body = vec(export(ExportRun, KindFunc, 1), export("memory", KindMemory, 0))
		}},
		{"no wasmbox_run", func(p *reactorParts) {
			p.exports.Body = vec(export(ExportInitialize, KindFunc, 0), export("run", KindFunc, 1))
		}},
		{"wasmbox_run not a function", func(p *reactorParts) {
			p.exports.Body = vec(export(ExportInitialize, KindFunc, 0), export(ExportRun, KindGlobal, 1))
		}},
		{"an export named like ours", func(p *reactorParts) {
			p.exports.Body = vec(export(ExportInitialize, KindFunc, 0), export(ExportRun, KindFunc, 1),
				export("wasmbox.global.1", KindGlobal, 1))
		}},
		{"data count section", func(p *reactorParts) { p.dataCount = &Section{ID: SecDataCount, Body: []byte{2}} }},
		{"start function", func(p *reactorParts) { p.start = &Section{ID: SecStart, Body: []byte{0}} }},
		{"no memory", func(p *reactorParts) { p.memory = nil }},
		{"imported memory", func(p *reactorParts) {
			p.imports.Body = vec(
				cat(str("env"), str("g"), []byte{KindGlobal, tI32, 0}),
				cat(str("env"), str("memory"), []byte{KindMemory}, memory(1, -1)))
		}},
		{"shared memory", func(p *reactorParts) { p.memory.Body = vec([]byte{3, 1, 1}) }},
		{"segment offset from a global", func(p *reactorParts) {
			p.data.Body = vec(seg(0, "a"), cat([]byte{0, opGlobal, 0, opEnd}, str("hi")))
		}},
		{"passive segment", func(p *reactorParts) { p.data.Body = vec(cat([]byte{1}, str("hi"))) }},
	}
	for _, tt := range tests {
		p := newReactorParts()
		tt.change(&p)
		r, ok, err := PrepareReactor(p.module())
		if err != nil || ok || r != nil {
			t.Errorf("%s: PrepareReactor = %v, %v, %v; want not ok and no error", tt.name, r, ok, err)
		}
	}
}

func TestPrepareReactorErrors(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *reactorParts)
	}{
		{"segment past the initial memory", func(p *reactorParts) { p.data.Body = vec(seg(65534, "abc")) }},
		{"segment at a negative offset", func(p *reactorParts) { p.data.Body = vec(seg(-1, "a")) }},
		{"malformed data", func(p *reactorParts) { p.data.Body = cat(vec(seg(0, "a")), []byte{0}) }},
		{"malformed exports", func(p *reactorParts) { p.exports.Body = []byte{1, 3, 'a'} }},
		{"malformed globals", func(p *reactorParts) { p.globals.Body = vec([]byte{tI32, 0, 0x20, 0, opEnd}) }},
		{"malformed memory", func(p *reactorParts) { p.memory.Body = []byte{1, 1, 1} }},
		{"malformed imports", func(p *reactorParts) { p.imports.Body = vec([]byte{1}) }},
	}
	for _, tt := range tests {
		p := newReactorParts()
		tt.change(&p)
		r, ok, err := PrepareReactor(p.module())
		if !errors.Is(err, ErrMalformed) || ok || r != nil {
			t.Errorf("%s: PrepareReactor = %v, %v, %v; want ErrMalformed", tt.name, r, ok, err)
		}
	}
	// Every cut of a good module is an error wrapping ErrMalformed, not
	// applicable, or (cut between sections, after the exports) prepared.
	good := newReactorParts().module()
	for i := range good {
		r, ok, err := PrepareReactor(good[:i])
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("cut at %d: %v", i, err)
		}
		if ok {
			if _, err := Sections(r.Binary); err != nil {
				t.Fatalf("cut at %d: Binary does not parse: %v", i, err)
			}
		}
	}
	// A segment that ends exactly at the end of the memory fits.
	p := newReactorParts()
	p.data.Body = vec(seg(65533, "abc"))
	if _, ok, err := PrepareReactor(p.module()); !ok || err != nil {
		t.Errorf("segment ending at the memory's end: %v, %v", ok, err)
	}
}

// TestPrepareReactorGoModule prepares the committed coreutils module (a Go
// wasip1 reactor) and compiles the result.
func TestPrepareReactorGoModule(t *testing.T) {
	b := readCoreutils(t)
	r, ok, err := PrepareReactor(b)
	if err != nil || !ok {
		t.Fatalf("PrepareReactor = %v, %v", ok, err)
	}
	if len(r.Segments) == 0 || len(r.Globals) == 0 || r.MinPages == 0 {
		t.Fatalf("%d segments, %d globals, %d pages", len(r.Segments), len(r.Globals), r.MinPages)
	}
	secs, err := Sections(r.Binary)
	if err != nil {
		t.Fatal(err)
	}
	if Find(secs, SecData) >= 0 {
		t.Error("the data section is still there")
	}
	exports, err := Exports(secs[Find(secs, SecExport)].Body)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]byte{}
	for _, e := range exports {
		names[e.Name] = e.Kind
	}
	for _, g := range r.Globals {
		if k, ok := names[g]; !ok || k != KindGlobal {
			t.Errorf("global export %s missing", g)
		}
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	compiled, err := rt.CompileModule(ctx, r.Binary)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range r.Globals {
		if _, ok := compiled.ExportedFunctions()[g]; ok {
			t.Errorf("%s exported as a function", g)
		}
	}
	if _, ok := compiled.ExportedFunctions()[ExportRun]; !ok {
		t.Errorf("%s not exported", ExportRun)
	}
}
