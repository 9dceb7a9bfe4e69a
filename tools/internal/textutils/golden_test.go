package textutils

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// hostDiff makes TestGoldenNative compare against the real GNU tool on
// this machine instead of the recorded sections (a quick differential
// check while writing cases; goldengen is what records them).
var hostDiff = flag.Bool("hostdiff", false, "compare golden cases against the host's GNU tools")

// textCommands are the commands this package owns; their golden cases
// live under tools/testdata/golden/<command>/. jq is not one of them: the
// jq command is jq 1.6 in C (wasm/ctools/jq16.wasm), whose goldens
// (recorded from /usr/bin/jq: its key order, its messages) the Go jq
// behind yq does not follow; the wasm package runs them against it.
var textCommands = []string{"yq", "head", "tail", "wc", "sort", "uniq", "cut", "tr", "tee", "grep", "egrep", "fgrep",
	"sed", "awk", "comm", "join", "paste", "nl", "fold", "rev", "tac", "column"}

type runResult struct {
	stdout, stderr []byte
	exit           int
	wants          map[string][]byte
}

// runNative runs one case in-process in a fresh directory.
func runNative(t *testing.T, name string, c *goldenCase) runResult {
	dir := t.TempDir()
	if err := c.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	args, err := c.Args()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	stdin, _ := c.Get("stdin")
	var out, errb bytes.Buffer
	fn, ok := cmd.Lookup(name)
	if !ok {
		t.Fatalf("command %s not registered", name)
	}
	status := fn(&cmd.Env{Args: append([]string{name}, args...), Stdin: bytes.NewReader(stdin), Stdout: &out, Stderr: &errb})
	r := runResult{stdout: out.Bytes(), stderr: errb.Bytes(), exit: status, wants: map[string][]byte{}}
	for _, w := range c.Wants() {
		b, _ := os.ReadFile(filepath.Join(dir, w.Name))
		r.wants[w.Name] = b
	}
	return r
}

// runHost runs the case with the host's tool.
func runHost(t *testing.T, name string, c *goldenCase) runResult {
	dir := t.TempDir()
	if err := c.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	args, _ := c.Args()
	if name == "awk" {
		name = "gawk"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ex := exec.CommandContext(ctx, name, args...)
	ex.Dir = dir
	ex.Env = []string{"LC_ALL=C", "TZ=UTC", "HOME=/home/user", "USER=user", "PATH=/usr/bin:/bin"}
	stdin, _ := c.Get("stdin")
	ex.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	ex.Stdout, ex.Stderr = &out, &errb
	err := ex.Run()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Skipf("host tool: %v", err)
	}
	r := runResult{stdout: out.Bytes(), stderr: errb.Bytes(), exit: status, wants: map[string][]byte{}}
	for _, w := range c.Wants() {
		b, _ := os.ReadFile(filepath.Join(dir, w.Name))
		r.wants[w.Name] = b
	}
	return r
}

// TestGoldenNative runs every golden case of this package's commands
// in-process (no wasm), against the recorded expectations, or with
// -hostdiff against the host's tools.
func TestGoldenNative(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "golden")
	for _, name := range textCommands {
		files, _ := filepath.Glob(filepath.Join(root, name, "*.txtar"))
		for _, f := range files {
			t.Run(name+"/"+strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				c, err := parseGolden(data)
				if err != nil {
					t.Fatal(err)
				}
				var want runResult
				_, manual := c.Get("manual")
				if *hostDiff && !manual {
					want = runHost(t, name, c)
				} else {
					ex, ok := c.Get("exit")
					if !ok {
						t.Skip("expectations not generated yet")
					}
					want.exit, _ = strconv.Atoi(strings.TrimSpace(string(ex)))
					want.stdout, _ = c.Get("stdout")
					want.stderr, _ = c.Get("stderr")
					want.wants = map[string][]byte{}
					for _, w := range c.Wants() {
						want.wants[w.Name] = w.Data
					}
				}
				got := runNative(t, name, c)
				if !bytes.Equal(got.stdout, want.stdout) {
					t.Errorf("stdout:\n got %s\nwant %s", show(got.stdout), show(want.stdout))
				}
				if !bytes.Equal(got.stderr, want.stderr) {
					t.Errorf("stderr:\n got %s\nwant %s", show(got.stderr), show(want.stderr))
				}
				if got.exit != want.exit {
					t.Errorf("exit: got %d want %d", got.exit, want.exit)
				}
				for n, w := range want.wants {
					if !bytes.Equal(got.wants[n], w) {
						t.Errorf("file %s:\n got %s\nwant %s", n, show(got.wants[n]), show(w))
					}
				}
			})
		}
	}
}

func show(b []byte) string {
	s := fmt.Sprintf("%q", b)
	if len(s) > 2000 {
		s = s[:2000] + "..."
	}
	return s
}
