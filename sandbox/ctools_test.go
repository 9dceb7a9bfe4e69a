package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The C tools (GNU grep, GNU sed, mawk: wasm/ctools, build/ctools) as a
// script sees them: the names resolve to them, and they behave as the
// Debian programs do in the cases below (each expectation checked
// against Debian 12's grep 3.8, sed 4.9 and mawk 1.3.4 on the host).

func mkdirs(t *testing.T, sb *Sandbox, dir string) {
	t.Helper()
	if err := sb.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestCToolsNames: grep, egrep, fgrep, sed, awk, mawk and nawk are the C
// programs; gawk is GoAWK.
func TestCToolsNames(t *testing.T) {
	sb := newSandbox(t)
	res := run(t, sb, `grep --version | head -n1; egrep --version | head -n1; fgrep -V | head -n1; sed --version | head -n1
awk -W version 2>&1 | head -n1 | cut -d' ' -f1-2; mawk -W version 2>&1 | head -n1 | cut -d' ' -f1; nawk -W version 2>&1 | head -n1 | cut -d' ' -f1
gawk --version | grep -o GoAWK`)
	wantEqual(t, res.Stdout, "grep (GNU grep) 3.8\ngrep (GNU grep) 3.8\ngrep (GNU grep) 3.8\nsed (GNU sed) 4.9\nmawk 1.3.4\nmawk\nmawk\nGoAWK\n")
}

// TestCToolsGrep: exit statuses, options and regular-expression corners.
func TestCToolsGrep(t *testing.T) {
	sb := newSandbox(t)
	mkdirs(t, sb, "/tmp/g/sub")
	if err := sb.WriteFile("/tmp/g/a.txt", []byte("apple pie\nBanana split\ncherry 42x\nabcabc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sb.WriteFile("/tmp/g/sub/b.txt", []byte("apple juice\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sb.WriteFile("/tmp/g/z.bin", []byte("one\x00two apple\x00three\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ script, out string }{
		{`grep apple a.txt; echo $?`, "apple pie\n0\n"},
		{`grep nothing a.txt; echo $?`, "1\n"},
		{`grep apple missing.txt; echo $?`, "grep: missing.txt: No such file or directory\n2\n"},
		{`grep -q apple missing.txt a.txt; echo $?`, "grep: missing.txt: No such file or directory\n0\n"}, // -q: a match wins over an error
		{`grep 'a[' a.txt; echo $?`, "grep: Invalid regular expression\n2\n"},
		{`grep -in banana a.txt`, "2:Banana split\n"},
		{`grep -o '[0-9]\+x' a.txt`, "42x\n"},
		{`grep -cE '[0-9]+x' a.txt`, "1\n"},
		{`grep -E '^(abc)\1$' a.txt`, "abcabc\n"},        // a back-reference
		{`grep -E 'a{2}|c{1,2}h' a.txt`, "cherry 42x\n"}, // intervals
		{`grep '[[:upper:]]' a.txt`, "Banana split\n"},   // classes
		{`grep -w 'pie' a.txt; grep -x 'abcabc' a.txt`, "apple pie\nabcabc\n"},
		{`grep -oP '\d+(?=x)' a.txt`, "42\n"}, // PCRE: -P
		{`egrep 'pie|split' a.txt | wc -l; fgrep 'a[' a.txt; echo $?`, "2\n1\n"},
		{`grep -r apple . | sort`, "grep: ./z.bin: binary file matches\n./a.txt:apple pie\n./sub/b.txt:apple juice\n"},
		{`grep -rl --include='*.txt' apple | sort`, "a.txt\nsub/b.txt\n"},
		{`grep -z apple z.bin | tr '\0' '\n'`, "two apple\n"},
		{`grep -c apple z.bin`, "1\n"},
		{`grep apple z.bin`, "grep: z.bin: binary file matches\n"},
		{`printf 'x\ny\n' | grep -v x`, "y\n"},
	} {
		res := run(t, sb, "cd /tmp/g && { "+c.script+"; } 2>&1")
		if res.Stdout != c.out {
			t.Errorf("%s:\n got %q\nwant %q", c.script, res.Stdout, c.out)
		}
	}
}

// TestCToolsSedInPlace: sed -i rewrites a file of the sandbox's
// filesystem in place and keeps its mode (WASI has no permission bits:
// the patched sed asks the host, build/ctools/patches/sed-inplace-mode.patch).
func TestCToolsSedInPlace(t *testing.T) {
	sb := newSandbox(t)
	mkdirs(t, sb, "/tmp/s")
	if err := sb.WriteFile("/tmp/s/run.sh", []byte("echo alpha\necho beta\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := sb.WriteFile("/tmp/s/notes", []byte("a\nb\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	res := run(t, sb, `cd /tmp/s && sed -i 's/alpha/ALPHA/' run.sh && sed -i.bak -e '1d' notes && ./run.sh && cat notes notes.bak && stat -c '%a %n' run.sh notes && ls`)
	wantEqual(t, res.Stderr, "")
	wantEqual(t, res.Stdout, "ALPHA\nbeta\nb\na\nb\n755 run.sh\n640 notes\nnotes\nnotes.bak\nrun.sh\n")
	res = run(t, sb, `sed -n '2{p;q}' /tmp/s/run.sh; printf 'a.b\n' | sed -E 's/(a)\.(b)/\2\1/'; printf 'x\n' | sed 'y/x/y/;s/y/&&/'; sed -i s/a/b/ /tmp/s/none; echo $?`)
	wantEqual(t, res.Stdout, "echo beta\nba\nyy\n2\n")
	wantEqual(t, res.Stderr, "sed: can't read /tmp/s/none: No such file or directory\n")
}

// TestCToolsAwk: -F, -v, printf, arrays, getline from a file and from a
// command, system(), output pipes, exit status.
func TestCToolsAwk(t *testing.T) {
	sb := newSandbox(t)
	mkdirs(t, sb, "/tmp/a")
	if err := sb.WriteFile("/tmp/a/d.csv", []byte("x,1\ny,2\nx,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ script, out string }{
		{`awk -F, '{s[$1]+=$2} END {for (k in s) print k, s[k]}' d.csv | sort`, "x 4\ny 2\n"},
		{`awk -F, -v m=2 '$2 >= m {printf "%-3s|%5.2f|%d|%c|%x\n", $1, $2, $2*10, 65+$2, 255}' d.csv`, "y  | 2.00|20|C|ff\nx  | 3.00|30|D|ff\n"},
		{`awk 'BEGIN {while ((getline l < "d.csv") > 0) n++; print n; exit 3}'; echo $?`, "3\n3\n"},
		{`echo 'a b c' | awk '{$2 = "X"; print; print NF, $NF, length($0)}'`, "a X c\n3 c 5\n"},
		{`echo 'foo bar' | awk '{gsub(/o/, "0"); sub(/^f/, "F"); print toupper(substr($0, 1, 3)), index($0, "bar")}'`, "F00 5\n"},
		{`awk 'BEGIN {x = "a(b"; if (match("xa(b", "a\\(b")) print RSTART, RLENGTH}'`, "2 3\n"},
		{`awk 'BEGIN { print 1/3 }' OFMT=%.2f; awk -v OFS=- 'BEGIN { $0 = "p q"; $1 = $1; print }'`, "0.333333\np-q\n"},
		// Children through the runtime's process ABI (build/ctools/mawk_wasi.c).
		{`awk 'BEGIN { r = system("echo hi; exit 3"); print "r=" r; print "b\na" | "sort"; close("sort"); "echo yo" | getline v; print v; while (("printf \"1\\n2\\n\"" | getline l) > 0) n += l; print n }'`, "hi\nr=3\na\nb\nyo\n3\n"},
		{`awk '{'; echo $?`, "awk: line 2: missing } near end of file\n2\n"},
		{`awk 'BEGIN { if (match("x", /a(/)) print }'; echo $?`, "awk: line 1: regular expression compile failed (missing ')')\na(\n2\n"},
	} {
		res := run(t, sb, "cd /tmp/a && { "+c.script+"; } 2>&1")
		if res.Stdout != c.out {
			t.Errorf("%s:\n got %q\nwant %q", c.script, res.Stdout, c.out)
		}
	}
}

// TestCToolsHostileRegex: a back-reference pattern whose matching is
// exponential in the line's length (GNU grep takes minutes natively on
// this line) is killed at the run's deadline like any other guest: the
// C modules are metered (their loops reach sched_yield), so the kill
// needs no help from the program. The sandbox stays usable.
func TestCToolsHostileRegex(t *testing.T) {
	sb := newSandbox(t, WithTimeout(2*time.Second))
	if err := sb.WriteFile("/tmp/ab.txt", []byte(strings.Repeat("ab", 2000)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	watchdog := time.AfterFunc(time.Minute, func() {
		select {
		case <-done:
		default:
			panic("grep with a hostile regular expression outlived its 2s deadline by a minute")
		}
	})
	defer watchdog.Stop()
	for _, script := range []string{
		`grep -E '^(.*)(.*)(.*)(.*)\4\3\2\1$' /tmp/ab.txt`,
		`sed -E 's/^(.*)(.*)(.*)(.*)\4\3\2\1$/x/' /tmp/ab.txt`,
		`awk 'BEGIN { for (;;) x++ }'`,
	} {
		res, err := sb.Run(context.Background(), script)
		if err != nil {
			t.Fatal(err)
		}
		if res.ErrorClass != ClassTimeout || res.ExitCode != 124 {
			t.Errorf("%s: %+v; want a TIMEOUT", script, res)
		}
	}
	close(done)
	// PCRE2 bounds its backtracking by itself: grep -P reports it. It
	// gets a sandbox of its own with a long deadline: its 10M steps may
	// take more than 2 s on a loaded machine, and what is checked here
	// is PCRE's own bound, not the deadline.
	sb = newSandbox(t, WithTimeout(5*time.Minute))
	res := run(t, sb, `printf 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\n' | grep -P '^(a|aa|aaa)+$'; echo $?`)
	wantEqual(t, res.Stdout, "2\n")
	wantEqual(t, res.Stderr, "grep: (standard input): exceeded PCRE's backtracking limit\n")
	res = run(t, sb, `echo ok | grep -c ok`)
	wantEqual(t, res.Stdout, "1\n")
}

// TestCToolsMemoryBomb: mawk doubling a string ends at the per-command
// memory limit like any guest (status 137 and the runtime's message), and
// the sandbox goes on.
func TestCToolsMemoryBomb(t *testing.T) {
	sb := newSandbox(t, WithTimeout(time.Minute), WithLimits(Limits{MemoryPerCommand: 32 << 20}))
	res := run(t, sb, `awk 'BEGIN { s = "xxxxxxxxxxxxxxxx"; while (1) s = s s }'; echo "status $?"`)
	wantEqual(t, res.Stdout, "status 137\n")
	if !strings.Contains(res.Stderr, "memory limit (32 MiB) exceeded") {
		t.Errorf("stderr %q; want the memory limit's message", res.Stderr)
	}
	res = run(t, sb, `echo ok | awk '{print}'`)
	wantEqual(t, res.Stdout, "ok\n")
}

// TestCToolsCoreutils: sort, uniq, wc, cut and sha256sum are GNU
// coreutils 9.1 (build/ctools), with what build/ctools/README.md says of
// WASI: sort -o writes its file (through fd_renumber, not the standard
// output), sort spills to temporary files and merges them when the input
// exceeds its buffer (also with --compress-program, which cannot start
// here: the files stay uncompressed), --parallel sorts in one thread, and
// wc has 9.2's --total. Expectations from Debian 12's coreutils on the
// host (wc --total by coreutils 9.2's rules).
func TestCToolsCoreutils(t *testing.T) {
	sb := newSandbox(t, WithTimeout(time.Minute))
	res := run(t, sb, `for c in sort uniq wc cut sha256sum; do $c --version | head -n1; done`)
	wantEqual(t, res.Stdout, "sort (GNU coreutils) 9.1\nuniq (GNU coreutils) 9.1\nwc (GNU coreutils) 9.1\ncut (GNU coreutils) 9.1\nsha256sum (GNU coreutils) 9.1\n")
	mkdirs(t, sb, "/tmp/cu")
	for _, c := range []struct{ script, out string }{
		{`printf 'b\na\nc\n' > in; sort -o out in; echo "[$?]"; cat out`, "[0]\na\nb\nc\n"},
		{`printf 'b\na\nc\n' > in; sort -o in in; cat in`, "a\nb\nc\n"},
		{`printf '3\n1\n2\n' | sort --parallel=4 -n`, "1\n2\n3\n"},
		{`seq 1 20000 | sort -S 1K -r | head -n3`, "9999\n9998\n9997\n"},
		{`seq 1 20000 | sort -S 1K --compress-program=gzip -r | sha256sum`, "32e8bfc1888e4abc71c499baefe2efcad2ecc01d1c18f4a453d5d62b502a2c3e  -\n"},
		{`printf '1e3\n-2\nabc\n0.5\n' | sort -g`, "abc\n-2\n0.5\n1e3\n"},
		{`printf 'x y\n' > a; printf '1\n2\n' > b; wc --total=only a b; wc --total=always a; wc --total=never a b`, "3 4 8\n1 2 4 a\n1 2 4 total\n1 2 4 a\n2 2 4 b\n"},
		{`echo 'a:b:c' | cut -d: -f2`, "b\n"},
		{`printf 'a\na\nb\n' | uniq -c`, "      2 a\n      1 b\n"},
		// uniq reads lines with getdelim (coreutils-linebuffer-getdelim.patch):
		// a last line without its newline, NUL delimiters and bytes, a
		// line longer than stdio's buffer, no input.
		{`printf 'a\na\nb' | uniq -c; printf 'x\0x\0y' | uniq -zc | tr '\0' '|'; printf 'a\0b\na\0b\na\0c\n' | uniq -c | tr '\0' '@'`, "      2 a\n      1 b\n      2 x|      1 y|      2 a@b\n      1 a@c\n"},
		{`l=$(printf '%300000s' '' | tr ' ' q); { echo $l; echo $l; echo; echo; } | uniq -c | cut -c1-12; printf '' | uniq -c | wc -c`, "      2 qqqq\n      2 \n0\n"},
		{`printf 'abc\n' | sha256sum`, "edeaaff3f1774ad2888673770c6d64097e391bc362d7d6fb34982ddf0efd18cb  -\n"},
	} {
		res := run(t, sb, "cd /tmp/cu && "+c.script)
		if res.Stdout != c.out || res.ExitCode != 0 {
			t.Errorf("%s:\nstdout %q\nstderr %q\nexit %d; want %q", c.script, res.Stdout, res.Stderr, res.ExitCode, c.out)
		}
	}
}

// TestCToolsPipelineStages: cat, tr, head, tail and tee are GNU coreutils
// 9.1 (build/ctools, issue 22), with what the sandbox asks of them: tail
// -f prints the file and exits (build/ctools/patches/coreutils-tail-follow.patch,
// as the Go tail did), a stage whose reader is gone ends quietly as
// SIGPIPE ends it natively, and cat waiting on a pipe that never ends is
// killed at the run's deadline. Expectations from Debian 12's coreutils
// on the host.
func TestCToolsPipelineStages(t *testing.T) {
	sb := newSandbox(t, WithTimeout(time.Minute))
	res := run(t, sb, `for c in cat tr head tail tee; do $c --version | head -n1; done`)
	wantEqual(t, res.Stdout, "cat (GNU coreutils) 9.1\ntr (GNU coreutils) 9.1\nhead (GNU coreutils) 9.1\ntail (GNU coreutils) 9.1\ntee (GNU coreutils) 9.1\n")
	mkdirs(t, sb, "/tmp/ps")
	for _, c := range []struct{ script, out string }{
		{`printf 'a\tb\n\n\nc\n' > in; cat -A in; cat -sn in`, "a^Ib$\n$\n$\nc$\n     1\ta\tb\n     2\t\n     3\tc\n"},
		{`printf 'Hello, World\n' | tr a-z A-Z | tr -s 'L' | tr -d ',' | tr '[:upper:]' '[:lower:]'`, "helo world\n"},
		{`printf 'aabbcc\n' | tr -cd 'b\n'; printf 'x1y2\n' | tr -c '[:digit:]\n' '_'`, "bb\n_1_2\n"},
		{`seq 1 10 > n; head -n 2 n; head -c 3 n; echo; head -n -8 n; tail -n 2 n; tail -n +9 n; tail -c 3 n`, "1\n2\n1\n2\n1\n2\n9\n10\n9\n10\n10\n"},
		{`seq 1 3 > f; tail -f -n 1 f; tail -F f | wc -l; echo "[$?]"`, "3\n3\n[0]\n"},
		{`printf 'x\n' | tee o1 o2 | tr x y; tee -a o1 < o2 > /dev/null; cat o1 o2`, "y\nx\nx\nx\n"},
		{`yes | head -n 2; seq 1 100000 | cat | tr 1 x | head -n 1; echo "${PIPESTATUS[*]}"`, "y\ny\nx\n141 141 141 0\n"},
		{`cat missing; echo "[$?]"; head -n x n; echo "[$?]"`, "[1]\n[1]\n"},
	} {
		res := run(t, sb, "cd /tmp/ps && "+c.script)
		if res.Stdout != c.out {
			t.Errorf("%s:\nstdout %q\nstderr %q\nexit %d; want %q", c.script, res.Stdout, res.Stderr, res.ExitCode, c.out)
		}
	}
	res = run(t, sb, `cd /tmp/ps && cat missing; head -n x n`)
	wantEqual(t, res.Stderr, "cat: missing: No such file or directory\nhead: invalid number of lines: 'x'\n")

	// cat blocked reading a pipe nobody writes: the deadline ends it.
	sb = newSandbox(t, WithTimeout(2*time.Second))
	done := make(chan struct{})
	watchdog := time.AfterFunc(time.Minute, func() {
		select {
		case <-done:
		default:
			panic("cat blocked on a pipe outlived its 2s deadline by a minute")
		}
	})
	defer watchdog.Stop()
	r, err := sb.Run(context.Background(), `sleep 1000 | cat`)
	close(done)
	if err != nil {
		t.Fatal(err)
	}
	if r.ErrorClass != ClassTimeout || r.ExitCode != 124 {
		t.Errorf("sleep 1000 | cat: %+v; want a TIMEOUT", r)
	}
}
