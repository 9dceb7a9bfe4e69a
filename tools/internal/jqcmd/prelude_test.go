package jqcmd

import (
	"reflect"
	"testing"
)

// TestProgramFastPathMatchesWholeText checks that jqProgram (the prelude
// prepared once, the filter parsed alone) gives the same program as
// parsing prelude and filter as one text: the same text when printed, the
// same keys, and the same recorded key orders.
func TestProgramFastPathMatchesWholeText(t *testing.T) {
	for _, filter := range []string{
		".",
		".[] | {b: .x, a: .y}",
		"def f: {z: 1, y: 2}; [f, to_entries]",
		"with_entries(.value += 1) | paths",
		`reduce .[] as $x ({}; .[$x.k] = $x) | keys_unsorted`,
		"[recurse] | map(select(type == \"object\")) | add",
		"..|numbers",
		"{(.a): 1, b: 2}",
	} {
		fastOrder, slowOrder := newJQKeyOrder(), newJQKeyOrder()
		fast, fastKeys, err := jqProgram(filter, fastOrder)
		if err != nil {
			t.Fatalf("%q: %v", filter, err)
		}
		slow, slowKeys, err := jqProgramSlow(filter, slowOrder)
		if err != nil {
			t.Fatalf("%q (whole text): %v", filter, err)
		}
		if fast.String() != slow.String() {
			t.Errorf("%q: program\n%s\nwant\n%s", filter, fast, slow)
		}
		if !reflect.DeepEqual(fastKeys, slowKeys) {
			t.Errorf("%q: keys %q, want %q", filter, fastKeys, slowKeys)
		}
		if !reflect.DeepEqual(fastOrder.setsInOrder, slowOrder.setsInOrder) {
			t.Errorf("%q: key sets %q, want %q", filter, fastOrder.setsInOrder, slowOrder.setsInOrder)
		}
	}
	// A filter that does not parse alone reports the error of the whole
	// text, offsets included.
	_, _, fastErr := jqProgram(".a |", newJQKeyOrder())
	_, _, slowErr := jqProgramSlow(".a |", newJQKeyOrder())
	if fastErr == nil || fastErr.Error() != slowErr.Error() {
		t.Errorf("parse error %v, want %v", fastErr, slowErr)
	}
}
