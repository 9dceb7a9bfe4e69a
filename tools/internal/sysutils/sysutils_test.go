package sysutils

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// run runs a registered command in-process.
func run(t *testing.T, stdin string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	fn, ok := cmd.Lookup(args[0])
	if !ok {
		t.Fatalf("command %s is not registered", args[0])
	}
	var out, errb bytes.Buffer
	status = fn(&cmd.Env{Args: args, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return out.String(), errb.String(), status
}

// limitWriter fails after n bytes, like a pipe whose reader went away.
type limitWriter struct {
	buf bytes.Buffer
	n   int
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.n {
		return 0, errors.New("broken pipe")
	}
	return w.buf.Write(p)
}

func TestYes(t *testing.T) {
	for _, tt := range []struct {
		args []string
		line string
	}{{[]string{"yes"}, "y\n"}, {[]string{"yes", "a", "b"}, "a b\n"}, {[]string{"yes", "--", "-n"}, "-n\n"}} {
		w := &limitWriter{n: 1 << 20}
		status := yes(&cmd.Env{Args: tt.args, Stdout: w, Stderr: &bytes.Buffer{}})
		if status != 1 || w.buf.Len() == 0 {
			t.Fatalf("%v: status %d after %d bytes", tt.args, status, w.buf.Len())
		}
		for _, l := range strings.SplitAfter(w.buf.String(), "\n") {
			if l != tt.line && l != "" {
				t.Fatalf("%v: line %q, want %q", tt.args, l, tt.line)
			}
		}
	}
}

func TestShuf(t *testing.T) {
	out, _, st := run(t, "", "shuf", "-i", "1-100")
	lines := strings.Fields(out)
	if st != 0 || len(lines) != 100 {
		t.Fatalf("shuf -i 1-100: status %d, %d lines", st, len(lines))
	}
	slices.SortFunc(lines, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	for i, l := range lines {
		if want := strconv.Itoa(i + 1); l != want {
			t.Fatalf("shuf -i 1-100 is not a permutation: position %d is %s", i, l)
		}
	}
	out, _, _ = run(t, "", "shuf", "-n", "3", "-i", "1-1000000000000")
	if len(strings.Fields(out)) != 3 {
		t.Fatalf("shuf -n 3 over a huge range: %q", out)
	}
	out, _, _ = run(t, "", "shuf", "-r", "-n", "50", "-e", "x", "y")
	for _, l := range strings.Fields(out) {
		if l != "x" && l != "y" {
			t.Fatalf("shuf -r: unexpected %q", l)
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "seed")
	os.WriteFile(src, []byte("0123456789abcdef0123456789abcdef"), 0o644)
	a, _, _ := run(t, "a\nb\nc\nd\ne\n", "shuf", "--random-source="+src)
	b, _, _ := run(t, "a\nb\nc\nd\ne\n", "shuf", "--random-source="+src)
	if a != b {
		t.Fatalf("--random-source is not reproducible: %q vs %q", a, b)
	}
}

func TestMktemp(t *testing.T) {
	dir := t.TempDir()
	out, errOut, st := run(t, "", "mktemp", "-p", dir, "fooXXXXXX.txt")
	name := strings.TrimSpace(out)
	if st != 0 || !strings.HasPrefix(name, dir+"/foo") || !strings.HasSuffix(name, ".txt") || len(filepath.Base(name)) != len("fooXXXXXX.txt") {
		t.Fatalf("mktemp: status %d out %q err %q", st, out, errOut)
	}
	if fi, err := os.Stat(name); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mktemp file: %v %v", fi, err)
	}
	out, _, st = run(t, "", "mktemp", "-d", "-p", dir)
	if fi, err := os.Stat(strings.TrimSpace(out)); st != 0 || err != nil || !fi.IsDir() {
		t.Fatalf("mktemp -d: %q %v", out, err)
	}
	out, _, st = run(t, "", "mktemp", "-u", "-p", dir, "XXX")
	if _, err := os.Stat(strings.TrimSpace(out)); st != 0 || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("mktemp -u created %q (%v)", out, err)
	}
	t.Setenv("TMPDIR", dir)
	out, _, st = run(t, "", "mktemp", "-t", "barXXX")
	if st != 0 || !strings.HasPrefix(out, dir+"/bar") {
		t.Fatalf("mktemp -t: %q", out)
	}
}

func TestSleepTimeout(t *testing.T) {
	start := time.Now()
	if _, _, st := run(t, "", "sleep", "0.05", "0.05"); st != 0 {
		t.Fatal("sleep failed")
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Fatalf("sleep 0.05 0.05 took %v", d)
	}
	start = time.Now()
	_, _, st := run(t, "", "timeout", "0.1", "sleep", "5")
	if st != 124 || time.Since(start) > 3*time.Second {
		t.Fatalf("timeout: status %d after %v", st, time.Since(start))
	}
	for _, tt := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{{"1", time.Second, true}, {"1.5", 1500 * time.Millisecond, true}, {"2m", 2 * time.Minute, true},
		{"1h", time.Hour, true}, {"1d", 24 * time.Hour, true}, {".5s", 500 * time.Millisecond, true},
		{"x", 0, false}, {"-1", 0, false}, {"1x", 0, false}, {"", 0, false}, {"0x10", 0, false}} {
		d, ok := parseDuration(tt.in)
		if ok != tt.ok || ok && d != tt.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v, %v", tt.in, d, ok, tt.want, tt.ok)
		}
	}
}

// TestXargsNative runs xargs against host commands through the native
// Spawn fallback.
func TestXargsNative(t *testing.T) {
	out, _, st := run(t, "a b c\nd\n", "xargs", "-n", "2", "echo")
	if st != 0 || out != "a b\nc d\n" {
		t.Fatalf("xargs -n 2: %d %q", st, out)
	}
	out, _, st = run(t, "x\ny\n", "xargs", "-I{}", "echo", "<{}>")
	if st != 0 || out != "<x>\n<y>\n" {
		t.Fatalf("xargs -I: %d %q", st, out)
	}
	_, _, st = run(t, "a\n", "xargs", "false")
	if st != 123 {
		t.Fatalf("xargs false: status %d, want 123", st)
	}
	_, errOut, st := run(t, "a\n", "xargs", "no-such-command-wasmbox")
	if st != 127 || !strings.Contains(errOut, "No such file or directory") {
		t.Fatalf("xargs missing command: %d %q", st, errOut)
	}
}

func TestSplitString(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{{"a b  c", []string{"a", "b", "c"}}, {`'a b' "c\"d"`, []string{"a b", `c"d`}},
		{`a\_b\tc`, []string{"a b\tc"}}, {"a #comment", []string{"a"}}, {`a \c b`, []string{"a"}}} {
		got, err := splitString(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("splitString(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := splitString("'open"); err == nil {
		t.Error("unterminated quote accepted")
	}
}

func TestFactor64(t *testing.T) {
	for _, n := range []uint64{2, 3, 4, 97, 1 << 62, 18446744073709551615, 18446744073709551557, 600851475143, 999999000001, 4611686014132420609} {
		p := uint64(1)
		for _, f := range factor64(n) {
			if !isPrime64(f) {
				t.Fatalf("factor64(%d): %d is not prime", n, f)
			}
			p *= f
		}
		if p != n {
			t.Fatalf("factor64(%d): product %d", n, p)
		}
	}
}
