package morecmds

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func runBc(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	st := bcMain(&cmd.Env{Args: append([]string{"bc"}, args...), Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return out.String(), errb.String(), st
}

// TestBcLineLength checks BC_LINE_LENGTH against GNU bc 1.07.1's output
// (the golden runner's environment cannot set it).
func TestBcLineLength(t *testing.T) {
	for _, c := range []struct{ env, in, want string }{
		{"20", "2^100\n", "126765060022822940\\\n1496703205376\n"},
		{"20", "print \"abcdefghijklmnopqrstuvwxyzabc\\n\"\n", "abcdefghijklmnopqr\\\nstuvwxyzabc\n"},
		{"20", "obase=1000; 2^100\n", " 001 267 650 600 2\\\n28 229 401 496 703\\\n 205 376\n"},
		{"0", "2^300\n", "2037035976334486086268445688409378161051468393665936250636140449354381299763336706183397376\n"},
		{"2", "2^300\n", "20370359763344860862684456884093781610514683936659362506361404493543\\\n81299763336706183397376\n"},
	} {
		t.Setenv("BC_LINE_LENGTH", c.env)
		out, errs, st := runBc(t, c.in)
		if out != c.want || errs != "" || st != 0 {
			t.Errorf("BC_LINE_LENGTH=%s %q: got %q %q %d, want %q", c.env, c.in, out, errs, st, c.want)
		}
	}
}

// TestBcBounded: results beyond bcMaxDigits end with a runtime error
// (GNU bc would compute them for minutes), and the program goes on.
func TestBcBounded(t *testing.T) {
	out, errs, st := runBc(t, "2^99999999\nx=7^9999999\nscale=99999999; 1/3\n(10^400000)*(10^400000)\n5\n")
	if out != "5\n" || st != 0 || strings.Count(errs, "number too large") != 4 {
		t.Errorf("got %q %q %d", out, errs, st)
	}
}

// TestBcNesting: deeply nested input is a syntax error, not a stack
// overflow, and bc goes on with the next line.
func TestBcNesting(t *testing.T) {
	for _, in := range []string{
		strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000),
		strings.Repeat("- ", 100000) + "1",
		strings.Repeat("2^", 100000) + "1",
		strings.Repeat("{", 100000) + "1",
		strings.Repeat("!", 100000) + "1",
	} {
		out, errs, st := runBc(t, in+"\n7\n")
		if out != "7\n" || st != 0 || !strings.Contains(errs, "nesting too deep") {
			t.Errorf("%.20q...: got %q %q %d", in, out, errs, st)
		}
	}
}
