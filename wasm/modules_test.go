package wasm

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCrossModule runs commands of one module that start commands of
// another through wasmbox.spawn (xargs, env and timeout in coreutils
// running jq and awk), awk's system() (this host has no sh), and each
// module under its aliases, a path, and its own program name.
func TestCrossModule(t *testing.T) {
	h := getHost(t)
	root, caseDir := newRoot(t)
	if err := os.WriteFile(filepath.Join(caseDir, "a.json"), []byte(`{"k": [1, 2]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(caseDir, "w.txt"), []byte("one two\nthree four\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		argv       []string
		stdin      string
		wantOut    string
		wantStatus int
	}{
		{[]string{"xargs", "jq", "-c", ".k"}, "a.json\n", "[1,2]\n", 0},
		{[]string{"env", "awk", "{print $2}", "w.txt"}, "", "two\nfour\n", 0},
		{[]string{"xargs", "-n1", "nawk", "END {print NR, FILENAME}"}, "w.txt a.json\n", "2 w.txt\n1 a.json\n", 0},
		// (system() runs sh -c, GNU bash, which this host cannot run: see
		// sandbox.TestShellCommandsMatchHost.)
		{[]string{"/usr/bin/gawk", `BEGIN { print toupper("x") }`}, "", "X\n", 0},
		{[]string{"mawk", "-F", "o", "{print NF}", "w.txt"}, "", "3\n2\n", 0},
		{[]string{"jq", "--index"}, "", "", 2}, // jq's own error, not the program's index
		{[]string{"coreutils", "cat", "w.txt"}, "", "one two\nthree four\n", 0},
		{[]string{"timeout", "5", "jq", "-n", "1+1"}, "", "2\n", 0},
	} {
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		st, err := h.run(ctx, &guest{argv: tc.argv, env: goldenEnv, cwd: "/tmp/golden", root: root,
			stdin: strings.NewReader(tc.stdin), stdout: &out, stderr: &errb})
		cancel()
		if err != nil || st != tc.wantStatus || out.String() != tc.wantOut {
			t.Errorf("%q: status %d, err %v, stdout %q, stderr %q; want status %d, stdout %q",
				tc.argv, st, err, out.String(), errb.String(), tc.wantStatus, tc.wantOut)
		}
	}
}
