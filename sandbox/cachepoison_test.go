package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

const poisonVictimEnv = "WASMBOX_TEST_POISON_VICTIM"

// runArgsGuest runs the "args" test guest of m and returns its output.
func runArgsGuest(t *testing.T, rt *runtime.Runtime, m *runtime.Module) string {
	t.Helper()
	var out bytes.Buffer
	st, err := preview1.NewState(preview1.Config{Args: []string{"args", "one", "two"}, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := rt.Run(context.Background(), m, wazero.NewModuleConfig(), runtime.RunOptions{WASI: st}); err != nil {
		t.Fatalf("run: %v", err)
	}
	return out.String()
}

// poisonVictim is the victim process of TestCachePoisoningEndToEnd: a
// runtime on the cache directory dir loads the module from the disk cache
// and runs it, waits for the attack, and runs it again. Before the fix its
// code was mapped from the cache file, so the second run executed what the
// attacker wrote (int3: the process died of SIGTRAP).
func poisonVictim(t *testing.T, dir string) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	m, err := rt.Compile(ctx, "args", runtimetest.Guest(t, "args"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("first:%q\n", runArgsGuest(t, rt, m))
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("second:%q\n", runArgsGuest(t, rt, m))
}

// The attack of issue 20, section 1, end to end: a script with a rw mount
// of a directory that holds a compilation cache rewrites the machine code
// of its entries in place (int3 from offset 64 KiB, where the code starts).
// A process that had loaded the module from that cache before the write
// keeps running the code it verified (before the fix: the page cache
// carried the new bytes into its executable mapping, and it died on the
// int3), and the next process finds the entries forged (their MAC fails):
// a miss, compiled again and rewritten, never executed.
//
// The victim is a process of its own (this test binary again), so that
// the old behaviour fails the test instead of killing the test binary.
// The attacker's sandbox uses the default engine, whose cache is another
// directory: a sandbox refuses a mount over its own cache (TestCheckMount).
func TestCachePoisoningEndToEnd(t *testing.T) {
	if dir := os.Getenv(poisonVictimEnv); dir != "" {
		poisonVictim(t, dir)
		return
	}
	ctx := context.Background()
	dir, payload := t.TempDir(), t.TempDir()
	bin := runtimetest.Guest(t, "args")
	rt0, err := runtime.New(ctx, runtime.Config{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m0, err := rt0.Compile(ctx, "args", bin)
	if err != nil {
		t.Fatal(err)
	}
	want := runArgsGuest(t, rt0, m0)
	rt0.Close(ctx)

	var entries []string
	var max int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasPrefix(filepath.Base(filepath.Dir(p)), "wazero-") {
			entries = append(entries, p)
			if fi, err := d.Info(); err == nil && fi.Size() > max {
				max = fi.Size()
			}
		}
		return nil
	})
	if len(entries) == 0 {
		t.Fatal("no compiled-code entry in the cache")
	}
	if err := os.WriteFile(filepath.Join(payload, "int3"), bytes.Repeat([]byte{0xcc}, int(max)), 0o600); err != nil {
		t.Fatal(err)
	}
	before := map[string]os.FileInfo{}
	for _, p := range entries {
		if before[p], err = os.Stat(p); err != nil {
			t.Fatal(err)
		}
	}

	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute) // watchdog
	defer cancel()
	victim := exec.CommandContext(wctx, os.Args[0], "-test.run=^TestCachePoisoningEndToEnd$", "-test.v")
	victim.Env = append(os.Environ(), poisonVictimEnv+"="+dir)
	stdin, err := victim.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := victim.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	victim.Stderr = &stderr
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	lines := bufio.NewScanner(stdout)
	line := func(prefix string) string {
		for lines.Scan() {
			log.WriteString(lines.Text() + "\n")
			if v, ok := strings.CutPrefix(lines.Text(), prefix); ok {
				return v
			}
		}
		return ""
	}
	first := line("first:")
	if first == "" {
		stdin.Close()
		victim.Wait()
		t.Fatalf("the victim did not run the module: %s%s", log.String(), stderr.String())
	}
	// The victim loaded the code from the cache (a hit: the entries were
	// not written again), as a process started after the first would.
	for p, fi := range before {
		if now, err := os.Stat(p); err != nil || !os.SameFile(fi, now) {
			t.Fatalf("the victim did not load %s from the cache: %v", filepath.Base(p), err)
		}
	}

	sb := newSandbox(t, WithMountSpec(dir+":/c:rw"), WithMountSpec(payload+":/p:ro"))
	res := run(t, sb, `n=0
for f in /c/wazero-*/* /c/loops/wazero-*/*; do
  [ -f "$f" ] || continue
  dd if=/p/int3 of="$f" bs=65536 seek=1 conv=notrunc 2>/dev/null && n=$((n+1))
done
echo $n`)
	if strings.TrimSpace(res.Stdout) == "0" || res.ExitCode != 0 {
		t.Fatalf("the script rewrote no entry: %+v", res)
	}
	for _, p := range entries {
		b, err := os.ReadFile(p)
		if err != nil || len(b) < 65536+16 || !bytes.Equal(b[65536:65536+16], bytes.Repeat([]byte{0xcc}, 16)) {
			t.Fatalf("the script's write did not reach %s", p)
		}
	}

	fmt.Fprintln(stdin, "go")
	second := line("second:")
	stdin.Close()
	err = victim.Wait()
	if err != nil || second != first {
		t.Fatalf("the victim, after the cache file was rewritten: %v, second run %s, first %s\n%s%s", err, second, first, log.String(), stderr.String())
	}

	// A new process: the forged entries are a miss, compiled again.
	rt, err := runtime.New(ctx, runtime.Config{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	m, err := rt.Compile(ctx, "args", bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range entries {
		if b, err := os.ReadFile(p); err == nil && len(b) >= 65536+16 && bytes.Equal(b[65536:65536+16], bytes.Repeat([]byte{0xcc}, 16)) {
			t.Fatalf("the forged entry %s was kept (loaded as a hit)", filepath.Base(p))
		}
	}
	if got := runArgsGuest(t, rt, m); got != want {
		t.Fatalf("after the attack: %q, want %q", got, want)
	}
}
