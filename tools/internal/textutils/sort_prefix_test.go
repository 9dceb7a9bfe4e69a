package textutils

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// TestSortPrefixOrder checks that sort without keys (which compares an
// eight-byte prefix as a number first) orders lines exactly bytewise,
// with short lines, NUL and high bytes, forwards and with -r.
func TestSortPrefixOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var lines []string
	for i := 0; i < 3000; i++ {
		b := make([]byte, r.IntN(12))
		for j := range b {
			b[j] = "\x00\x01aAb\x7f\x80\xff"[r.IntN(8)]
		}
		lines = append(lines, string(b))
	}
	in := strings.Join(lines, "\n") + "\n"
	for _, rev := range []bool{false, true} {
		want := slices.Clone(lines)
		slices.SortFunc(want, func(a, b string) int { return bytes.Compare([]byte(a), []byte(b)) })
		args := []string{"sort"}
		if rev {
			args = append(args, "-r")
			slices.Reverse(want)
		}
		fn, _ := cmd.Lookup("sort")
		var out, errb bytes.Buffer
		if st := fn(&cmd.Env{Args: args, Stdin: strings.NewReader(in), Stdout: &out, Stderr: &errb}); st != 0 {
			t.Fatalf("sort: status %d: %s", st, errb.String())
		}
		if got := out.String(); got != strings.Join(want, "\n")+"\n" {
			t.Errorf("sort %v: order differs from bytewise", args[1:])
		}
	}
}
