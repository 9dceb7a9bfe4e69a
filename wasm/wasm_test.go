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
	for _, name := range []string{"echo", "printf", "test", "xargs", "env", "date", "seq", "sha256sum"} {
		c, ok := Lookup(name)
		if !ok || c.Module != CoreutilsModule || c.AliasOf != "" {
			t.Errorf("Lookup(%q) = %+v, %v", name, c, ok)
		}
	}
	if c, ok := Lookup("["); !ok || c.AliasOf != "test" {
		t.Errorf(`Lookup("[") = %+v, %v; want an alias of test`, c, ok)
	}
	if _, ok := Lookup("no-such-command"); ok {
		t.Error("Lookup found a command that does not exist")
	}
	cs[0].Name = "changed"
	if Commands()[0].Name == "changed" {
		t.Error("Commands() returned the shared slice")
	}
	if b, ok := Module(CoreutilsModule); !ok || len(b) == 0 {
		t.Error("Module(coreutils) is empty")
	}
	if _, ok := Module("nope"); ok {
		t.Error("Module(nope) found something")
	}
}

// TestDataSegmentsMerged proves the committed module went through
// tools/wasmopt: the Go linker alone emits tens of thousands of segments.
func TestDataSegmentsMerged(t *testing.T) {
	mod := Coreutils()
	if string(mod[:4]) != "\x00asm" {
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
