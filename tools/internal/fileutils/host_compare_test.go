package fileutils

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/shell"
)

// TestCompareWithHost runs command lines both in-process and with the
// host's GNU tools on the same fixture tree and compares the results. It
// only runs with WASMBOX_HOST_COMPARE=1 (it needs GNU coreutils, findutils
// and diffutils on the host); the golden cases are the committed form of
// such comparisons.
func TestCompareWithHost(t *testing.T) {
	if os.Getenv("WASMBOX_HOST_COMPARE") == "" {
		t.Skip("set WASMBOX_HOST_COMPARE=1 to compare with the host's GNU tools")
	}
	time.Local = time.UTC
	t.Setenv("TZ", "UTC")
	t.Setenv("LC_ALL", "C")
	lines := []string{
		"ls", "ls -a", "ls -A", "ls -R", "ls -1 src", "ls -d src/*", "ls -F src", "ls -p src", "ls -r src",
		"ls -S src/sub", "ls -m src", "ls -lgG --time-style=+X src/sub", "ls -sh src/sub", "ls src/a.txt nope src",
		"ls -R src --ignore=*.go", "ls -X src/sub", "ls --group-directories-first src",
		"cat -n src/a.txt", "cat -b src/blank.txt", "cat -s src/blank.txt", "cat -E src/a.txt", "cat -A src/ctl.txt",
		"find src -name '*.txt'", "find src -type d", "find src -maxdepth 1", "find src -empty",
		"find src -size +1k", "find src -not -name '*.txt' -type f", "find src -path '*sub*' -prune -o -type f -print",
		"find src -printf '%p %s %d %y\\n'", "find src -name '*.go' -exec cat {} +", "find . -newer src/a.txt",
		"stat -c '%n %s %F %h' src/a.txt src/sub", "du -a src", "du -sh src", "du -d1 src", "du -c src/a.txt src/big.bin",
		"diff src/a.txt src/b.txt", "diff -u --label A --label B src/a.txt src/b.txt", "diff -c --label A --label B src/a.txt src/b.txt",
		"diff -q src/a.txt src/b.txt", "diff -r src src2", "diff -rq src src2", "diff -y src/a.txt src/b.txt",
		"readlink -f src/../src/./a.txt", "realpath --relative-to=src/sub src/a.txt", "realpath -m a/../b",
		"od -c src/ctl.txt", "od -A x -t x1z src/ctl.txt", "xxd src/ctl.txt", "xxd -g4 -c8 src/ctl.txt", "strings -n 3 src/big.bin",
		"wc -c src/a.txt", "split -l 3 src/a.txt x_", "truncate -s 10 src/a.txt", "mkdir -pv x/y/z", "rmdir -p src2/empty/e",
		"cp -v src/a.txt src/b.txt", "mv -v src/b.txt src/c.txt", "rm -v src/c.txt", "ln -sv a.txt src/link", "touch -c nope",
	}
	for _, line := range lines {
		args, err := shell.Fields(line, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := lookupFileCommand(args[0]); !ok {
			continue
		}
		dirA, dirB := t.TempDir(), t.TempDir()
		compareFixture(t, dirA)
		compareFixture(t, dirB)
		out, errs, st := run(t, dirA, "", args...)
		c := exec.Command(args[0], args[1:]...)
		c.Dir = dirB
		var o, e strings.Builder
		c.Stdout, c.Stderr = &o, &e
		c.Run()
		wst := c.ProcessState.ExitCode()
		fix := func(s, dir string) string { return strings.ReplaceAll(s, dir, "DIR") }
		if fix(out, dirA) != fix(o.String(), dirB) || fix(errs, dirA) != fix(e.String(), dirB) || st != wst {
			t.Errorf("%s\n got (%d): %q %q\nwant (%d): %q %q", line, st, out, errs, wst, o.String(), e.String())
		}
	}
}

func lookupFileCommand(name string) (string, bool) {
	for _, c := range fileCommands {
		if c == name {
			return c, true
		}
	}
	return "", false
}

func compareFixture(t *testing.T, dir string) {
	when := time.Date(2024, 2, 3, 4, 5, 6, 0, time.UTC)
	files := map[string]string{
		"src/a.txt":     "one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
		"src/b.txt":     "one\n2\nthree\nfour\nfive\nsix\nseven\neight\n",
		"src/blank.txt": "a\n\n\n\nb\n\n",
		"src/ctl.txt":   "tab\there\x01\x7f\xe9\n",
		"src/big.bin":   strings.Repeat("binary\x00data\x01", 300),
		"src/sub/x.go":  "package x\n",
		"src/sub/y.txt": "y\n",
		"src/.hidden":   "h\n",
		"src2/a.txt":    "one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
		"src2/sub/x.go": "package y\n",
		"src2/only2":    "2\n",
	}
	for name, data := range files {
		mustWrite(t, dir+"/"+name, data, 0o644, when)
	}
	os.MkdirAll(dir+"/src/empty", 0o755)
	os.MkdirAll(dir+"/src2/empty/e", 0o755)
	for _, d := range []string{"src/sub", "src/empty", "src", "src2/sub", "src2/empty/e", "src2/empty", "src2"} {
		os.Chtimes(dir+"/"+d, when, when)
	}
}
