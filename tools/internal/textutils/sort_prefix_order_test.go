package textutils

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// TestNumPrefixOrder checks that numPrefix preserves numCompare's order:
// a smaller prefix means a smaller number (sortByPrefix relies on it).
func TestNumPrefixOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	nums := []string{"0", "-0", "0.0", "-0.000", "", "abc", "-", ".", "-.5", ".5", "00012", "12", "-12", "1e5",
		"9999999", "10000000", "9999999.5", "-9999999.5", " 42", "\t-7", strings.Repeat("9", 130), "-" + strings.Repeat("9", 130),
		strings.Repeat("1", 127), strings.Repeat("1", 126), "1." + strings.Repeat("0", 20) + "1", "1.0000001", "1.00000001"}
	for range 2000 {
		var b strings.Builder
		if r.IntN(3) == 0 {
			b.WriteByte('-')
		}
		for range r.IntN(12) {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		if r.IntN(2) == 0 {
			b.WriteByte('.')
			for range r.IntN(10) {
				b.WriteByte(byte('0' + r.IntN(10)))
			}
		}
		nums = append(nums, b.String())
	}
	prefix := func(s string) uint32 { return numPrefix(numParts([]byte(s))) }
	for _, a := range nums {
		for j := 0; j < 50; j++ {
			b := nums[r.IntN(len(nums))]
			pa, pb := prefix(a), prefix(b)
			c := numCompare([]byte(a), []byte(b))
			if pa < pb && c >= 0 || pa > pb && c <= 0 {
				t.Fatalf("%q (prefix %#x) vs %q (%#x): numCompare %d", a, pa, b, pb, c)
			}
		}
	}
}

// TestSortIndexedMatchesRecords sorts random inputs with each option set
// through both of sort's paths: sortIndexed (offsets, prefix sort) and
// sortRecords (slices, one comparison sort); the outputs must agree.
func TestSortIndexedMatchesRecords(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	words := []string{"a", "ab", "abc", "b", "B", "  b", "zz", "é", "a\tb", "", "-1", "10", "9", "1.5", "-0", "0"}
	var in bytes.Buffer
	for range 3000 {
		switch r.IntN(3) {
		case 0:
			fmt.Fprintf(&in, "%d %s\n", r.IntN(200)-100, words[r.IntN(len(words))])
		case 1:
			fmt.Fprintf(&in, "%s %s %d.%d\n", words[r.IntN(len(words))], words[r.IntN(len(words))], r.IntN(30), r.IntN(100))
		default:
			fmt.Fprintf(&in, "%s\n", words[r.IntN(len(words))])
		}
	}
	run := func(args []string) string {
		fn, _ := cmd.Lookup("sort")
		var out, errb bytes.Buffer
		st := fn(&cmd.Env{Args: append([]string{"sort"}, args...), Stdin: bytes.NewReader(in.Bytes()), Stdout: &out, Stderr: &errb})
		if st != 0 {
			t.Fatalf("sort %v: status %d: %s", args, st, errb.String())
		}
		return out.String()
	}
	for _, args := range [][]string{
		{}, {"-r"}, {"-u"}, {"-s"}, {"-n"}, {"-nr"}, {"-n", "-s"}, {"-n", "-u"}, {"-k2,2"}, {"-k2,2r"}, {"-k2,2", "-k1,1n"},
		{"-k1,1n", "-k2,2"}, {"-s", "-k1,1n"}, {"-u", "-k2,2"}, {"-b", "-k2"}, {"-k3,3n", "-r"}, {"-f"}, {"-t", " ", "-k2,2", "-s"},
	} {
		got := run(args)
		indexedLimit = 0
		want := run(args)
		indexedLimit = 1<<32 - 1
		if got != want {
			t.Errorf("sort %v: the indexed path's output differs from sortRecords'", args)
		}
	}
}
