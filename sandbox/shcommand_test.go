package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The shell commands sh, dash and bash run GNU bash (sh and dash in POSIX
// mode), wherever a script names them: sh -c, xargs sh -c, find -exec sh
// -c, a #!/bin/sh script, bash FILE. Each case runs in the sandbox and in
// the host's /bin/bash (whose sh is the host's /bin/sh, dash on Debian)
// in a fresh temporary directory, and stdout and the exit status must be
// the same.

// hostShells skips the test unless the host has the reference shells.
func hostShells(t *testing.T) {
	t.Helper()
	for _, p := range []string{"/bin/sh", "/bin/dash", "/bin/bash", "/usr/bin/xargs", "/usr/bin/find", "/usr/bin/sort"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("no %s on this host to compare with", p)
		}
	}
}

// hostRun runs script with the host's /bin/bash in a new directory of the
// test's own, under a watchdog.
func hostRun(t *testing.T, script string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a watchdog
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/bash", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=" + cmd.Dir}
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	}
	t.Fatalf("host bash: %v", err)
	return "", 0
}

func TestShellCommandsMatchHost(t *testing.T) {
	needBash(t)
	hostShells(t)
	sb := newSandbox(t)
	for i, script := range []string{
		// sh -c and dash -c: POSIX sh.
		`sh -c 'echo "$0 $1 $#"' zero one two`,
		`sh -c 'echo $0'; dash -c 'echo $0'`,
		`sh -c 'exit 7'; echo "rc=$?"`,
		`sh -c 'x=1; f() { x=2; }; f; echo $x'`,
		`sh -c 'for i in a b c; do printf "%s-" "$i"; done; echo'`,
		`dash -c 'case foo in f*) echo match;; *) echo no;; esac'`,
		`sh -c 'a=$(echo sub | tr a-z A-Z); echo "$a"'`,
		`printf 'in\n' | sh -c 'read l; echo "got $l"'`,
		`sh -c 'echo $((3 * 4 + 1))'`,
		`sh -c 'set -e; false; echo not reached'; echo "rc=$?"`,
		`dash -c 'unset x; echo "${x-unset} ${x:-empty}"'`,
		`sh -c 'IFS=:; set -- a:b::c; echo $#'`,
		`sh -c 'trap "echo bye" EXIT; echo hi'`,
		`sh -c 'echo one; exec echo two; echo three'`,
		`sh -c 'sh -c "echo inner \$0 \$1" nested arg'`,
		`echo 'echo from stdin; exit 3' | sh; echo "rc=$?"`,
		`printf 'echo "s:$1"\n' | dash -s one`,
		`sh -c 'no_such_command_x' 2>/dev/null; echo "rc=$?"`,
		`sh -c 'if then' 2>/dev/null; echo "rc=$?"`,
		// POSIX mode: an assignment before a special builtin stays
		// (bash keeps it only in POSIX mode, as dash does).
		`sh -c 'x=1 : ; echo "${x-unset}"'; dash -c 'y=2 : ; echo "${y-unset}"'`,
		`bash -c 'x=1 : ; echo "${x-unset}"'`,
		// bash -c: bash.
		`bash -c 'a=(x y z); echo ${#a[@]} ${a[1]}; declare -A m; m[k]=v; echo ${m[k]}'`,
		`bash -c '[[ abc == a* ]] && echo yes; echo ${BASH_VERSINFO[0]}'`,
		`bash -c 'set -o | grep -E "^posix"'`,
		// xargs sh -c
		`printf 'a\nb\nc\n' | xargs -n1 sh -c 'echo "[$1]"' _`,
		`printf 'a b\n' | xargs sh -c 'echo $# "$@"' sh`,
		`printf 'x\n' | xargs -I{} dash -c 'echo "<{}>"'`,
		`printf '1\n2\n' | xargs -n1 bash -c 'echo $(( $1 * 10 ))' _`,
		`printf 'q\n' | xargs sh -c 'exit 5'; echo "rc=$?"`,
		// find -exec sh -c
		`mkdir -p d/e; touch d/1 d/e/2; find d -type f -exec sh -c 'echo "f:$1"' _ {} \; | sort`,
		`mkdir -p d/e; touch d/1 d/e/2; find d -type f -exec sh -c 'for f; do echo "g:$f"; done' _ {} + | sort`,
		`mkdir d; touch d/a; find d -type f -exec bash -c 'echo "${1##*/}"' _ {} \;`,
		// Scripts: sh FILE, bash FILE, #!/bin/sh, #!/bin/bash.
		`printf 'echo "args: $*"\nexit 4\n' > s.sh; bash s.sh x y; echo "rc=$?"; sh s.sh a; echo "rc=$?"; dash s.sh b; echo "rc=$?"`,
		`printf '#!/bin/sh\necho "shebang $1"; x=1 : ; echo "${x-unset}"\n' > t.sh; chmod +x t.sh; ./t.sh q`,
		`printf '#!/bin/bash\na=(1 2); echo "bash ${#a[@]}"; x=1 : ; echo "${x-unset}"\n' > u.sh; chmod +x u.sh; ./u.sh`,
		// awk's system() and a pipeline into sh
		`awk 'BEGIN { system("echo from awk; exit 2") }'; echo "rc=$?"`,
		`echo 'echo piped' | sh -s`,
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			want, wantRC := hostRun(t, script)
			dir := fmt.Sprintf("/tmp/case%d", i)
			res := run(t, sb, "mkdir "+dir+" && cd "+dir+" && "+script)
			if res.Stdout != want || res.ExitCode != wantRC {
				t.Errorf("%s\nsandbox: exit %d %q (stderr %q)\nhost:    exit %d %q", script, res.ExitCode, res.Stdout, res.Stderr, wantRC, want)
			}
		})
	}
}

