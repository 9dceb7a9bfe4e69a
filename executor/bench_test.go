package executor_test

import (
	"context"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// BenchmarkRunTrivial: a whole job (validation, PATH lookup in the VFS,
// reading and hashing the module file, instantiate, run, close) for a
// module whose _start returns at once.
func BenchmarkRunTrivial(b *testing.B) {
	e := newEnv(b)
	mustWrite(b, e.fs, "/usr/bin/true", runtimetest.Trivial())
	job := executor.Job{Argv: []string{"true"}, Env: []string{"PATH=/bin:/usr/bin"}, FS: e.fs}
	for b.Loop() {
		if res := e.ex.Run(context.Background(), job); res.ExitCode != 0 {
			b.Fatal(res)
		}
	}
}

// BenchmarkRunRegistered: a registered Go guest through its /bin entry.
func BenchmarkRunRegistered(b *testing.B) {
	e := newEnv(b)
	job := executor.Job{Argv: []string{"args"}, FS: e.fs}
	for b.Loop() {
		if res := e.ex.Run(context.Background(), job); res.ExitCode != 0 {
			b.Fatal(res)
		}
	}
}

// BenchmarkKillLatency: time from the deadline to Run returning, for a
// spinning guest.
func BenchmarkKillLatency(b *testing.B) {
	e := newEnv(b)
	var total, worst time.Duration
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
		deadline, _ := ctx.Deadline()
		e.ex.Run(ctx, executor.Job{Argv: []string{"/tmp/spin.wasm"}, FS: e.fs})
		d := time.Since(deadline)
		cancel()
		total += d
		worst = max(worst, d)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/kill")
	b.ReportMetric(float64(worst.Microseconds()), "µs-worst")
}
