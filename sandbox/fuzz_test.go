package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"
)

// sandboxFuzzSeeds are real scripts of the kind agents write, plus hostile
// ones; they seed FuzzSandboxRun (and testdata/fuzz/FuzzSandboxRun).
var sandboxFuzzSeeds = []string{
	// Real work.
	`echo hello | tr a-z A-Z > /tmp/x; cat /tmp/x`,
	`mkdir -p src && printf 'a\nb\nc\n' > src/f.txt && wc -l src/f.txt`,
	`for f in a b c; do echo "$f" >> list; done; sort -r list | head -n 2`,
	`seq 1 100 | awk '{s+=$1} END {print s}'`,
	`printf '{"a":[1,2,3]}' | jq '.a | add'`,
	`grep -rn TODO . 2>/dev/null || echo none`,
	`find / -name '*.txt' -type f 2>/dev/null | head`,
	`cat <<'EOF' > /tmp/s.sh
echo in script "$@"
EOF
bash /tmp/s.sh 1 2`,
	`x=$(date +%s); [ "$x" -gt 0 ] && echo ok`,
	`sed -n 's/^\(.*\)=\(.*\)$/\2=\1/p' <<< "k=v"`,
	`ls -la /home/user; cd /tmp && pwd`,
	`set -euo pipefail; false | true; echo $?`,
	`f(){ local a=$1; echo $((a * 2)); }; f 21`,
	`tar -cf /tmp/t.tar /etc 2>/dev/null; tar -tf /tmp/t.tar | wc -l`,
	`echo a,b,c | cut -d, -f2; echo abc | rev`,
	`xargs -n1 echo <<< "1 2 3"`,
	`case $HOME in /home/*) echo home;; *) echo other;; esac`,
	`trap 'echo bye' EXIT; echo hi`,
	`sleep 0.05 & wait; echo $!`,
	`cat /dev/null; echo $((2**62)); echo ${#PATH}`,
	// Hostile.
	`while :; do :; done`,
	`cat /dev/zero`,
	`yes | head -c 100000000 > /dev/null`,
	`:(){ :|:& };:`,
	`x=x; while :; do x=$x$x; done`,
	`awk 'BEGIN{s="x"; while(1) s=s s}'`,
	`cat /proc/self/environ /etc/shadow ../../../../etc/passwd`,
	`ln -s / /tmp/root; ls /tmp/root/..`,
	`exec 3<> /dev/tcp/127.0.0.1/80`,
	`echo $(echo $(echo $(echo $(echo $(echo deep)))))`,
	`eval "$(printf 'echo %.0s' $(seq 1 1000))"`,
	`cd /; for i in $(seq 1 50); do mkdir d; cd d; done; pwd`,
	`printf '\xff\xfe\x00' | od -c`,
	`exit 300`,
	`kill -9 $$; echo after`,
	"echo \xff",
	"\x00",
	`((`,
	`${`,
}

// FuzzSandboxRun runs arbitrary scripts through Sandbox.Run with a 300 ms
// timeout and small limits. Whatever the script, Run must not panic, must
// return a well-formed Result (status 0..255, a known class, output within
// its cap) in time, and no goroutine may be left once the sandbox is
// closed.
//
//	go test -run='^$' -fuzz='^FuzzSandboxRun$' -fuzztime=5s ./sandbox
func FuzzSandboxRun(f *testing.F) {
	for _, s := range sandboxFuzzSeeds {
		f.Add(s)
	}
	limits := Limits{Timeout: 300 * time.Millisecond, OutputBytes: 64 << 10, MemoryPerCommand: 64 << 20, VFSBytes: 16 << 20, Files: 2000}
	// The sandboxes share the process's default engine, which compiles a
	// tool module on its first use on a goroutine of its own that outlives
	// a run's deadline (the next run uses the result): with a cold
	// compilation cache, a 300 ms run of jq leaves jq compiling for
	// seconds. Those goroutines are the engine's, not a leak of the
	// sandbox: compile every module now, so that what is counted after a
	// run is that run's alone.
	ctx := context.Background()
	eng, err := DefaultEngine(ctx)
	if err != nil {
		f.Fatal(err)
	}
	if err := eng.Executor().Precompile(ctx); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, script string) {
		before := goruntime.NumGoroutine()
		sb, err := New(context.Background(), WithLimits(limits))
		if err != nil {
			t.Fatal(err)
		}
		type outcome struct {
			res Result
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := sb.Run(context.Background(), script)
			done <- outcome{res, err}
		}()
		var o outcome
		select {
		case o = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Run did not return 10 s after its 300 ms deadline: %q", script)
		}
		if o.err != nil {
			t.Fatalf("Run(%q): %v", script, o.err)
		}
		checkFuzzResult(t, o.res, limits)
		if err := sb.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		settleFuzzGoroutines(t, before, script)
	})
}

// checkFuzzResult fails t unless res is well-formed under limits.
func checkFuzzResult(t *testing.T, res Result, limits Limits) {
	t.Helper()
	if res.ExitCode < 0 || res.ExitCode > 255 {
		t.Errorf("exit status %d out of range", res.ExitCode)
	}
	switch res.ErrorClass {
	case ClassNone, ClassLimitExceeded, ClassDenied, ClassNotFound:
	case ClassTimeout:
		if res.ExitCode != 124 {
			t.Errorf("TIMEOUT with exit %d", res.ExitCode)
		}
	case ClassCancelled:
		if res.ExitCode != 125 {
			t.Errorf("CANCELLED with exit %d", res.ExitCode)
		}
	default:
		t.Errorf("unknown class %q", res.ErrorClass)
	}
	if int64(len(res.Stdout)) > limits.OutputBytes || int64(len(res.Stderr)) > limits.OutputBytes {
		t.Errorf("output over the cap: %d and %d bytes", len(res.Stdout), len(res.Stderr))
	}
	if res.Duration < 0 {
		t.Errorf("negative duration %v", res.Duration)
	}
}

// settleFuzzGoroutines fails t unless the goroutine count drops to at most n
// (goroutines that end by themselves, such as the engine refilling its
// ready instances, may take a moment on a loaded machine: the watchdog is
// generous, and a settled count returns at once).
func settleFuzzGoroutines(t *testing.T, n int, script string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for goruntime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutine leak after %q: %d > %d\n%s", script, goruntime.NumGoroutine(), n, buf[:goruntime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWriteSandboxFuzzCorpus regenerates testdata/fuzz/FuzzSandboxRun from
// sandboxFuzzSeeds when WASMBOX_WRITE_CORPUS=1.
func TestWriteSandboxFuzzCorpus(t *testing.T) {
	if os.Getenv("WASMBOX_WRITE_CORPUS") != "1" {
		t.Skip("set WASMBOX_WRITE_CORPUS=1 to regenerate the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzSandboxRun")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range sandboxFuzzSeeds {
		sum := sha256.Sum256([]byte(s))
		content := fmt.Sprintf("go test fuzz v1\nstring(%q)\n", s)
		if err := os.WriteFile(filepath.Join(dir, hex.EncodeToString(sum[:8])), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
