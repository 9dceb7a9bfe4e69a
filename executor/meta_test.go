package executor_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// TestMetaCalls drives wasmbox.stat/chmod/chown from a guest against the
// job's VFS.
func TestMetaCalls(t *testing.T) {
	e := newEnv(t)
	if err := e.ex.Register("meta", runtimetest.Guest(t, "meta"), "meta"); err != nil {
		t.Fatal(err)
	}
	if err := e.ex.Install(e.fs, "/bin"); err != nil {
		t.Fatal(err)
	}
	if err := e.fs.Chmod("/tmp/notes.txt", 0o640); err != nil {
		t.Fatal(err)
	}
	if err := e.fs.Chown("/tmp/notes.txt", 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := e.fs.SymlinkIfPossible("notes.txt", "/tmp/link"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		argv   []string
		stdout string
		code   int
	}{
		{argv: []string{"meta", "stat", "/tmp/notes.txt"}, stdout: "640 1000 1000 1\n"},
		{argv: []string{"meta", "stat", "/tmp/link"}, stdout: "640 1000 1000 1\n"},
		{argv: []string{"meta", "chmod", "4755", "/tmp/notes.txt"}},
		{argv: []string{"meta", "stat", "/tmp/notes.txt"}, stdout: "4755 1000 1000 1\n"},
		{argv: []string{"meta", "chown", "0", "-1", "/tmp/notes.txt"}},
		{argv: []string{"meta", "stat", "/tmp/notes.txt"}, stdout: "4755 0 1000 1\n"},
		{argv: []string{"meta", "stat", "/tmp/none"}, code: 44},
		{argv: []string{"meta", "stat", "relative"}, code: 28},
		{argv: []string{"meta", "stat", "/tmp/notes.txt/x"}, code: 54},
	}
	for _, c := range cases {
		var out bytes.Buffer
		res := e.ex.Run(context.Background(), executor.Job{Argv: c.argv, FS: e.fs, Dir: "/tmp", Stdout: &out})
		if res.ExitCode != c.code || out.String() != c.stdout {
			t.Errorf("%v: exit %d stdout %q (err %v), want %d %q", c.argv, res.ExitCode, out.String(), res.Err, c.code, c.stdout)
		}
	}
}
