package textutils

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// FuzzRegex checks that any pattern either compiles or fails with a
// RegexError, and that matching never panics and agrees between Match
// and FindSubmatchIndex. Seeds: the translator's table.
func FuzzRegex(f *testing.F) {
	for _, s := range []string{`a\{2,3\}`, `\(a\)\1`, `[[:alpha:]]*`, `[]a-]`, `^*x`, `a**`, `(a|ab)(c|bcd)`, `\<w\>`, `x\{,2\}`, `[a`, `\(`, `a{1`} {
		f.Add(s, false, "aab abcd xx ]-a")
		f.Add(s, true, "aab abcd xx ]-a")
	}
	f.Fuzz(func(t *testing.T, pat string, ere bool, in string) {
		re, err := compileRegex(pat, regexOpts{ere: ere})
		if err != nil {
			if _, ok := err.(*RegexError); !ok {
				t.Fatalf("%q: error of type %T: %v", pat, err, err)
			}
			return
		}
		re.budget = 100000
		ok, err1 := re.Match([]byte(in))
		loc, err2 := re.FindSubmatchIndex([]byte(in))
		if err1 != nil || err2 != nil {
			return // budget exhausted: a clean error
		}
		if ok != (loc != nil) {
			t.Fatalf("%q on %q: Match=%v but loc=%v", pat, in, ok, loc)
		}
		if _, err := re.FindAllSubmatchIndex([]byte(in), -1); err != nil && err != ErrRegexTooComplex {
			t.Fatal(err)
		}
	})
}

// FuzzSed runs arbitrary scripts on a small input: a bad script must end
// in an error status, never a panic or a hang.
func FuzzSed(f *testing.F) {
	for _, s := range []string{"s/a/b/g", ":a;N;$!ba;s/\\n/,/g", "$!N;P;D", "1~2d", "0,/x/d", "/a/,+2{p;=}", "y/abc/xyz/", "a\\\nfoo", "s/\\(a*\\)\\1/[&]/2", "l 5", "x;G;h", "2q", "{", "s/a", "b x"} {
		f.Add(s)
	}
	sedStepLimit = 100000
	f.Cleanup(func() { sedStepLimit = 0 })
	// The fuzzer runs natively, on the host: keep relative file names
	// (r, R) in a scratch directory, and never let a script write a file
	// (w, W, s///w), which could name any host path.
	f.Chdir(f.TempDir())
	f.Fuzz(func(t *testing.T, script string) {
		if strings.ContainsAny(script, "wW") {
			t.Skip("scripts that write files are not fuzzed on the host")
		}
		fn, _ := cmd.Lookup("sed")
		var out bytes.Buffer
		fn(&cmd.Env{Args: []string{"sed", "-n", "-e", script, "-e", "p"}, Stdin: bytes.NewReader([]byte("aa\nbab\nxa\n\nccc\n")), Stdout: &out, Stderr: io.Discard})
		if out.Len() > 1<<20 {
			t.Fatalf("output grew to %d bytes", out.Len())
		}
	})
}
