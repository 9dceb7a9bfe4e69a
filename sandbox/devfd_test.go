package sandbox

import "testing"

// /dev/stdin, /dev/stdout, /dev/stderr, /dev/fd/N and /dev/full behave as
// on Linux for the commands of a script; the expectations are bash 5.2's
// and GNU coreutils' output on Debian 12 (run by hand, recorded here).
func TestDevFDNames(t *testing.T) {
	sb := newSandbox(t)
	for _, c := range []struct{ script, stdout, stderr string }{
		{"echo from-stdin | cat /dev/stdin", "from-stdin\n", ""},
		{"echo to-err | tee /dev/stderr", "to-err\n", "to-err\n"},
		{"echo out | cat > /dev/stdout", "out\n", ""},
		{"cat /dev/fd/0 <<< here", "here\n", ""},
		{"test -e /dev/stdin && echo exists", "exists\n", ""},
		{"echo hi > f; cat /dev/stdin < f", "hi\n", ""},
		{"cat /dev/fd/7; echo st=$?", "st=1\n", "cat: /dev/fd/7: No such file or directory\n"},
		{"printf 'a\\nb\\n' | wc -l /dev/stdin", "2 /dev/stdin\n", ""},
		{"head -c 4 /dev/full | od -An -tx1", " 00 00 00 00\n", ""},
		{"echo x | cat > /dev/full; echo st=$?", "st=1\n", "cat: write error: No space left on device\n"},
		{"readlink /dev/stdin /dev/fd", "/proc/self/fd/0\n/proc/self/fd\n", ""},
		// The shell's own descriptors above 2, by name.
		{"echo hi > f; exec 3<f; read l < /dev/fd/3; echo $l", "hi\n", ""},
		{"exec 4>g; echo to4 > /dev/fd/4; exec 4>&-; cat g", "to4\n", ""},
		{"echo x > /dev/fd/5; echo st=$?", "st=1\n", "bash: line 1: /dev/fd/5: No such file or directory\n"},
		// A command's descriptor 3 is not its root preopen.
		{"cat /dev/fd/3; echo st=$?", "st=1\n", "cat: /dev/fd/3: No such file or directory\n"},
	} {
		r := run(t, sb, c.script)
		if r.Stdout != c.stdout || r.Stderr != c.stderr {
			t.Errorf("%s:\nstdout %q, want %q\nstderr %q, want %q", c.script, r.Stdout, c.stdout, r.Stderr, c.stderr)
		}
	}
}

// The standard streams of a command are pipes or buffers, never a
// terminal: a C or Python guest's isatty says no, as /usr/bin/python3 does
// with both streams redirected (it said True: every stream was reported as
// a character device).
func TestStdioIsNotATerminal(t *testing.T) {
	sb := pythonSandbox(t)
	r := run(t, sb, `python3 -c "import sys; print(sys.stdin.isatty(), sys.stdout.isatty(), sys.stderr.isatty())" < /dev/null 2>&1 | cat`)
	if r.Stdout != "False False False\n" {
		t.Errorf("stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
}

// A pipe is not a regular file to a Go guest either: GNU wc lays out the
// counts of a pipe in columns of 7 (ours printed "1 2 4": the pipe's
// unknown type read as a regular file in Go's wasip1 runtime).
func TestPipeIsNotARegularFile(t *testing.T) {
	sb := newSandbox(t)
	r := run(t, sb, `printf 'a b\n' | wc; printf 'a b\n' | wc -l`)
	if want := "      1       2       4\n1\n"; r.Stdout != want {
		t.Errorf("stdout %q, want %q (stderr %q)", r.Stdout, want, r.Stderr)
	}
}

// /dev/stdin and /dev/fd/N are no way around a file's permissions: a
// command given a file it may only read cannot reopen it for writing
// through its descriptor's name (on Linux: "Permission denied").
func TestDevFDKeepsPermissions(t *testing.T) {
	sb := newSandbox(t)
	r := run(t, sb, `sh -c 'echo pwned > /dev/stdin' < /etc/passwd; echo st=$?
echo hi > /tmp/r; chmod 444 /tmp/r; sh -c 'echo pwned >> /dev/fd/0' < /tmp/r; echo st=$?
grep -c pwned /etc/passwd /tmp/r`)
	if want := "st=1\nst=1\n/etc/passwd:0\n/tmp/r:0\n"; r.Stdout != want {
		t.Errorf("stdout %q, want %q (stderr %q)", r.Stdout, want, r.Stderr)
	}
}
