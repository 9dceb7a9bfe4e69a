package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/wasm"
)

// bashShellCases are scripts run by GNU bash in wasm (WithShell(ShellBash)).
// Their expected stdout and status are those of GNU bash 5.2.15 on the
// host: WASMBOX_BASH=/bin/bash go test ./sandbox -run
// TestBashShellCasesAgainstHostBash checks them against a real bash.
var bashShellCases = []struct {
	name, script, stdout string
	code                 int
}{
	// The idioms on which the interpreter crashed (issue 22).
	{"assoc count and element arithmetic",
		`declare -A c; for w in a b a; do ((c[$w]++)); done; echo ${c[a]} ${c[b]}; declare -p c; a=(1 2 3); i=1; (( a[i] += 5 )); echo ${a[@]}`,
		"2 1\ndeclare -A c=([b]=\"1\" [a]=\"2\" )\n1 7 3\n", 0},
	// return and an expansion error leave through longjmp (Asyncify).
	{"functions return, error aborts",
		`f() { return 3; }; f; echo $?; g() { local x=1; h() { return 5; }; h; echo "h=$?"; return 2; }; g; echo "g=$?"; echo $((1/0)); echo never`,
		"3\nh=5\ng=2\n", 1},
	// Pipelines, subshells and $(...) are forked instances.
	{"pipelines subshells command substitution",
		`x=$(echo a; echo b | tr b c); echo "$x"; (exit 4); echo $?; echo one two | { read a b; echo "$b $a"; }; seq 3 | while read n; do echo n$n; done | tail -1`,
		"a\nc\n4\ntwo one\nn3\n", 0},
	{"set -e",
		`set -e; f() { false; echo notreached; }; if f; then echo ok; fi; echo after; x=$(false; echo y); echo "x=$x"; false; echo never`,
		"notreached\nok\nafter\nx=y\n", 1},
	// A signal sent to itself runs the trap at once (compat/signal.c).
	{"traps", `trap 'echo exit $?' EXIT; trap 'echo usr1' USR1; kill -USR1 $$; echo mid; exit 3`,
		"usr1\nmid\nexit 3\n", 3},
	{"words, extglob, [[, substitutions",
		`shopt -s extglob; f=abc.txt; [[ $f == *.@(txt|md) ]] && echo match; echo ${f%.*}; a=(1 2 3); echo ${#a[@]} ${a[@]:1}; set -- a b; printf '<%s>' "x$@y"; echo; s=hello; echo ${s/#he/HE} ${s/%lo/LO} ${s^^}`,
		"match\nabc\n3 2 3\n<xa><by>\nHEllo helLO HELLO\n", 0},
	{"here-document", "cat <<EOF\nhi $((2+3)) ${HOME}\nEOF", "hi 5 /home/user\n", 0},
	// printf formats floats as long double (it aborted without wasi-libc's
	// long-double printf).
	{"printf floats", `printf '%.2f %5.1f %g\n' 3.14159 2 0.5`, "3.14   2.0 0.5\n", 0},
	// Executables by path: #! runs the interpreter, a text file without
	// one runs as a script of bash itself (ENOEXEC; compat/exec.c).
	{"scripts by path", `printf '#!/bin/bash\necho "sb $1"\n' > s1; printf 'echo "plain $1"\n' > s2; chmod +x s1 s2; ./s1 a; ./s2 b`,
		"sb a\nplain b\n", 0},
	// The job table (jobs.c; nojobs.c had no jobs builtin, no %N job
	// specs and no PIPESTATUS for pipelines).
	{"job table",
		"{ sleep 0.03; exit 1; } | { sleep 0.02; exit 2; } | { sleep 0.01; exit 3; }\necho ${PIPESTATUS[@]}\n" +
			"sleep 5 &\njobs\nkill %1; wait %1; echo wait=$?\n(exit 7) & wait $!; echo st=$?\nsleep 0.1 & sleep 0.05 & wait -n; echo n=$?",
		"1 2 3\n[1]+  Running                 sleep 5 &\nwait=143\nst=7\nn=0\n", 0},
	// Descriptor 3 is the script's own: it held the root preopen, and
	// `exec 3>f` cut off every path (build/posix/src/start.c).
	{"exec 3>file, paths still resolve",
		"exec 3> f3; echo hello >&3; echo world >&3; exec 3>&-; cat f3; exec 3<f3; read -u 3 l; echo \"$l\"; exec 3<&-; ls f3",
		"hello\nworld\nhello\nf3\n", 0},
	// Process substitution through /dev/fd (bash_cv_dev_fd=standard):
	// read by bash itself (a redirect, mapfile, source). Before, bash
	// was built without /dev/fd, and `< <(cmd)` was a syntax error.
	{"process substitution read by bash",
		"while read -r l; do echo \"got $l\"; done < <(printf 'a\\nb\\n'); mapfile -t m < <(echo x; echo y); echo \"${#m[@]} ${m[1]}\"; source <(echo v=9); echo \"v=$v\"",
		"got a\ngot b\n2 y\nv=9\n", 0},
	// ... and by the commands bash runs: exec hands them its open
	// descriptors from 4 up that are not close-on-exec (build/posix
	// exec.c, runtime.SpawnABI's inherit_fds). Before, commands got fds
	// 0-2 only: "cat: /dev/fd/63: No such file or directory".
	{"process substitution read by commands",
		"cat <(echo hi); diff <(echo a) <(echo b); echo \"diff $?\"; paste <(printf '1\\n2\\n') <(printf 'a\\nb\\n'); comm -12 <(printf 'a\\nb\\n') <(printf 'b\\nc\\n'); x=$(cat <(echo sub)); echo \"$x\"; cat /dev/fd/4 4<<<here4",
		"hi\n1c1\n< a\n---\n> b\ndiff 1\n1\ta\n2\tb\nb\nsub\nhere4\n", 0},
}

