package textutils

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// TestSedParseErrors checks the parser's GNU messages and positions.
func TestSedParseErrors(t *testing.T) {
	for _, tc := range []struct{ script, want string }{
		{"s/a/b", "-e expression #1, char 5: unterminated `s' command"},
		{"s/a/b/q", "-e expression #1, char 7: unknown option to `s'"},
		{"s/a/b/gg", "-e expression #1, char 8: multiple `g' options to `s' command"},
		{"s/a/b/0", "-e expression #1, char 7: number option to `s' command may not be zero"},
		{"s/a/\\1/", "-e expression #1, char 7: invalid reference \\1 on `s' command's RHS"},
		{"k", "-e expression #1, char 1: unknown command: `k'"},
		{"p x", "-e expression #1, char 3: extra characters after command"},
		{"}", "-e expression #1, char 1: unexpected `}'"},
		{"{p", "-e expression #1, char 0: unmatched `{'"},
		{"/abc", "-e expression #1, char 4: unterminated address regex"},
		{"1,p", "-e expression #1, char 3: unexpected `,'"},
		{"y/ab/c/", "-e expression #1, char 7: strings for `y' command are different lengths"},
		{"b nowhere", "can't find label for jump to `nowhere'"},
		{"1,2q", "-e expression #1, char 4: command only uses one address"},
		{"r", "-e expression #1, char 1: missing filename in r/R/w/W commands"},
		{"/a\\(/p", "-e expression #1, char 5: Unmatched ( or \\("},
		{"1", "-e expression #1, char 1: missing command"},
	} {
		_, err := parseSed(tc.script, []sedPiece{{start: 0, expr: 1}}, false)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: err = %v, want %q", tc.script, err, tc.want)
		}
	}
}

// TestSedParseCommands checks the structure the parser builds.
func TestSedParseCommands(t *testing.T) {
	prog, err := parseSed("/x/,+2!{s|a|b|2gw out\n}\n:l;$b l;3~2y/ab/AB/", []sedPiece{{start: 0, expr: 1}}, false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range prog {
		names = append(names, string(c.name))
	}
	if got := strings.Join(names, ""); got != "{s}:by" {
		t.Fatalf("commands %q", got)
	}
	blk, s, br := prog[0], prog[1], prog[4]
	if blk.a1.kind != addrRegex || blk.a2.kind != addrPlus || blk.a2.n != 2 || !blk.negate || blk.jump != 3 {
		t.Errorf("block: %+v", blk)
	}
	if !s.global || s.nth != 2 || s.wfile != "out" {
		t.Errorf("s: global=%v nth=%d wfile=%q", s.global, s.nth, s.wfile)
	}
	if br.jump != 3 || br.a1.kind != addrLast {
		t.Errorf("b: jump=%d", br.jump)
	}
	if y := prog[5]; y.a1.kind != addrStep || y.a1.n != 3 || y.a1.step != 2 || y.ymap['a'] != 'A' {
		t.Errorf("y: %+v", y.a1)
	}
}

// Example_grep runs grep in-process: the commands only see the streams
// of their cmd.Env.
func Example_grep() {
	grep, _ := cmd.Lookup("grep")
	in := strings.NewReader("alpha 1\nbeta 22\ngamma 333\n")
	status := grep(&cmd.Env{Args: []string{"grep", "-nE", "[0-9]{2,}"}, Stdin: in, Stdout: os.Stdout, Stderr: os.Stderr})
	fmt.Println("status", status)
	// Output:
	// 2:beta 22
	// 3:gamma 333
	// status 0
}

// Example_regex shows a back-reference, which the RE2 engine cannot
// express, matched by the backtracking matcher.
func Example_regex() {
	re, _ := compileRegex(`\([a-z]*\)-\1`, regexOpts{})
	in := []byte("say abc-abc now")
	loc, _ := re.FindSubmatchIndex(in)
	fmt.Printf("%s %s\n", in[loc[0]:loc[1]], in[loc[2]:loc[3]])
	// Output:
	// abc-abc abc
}
