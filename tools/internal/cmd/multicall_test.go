package cmd

import (
	"bytes"
	"strings"
	"testing"
)

func init() {
	Register("mc-echo", func(e *Env) int {
		e.Stdout.Write([]byte(strings.Join(e.Args, "|") + "\n"))
		return 3
	}, "mc-say")
}

// TestMulticall covers the dispatch of a multi-call program: by argv[0],
// through the program's own name, --list/--index, and unknown commands.
func TestMulticall(t *testing.T) {
	if indexBuild {
		t.Skip("built with wasmbox_index: Multicall only writes the index")
	}
	for _, tc := range []struct {
		program    string
		args       []string
		wantStatus int
		wantOut    string // a line of stdout that must appear ("" for none)
		wantErr    string
	}{
		{"prog", []string{"/usr/bin/mc-echo", "a"}, 3, "/usr/bin/mc-echo|a\n", ""},
		{"prog", []string{"mc-say"}, 3, "mc-say\n", ""},
		{"prog", []string{"prog", "mc-echo", "x", "y"}, 3, "mc-echo|x|y\n", ""},
		{"prog", []string{"prog", "--list"}, 0, "mc-say\n", ""},
		{"prog", []string{"prog", "--index"}, 0, "mc-say prog mc-echo\n", ""},
		{"prog", []string{"prog", "--index"}, 0, "mc-echo prog\n", ""},
		{"prog", []string{"prog"}, 2, "", "usage: prog COMMAND [ARG]...\n"},
		{"prog", []string{"nope", "a"}, 127, "", "prog: nope: command not found\n"},
		{"prog", []string{"prog", "nope"}, 127, "", "prog: nope: command not found\n"},
		// A program named after one of its commands runs that command,
		// options and all: "jq --index" is jq's business, not an index.
		{"mc-echo", []string{"mc-echo", "--index"}, 3, "mc-echo|--index\n", ""},
		{"mc-echo", []string{"mc-echo", "--list"}, 3, "mc-echo|--list\n", ""},
	} {
		var out, errb bytes.Buffer
		st := Multicall(tc.program, &Env{Args: tc.args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
		if st != tc.wantStatus || !strings.Contains(out.String(), tc.wantOut) || errb.String() != tc.wantErr {
			t.Errorf("Multicall(%q, %q) = %d, stdout %q, stderr %q; want %d, %q, %q",
				tc.program, tc.args, st, out.String(), errb.String(), tc.wantStatus, tc.wantOut, tc.wantErr)
		}
		if tc.wantOut == "" && out.Len() != 0 {
			t.Errorf("Multicall(%q, %q) wrote stdout %q", tc.program, tc.args, out.String())
		}
	}
}
