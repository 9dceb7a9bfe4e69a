package runtimetest

import (
	goruntime "runtime"
	"testing"
	"time"
)

// CheckGoroutines records the number of goroutines now and returns a
// function that fails tb if, after a settle period of up to two seconds,
// more goroutines are running than at the start. Call it as
//
//	defer runtimetest.CheckGoroutines(t)()
func CheckGoroutines(tb testing.TB) func() {
	tb.Helper()
	before := goruntime.NumGoroutine()
	return func() {
		tb.Helper()
		// A watchdog (goroutines that end by themselves may take a while
		// on a loaded machine); a settled count returns at once.
		deadline := time.Now().Add(30 * time.Second)
		var now int
		for {
			now = goruntime.NumGoroutine()
			if now <= before || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if now > before {
			buf := make([]byte, 1<<20)
			n := goruntime.Stack(buf, true)
			tb.Errorf("goroutine leak: %d before, %d after\n%s", before, now, buf[:n])
		}
	}
}
