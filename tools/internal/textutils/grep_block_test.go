package textutils

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// TestGrepBlockSearch checks that the block search of grep (literals
// found in large blocks, only their lines matched) prints what the line
// loop prints, for options it serves, on lines that straddle blocks.
func TestGrepBlockSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	words := []string{"alpha", "needle", "NeEdLe", "ne", "dle", "x.y", "xzy", "needles", "a needle b", "\t", " "}
	var b bytes.Buffer
	for b.Len() < 3*grepBlock {
		n := 1 + r.IntN(12)
		if r.IntN(500) == 0 {
			n = 40000 // a line longer than a block
		}
		for i := 0; i < n; i++ {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		b.WriteByte('\n')
	}
	b.WriteString("last needle without newline")
	in := b.Bytes()
	for _, args := range [][]string{
		{"-c", "needle"}, {"needle"}, {"-n", "needle"}, {"-b", "-n", "NEEDLE", "-i"},
		{"-c", "-i", "needle"}, {"-n", "ne[e]dle  *a"}, {"-c", "-E", "needle|alpha"},
		{"-m", "5", "-n", "needle"}, {"-o", "-b", "needle"}, {"-l", "needle"}, {"-q", "needle"},
		{"-w", "-n", "needle"}, {"-x", "-c", "alpha "}, {"-F", "-n", "x.y"}, {"-n", "x.y"},
		{"-c", "-e", "dle", "-e", "xzy"}, {"-c", "-F", "-i", "a NEEDLE"}, {"-c", "nothing-here"},
		{"-z", "-c", "needle"},
	} {
		run := func() (string, int) {
			fn, _ := cmd.Lookup("grep")
			var out, errb bytes.Buffer
			st := fn(&cmd.Env{Args: append([]string{"grep"}, args...), Stdin: bytes.NewReader(in), Stdout: &out, Stderr: &errb})
			return out.String() + errb.String(), st
		}
		fast, fst := run()
		grepBlockSearch = false
		slow, sst := run()
		grepBlockSearch = true
		if fast != slow || fst != sst {
			t.Errorf("grep %s: block search gives status %d and %d bytes (%.100q), line loop %d and %d bytes (%.100q)",
				strings.Join(args, " "), fst, len(fast), fast, sst, len(slow), slow)
		}
	}
}

// TestIndexFold compares indexFold with a plain search of the lower-cased
// text.
func TestIndexFold(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for n := 0; n < 2000; n++ {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = "aAbB.-"[r.IntN(6)]
		}
		lit := []byte(fmt.Sprint([]string{"a", "ab", "ba", "b.", ".a", "aba"}[r.IntN(6)]))
		if got, want := indexFold(b, lit), bytes.Index(bytes.ToLower(b), lit); got != want {
			t.Fatalf("indexFold(%q, %q) = %d, want %d", b, lit, got, want)
		}
	}
}
