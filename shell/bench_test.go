package shell

import (
	"context"
	"testing"

	"github.com/wasmbox/wasmbox/internal/sh/expand"
	"github.com/wasmbox/wasmbox/internal/sh/interp"
)

// BenchmarkArithLoop is a builtin-only script: 1000 arithmetic operations.
func BenchmarkArithLoop(b *testing.B) {
	ts := newTestShell(b, nil)
	ctx := context.Background()
	script := `x=0; for ((i=0; i<1000; i++)); do (( x += i * 2 + 1 )); done`
	for b.Loop() {
		if code, err := ts.Run(ctx, script); code != 0 || err != nil {
			b.Fatal(code, err)
		}
	}
}

// BenchmarkBuiltinCommands runs 1000 simple commands (each passes the call
// handler: command count and variable size checks).
func BenchmarkBuiltinCommands(b *testing.B) {
	ts := newTestShell(b, nil)
	ctx := context.Background()
	script := `for i in {1..1000}; do : "$i"; done`
	for b.Loop() {
		if code, err := ts.Run(ctx, script); code != 0 || err != nil {
			b.Fatal(code, err)
		}
	}
}

// BenchmarkParseRun parses and runs a small script on a fresh Run.
func BenchmarkParseRun(b *testing.B) {
	ts := newTestShell(b, nil)
	ctx := context.Background()
	script := `name=world
greet() { printf 'hello %s\n' "$1"; }
if [[ -d /tmp ]]; then greet "$name" > /dev/null; fi
arr=(a b c); echo "${#arr[@]}" > /dev/null`
	for b.Loop() {
		if code, err := ts.Run(ctx, script); code != 0 || err != nil {
			b.Fatal(code, err)
		}
	}
}

// BenchmarkNew measures creating a Shell.
func BenchmarkNew(b *testing.B) {
	ts := newTestShell(b, nil)
	for b.Loop() {
		if _, err := New(ts.cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkArithLoopUpstream is the same loop on a bare interp.Runner
// (no handlers, no sanitizing): the baseline of BenchmarkArithLoop.
func BenchmarkArithLoopUpstream(b *testing.B) {
	r, err := interp.New(interp.Env(expand.ListEnviron()), func(r *interp.Runner) error { r.Dir = "/"; return nil })
	if err != nil {
		b.Fatal(err)
	}
	file := mustParse(`x=0; for ((i=0; i<1000; i++)); do (( x += i * 2 + 1 )); done`)
	ctx := context.Background()
	for b.Loop() {
		r.Run(ctx, file)
	}
}
