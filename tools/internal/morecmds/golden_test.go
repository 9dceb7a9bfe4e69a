package morecmds

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/internal/golden"
	"github.com/wasmbox/wasmbox/tools/internal/cmd"
	_ "github.com/wasmbox/wasmbox/tools/internal/sysutils" // base32
)

// commands are the commands of this package whose golden cases run
// natively here (the same cases run through the wasm module in package
// wasm).
var commands = strings.Fields(`base32 cmp dd hexdump hd expand unexpand fmt envsubst sum tsort link unlink
	pr csplit bc file iconv xz unxz xzcat bzip2 bunzip2 bzcat rg`)

// TestGolden runs every golden case of this package's commands in-process
// in a temporary directory standing in for /tmp/golden.
func TestGolden(t *testing.T) {
	time.Local = time.UTC
	t.Setenv("LC_ALL", "C")
	t.Setenv("TZ", "UTC")
	t.Setenv("HOME", "/home/user")
	t.Setenv("USER", "user")
	root, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "golden"))
	for _, name := range commands {
		files, _ := filepath.Glob(filepath.Join(root, name, "*.txtar"))
		for _, f := range files {
			t.Run(name+"/"+strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				c, err := golden.Parse(data)
				if err != nil {
					t.Fatal(err)
				}
				runCase(t, name, c)
			})
		}
	}
}

func runCase(t *testing.T, name string, c *golden.Case) {
	ex, ok := c.Get("exit")
	if !ok {
		t.Skip("expectations not generated yet")
	}
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
	wantOut, _ := c.Get("stdout")
	wantErr, _ := c.Get("stderr")
	wantExit, _ := strconv.Atoi(strings.TrimSpace(string(ex)))
	if !bytes.Equal(out.Bytes(), wantOut) {
		t.Errorf("stdout:\n got %s\nwant %s", show(out.Bytes()), show(wantOut))
	}
	// Messages name the case directory /tmp/golden where the recorded
	// run had it.
	gotErr := bytes.ReplaceAll(errb.Bytes(), []byte(dir), []byte("/tmp/golden"))
	if !bytes.Equal(gotErr, wantErr) {
		t.Errorf("stderr:\n got %s\nwant %s", show(gotErr), show(wantErr))
	}
	if status != wantExit {
		t.Errorf("exit: got %d want %d", status, wantExit)
	}
	for _, w := range c.Wants() {
		got, _ := os.ReadFile(filepath.Join(dir, w.Name))
		if !bytes.Equal(got, w.Data) {
			t.Errorf("file %s:\n got %s\nwant %s", w.Name, show(got), show(w.Data))
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
