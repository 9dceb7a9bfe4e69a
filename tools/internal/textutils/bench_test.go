package textutils

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// benchInput is about 1 MB of log-like lines, the same every run.
func benchInput() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "gamma", "delta", "error", "warning", "info", "debug", "wasm", "sandbox", "kill", "timeout"}
	var b bytes.Buffer
	for b.Len() < 1<<20 {
		fmt.Fprintf(&b, "%06d %s", r.IntN(1000000), words[r.IntN(len(words))])
		for k := r.IntN(8); k > 0; k-- {
			b.WriteByte(' ')
			b.WriteString(words[r.IntN(len(words))])
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func runBench(b *testing.B, name string, args ...string) {
	in := benchInput()
	fn, _ := cmd.Lookup(name)
	b.SetBytes(int64(len(in)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st := fn(&cmd.Env{Args: append([]string{name}, args...), Stdin: bytes.NewReader(in), Stdout: io.Discard, Stderr: io.Discard})
		if st > 1 {
			b.Fatalf("status %d", st)
		}
	}
}

func BenchmarkGrepFixed1MB(b *testing.B)      { runBench(b, "grep", "-F", "timeout") }
func BenchmarkGrepBRE1MB(b *testing.B)        { runBench(b, "grep", "err[a-z]*r") }
func BenchmarkGrepERECount1MB(b *testing.B)   { runBench(b, "grep", "-cE", "^[0-9]+ (kill|wasm)") }
func BenchmarkGrepIgnoreCase1MB(b *testing.B) { runBench(b, "grep", "-i", "SANDBOX kill") }
func BenchmarkGrepBackref1MB(b *testing.B)    { runBench(b, "grep", `\(alpha\) \1`) }
func BenchmarkSort1MB(b *testing.B)           { runBench(b, "sort") }
func BenchmarkSortNumeric1MB(b *testing.B)    { runBench(b, "sort", "-n") }
func BenchmarkSortKey1MB(b *testing.B)        { runBench(b, "sort", "-k2,2", "-k1,1nr") }
func BenchmarkSedSubst1MB(b *testing.B)       { runBench(b, "sed", "s/a\\(l*\\)p/<\\1>/g") }
func BenchmarkWc1MB(b *testing.B)             { runBench(b, "wc") }
