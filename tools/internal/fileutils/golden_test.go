package fileutils

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/shell"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// The commands of this package; their golden cases run natively here too.
var fileCommands = strings.Fields(`cat ls cp mv rm mkdir rmdir touch ln readlink realpath stat du df tree
	find truncate tar gzip gunzip zcat zip unzip diff patch od xxd strings split`)

type section struct {
	name string
	data []byte
}

var marker = regexp.MustCompile(`(?m)^-- (.+) --\n`)

func parseCase(t *testing.T, data []byte) []section {
	t.Helper()
	locs := marker.FindAllSubmatchIndex(data, -1)
	var secs []section
	for i, l := range locs {
		end := len(data)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		name := string(data[l[2]:l[3]])
		body := data[l[1]:end]
		if n, ok := strings.CutSuffix(name, " (noeol)"); ok {
			name, body = n, bytes.TrimSuffix(body, []byte("\n"))
		}
		secs = append(secs, section{name, body})
	}
	return secs
}

// TestGolden runs every golden case of this package's commands in-process
// against the host filesystem (in a temporary directory standing in for
// /tmp/golden). The same cases run through the real wasm runtime in package
// wasm; this native run gives fast feedback while developing.
func TestGolden(t *testing.T) {
	time.Local = time.UTC
	t.Setenv("LC_ALL", "C")
	t.Setenv("TZ", "UTC")
	t.Setenv("HOME", "/home/user")
	t.Setenv("USER", "user")
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	root := filepath.Join(wd, "..", "..", "testdata", "golden")
	for _, name := range fileCommands {
		files, _ := filepath.Glob(filepath.Join(root, name, "*.txtar"))
		for _, f := range files {
			t.Run(name+"/"+strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				runCase(t, name, parseCase(t, data))
			})
		}
	}
}

func runCase(t *testing.T, name string, secs []section) {
	get := func(n string) ([]byte, bool) {
		for _, s := range secs {
			if s.name == n {
				return s.data, true
			}
		}
		return nil, false
	}
	// Manual cases whose reason mentions the sandbox (owners, modes, the
	// VFS) only hold inside it; the others (tools absent from the host,
	// like tree) are checked here too.
	if why, manual := get("manual"); manual && strings.Contains(string(why), "sandbox") {
		t.Skip("manual case: checked only in the sandbox")
	}
	dir := t.TempDir()
	for _, s := range secs {
		if p, ok := strings.CutPrefix(s.name, "file: "); ok {
			full := filepath.Join(dir, p)
			if strings.HasSuffix(p, "/") {
				os.MkdirAll(full, 0o755)
				continue
			}
			os.MkdirAll(filepath.Dir(full), 0o755)
			if err := os.WriteFile(full, s.data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PWD", dir)
	argLine, _ := get("args")
	args, err := shell.Fields(strings.TrimRight(string(argLine), "\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "/tmp/golden", dir)
	}
	stdin, _ := get("stdin")
	var stdout, stderr bytes.Buffer
	fn, ok := cmd.Lookup(name)
	if !ok {
		t.Fatalf("command %s not registered", name)
	}
	status := fn(&cmd.Env{Args: append([]string{name}, args...), Stdin: bytes.NewReader(stdin), Stdout: &stdout, Stderr: &stderr})
	fix := func(b []byte) string { return strings.ReplaceAll(string(b), "/tmp/golden", dir) }
	if want, ok := get("stdout"); ok && stdout.String() != fix(want) {
		t.Errorf("stdout:\n got: %q\nwant: %q", stdout.String(), fix(want))
	}
	if want, ok := get("stderr"); ok && stderr.String() != fix(want) {
		t.Errorf("stderr:\n got: %q\nwant: %q", stderr.String(), fix(want))
	}
	if want, ok := get("exit"); ok {
		w, _ := strconv.Atoi(strings.TrimSpace(string(want)))
		if status != w {
			t.Errorf("exit: got %d want %d", status, w)
		}
	}
	for _, s := range secs {
		if p, ok := strings.CutPrefix(s.name, "want: "); ok {
			got, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				got = []byte("MISSING\n")
			}
			if string(got) != fix(s.data) {
				t.Errorf("file %s:\n got: %q\nwant: %q", p, got, fix(s.data))
			}
		}
	}
}
