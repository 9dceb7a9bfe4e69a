package sandbox

import (
	goruntime "runtime"
	"testing"
)

func TestKeepHostResponsive(t *testing.T) {
	prev := goruntime.GOMAXPROCS(1)
	defer goruntime.GOMAXPROCS(prev)
	if got := KeepHostResponsive(); got != 1 {
		t.Fatalf("returned %d, want the previous value 1", got)
	}
	if got, want := goruntime.GOMAXPROCS(0), ResponsiveProcs*goruntime.NumCPU(); got != want {
		t.Fatalf("GOMAXPROCS = %d, want %d", got, want)
	}
	goruntime.GOMAXPROCS(1000)
	KeepHostResponsive()
	if got := goruntime.GOMAXPROCS(0); got != 1000 {
		t.Fatalf("lowered GOMAXPROCS to %d", got)
	}
}
