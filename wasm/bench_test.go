package wasm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchInput writes a ~1 MB text file of words and numbers into dir.
func benchInput(b *testing.B, dir string) {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "gamma", "delta", "error", "warning", "info", "wasm", "sandbox", "kernel"}
	var buf bytes.Buffer
	for buf.Len() < 1<<20 {
		fmt.Fprintf(&buf, "%d %s %s %d\n", r.IntN(100000), words[r.IntN(len(words))], words[r.IntN(len(words))], r.IntN(1000))
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "small.txt"), []byte("hello, world\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "small.json"), []byte(`{"name": "wasmbox", "tags": ["a", "b"], "n": 1}`+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCommand measures one command end to end through the runtime:
// instantiate the compiled module from its snapshot, run the command,
// close. Compilation and the snapshot are excluded (done once).
//
//	go test ./wasm -run '^$' -bench Command
//	go test ./wasm -run '^$' -bench Command -nosnapshot  # initialize every instance
//	go test ./wasm -run '^$' -bench Command -module /tmp/raw.wasm  # unmerged build
func BenchmarkCommand(b *testing.B) {
	h := getHost(b)
	root, caseDir := newRoot(b)
	benchInput(b, caseDir)
	// One namespace for every run: copying the 1 MB input in and out
	// (what run does for a guest without one) is not the command's cost.
	ns, err := h.namespace(root)
	if err != nil {
		b.Fatal(err)
	}
	for _, argv := range [][]string{
		{"true"},
		{"echo", "hi"},
		{"cat", "small.txt"},
		{"wc", "big.txt"},
		{"grep", "-c", "error", "big.txt"},
		{"sort", "big.txt"},
		{"jq", ".", "small.json"},
		{"awk", "{print $1}", "small.txt"},
	} {
		if _, ok := Lookup(argv[0]); !ok {
			continue
		}
		b.Run(strings.Join(argv, " "), func(b *testing.B) {
			var out bytes.Buffer
			cpu0 := cpuTime()
			for b.Loop() {
				out.Reset()
				st, err := h.run(context.Background(), &guest{argv: argv, env: goldenEnv, cwd: "/tmp/golden", fs: ns,
					stdin: bytes.NewReader(nil), stdout: &out, stderr: io.Discard})
				if err != nil || st != 0 {
					b.Fatalf("%v: status %d, %v", argv, st, err)
				}
			}
			// CPU time is steadier than wall time on a shared machine.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// BenchmarkCommandLatency is the latency of one command that starts when
// the runtime is idle (its spare instances ready, see runtime.Config.Spares):
// the time an agent waits for a lone command. The pause between runs is
// not timed.
//
//	go test ./wasm -run '^$' -bench CommandLatency
func BenchmarkCommandLatency(b *testing.B) {
	h := getHost(b)
	root, caseDir := newRoot(b)
	benchInput(b, caseDir)
	ns, err := h.namespace(root)
	if err != nil {
		b.Fatal(err)
	}
	for _, argv := range [][]string{{"true"}, {"cat", "small.txt"}, {"jq", ".", "small.json"}} {
		b.Run(strings.Join(argv, " "), func(b *testing.B) {
			var out bytes.Buffer
			for b.Loop() {
				b.StopTimer()
				time.Sleep(5 * time.Millisecond)
				out.Reset()
				b.StartTimer()
				st, err := h.run(context.Background(), &guest{argv: argv, env: goldenEnv, cwd: "/tmp/golden", fs: ns,
					stdin: bytes.NewReader(nil), stdout: &out, stderr: io.Discard})
				if err != nil || st != 0 {
					b.Fatalf("%v: status %d, %v", argv, st, err)
				}
			}
		})
	}
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLiveInstance reports the host memory each live instance costs
// (a "cat" blocked on its stdin) and its linear memory size.
func BenchmarkLiveInstance(b *testing.B) {
	h := getHost(b)
	root, _ := newRoot(b)
	ns, err := h.namespace(root)
	if err != nil {
		b.Fatal(err)
	}
	const n = 20
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{}, n)
		var writers []*io.PipeWriter
		for i := 0; i < n; i++ {
			pr, pw := io.Pipe()
			writers = append(writers, pw)
			go func() {
				h.run(ctx, &guest{argv: []string{"cat"}, env: goldenEnv, cwd: "/", fs: ns, stdin: pr, stdout: io.Discard, stderr: io.Discard})
				done <- struct{}{}
			}()
		}
		time.Sleep(500 * time.Millisecond) // let every instance reach its read
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.Sys-before.Sys)/n/(1<<20), "MiB-sys/instance")
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/n/(1<<20), "MiB-heap/instance")
		for _, w := range writers {
			w.Close()
		}
		cancel()
		for i := 0; i < n; i++ {
			<-done
		}
	}
}
