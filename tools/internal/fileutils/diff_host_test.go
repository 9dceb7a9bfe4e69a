package fileutils

import (
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffAgainstHost compares our diff with the host's GNU diff on random
// inputs, in every output format. It runs only when WASMBOX_HOST_DIFF=1
// (it needs GNU diff on the host): the golden cases cover the same ground
// deterministically.
func TestDiffAgainstHost(t *testing.T) {
	if os.Getenv("WASMBOX_HOST_DIFF") == "" {
		t.Skip("set WASMBOX_HOST_DIFF=1 to compare with the host's GNU diff")
	}
	if _, err := exec.LookPath("diff"); err != nil {
		t.Skip("no diff on the host")
	}
	dir := t.TempDir()
	r := rand.New(rand.NewSource(1))
	words := []string{"a", "b", "c", "d", "", "}", "{", "x", "A", " a", "a  b", "a b", "\t"}
	gen := func() string {
		n := r.Intn(30)
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(words[r.Intn(len(words))])
			b.WriteByte('\n')
		}
		return b.String()
	}
	mutate := func(s string) string {
		lines := strings.SplitAfter(s, "\n")
		for k := r.Intn(6); k > 0; k-- {
			if len(lines) == 0 {
				break
			}
			i := r.Intn(len(lines))
			switch r.Intn(3) {
			case 0:
				lines = append(lines[:i], lines[i+1:]...)
			case 1:
				lines = append(lines[:i], append([]string{words[r.Intn(len(words))] + "\n"}, lines[i:]...)...)
			default:
				lines[i] = words[r.Intn(len(words))] + "\n"
			}
		}
		return strings.Join(lines, "")
	}
	fails := 0
	for iter := 0; iter < 400 && fails < 1000; iter++ {
		a := gen()
		b := mutate(a)
		if r.Intn(4) == 0 {
			b = gen()
		}
		if r.Intn(8) == 0 && len(a) > 0 {
			a = strings.TrimSuffix(a, "\n")
		}
		if r.Intn(8) == 0 && len(b) > 0 {
			b = strings.TrimSuffix(b, "\n")
		}
		os.WriteFile(filepath.Join(dir, "a"), []byte(a), 0o644)
		os.WriteFile(filepath.Join(dir, "b"), []byte(b), 0o644)
		for _, args := range [][]string{{}, {"-u"}, {"-c"}, {"-U1"}, {"-i"}, {"-w", "-u"}, {"-b"}, {"-B"}, {"-e"}, {"-U0"}, {"-C1"}, {"-y"}, {"-y", "-W", "50"}} {
			full := append(append([]string{"diff"}, args...), "--label=a", "--label=b", "a", "b")
			if len(args) == 0 || args[0] != "-u" && args[0] != "-c" && args[0] != "-U1" && args[0] != "-U0" && args[0] != "-C1" && len(args) == 1 {
				full = append(append([]string{"diff"}, args...), "a", "b")
			}
			got, _, st := run(t, dir, "", full...)
			c := exec.Command("diff", full[1:]...)
			c.Dir = dir
			want, _ := c.Output()
			wantSt := c.ProcessState.ExitCode()
			if got != string(want) || st != wantSt {
				t.Errorf("%v\nA:\n%q\nB:\n%q\ngot (%d):\n%s\nwant (%d):\n%s", args, a, b, st, got, wantSt, want)
				fails++
				break
			}
		}
	}
}
