package shell

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestHostileInputs(t *testing.T) {
	nested := strings.Repeat("$(echo ", 500) + "x" + strings.Repeat(")", 500)
	nestedPipes := "echo x"
	for range 40 {
		nestedPipes = "{ " + nestedPipes + " | cat; }" // guard texts must not nest (exponential quoting)
	}
	cases := []struct {
		name      string
		script    string
		limits    Limits
		wantCode  int
		wantLimit string // the *LimitError's Limit, or ""
		wantErr   error
		stdout    string // checked when not empty
		stderr    string // substring, checked when not empty
	}{
		{name: "1 MB script", script: strings.Repeat("echo x\n", 150000), wantCode: 2, wantLimit: "script size"},
		{name: "NUL byte", script: "echo a\x00b", wantCode: 2, stderr: "syntax error"},
		// A script is bytes, as for bash: a byte that is not UTF-8 is a
		// character of its own, kept as is.
		{name: "invalid UTF-8 source", script: "echo \xff\xfe x '\xff' \"a\xfeb\" c\xff | cat", stdout: "\xff\xfe x \xff a\xfeb c\xff\n"},
		{name: "invalid UTF-8 data", script: `echo $'\xff\xfe' "$(printf '\xc3')"`, stdout: "\xff\xfe \xc3\n"},
		{name: "500 nested $( )", script: "echo " + nested, stdout: "x\n"},
		{name: "20000-command pipeline", script: strings.Repeat("a|", 20000) + "cat", wantCode: 2, wantLimit: "pipeline length"},
		{name: "40 nested pipelines", script: nestedPipes, stdout: "x\n"},
		{name: "huge eval", script: `x=$(printf ':%.0s' {1..10000}); eval "$x$x"`, limits: Limits{MaxScriptBytes: 1024}, wantCode: 1, wantLimit: "script size"},
		{name: "huge bash -c", script: `x=$(printf '%10000s'); bash -c "$x$x"`, limits: Limits{MaxScriptBytes: 1024}, wantCode: 1, wantLimit: "script size"},
		{name: "fork bomb", script: `f(){ f|f& }; f; sleep 5`, wantCode: 1, wantErr: ErrLimitExceeded},
		{name: "classic fork bomb", script: `:(){ :|:& };:; sleep 5`, wantCode: 1, wantErr: ErrLimitExceeded},
		{name: "doubling in while", script: `x=1; while true; do x=$x$x; done`, wantCode: 1, wantLimit: "variable size"},
		{name: "doubling in for", script: `x=1; for i in {1..64}; do x=$x$x; done`, wantCode: 1, wantLimit: "variable size"},
		{name: "doubling in arithmetic loop", script: `x=1; for ((i=0; i<64; i++)); do x=$x$x; done`, wantCode: 1, wantLimit: "variable size"},
		{name: "array growth", script: `a=(x); while :; do a+=("${a[@]}"); done`, wantCode: 1, wantLimit: "variable size"},
		{name: "cmdsubst flood", script: `x=$(yes)`, wantCode: 1, wantLimit: "variable size"},
		{name: "cmdsubst builtin flood", script: `x=$(while :; do echo aaaaaaaaaaaaaaaaaaaaaaaa; done)`, wantCode: 1, wantLimit: "variable size"},
		{name: "recursion", script: `f() { f; }; f`, wantCode: 1, wantLimit: "nesting depth"},
		{name: "eval recursion", script: `x='eval "$x"'; eval "$x"`, wantCode: 1, wantLimit: "nesting depth"},
		{name: "source recursion", script: `echo 'source ./self.sh' > self.sh; source ./self.sh`, wantCode: 1, wantLimit: "nesting depth"},
		{name: "bash recursion", script: `echo 'bash ./b.sh' > b.sh; bash ./b.sh`, wantCode: 1, wantLimit: "nesting depth"},
		{name: "too many jobs", script: `for i in {1..100}; do spin & done; wait`, wantCode: 1, wantLimit: "background jobs"},
		{name: "command count", script: `while :; do :; done`, limits: Limits{MaxCommands: 1000}, wantCode: 1, wantLimit: "commands"},
		{name: "huge printf width", script: `printf '%999999999d' 1; echo " rc=$?"`, stdout: " rc=1\n", stderr: "too large"},
		{name: "huge read", script: `yes | { read -d '' x; echo done; }`, wantCode: 1, wantErr: ErrLimitExceeded},
		{name: "output flood", script: `yes; echo rc=$?`, limits: Limits{MaxOutputBytes: 1000}, wantCode: 141},
		{name: "panic recovered", script: `panic`, wantCode: 1, wantErr: ErrInternal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			ts := newTestShell(t, func(cfg *Config) {
				cfg.Limits = c.limits
				if cfg.Limits.MaxVarBytes == 0 {
					cfg.Limits.MaxVarBytes = 1 << 20
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			code, err := ts.Run(ctx, c.script)
			stdout, stderr := ts.stdout.String(), ts.stderr.String()
			if code != c.wantCode {
				t.Errorf("status %d, want %d (err %v, stderr %.300q)", code, c.wantCode, err, stderr)
			}
			if c.wantLimit != "" {
				var le *LimitError
				if !errors.As(err, &le) || le.Limit != c.wantLimit {
					t.Errorf("err %v, want a %q LimitError", err, c.wantLimit)
				}
				if !errors.Is(err, ErrLimitExceeded) {
					t.Errorf("errors.Is(%v, ErrLimitExceeded) = false", err)
				}
			}
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("err %v, want %v", err, c.wantErr)
			}
			if c.wantLimit == "" && c.wantErr == nil && err != nil {
				t.Errorf("unexpected error %v", err)
			}
			if c.stdout != "" && stdout != c.stdout {
				t.Errorf("stdout %.200q, want %q", stdout, c.stdout)
			}
			if c.stderr != "" && !strings.Contains(stderr, c.stderr) {
				t.Errorf("stderr %.300q does not contain %q", stderr, c.stderr)
			}
			// The shell survives: the next Run works.
			out, _, code2, err2 := ts.run(t, `echo alive`)
			if out != "alive\n" || code2 != 0 || err2 != nil {
				t.Errorf("shell unusable after the hostile script: %q %d %v", out, code2, err2)
			}
			settleGoroutines(t, before+2)
		})
	}
}

func TestOutputCap(t *testing.T) {
	ts := newTestShell(t, func(c *Config) { c.Limits.MaxOutputBytes = 1000 })
	out, _, code, err := ts.run(t, `yes; echo "after $?"`)
	// Past the cap a writer sees a closed pipe: the last echo ends with 141.
	if err != nil || code != 141 {
		t.Fatalf("code %d err %v", code, err)
	}
	if len(out) != 1000 {
		t.Errorf("stdout has %d bytes, want the cap of 1000", len(out))
	}
	st := ts.Stats()
	if !st.StdoutTruncated || st.StdoutBytes != 1000 || st.StderrTruncated {
		t.Errorf("stats %+v", st)
	}
}

func TestCancelLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	ts := newTestShell(t, nil)
	pr, pw, _ := os.Pipe() // a stdin that never delivers
	defer pw.Close()
	defer pr.Close()
	ts.SetStdio(pr, ts.stdout, ts.stderr)
	for _, script := range []string{
		`yes | spin`,
		`spin & spin & wait`,
		`while :; do echo x | cat > /dev/null; done`,
		`f() { spin | cat; }; f & f & f`,
		`cat <(spin)`,
		`x=$(spin)`,
		`bash -c 'spin | spin'`,
		`while read l; do :; done < /dev/stdin`,
		`read x`,
		`cat`,
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		var code int
		var err error
		go func() {
			code, err = ts.Run(ctx, script)
			close(done)
		}()
		time.Sleep(30 * time.Millisecond)
		start := time.Now()
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second): // a watchdog, not a speed limit
			t.Fatalf("%q: Run did not return after cancel", script)
		}
		t.Logf("%q: Run returned %v after cancel", script, time.Since(start))
		if code != 125 || !errors.Is(err, context.Canceled) {
			t.Errorf("%q: code %d err %v, want 125 Canceled", script, code, err)
		}
	}
	settleGoroutines(t, before+1)
}

