package bashsession_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/wasmbox/wasmbox/shell/bashsession"
)

// go test ./shell/bashsession -run '^$' -bench . -benchtime 200x

func BenchmarkRunBuiltin(b *testing.B) {
	e := newEnv(b)
	s := e.session(b)
	ctx := context.Background()
	var out bytes.Buffer
	for b.Loop() {
		out.Reset()
		if _, err := s.Run(ctx, `x=1; y=$((x+1)); echo "$x $y"`, nil, &out, nil); err != nil || out.String() != "1 2\n" {
			b.Fatal(err, out.String())
		}
	}
}

func BenchmarkImage(b *testing.B) {
	e := newEnv(b)
	s := e.session(b)
	img, _, _ := s.Image()
	b.Logf("memory %d KiB, the image holds %d KiB, stack pointer %#x", img.Size()>>10, img.Stored()>>10, img.StackPointer())
	cfg := e.config(b)
	for b.Loop() {
		c, err := s.ForkBudget(context.Background(), cfg.FS, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

func BenchmarkNew(b *testing.B) {
	e := newEnv(b)
	cfg := e.config(b)
	for b.Loop() {
		s, err := bashsession.New(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkPipeline5Builtins: a 5-stage pipeline of builtins, so the
// guest's five forks and their waits, no command started.
func BenchmarkPipeline5Builtins(b *testing.B) {
	e := newEnv(b)
	s := e.session(b)
	ctx := context.Background()
	var out bytes.Buffer
	for b.Loop() {
		out.Reset()
		if _, err := s.Run(ctx, `echo a | read x | true | echo b | read y`, nil, &out, nil); err != nil || out.String() != "" {
			b.Fatal(err, out.String())
		}
	}
}

// BenchmarkPipeline5Commands: a 5-stage pipeline of small commands (five
// forks, five execs through the executor).
func BenchmarkPipeline5Commands(b *testing.B) {
	e := newEnv(b)
	s := e.session(b)
	ctx := context.Background()
	var out bytes.Buffer
	for b.Loop() {
		out.Reset()
		if _, err := s.Run(ctx, `echo a | cat | tr a b | sort | wc -l`, nil, &out, nil); err != nil || out.String() != "1\n" {
			b.Fatal(err, out.String())
		}
	}
}
