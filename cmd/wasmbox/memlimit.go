package main

import (
	"os"
	"runtime/debug"

	"github.com/wasmbox/wasmbox/sandbox"
)

// setMemoryLimit sets the Go runtime's soft memory limit of a serving
// process (serve, mcp) to its engine's memory budget plus a quarter, unless
// GOMEMLIMIT sets one: the budget bounds what is live (VFS contents,
// linear memories), and without a limit the collector lets the heap grow
// to twice what is live before it collects (GOGC=100), so that the
// process's RSS reached about twice the budget's content (measured in
// BENCHMARKS.md, "Memory budgets").
func setMemoryLimit(eng *sandbox.Engine) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return
	}
	b := eng.Runtime().Budget().Limit()
	debug.SetMemoryLimit(int64(min(b+b/4, 1<<62)))
}
