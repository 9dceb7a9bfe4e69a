package sandbox

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// In a removed working directory (cd d; rmdir d), relative names must not
// resolve against the root of the filesystem: python.wasm and SQLite's
// shell start from "/" and take the working directory from $PWD, and when
// chdir($PWD) failed they read, wrote and created files at "/" instead
// (open("f.txt") read /f.txt). The names below cannot collide with
// anything else at the root, which must hold exactly what the test put
// there afterwards.

const removedCwdSetup = `mkdir /tmp/rcwd-gone && cd /tmp/rcwd-gone && rmdir /tmp/rcwd-gone && `

// rootFile puts name at the root of sb's filesystem with content, and
// makes the root writable by the user, so that a write that goes there
// instead of the working directory succeeds and is seen.
func rootFile(t *testing.T, sb *Sandbox, name, content string) {
	t.Helper()
	if err := sb.FS().Chmod("/", 0o777); err != nil {
		t.Fatal(err)
	}
	if err := sb.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wantRoot checks that the root file name still holds content and that
// none of the names in absent exists at the root.
func wantRoot(t *testing.T, sb *Sandbox, name, content string, absent ...string) {
	t.Helper()
	if b, err := sb.ReadFile(name); err != nil || string(b) != content {
		t.Errorf("%s = %q, %v; want %q", name, b, err, content)
	}
	for _, a := range absent {
		if _, err := sb.Stat(a); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was created at the root (stat: %v)", a, err)
		}
	}
}

func TestPythonRemovedWorkingDirectory(t *testing.T) {
	sb := pythonSandbox(t)
	rootFile(t, sb, "/rcwd-py-read-5e1d.txt", "ROOT FILE\n")
	res := run(t, sb, removedCwdSetup+`python3 -c '
import os, sqlite3
def try_(what, f):
    try:
        print(what, "ok", repr(f()))
    except OSError as e:
        print(what, type(e).__name__)
    except sqlite3.Error as e:
        print(what, "sqlite3.Error")
try_("read", lambda: open("rcwd-py-read-5e1d.txt").read())
try_("write", lambda: open("rcwd-py-write-5e1d.txt", "w").write("x"))
try_("mkdir", lambda: os.mkdir("rcwd-py-dir-5e1d"))
try_("listdir", lambda: os.listdir("."))
try_("sqlite3", lambda: sqlite3.connect("rcwd-py-5e1d.db").execute("create table t(a)").fetchall())
print(open("/rcwd-py-read-5e1d.txt").read(), end="")
'`)
	wantEqual(t, res.Stdout, "read FileNotFoundError\nwrite FileNotFoundError\nmkdir FileNotFoundError\nlistdir FileNotFoundError\nsqlite3 sqlite3.Error\nROOT FILE\n")
	if res.ExitCode != 0 {
		t.Errorf("status %d, stderr %q", res.ExitCode, res.Stderr)
	}
	wantRoot(t, sb, "/rcwd-py-read-5e1d.txt", "ROOT FILE\n", "/rcwd-py-write-5e1d.txt", "/rcwd-py-dir-5e1d", "/rcwd-py-5e1d.db")

	// The next run in an existing directory resolves there again.
	res = run(t, sb, `mkdir -p /tmp/rcwd-here && cd /tmp/rcwd-here && echo here > f.txt && python3 -c 'print(open("f.txt").read(), end="")'`)
	wantEqual(t, res.Stdout, "here\n")
}

func TestSQLite3RemovedWorkingDirectory(t *testing.T) {
	sb := sqlite3Sandbox(t)
	rootFile(t, sb, "/rcwd-sq-read-5e1d.sql", "select 'ROOT FILE';\n")
	res := run(t, sb, removedCwdSetup+`sqlite3 :memory: '.read rcwd-sq-read-5e1d.sql'; echo "read $?"; sqlite3 rcwd-sq-5e1d.db 'create table t(a)'; echo "create $?"; sqlite3 :memory: ".once rcwd-sq-out-5e1d.txt" "select 1"; echo "once $?"`)
	if strings.Contains(res.Stdout, "ROOT FILE") {
		t.Errorf("sqlite3 read the root's file: %+v", res)
	}
	for _, w := range []string{"read 1", "create 1"} {
		if !strings.Contains(res.Stdout, w+"\n") {
			t.Errorf("stdout %q, want %q", res.Stdout, w)
		}
	}
	wantRoot(t, sb, "/rcwd-sq-read-5e1d.sql", "select 'ROOT FILE';\n", "/rcwd-sq-5e1d.db", "/rcwd-sq-out-5e1d.txt")

	res = run(t, sb, `mkdir -p /tmp/rcwd-here && cd /tmp/rcwd-here && sqlite3 here.db 'create table t(a); insert into t values(7)' && sqlite3 /tmp/rcwd-here/here.db 'select a from t'`)
	wantEqual(t, res.Stdout, "7\n")
}
