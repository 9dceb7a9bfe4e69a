package wasm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGolden runs every case under tools/testdata/golden through the real
// tool module in wazero and compares stdout, stderr, the exit status and
// the "want:" files byte for byte. Subtests are named
// Golden/COMMAND/CASE: go test ./wasm -run Golden/grep
//
// Expectations come from the GNU tools (go run ./tools/goldengen), or are
// written by hand in cases with a "-- manual --" section.
func TestGolden(t *testing.T) {
	dir := filepath.Join("..", "tools", "testdata", "golden")
	cmds, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("no golden cases: %v", err)
	}
	getHost(t) // one clear failure if the module cannot be built or compiled
	for _, cd := range cmds {
		if !cd.IsDir() {
			continue
		}
		t.Run(cd.Name(), func(t *testing.T) {
			files, err := os.ReadDir(filepath.Join(dir, cd.Name()))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				name, ok := strings.CutSuffix(f.Name(), ".txtar")
				if !ok || f.IsDir() {
					continue
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					runGolden(t, cd.Name(), filepath.Join(dir, cd.Name(), f.Name()))
				})
			}
		})
	}
}

func runGolden(t *testing.T, command, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseGolden(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	args, err := c.Args()
	if err != nil {
		t.Fatalf("%s: args: %v", file, err)
	}
	wantExit, ok := c.Get("exit")
	if _, manual := c.Get("manual"); !ok && !manual {
		t.Fatalf("%s has no expectations yet: run go run ./tools/goldengen -run '^%s/'", file, command)
	}
	host := getHost(t) // compiles the module on first use, outside the case's deadline
	root, caseDir := newRoot(t)
	if err := c.WriteFiles(caseDir); err != nil {
		t.Fatal(err)
	}
	stdin, _ := c.Get("stdin")
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	status, err := host.run(ctx, &guest{
		argv: append([]string{command}, args...), env: goldenEnv, cwd: "/tmp/golden", root: root,
		stdin: bytes.NewReader(stdin), stdout: &stdout, stderr: &stderr,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("timed out after 20s")
	}
	want, _ := c.Get("stdout")
	compare(t, "stdout", want, stdout.Bytes())
	want, _ = c.Get("stderr")
	compare(t, "stderr", want, stderr.Bytes())
	if len(wantExit) == 0 {
		wantExit = []byte("0")
	}
	if w := strings.TrimSpace(string(wantExit)); w != strconv.Itoa(status) {
		t.Errorf("exit status %d, want %s", status, w)
	}
	for _, w := range c.Wants() {
		got, err := os.ReadFile(filepath.Join(caseDir, filepath.FromSlash(w.Name)))
		if err != nil {
			t.Errorf("want %s: %v", w.Name, err)
			continue
		}
		compare(t, "file "+w.Name, w.Data, got)
	}
}

// compare reports a difference between want and got as a readable diff.
func compare(t *testing.T, what string, want, got []byte) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	t.Errorf("%s differs (-want +got):\n%s", what, lineDiff(want, got))
}

// lineDiff is a small LCS line diff; lines are quoted when they carry
// invisible differences (trailing spaces, missing final newline, \r).
func lineDiff(a, b []byte) string {
	split := func(s []byte) []string {
		l := strings.SplitAfter(string(s), "\n")
		if l[len(l)-1] == "" {
			l = l[:len(l)-1]
		}
		return l
	}
	x, y := split(a), split(b)
	if len(x)*len(y) > 4_000_000 {
		return fmt.Sprintf("want %d bytes, got %d bytes (too long to diff)", len(a), len(b))
	}
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	show := func(s string) string {
		body := strings.TrimSuffix(s, "\n")
		if !strings.HasSuffix(s, "\n") || strings.ContainsAny(body, "\r\t\x00") || strings.TrimRight(body, " ") != body {
			return strconv.Quote(s)
		}
		return body
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out.WriteString("  " + show(x[i]) + "\n")
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			out.WriteString("+ " + show(y[j]) + "\n")
			j++
		default:
			out.WriteString("- " + show(x[i]) + "\n")
			i++
		}
	}
	return out.String()
}