func TestPanicInMainGoroutineKeepsState(t *testing.T) {
	ts := newTestShell(t, nil)
	ts.run(t, `cd /tmp; keep=yes; f() { echo func; }`)
	_, _, code, err := ts.run(t, `panic`)
	var pe *PanicError
	if !errors.As(err, &pe) || code != 1 || len(pe.Stack) == 0 {
		t.Fatalf("code %d err %v", code, err)
	}
	out, _, _, _ := ts.run(t, `pwd; echo $keep; f`)
	if out != "/tmp\nyes\nfunc\n" {
		t.Errorf("state after panic: %q", out)
	}
}

func TestPanicsInInterpreterGoroutines(t *testing.T) {
	for _, script := range []string{
		`panic | cat; echo after`,
		`{ panic; } | cat | cat`,
		`panic & wait`,
		`f() { panic | cat; }; f | cat`,
		`cat <( panic )`,
		`x=$( panic | cat )`,
		`eval 'panic | cat'`,
		`bash -c 'panic | cat'`,
		`f() { local l=1; panic; }; f`,
	} {
		ts := newTestShell(t, nil)
		ts.run(t, `cd /tmp; keep=1`)
		_, _, code, err := ts.run(t, script)
		if code != 1 || !errors.Is(err, ErrInternal) {
			t.Errorf("%q: code %d err %v, want 1 and ErrInternal", script, code, err)
		}
		out, _, _, _ := ts.run(t, `echo "$keep $PWD ${l-nolocal}"; f() { echo ok; }; f | cat`)
		if out != "1 /tmp nolocal\nok\n" {
			t.Errorf("%q: shell after the panic: %q", script, out)
		}
	}
}

func TestGuardNamesCannotBeHijacked(t *testing.T) {
	ts := newTestShell(t, nil)
	out, _, code, err := ts.run(t, `__wasmbox_guard() { panic; }; __wasmbox_check() { echo hijacked; }
__wasmbox_procsubst() { echo hijacked; }; echo x | cat; for i in 1; do :; done; cat <(echo real)`)
	if out != "x\nreal\n" || code != 0 || err != nil {
		t.Errorf("stdout %q code %d err %v", out, code, err)
	}
}