func needBash(t *testing.T) {
	t.Helper()
	if _, ok := wasm.Bash(); !ok {
		t.Skip("GNU bash is not built in (make bash)")
	}
}

func TestBashShellCases(t *testing.T) {
	needBash(t)
	for _, c := range bashShellCases {
		t.Run(c.name, func(t *testing.T) {
			// A sandbox per case: each is a script of its own, as the
			// host's bash -c runs it (in a session, set -e and traps
			// persist from one Run to the next).
			sb := newSandbox(t, WithShell(ShellBash))
			res := run(t, sb, c.script)
			if res.Stdout != c.stdout || res.ExitCode != c.code {
				t.Errorf("stdout %q, status %d (stderr %q); want %q, %d", res.Stdout, res.ExitCode, res.Stderr, c.stdout, c.code)
			}
		})
	}
}

// TestBashShellCasesAgainstHostBash checks the expectations of
// bashShellCases against the bash named by WASMBOX_BASH (skipped when it
// is not set).
func TestBashShellCasesAgainstHostBash(t *testing.T) {
	bash := os.Getenv("WASMBOX_BASH")
	if bash == "" {
		t.Skip("WASMBOX_BASH is not set")
	}
	for _, c := range bashShellCases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bash, "-c", c.script)
			cmd.Dir = t.TempDir()
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/home/user", "USER=user", "LANG=C.UTF-8"}
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			code := 0
			if err := cmd.Run(); err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatal(err)
				}
				code = ee.ExitCode()
			}
			if stdout.String() != c.stdout || code != c.code {
				t.Errorf("bash gives stdout %q, status %d; the case wants %q, %d", stdout.String(), code, c.stdout, c.code)
			}
		})
	}
}

