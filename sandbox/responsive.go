package sandbox

import (
	goruntime "runtime"
)

// ResponsiveProcs is the GOMAXPROCS that KeepHostResponsive sets, per CPU.
const ResponsiveProcs = 4

// KeepHostResponsive raises GOMAXPROCS to ResponsiveProcs per CPU (never
// lowers it) and returns the previous value.
//
// A guest in a pure-compute loop holds its P (the Go scheduler's slot)
// until it leaves native code for wazero's kill check, and the scheduler
// then only switches goroutines on its 10 ms time slice: with as many
// spinning guests as CPUs, an HTTP handler, a timer or a signal waits tens
// to hundreds of milliseconds for a P. With more Ps than CPUs, such a
// goroutine gets an idle P at once and the kernel shares the CPUs between
// its thread and the guests' threads within its own (millisecond) latency.
// A server embedding sandboxes should call this at start; `wasmbox serve`
// does.
func KeepHostResponsive() int {
	prev := goruntime.GOMAXPROCS(0)
	if want := ResponsiveProcs * goruntime.NumCPU(); prev < want {
		goruntime.GOMAXPROCS(want)
	}
	return prev
}
