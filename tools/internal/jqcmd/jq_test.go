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
