package shell

import (
	"context"
	"testing"
)

// BenchmarkWhileLoop is the bench's builtin-only loop: 2000 iterations of
// a test command and two arithmetic assignments.
func BenchmarkWhileLoop(b *testing.B) {
	ts := newTestShell(b, nil)
	ctx := context.Background()
	script := `i=0; s=0; while [ $i -lt 2000 ]; do s=$((s+i*i)); i=$((i+1)); done; echo $s > /dev/null`
	for b.Loop() {
		if code, err := ts.Run(ctx, script); code != 0 || err != nil {
			b.Fatal(code, err)
		}
	}
}
