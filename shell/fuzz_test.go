package shell

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// fuzzSeeds are the table scripts plus hostile ones.
func fuzzSeeds() []string {
	var seeds []string
	for _, c := range bashCases {
		seeds = append(seeds, c.script)
	}
	return append(seeds,
		`f(){ f|f& }; f`, `x=1; while :; do x=$x$x; done`, `(( a[0]++ ))`, `cat <(echo a) | wc`,
		`eval "$(printf 'echo %q' "$x")"`, `set -Eeuo pipefail; false | true`, `read -n 2 -d , a b <<< "xy,z"`,
		`printf '%*.*f|%q|%b' 5 2 3.14159 $'\t' '\x41\c'`, `trap 'echo $?' ERR EXIT; false`,
	)
}

// FuzzRun runs arbitrary scripts with a short timeout and small limits: the
// test process must never panic, every Run must return in time, and no
// goroutine may be left behind.
//
//	go test -run '^$' -fuzz FuzzRun -fuzztime 60s ./shell
func FuzzRun(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		before := runtime.NumGoroutine()
		ts := newTestShell(t, func(c *Config) {
			c.Limits = Limits{MaxVarBytes: 1 << 20, MaxOutputBytes: 1 << 16, MaxCommands: 100000, MaxDepth: 200, MaxJobs: 16}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			ts.Run(ctx, script)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("Run did not return 5s after a 200ms deadline: %q", script)
		}
		settleGoroutines(t, before+2)
	})
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzRun from fuzzSeeds
// when WASMBOX_WRITE_CORPUS=1.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("WASMBOX_WRITE_CORPUS") != "1" {
		t.Skip("set WASMBOX_WRITE_CORPUS=1 to regenerate the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRun")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range fuzzSeeds() {
		sum := sha256.Sum256([]byte(s))
		content := fmt.Sprintf("go test fuzz v1\nstring(%q)\n", s)
		if err := os.WriteFile(filepath.Join(dir, hex.EncodeToString(sum[:8])), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
