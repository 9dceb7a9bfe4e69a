package jqcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// TestJQ runs jq in-process on this package alone (no textutils): input
// from stdin and from a file, key order kept, and jq's error for a
// missing file with the C error text of the shared helpers.
func TestJQ(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"z": 1, "a": [true, null]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	fn, ok := cmd.Lookup("jq")
	if !ok {
		t.Fatal("jq is not registered")
	}
	for _, tc := range []struct {
		args             []string
		stdin            string
		wantOut, wantErr string
		wantStatus       int
	}{
		{[]string{"-c", "."}, `{"b":2,"a":1}`, "{\"b\":2,\"a\":1}\n", "", 0},
		{[]string{"-c", ".", "a.json"}, "", "{\"z\":1,\"a\":[true,null]}\n", "", 0},
		{[]string{"-r", ".a | length", "-"}, `{"a":"xyz"}`, "3\n", "", 0},
		{[]string{".", "missing.json"}, "", "", "jq: error: Could not open file missing.json: No such file or directory\n", 2},
	} {
		var out, errb bytes.Buffer
		st := fn(&cmd.Env{Args: append([]string{"jq"}, tc.args...), Stdin: strings.NewReader(tc.stdin), Stdout: &out, Stderr: &errb})
		if st != tc.wantStatus || out.String() != tc.wantOut || errb.String() != tc.wantErr {
			t.Errorf("jq %q: status %d, stdout %q, stderr %q; want %d, %q, %q",
				tc.args, st, out.String(), errb.String(), tc.wantStatus, tc.wantOut, tc.wantErr)
		}
	}
}

// TestJQParserOutput pins jq's output for inputs that exercise the input
// parser's shortcuts (interned keys, escaped and non-ASCII keys, long
// keys, the same keys in another order right after, nested objects,
// duplicate keys, integers and floats): the expectations are the output
// of the parser before the shortcuts.
func TestJQParserOutput(t *testing.T) {
	inputs := []string{
		`[{"b":1,"a":2},{"a":3,"b":4},{"b":5,"a":6},{"c":1},{"b":7,"a":8}]`,
		`{"k\u00e9y":1,"k\"q":2,"ké":3,"x":{"ké":[1,-2,3.5,-0,1e3,12345678901234567,-7]}} {"ké":4,"k\"q":5}`,
		`[{"a":{"b":{"a":1,"c":2},"d":3}},{"d":4,"a":{"c":5,"a":6}},{"a":1,"a":2,"z":0}]`,
		`{"` + strings.Repeat("long", 20) + `":1,"b":[{"y":1,"x":2},{"x":3,"y":4}]} [] {} [{}] 0 -12 9007199254740993 "s"`,
	}
	filters := []string{".", ".[]?", "keys_unsorted?", "[..]"}
	want := []string{
		"[{\"b\":1,\"a\":2},{\"b\":4,\"a\":3},{\"b\":5,\"a\":6},{\"c\":1},{\"b\":7,\"a\":8}]\n",
		"{\"b\":1,\"a\":2}\n{\"b\":4,\"a\":3}\n{\"b\":5,\"a\":6}\n{\"c\":1}\n{\"b\":7,\"a\":8}\n",
		"[0,1,2,3,4]\n",
		"[[{\"b\":1,\"a\":2},{\"b\":4,\"a\":3},{\"b\":5,\"a\":6},{\"c\":1},{\"b\":7,\"a\":8}],{\"b\":1,\"a\":2},1,2,{\"b\":4,\"a\":3},4,3,{\"b\":5,\"a\":6},5,6,{\"c\":1},1,{\"b\":7,\"a\":8},7,8]\n",
		"{\"kéy\":1,\"k\\\"q\":2,\"ké\":3,\"x\":{\"ké\":[1,-2,3.5,-0,1000,12345678901234568,-7]}}\n{\"ké\":4,\"k\\\"q\":5}\n",
		"1\n2\n3\n{\"ké\":[1,-2,3.5,-0,1000,12345678901234568,-7]}\n4\n5\n",
		"[\"kéy\",\"k\\\"q\",\"ké\",\"x\"]\n[\"ké\",\"k\\\"q\"]\n",
		"[{\"kéy\":1,\"k\\\"q\":2,\"ké\":3,\"x\":{\"ké\":[1,-2,3.5,-0,1000,12345678901234568,-7]}},1,2,3,{\"ké\":[1,-2,3.5,-0,1000,12345678901234568,-7]},[1,-2,3.5,-0,1000,12345678901234568,-7],1,-2,3.5,-0,1000,12345678901234568,-7]\n[{\"ké\":4,\"k\\\"q\":5},4,5]\n",
		"[{\"a\":{\"b\":{\"a\":1,\"c\":2},\"d\":3}},{\"d\":4,\"a\":{\"a\":6,\"c\":5}},{\"a\":2,\"z\":0}]\n",
		"{\"a\":{\"b\":{\"a\":1,\"c\":2},\"d\":3}}\n{\"d\":4,\"a\":{\"a\":6,\"c\":5}}\n{\"a\":2,\"z\":0}\n",
		"[0,1,2]\n",
		"[[{\"a\":{\"b\":{\"a\":1,\"c\":2},\"d\":3}},{\"d\":4,\"a\":{\"a\":6,\"c\":5}},{\"a\":2,\"z\":0}],{\"a\":{\"b\":{\"a\":1,\"c\":2},\"d\":3}},{\"b\":{\"a\":1,\"c\":2},\"d\":3},{\"a\":1,\"c\":2},1,2,3,{\"d\":4,\"a\":{\"a\":6,\"c\":5}},4,{\"a\":6,\"c\":5},6,5,{\"a\":2,\"z\":0},2,0]\n",
		"{\"longlonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglong\":1,\"b\":[{\"y\":1,\"x\":2},{\"y\":4,\"x\":3}]}\n[]\n{}\n[{}]\n0\n-12\n9007199254740993\n\"s\"\n",
		"1\n[{\"y\":1,\"x\":2},{\"y\":4,\"x\":3}]\n{}\n",
		"[\"longlonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglong\",\"b\"]\n[]\n[]\n[0]\n",
		"[{\"longlonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglonglong\":1,\"b\":[{\"y\":1,\"x\":2},{\"y\":4,\"x\":3}]},1,[{\"y\":1,\"x\":2},{\"y\":4,\"x\":3}],{\"y\":1,\"x\":2},1,2,{\"y\":4,\"x\":3},4,3]\n[[]]\n[{}]\n[[{}],{}]\n[0]\n[-12]\n[9007199254740993]\n[\"s\"]\n",
	}
	fn, _ := cmd.Lookup("jq")
	for i, in := range inputs {
		for j, f := range filters {
			var out, errb bytes.Buffer
			fn(&cmd.Env{Args: []string{"jq", "-c", f}, Stdin: strings.NewReader(in), Stdout: &out, Stderr: &errb})
			if w := want[i*len(filters)+j]; out.String() != w || errb.Len() > 0 {
				t.Errorf("jq -c %q of input %d: %q (stderr %q), want %q", f, i, out.String(), errb.String(), w)
			}
		}
	}
}
