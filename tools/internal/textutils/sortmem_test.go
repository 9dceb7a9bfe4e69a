package textutils

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// TestSortMemory bounds what sort allocates per byte of input, so that a
// file of tens of MB sorts within the sandbox's default 256 MiB (the Go
// heap of a guest grows its linear memory and never gives it back). The
// input has short lines, the worst case for per-line overhead. The bound
// is on bytes allocated (runtime.MemStats.TotalAlloc), not on time; it
// was 6, 21.5, 29.7 and 21.5 before sort kept records as offsets.
func TestSortMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const lines = 400_000
	r := rand.New(rand.NewPCG(1, 2))
	var in bytes.Buffer
	for range lines {
		fmt.Fprintf(&in, "%d %d\n", r.IntN(1_000_000), r.IntN(100))
	}
	path := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(path, in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		bound float64 // bytes allocated per input byte
	}{
		{[]string{"sort", path}, 2.5},
		{[]string{"sort", "-n", path}, 5},
		{[]string{"sort", "-k2,2n", "-k1,1", path}, 6},
		{[]string{"sort", "-u", "-n", path}, 5},
	} {
		t.Run(fmt.Sprint(tc.args[1:len(tc.args)-1]), func(t *testing.T) {
			fn, _ := cmd.Lookup("sort")
			var out countWriter
			var errb bytes.Buffer
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			st := fn(&cmd.Env{Args: tc.args, Stdin: bytes.NewReader(nil), Stdout: &out, Stderr: &errb})
			runtime.ReadMemStats(&after)
			if st != 0 {
				t.Fatalf("status %d: %s", st, errb.String())
			}
			if out.n == 0 || (tc.args[1] != "-u" && out.n != in.Len()) {
				t.Fatalf("output %d bytes, input %d", out.n, in.Len())
			}
			perByte := float64(after.TotalAlloc-before.TotalAlloc) / float64(in.Len())
			t.Logf("%v: %.1f bytes allocated per input byte (%d lines, %d bytes)", tc.args[1:len(tc.args)-1], perByte, lines, in.Len())
			if perByte > tc.bound {
				t.Errorf("%.1f bytes allocated per input byte, bound %.1f", perByte, tc.bound)
			}
		})
	}
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }
