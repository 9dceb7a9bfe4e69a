package session_test

import (
	"context"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/shell/session"
)

// fuzzSeeds are scripts of every kind the shell meets, real and hostile.
var fuzzSeeds = []string{
	`echo hello | tr a-z A-Z`, `x=1; f() { echo $((x+$1)); }; f 41`,
	`for i in 1 2 3; do echo $i; done | sort -r | head -2`, `cd /tmp; pwd; cd -`,
	`seq 10 | while read l; do echo "<$l>"; done | wc -l`, `yes | head -1`,
	`cat <<EOF | wc -c` + "\nabc $HOME\nEOF", `a=(x y z); declare -A m=([k]=v); echo ${a[@]} ${m[k]}`,
	`set -euo pipefail; false | true; echo $?`, `trap 'echo bye' EXIT; echo hi`,
	`sleep 0.01 & wait $!; echo $?`, `(exit 3); echo $?`, `echo $$ $PPID; y='$'; echo ${!y}`,
	`while :; do :; done`, `x=x; while :; do x=$x$x; done`, `:(){ :|:& };:`,
	`f() { f | f; }; f`, `cat /dev/zero | head -c 1000000 | wc -c`, `echo {1..10}{1..10}{1..10}{1..10}{1..10}{1..10}`,
	`exec 3>&1; echo x >&3`, `eval "$(printf 'echo %.0s' $(seq 1 500))"`, `((`, `${`, "\x00", "echo \xff",
	`exit 300`, `kill -9 $$; echo after`, `read -t 0.01 x; echo $?`, `shopt -s lastpipe; echo q | read v; echo $v`,
}

// FuzzRun drives the WebAssembly shell of one session with arbitrary
// scripts under a 300 ms deadline. Whatever the script, Run returns in
// time with a status in 0..255, the host neither panics nor leaks (no
// goroutine is left once the run returned, at most one live instance),
// and the session still answers afterwards.
//
//	go test -run='^$' -fuzz='^FuzzRun$' -fuzztime=30s ./shell/session
func FuzzRun(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	e := newEnv(f)
	// A tool module compiles on first use on a goroutine of its own that
	// outlives a run's deadline (a cold compile takes seconds): compile them
	// all now, so that the goroutines counted after a run are its own.
	if err := e.ex.Precompile(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, script string) {
		s, _ := e.session(t)
		before := goruntime.NumGoroutine()
		live := e.rt.LiveInstances()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		done := make(chan session.Result, 1)
		go func() {
			res, err := s.Run(ctx, script, nil, nil, nil)
			if err != nil {
				t.Errorf("Run(%q): %v", script, err)
			}
			done <- res
		}()
		var res session.Result
		select {
		case res = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Run did not return 10 s after its 300 ms deadline: %q", script)
		}
		if res.Code < 0 || res.Code > 255 {
			t.Fatalf("%q: status %d", script, res.Code)
		}
		deadline := time.Now().Add(30 * time.Second) // a watchdog
		for goruntime.NumGoroutine() > before || e.rt.LiveInstances() > live {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Fatalf("after %q: %d goroutines (before %d), %d live instances (before %d)\n%s", script,
					goruntime.NumGoroutine(), before, e.rt.LiveInstances(), live, buf[:goruntime.Stack(buf, true)])
			}
			time.Sleep(5 * time.Millisecond)
		}
		if out, errs, r := run(t, s, `echo ok`); out != "ok\n" || r.Err != nil {
			t.Fatalf("after %q the session answers %q (stderr %q, %+v)", script, out, errs, r)
		}
	})
}