// TestShellCommandsPOSIXMode: sh and dash are GNU bash in POSIX mode, bash
// is not (the host's sh is another shell, so this is asked of bash
// itself).
func TestShellCommandsPOSIXMode(t *testing.T) {
	needBash(t)
	sb := newSandbox(t)
	res := run(t, sb, `for s in sh dash bash /bin/sh /bin/dash; do $s -c 'echo "$0 ${BASH_VERSINFO[0]} $(set -o | grep -E "^posix")"'; done`)
	wantStatus(t, res, 0, ClassNone)
	want := "sh 5 posix          \ton\ndash 5 posix          \ton\nbash 5 posix          \toff\n" +
		"/bin/sh 5 posix          \ton\n/bin/dash 5 posix          \ton\n"
	wantEqual(t, res.Stdout, want)
}

// TestShellCommandForkBombs: a fork bomb inside sh -c, dash -c, xargs sh
// -c and find -exec sh -c is contained as in the session
// (TestBashCommandForkBomb, TestBashForkBombs): the command's memory
// limit or the run's process limit ends it, with its line, and the
// session goes on.
func TestShellCommandForkBombs(t *testing.T) {
	needBash(t)
	bomb := `g(){ g | g; }; g`
	cmds := []struct{ name, script string }{
		{"sh", `sh -c '` + bomb + `'; echo "after $?"`},
		{"dash", `dash -c '` + bomb + `'; echo "after $?"`},
		{"xargs", `echo x | xargs sh -c '` + bomb + `'; echo "after $?"`},
		{"find", `mkdir -p /tmp/fb && touch /tmp/fb/f && find /tmp/fb -type f -exec sh -c '` + bomb + `' _ {} \; ; echo "after $?"`},
	}
	t.Run("command memory", func(t *testing.T) {
		lim := DefaultLimits
		lim.MemoryPerCommand = 64 << 20
		lim.Timeout = time.Minute
		sb := newSandbox(t, WithLimits(lim))
		run(t, sb, `KEEP=before`)
		for _, c := range cmds {
			res := bashBomb(t, sb, c.script)
			if c.name == "sh" || c.name == "dash" {
				// The shell's own command: its limit ends it, the script
				// goes on, as for bash -c.
				wantStatus(t, res, 0, ClassNone)
				wantEqual(t, res.Stdout, "after 137\n")
				wantEqual(t, res.Stderr, "wasmbox: "+c.name+": memory limit (64 MiB) exceeded\n")
			} else {
				// Under xargs or find: the command's memory budget, which
				// its bash and that bash's forks share, ends it; xargs
				// says 125 for a command killed by a signal, find -exec
				// ... \; only makes the test false (0).
				want := map[string]string{"xargs": "after 125\n", "find": "after 0\n"}[c.name]
				wantStatus(t, res, 0, ClassNone)
				wantEqual(t, res.Stdout, want)
				if !strings.HasPrefix(res.Stderr, "wasmbox: sh: memory limit exceeded: command memory budget (64MiB) exceeded") {
					t.Errorf("%s: stderr %q, want the budget's line", c.name, res.Stderr)
				}
			}
			got := run(t, sb, `echo "$KEEP"`)
			wantEqual(t, got.Stdout, "before\n")
		}
	})
	t.Run("processes", func(t *testing.T) {
		lim := DefaultLimits
		lim.Processes = 6
		lim.Timeout = time.Minute
		sb := newSandbox(t, WithLimits(lim))
		run(t, sb, `KEEP=before`)
		for _, c := range cmds {
			res := bashBomb(t, sb, c.script)
			if res.ErrorClass != ClassLimitExceeded || res.ExitCode == 0 {
				t.Errorf("%s: exit %d class %q, want LIMIT_EXCEEDED", c.name, res.ExitCode, res.ErrorClass)
			}
			wantEqual(t, res.Stdout, "")
			wantEqual(t, res.Stderr, "wasmbox: process limit (6 at once) exceeded\n")
			got := run(t, sb, `echo "$KEEP"`)
			wantEqual(t, got.Stdout, "before\n")
		}
	})
}