// TestBashShellContainment: a busy loop under GNU bash ends at the run's
// deadline, a fork bomb is bounded by the process table, and the sandbox
// runs the next script.
func TestBashShellContainment(t *testing.T) {
	needBash(t)
	lim := DefaultLimits
	lim.Timeout = 2 * time.Second
	sb := newSandbox(t, WithShell(ShellBash), WithLimits(lim))
	for _, c := range []struct{ script, stderr string }{
		// Killed at the deadline.
		{`while :; do :; done`, ""},
		// Bounded: every process's children end with it, and the tree
		// either ends at once or meets the shell's memory (which each
		// fork copies) or process limit, which ends the run with the
		// limit's line (TestBashForkBombs).
		{`f() { f | f & }; f; wait`, "limit"},
	} {
		script := c.script
		t.Run(script, func(t *testing.T) {
			done := make(chan Result, 1)
			go func() {
				res, err := sb.Run(context.Background(), script)
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			select {
			case res := <-done:
				if c.stderr == "" && (res.ExitCode == 0 || res.ErrorClass == ClassNone) {
					t.Errorf("exit %d, class %q: want the run stopped (timeout or limit)", res.ExitCode, res.ErrorClass)
				}
				if c.stderr != "" && res.ErrorClass != ClassNone && !strings.Contains(res.Stderr, c.stderr) {
					t.Errorf("stderr %q: want %q", res.Stderr, c.stderr)
				}
				if c.stderr != "" && res.ErrorClass == ClassNone && res.Stderr != "" {
					t.Errorf("stderr %q: want nothing from a bomb that ended by itself", res.Stderr)
				}
			case <-time.After(2 * time.Minute): // watchdog, not a timing assertion
				t.Fatal("the run did not end")
			}
		})
	}
	if res := run(t, sb, "echo alive"); strings.TrimSpace(res.Stdout) != "alive" {
		t.Errorf("after the kills: %+v", res)
	}
}

func TestWithShellUnknown(t *testing.T) {
	if _, err := New(context.Background(), WithShell("zsh")); err == nil || !strings.Contains(err.Error(), `unknown shell "zsh"`) {
		t.Errorf("New(WithShell(zsh)) = %v, want an unknown-shell error", err)
	}
}

// bashStdinCases are scripts given with ScriptOnStdin (`wasmbox run -`):
// bash reads them as `bash < FILE` does, which differs from `bash -c`.
// TestBashStdinCasesAgainstHostBash checks them against a real bash.
var bashStdinCases = []struct {
	name, script, stdout string
	code                 int
}{
	// Under -c the ended job is gone: "wait: %1: no such job", 127.
	{"wait for a job that ended", "(exit 7) &\nsleep 0.3\nwait %1\necho status=$?\n",
		"status=7\n", 0},
	// Under -c an unbound variable ends bash with 127.
	{"set -u error", "set -u\necho a\necho $undef\necho never\n", "a\n", 1},
	// A command that reads stdin reads the next line of the script.
	{"stdin is the script", "echo a\nread x\necho never\necho \"x=$x\"\n", "a\nx=echo never\n", 0},
	{"$0", "echo $0\n", "bash\n", 0},
}

func TestBashStdinCases(t *testing.T) {
	needBash(t)
	sb := newSandbox(t, WithShell(ShellBash))
	for _, c := range bashStdinCases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			res, err := sb.Stream(context.Background(), c.script, ScriptOnStdin, &stdout, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			if stdout.String() != c.stdout || res.ExitCode != c.code {
				t.Errorf("stdout %q, status %d (stderr %q); want %q, %d", stdout.String(), res.ExitCode, stderr.String(), c.stdout, c.code)
			}
		})
	}
}

func TestBashStdinCasesAgainstHostBash(t *testing.T) {
	bash := os.Getenv("WASMBOX_BASH")
	if bash == "" {
		t.Skip("WASMBOX_BASH is not set")
	}
	for _, c := range bashStdinCases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bash)
			cmd.Args[0] = "bash"
			cmd.Dir = t.TempDir()
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/home/user", "USER=user", "LANG=C.UTF-8"}
			cmd.Stdin = strings.NewReader(c.script)
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			code := 0
			if err := cmd.Run(); err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatal(err)
				}
				code = ee.ExitCode()
			}
			if stdout.String() != c.stdout || code != c.code {
				t.Errorf("bash gives stdout %q, status %d; the case wants %q, %d", stdout.String(), code, c.stdout, c.code)
			}
		})
	}
}
