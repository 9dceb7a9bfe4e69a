package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

// jq is Debian's jq 1.6 in C (wasm/ctools/jq16.wasm, build/ctools, issue
// 25); yq stays gojq. Expectations from Debian 12's /usr/bin/jq on the
// host (the golden cases, tools/testdata/golden/jq, check the rest).

// TestCToolsJQ: the name, what the build supplies that wasi-libc lacks
// (realpath for -L and modules, %Z, gamma, an 8 MiB stack), and yq.
func TestCToolsJQ(t *testing.T) {
	sb := newSandbox(t, WithTimeout(time.Minute))
	mkdirs(t, sb, "/tmp/jq/lib")
	if err := sb.WriteFile("/tmp/jq/lib/m.jq", []byte("def twice: . * 2;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ script, out string }{
		{`jq --version`, "jq-1.6\n"},
		{`echo '{"z":1,"a":{"y":2,"b":3}}' | jq -c '., keys_unsorted, (.n = 1 | keys)'`, "{\"z\":1,\"a\":{\"y\":2,\"b\":3}}\n[\"z\",\"a\"]\n[\"a\",\"n\",\"z\"]\n"},
		// realpath (jq_wasi.c): -L relative to the working directory, and
		// a module found through it.
		{`cd /tmp/jq && jq -n -L lib 'import "m" as m; 21 | m::twice'; cd lib && jq -n -L ../lib/. 'include "m"; 4 | twice'`, "42\n8\n"},
		{`cd / && jq -n -L /tmp/jq/nope 'import "m" as m; 1' 2>&1; echo "[$?]"`, "jq: error: module not found: m\n\njq: 1 compile error\n[3]\n"},
		// %Z is UTC (wasi-libc's is empty, which jq took for a failure).
		{`jq -n -r '1425599507 | strftime("%Y-%m-%d %H:%M:%S %Z"), (localtime | strftime("%Z %%Z"))'`, "2015-03-05 23:51:47 UTC\nUTC %Z\n"},
		{`jq -n -c '[1 | gamma, (2 | pow10?)]'`, "[0]\n"},
		// Printing 300 nested arrays overflowed wasm-ld's 64 KiB stack.
		{`jq -n 'reduce range(300) as $i (0; [.]) | tojson | length'`, "543\n"},
		{`printf 'a: [1, 2]\nb: x\n' | yq -c .`, "{\"a\":[1,2],\"b\":\"x\"}\n"},
	} {
		res := run(t, sb, c.script)
		if res.Stdout != c.out {
			t.Errorf("%s:\nstdout %q\nstderr %q\nwant %q", c.script, res.Stdout, res.Stderr, c.out)
		}
	}
}

// TestCToolsJQHostile: hostile programs and inputs end within the
// command's memory limit or the run's deadline, each with a clear line,
// and the sandbox goes on: nesting past jq's parser limit, a huge string,
// [range(1e9)], recursion with and without growth, values nested deeper
// than the stack holds, and a regular expression whose backtracking is
// exponential (oniguruma's retry limit ends it).
func TestCToolsJQHostile(t *testing.T) {
	sb := newSandbox(t, WithTimeout(20*time.Second), WithLimits(Limits{MemoryPerCommand: 64 << 20}))
	done := make(chan struct{})
	watchdog := time.AfterFunc(5*time.Minute, func() {
		select {
		case <-done:
		default:
			panic("a hostile jq run outlived its 20s deadline by minutes")
		}
	})
	defer watchdog.Stop()
	defer close(done)
	for _, c := range []struct {
		name, script string
		exit         int
		stderr       string
	}{
		{"deep input", `printf '%100000s' '' | tr ' ' '[' | jq .`, 4, "parse error: Exceeds depth limit for parsing at line 1, column 257"},
		{"huge string", `jq -n '"x" * 1000000000 | length'`, 137, "memory limit (64 MiB) exceeded"},
		{"range 1e9", `jq -n '[range(1e9)] | length'`, 137, "memory limit (64 MiB) exceeded"},
		{"growing recursion", `jq -n 'def f: 1 + f; f'`, 137, "memory limit (64 MiB) exceeded"},
		{"regex bomb", `jq -n '"a" * 5000 + "b" | test("^(a|aa)+$")'`, 5, "jq: error (at <unknown>): Regex failure: retry-limit-in-match over"},
		{"deep value", `jq -n 'reduce range(1000000) as $i (0; [.]) | length'`, 134, "out of bounds memory access"},
	} {
		res, err := sb.Run(context.Background(), c.script)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.ExitCode != c.exit || !strings.Contains(res.Stderr, c.stderr) {
			t.Errorf("%s: %s:\nexit %d, stderr %q; want %d and %q", c.name, c.script, res.ExitCode, res.Stderr, c.exit, c.stderr)
		}
	}
	// Endless recursion in constant memory: the deadline.
	res, err := sb.Run(context.Background(), `jq -n 'def f: f; f'`)
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorClass != ClassTimeout || res.ExitCode != 124 {
		t.Errorf("def f: f; f: %+v; want a TIMEOUT", res)
	}
	res = run(t, sb, `echo '{"a":[1,2]}' | jq -c '.a'`)
	wantEqual(t, res.Stdout, "[1,2]\n")
}
