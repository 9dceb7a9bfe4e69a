package wasm

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestIndex(t *testing.T) {
	cs := Commands()
	if !slices.IsSortedFunc(cs, func(a, b Command) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("Commands() is not sorted")
	}
	for _, name := range []string{"echo", "printf", "test", "xargs", "env", "date", "seq", "sha1sum"} {
		c, ok := Lookup(name)
		if !ok || c.Module != CoreutilsModule || c.AliasOf != "" {
			t.Errorf("Lookup(%q) = %+v, %v", name, c, ok)
		}
	}
	if c, ok := Lookup("["); !ok || c.AliasOf != "test" {
		t.Errorf(`Lookup("[") = %+v, %v; want an alias of test`, c, ok)
	}
	// The heavy commands have modules of their own; grep, sed, awk, sort,
	// uniq, wc, cut, sha256sum, cat, tr, head, tail and tee are the C tools (one module, one
	// behaviour per name), gawk is GoAWK.
	for _, want := range []Command{
		{Name: "jq", Module: JQ16Module},
		{Name: "yq", Module: JQModule},
		{Name: "gawk", Module: AWKModule, AliasOf: "awk"},
		{Name: "awk", Module: MawkModule},
		{Name: "mawk", Module: MawkModule},
		{Name: "nawk", Module: MawkModule},
		{Name: "grep", Module: GrepModule},
		{Name: "egrep", Module: GrepModule},
		{Name: "fgrep", Module: GrepModule},
		{Name: "sed", Module: SedModule},
		{Name: "sort", Module: SortModule},
		{Name: "uniq", Module: UniqModule},
		{Name: "wc", Module: WcModule},
		{Name: "cut", Module: CutModule},
		{Name: "sha256sum", Module: Sha256sumModule},
		{Name: "cat", Module: CatModule},
		{Name: "tr", Module: TrModule},
		{Name: "head", Module: HeadModule},
		{Name: "tail", Module: TailModule},
		{Name: "tee", Module: TeeModule},
	} {
		if c, ok := Lookup(want.Name); !ok || c != want {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v", want.Name, c, ok, want)
		}
	}
	for i := 1; i < len(cs); i++ {
		if cs[i].Name == cs[i-1].Name {
			t.Errorf("%s is in the index twice (modules %s and %s)", cs[i].Name, cs[i-1].Module, cs[i].Module)
		}
	}
	perModule := map[string]int{}
	for _, c := range cs {
		if _, ok := Module(c.Module); !ok {
			t.Errorf("%s: module %q is not embedded", c.Name, c.Module)
		}
		perModule[c.Module]++
	}
	for _, m := range Modules() {
		if perModule[m] == 0 {
			t.Errorf("module %s provides no command", m)
		}
	}
	if _, ok := Lookup("no-such-command"); ok {
		t.Error("Lookup found a command that does not exist")
	}
	cs[0].Name = "changed"
	if Commands()[0].Name == "changed" {
		t.Error("Commands() returned the shared slice")
	}
	for _, m := range Modules() {
		if b, ok := Module(m); !ok || len(b) == 0 {
			t.Errorf("Module(%s) is empty", m)
		}
	}
	if _, ok := Module("nope"); ok {
		t.Error("Module(nope) found something")
	}
}

// TestDataSegmentsMerged proves the committed modules went through
// tools/wasmopt: the Go linker alone emits tens of thousands of segments.
func TestDataSegmentsMerged(t *testing.T) {
	for _, m := range GoModules() {
		t.Run(m, func(t *testing.T) {
			mod, _ := Module(m)
			checkSegmentsMerged(t, mod)
		})
	}
}

func checkSegmentsMerged(t *testing.T, mod []byte) {
	if len(mod) < 8 || string(mod[:4]) != "\x00asm" {
		t.Fatal("not a wasm module")
	}
	for p := 8; p < len(mod); {
		id := mod[p]
		size, n := binary.Uvarint(mod[p+1:])
		body := mod[p+1+n : p+1+n+int(size)]
		if id == 11 {
			count, _ := binary.Uvarint(body)
			if count > 64 {
				t.Fatalf("%d data segments: run make wasm (tools/wasmopt merges them)", count)
			}
			return
		}
		p += 1 + n + int(size)
	}
	t.Fatal("no data section")
}

func ExampleLookup() {
	c, _ := Lookup("[")
	fmt.Println(c.Name, c.Module, c.AliasOf)
	// Output: [ coreutils test
}

func ExampleModule() {
	c, _ := Lookup("gawk")
	bin, _ := Module(c.Module)
	fmt.Println(c.Module, c.AliasOf, string(bin[:4]) == "\x00asm")
	// Output: awk awk true
}
