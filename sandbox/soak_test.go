package sandbox

import (
	"context"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var soakFlag = flag.Bool("soak", false, "run the long soak of TestSoak (10,000 runs); WASMBOX_SOAK=1 does too")

// TestSoak mixes normal runs with runs killed by a deadline and by a
// cancel (of the context and through Sandbox.Cancel), in shell loops, in
// pipelines of shell functions and in wasm commands, and runs stopped by
// the shell's memory limit, on two sandboxes at once: every kill ends the
// sandbox's shell instance, and the next run starts another from the
// session's state. After a warm-up it records the goroutines, the live
// wasm instances and the RSS; at the end the goroutines and instances must
// be back to that baseline and the RSS must not have grown by more than a
// tolerance. By default it does 1,000 runs (a few seconds); with -soak or
// WASMBOX_SOAK=1, 10,000 (with -short, 200).
//
//	WASMBOX_SOAK=1 go test -run '^TestSoak$' -v -timeout 30m ./sandbox
func TestSoak(t *testing.T) {
	runs := 1000
	switch {
	case *soakFlag || os.Getenv("WASMBOX_SOAK") == "1":
		runs = 10_000
	case testing.Short():
		runs = 200
	}
	ctx := context.Background()
	eng, err := DefaultEngine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rt := eng.Runtime()
	const workers = 2
	boxes := make([]*Sandbox, workers)
	// 64 MiB of shell memory: bash and every process it forks (a
	// pipeline's stages, ~9 MiB each) count in it.
	for i := range boxes {
		boxes[i] = newSandbox(t, WithLimits(Limits{Timeout: 30 * time.Second, OutputBytes: 64 << 10, ShellMemory: 64 << 20}))
	}

	phase := func(from, to int) map[string]int {
		var mu sync.Mutex
		counts := map[string]int{}
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := from + w; i < to && !t.Failed(); i += workers {
					kind, err := soakRun(ctx, boxes[w], i)
					mu.Lock()
					counts[kind]++
					mu.Unlock()
					if err != nil {
						t.Errorf("run %d (%s): %v", i, kind, err)
						return
					}
				}
			}(w)
		}
		wg.Wait()
		return counts
	}

	warm := max(runs/10, 20)
	phase(0, warm)
	// Live instances, but for the shells the engine's pool keeps ready
	// (it refills them on its own time).
	live := func() int64 { return rt.LiveInstances() }
	g0, live0, rss0 := goruntime.NumGoroutine(), live(), soakRSS(t)
	start := time.Now()
	counts := phase(warm, runs)
	elapsed := time.Since(start)
	if t.Failed() {
		return
	}

	// Goroutines and instances settle back to the baseline.
	deadline := time.Now().Add(5 * time.Second)
	for goruntime.NumGoroutine() > g0 || live() > max(live0, workers) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("after %d runs: %d goroutines (baseline %d), %d live instances (baseline %d)\n%s",
				runs, goruntime.NumGoroutine(), g0, live(), live0, buf[:goruntime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	rss1 := soakRSS(t)
	growth := rss1 - rss0
	const tolerance = 64 << 20
	t.Logf("%d runs after %d warm-up runs in %v (%.0f runs/s): %v", runs-warm, warm, elapsed.Round(time.Millisecond),
		float64(runs-warm)/elapsed.Seconds(), counts)
	t.Logf("goroutines %d -> %d, live instances %d -> %d, RSS %.1f MiB -> %.1f MiB (%+.1f MiB, tolerance %d MiB)",
		g0, goruntime.NumGoroutine(), live0, live(), float64(rss0)/(1<<20), float64(rss1)/(1<<20),
		float64(growth)/(1<<20), tolerance>>20)
	if growth > tolerance {
		t.Errorf("RSS grew by %.1f MiB over %d runs (tolerance %d MiB)", float64(growth)/(1<<20), runs-warm, tolerance>>20)
	}
}

// soakRun does run number i, of a kind chosen by i, and checks how it
// ended. It returns the kind for the statistics.
func soakRun(ctx context.Context, sb *Sandbox, i int) (string, error) {
	type kind struct {
		name, script string
		// kill ends the run: "deadline", "cancel" (the context) or
		// "Cancel" (Sandbox.Cancel); "" lets it finish.
		kill  string
		class ErrorClass
	}
	kinds := []kind{
		{"normal pipe", "echo %d | cat", "", ClassNone},
		{"deadline: shell loop", "while :; do :; done", "deadline", ClassTimeout},
		{"normal files", "echo %d > /tmp/s; cat /tmp/s; rm /tmp/s", "", ClassNone},
		{"deadline: wasm sleep", "sleep 10", "deadline", ClassTimeout},
		{"cancel: wasm cat /dev/zero", "cat /dev/zero > /dev/null", "cancel", ClassCancelled},
		{"normal builtins", "x=%d; echo $((x))", "", ClassNone},
		{"Cancel: pipeline", "cat /dev/zero | cat > /dev/null", "Cancel", ClassCancelled},
		{"deadline: background job", "sleep 10 & wait", "deadline", ClassTimeout},
		{"deadline: shell pipeline", "f() { while :; do echo x; done; }; f | while read l; do :; done", "deadline", ClassTimeout},
		{"limit: shell memory", "x=$(head -c 2000000 /dev/zero | tr \"\\0\" a); y=$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x", "", ClassLimitExceeded},
		{"cancel: mixed pipeline", "cat /dev/zero | f() { cat; }; yes | tr y n | while read l; do :; done", "cancel", ClassCancelled},
	}
	k := kinds[i%len(kinds)]
	script := k.script
	if strings.Contains(script, "%d") {
		script = fmt.Sprintf(script, i)
	}
	// Kill at 2..12 ms: sometimes before the command starts, mostly while
	// it runs.
	after := time.Duration(2+i%11) * time.Millisecond
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	switch k.kill {
	case "deadline":
		runCtx, cancel = context.WithTimeout(ctx, after)
		defer cancel()
	case "cancel":
		timer := time.AfterFunc(after, cancel)
		defer timer.Stop()
	case "Cancel":
		stop, exited := make(chan struct{}), make(chan struct{})
		// The canceller is gone before the next run starts.
		defer func() { close(stop); <-exited }()
		go func() {
			defer close(exited)
			// Sandbox.Cancel only reaches a Run in progress: repeat until
			// the run is over.
			tick := time.NewTicker(after)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					sb.Cancel()
				}
			}
		}()
	}
	res, err := sb.Run(runCtx, script)
	if err != nil {
		return k.name, err
	}
	if res.ErrorClass != k.class {
		return k.name, fmt.Errorf("%q: exit %d class %q, want %q; stderr %q", script, res.ExitCode, res.ErrorClass, k.class, res.Stderr)
	}
	if k.kill == "" && k.class == ClassNone && res.Stdout != strconv.Itoa(i)+"\n" {
		return k.name, fmt.Errorf("%q: stdout %q, exit %d, stderr %q", script, res.Stdout, res.ExitCode, res.Stderr)
	}
	return k.name, nil
}

// soakRSS is the resident set size of the process after returning free
// memory to the OS.
func soakRSS(t *testing.T) int64 {
	t.Helper()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		t.Fatalf("bad statm %q", b)
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}
