package textutils

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// TestGrepLitScan checks that the literal scan of grep prints what the
// block search and the line loop print, for the options it serves and
// those next to them, with lines across read blocks of several sizes.
func TestGrepLitScan(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	words := []string{"alpha", "needle", "NeEdLe", "ne", "dle", "needl", "eedle", "nEEDLE", "x", "", "\t",
		"Kelvin \u212a", "k", "K", "é", "\xff", "needleneedle", "n\x00e"}
	var b bytes.Buffer
	for b.Len() < 20000 {
		n := r.IntN(6)
		if r.IntN(300) == 0 {
			n = 2000 // a line longer than the small blocks
		}
		for i := 0; i < n; i++ {
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(3) > 0 {
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	full := b.Bytes()
	inputs := map[string][]byte{
		"text":        full,
		"noeol":       append(append([]byte(nil), full...), "last needle without newline"...),
		"noeol-plain": append(append([]byte(nil), full...), "last line"...),
		"empty":       nil,
		"newlines":    []byte("\n\n\n"),
		"one":         []byte("needle"),
		"needleonly":  []byte("needle\nneedle\nneedle\n"),
		"short":       []byte("ne\nneedle\nx\n"),
		"nul":         bytes.ReplaceAll(full, []byte("\n"), []byte{0}),
	}
	argss := [][]string{
		{"-c", "needle"}, {"needle"}, {"-c", "-v", "needle"}, {"-v", "-c", "x"}, {"-c", "-m", "3", "needle"},
		{"-m", "7", "needle"}, {"-m", "0", "needle"}, {"-c", "-i", "NEEDLE"}, {"-i", "nEeDlE"}, {"-c", "-i", "k"},
		{"-i", "kelvin"}, {"-c", "-i", "é"}, {"-c", "e"}, {"e"}, {"-c", "dle ne"}, {"-F", "-c", "needle\n"},
		{"-H", "needle"}, {"-c", "-H", "needle"}, {"-c", "needleneedleneedle"}, {"-n", "needle"}, {"-b", "needle"},
		{"-o", "needle"}, {"-l", "needle"}, {"-q", "needle"}, {"-A", "1", "needle"}, {"-c", "-A", "1", "needle"},
		{"-z", "-c", "needle"}, {"-z", "needle"}, {"-z", "-c", "-v", "needle"}, {"-c", "\xff"}, {"-c", " "},
		{"-c", "-i", "A"}, {"-c", "n"}, {"-c", "-v", "-m", "2", "x"}, {"-cF", "x.y"}, {"-c", "needle\nalpha"},
	}
	run := func(args []string, in []byte) string {
		fn, _ := cmd.Lookup("grep")
		var out, errb bytes.Buffer
		st := fn(&cmd.Env{Args: append([]string{"grep"}, args...), Stdin: bytes.NewReader(in), Stdout: &out, Stderr: &errb})
		return out.String() + "|" + errb.String() + "|" + string(rune('0'+st))
	}
	defer func(n int) { grepLitBlock, grepLitScan, grepBlockSearch = n, true, true }(grepLitBlock)
	for name, in := range inputs {
		for _, args := range argss {
			grepLitScan, grepBlockSearch = false, false
			want := run(args, in)
			grepBlockSearch = true
			if got := run(args, in); got != want {
				t.Errorf("%s: grep %q: block search differs from the line loop", name, args)
			}
			grepLitScan = true
			for _, n := range []int{1, 7, 64, 1000, 1 << 20} {
				grepLitBlock = n
				if got := run(args, in); got != want {
					t.Errorf("%s: grep %q, block %d: literal scan gives %d bytes (%.100q), line loop %d bytes (%.100q)",
						name, strings.Join(args, " "), n, len(got), got, len(want), want)
				}
			}
		}
	}
}

// TestLitScanIndex compares the word-at-a-time searches with the
// standard library's.
func TestLitScanIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for n := 0; n < 20000; n++ {
		b := make([]byte, r.IntN(70))
		for i := range b {
			b[i] = "aAbB.\n\x80"[r.IntN(7)]
		}
		lits := []string{"a", "ab", "ba", "b.", ".a", "aba", "abab", "aaaaaaaaab", "a\x80", "\x80"}
		lit := []byte(lits[r.IntN(len(lits))])
		pos := 0
		if len(b) > 0 {
			pos = r.IntN(len(b) + 1)
		}
		want := bytes.Index(b[pos:], lit)
		if want >= 0 {
			want += pos
		}
		if got := newLitScan(lit, false).index(b, pos); got != want {
			t.Fatalf("index(%q, %d, %q) = %d, want %d", b, pos, lit, got, want)
		}
		want = bytes.Index(asciiLower(b[pos:]), asciiLower(lit))
		if want >= 0 {
			want += pos
		}
		if got := newLitScan(asciiLower(lit), true).index(b, pos); got != want {
			t.Fatalf("fold index(%q, %d, %q) = %d, want %d", b, pos, lit, got, want)
		}
		want = bytes.IndexByte(b[pos:], '\n')
		if want >= 0 {
			want += pos
		}
		if got := swarIndexByte(b, pos, '\n'); got != want {
			t.Fatalf("swarIndexByte(%q, %d) = %d, want %d", b, pos, got, want)
		}
		lo := r.IntN(pos + 1)
		want = bytes.LastIndexByte(b[lo:pos], '\n')
		if want >= 0 {
			want += lo
		}
		if got := swarLastIndexByte(b, lo, pos, '\n'); got != want {
			t.Fatalf("swarLastIndexByte(%q, %d, %d) = %d, want %d", b, lo, pos, got, want)
		}
	}
}

func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = lower(c)
	}
	return out
}
