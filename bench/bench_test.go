package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/wasmbox/wasmbox/internal/wasmbin"
	"github.com/wasmbox/wasmbox/wasm"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	for _, c := range []struct {
		xs     []float64
		q      float64
		want   float64
		reason string
	}{
		{nil, 0.5, 0, "no samples"},
		{[]float64{3}, 0.99, 3, "one sample"},
		{[]float64{3, 1, 2}, 0.5, 2, "odd median"},
		{[]float64{4, 1, 3, 2}, 0.5, 2.5, "even median averages"},
		{[]float64{5, 1, 4, 2, 3}, 0.99, 5, "p99 of few samples is the max"},
	} {
		if got := quantile(c.xs, c.q); got != c.want {
			t.Errorf("%s: quantile(%v, %v) = %v, want %v", c.reason, c.xs, c.q, got, c.want)
		}
	}
	xs := make([]float64, 200)
	for i := range xs {
		xs[i] = float64(200 - i) // 200..1
	}
	if got := quantile(xs, 0.99); got != 198 {
		t.Errorf("p99 of 1..200 = %v, want 198", got)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		k    Kind
		v    float64
		want string
	}{
		{Duration, 2.5, "2.50 s"},
		{Duration, 0.0123, "12.30 ms"},
		{Duration, 42e-6, "42.0 µs"},
		{Duration, 80e-9, "80 ns"},
		{Bytes, 3 << 20, "3.0 MiB"},
		{Bytes, -1536, "-1.5 KiB"},
		{Bytes, 12, "12 B"},
	} {
		if got := format(c.k, c.v); got != c.want {
			t.Errorf("format(%s, %v) = %q, want %q", c.k, c.v, got, c.want)
		}
	}
}

func TestRowAndCheck(t *testing.T) {
	r := row("x", Duration, []float64{2, 4, 6}, []float64{1, 2, 3}, "n")
	if r.N != 3 || r.Median != 4 || r.P99 != 6 || r.Native != 2 || r.Ratio != 2 {
		t.Fatalf("row = %+v", r)
	}
	if err := checkRows([]Row{r}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Row{
		{Name: "nan", Kind: Duration, N: 1, Median: math.NaN()},
		{Name: "inf", Kind: Duration, N: 1, P99: math.Inf(1)},
		{Name: "negative time", Kind: Duration, N: 1, Median: -1},
		{Name: "no samples", Kind: Duration},
	} {
		if checkRows([]Row{bad}) == nil {
			t.Errorf("%s: accepted", bad.Name)
		}
	}
	if err := checkRows([]Row{{Name: "freed", Kind: Bytes, N: 1, Median: -4096, P99: -4096}}); err != nil {
		t.Errorf("negative byte delta: %v", err)
	}
}

func TestMarkdown(t *testing.T) {
	rep := Report{
		Machine: Machine{NumCPU: 2, GOMAXPROCS: 2, CPU: "cpu", GoVersion: "go1", OS: "linux/amd64", LoadStart: "1 1 1", LoadEnd: "2 2 2"},
		Quick:   true, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Elapsed: 3 * time.Second,
		Rows: []Row{
			{Group: "command", Name: "a | b", Kind: Duration, N: 3, Median: 0.002, P99: 0.003, Native: 0.001, Ratio: 2, Note: "n"},
			{Group: "throughput", Name: "1 concurrent sandboxes", Kind: Duration, N: 9, Median: 0.01, P99: 0.02, PerSecond: 99.6},
		},
		Failures: []string{"kill: boom"},
	}
	var b bytes.Buffer
	if err := rep.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	want := `Machine: 2 CPUs (GOMAXPROCS 2), cpu, go1, linux/amd64; load average 1 1 1 at start, 2 2 2 at end.
Run: quick, 2026-01-02T03:04:05Z, 3s.

| group | measurement | n | median | p99 | native | ratio | notes |
|---|---|--:|--:|--:|--:|--:|---|
| command | a \| b | 3 | 2.00 ms | 3.00 ms | 1.00 ms | 2.00x | n |
| throughput | 1 concurrent sandboxes | 9 | 10.00 ms | 20.00 ms |  |  | 100 runs/s |

FAILED: kill: boom
`
	if b.String() != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestLoopModuleMatchesGo(t *testing.T) {
	ctx := context.Background()
	want := lcg(12345)
	// 3*Fuel iterations and more: the metered loop calls sched_yield
	// three times and must still compute the same value.
	n := uint32(3*wasmbin.Fuel + 12345)
	want = lcg(n)
	for _, k := range []killCheck{checkWazero, checkFuel, checkNone} {
		if _, err := timeLoopGuest(ctx, k, n, want, 1); err != nil {
			t.Errorf("%v: %v", k, err)
		}
	}
}

func TestInput(t *testing.T) {
	in := input1MB()
	if len(in) != 1_000_000 || in[len(in)-1] != '\n' || !bytes.Contains(in, []byte("needle")) {
		t.Fatalf("input: %d bytes", len(in))
	}
	if !bytes.Equal(in, input1MB()) {
		t.Fatal("input is not deterministic")
	}
}

// TestQuickSuite runs the quick suite (without the cold compile, which
// takes tens of seconds on a loaded machine, unless WASMBOX_BENCH_ALL=1)
// and checks the shape of the report: every measurement present, every
// row with samples and finite numbers. It asserts no speed.
func TestQuickSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every measurement")
	}
	groups := []string{}
	for _, m := range Measurements() {
		if m.Group == "startup" && os.Getenv("WASMBOX_BENCH_ALL") == "" {
			continue
		}
		// The 10 MB tool rows, Python's and GNU bash's take minutes: CI
		// runs them in a step of their own (WASMBOX_BENCH_HEAVY=only in
		// .ci/run: those groups alone, under a longer -timeout than go
		// test's 10 minutes), a plain go test does not.
		heavy := m.Group == "tools" || m.Group == "python" || m.Group == "bash"
		switch mode := os.Getenv("WASMBOX_BENCH_HEAVY"); {
		case os.Getenv("WASMBOX_BENCH_ALL") != "":
		case mode == "only" && !heavy:
			continue
		case mode == "" && heavy:
			continue
		}
		groups = append(groups, m.Group)
	}
	rep, err := Run(context.Background(), Config{Quick: true, Only: groups})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range rep.Rows {
		seen[r.Group]++
		if r.N < 1 || r.Name == "" || r.Kind == "" {
			t.Errorf("row %+v: empty", r)
		}
		if r.Kind == Duration && (r.Median <= 0 || r.P99 < r.Median) {
			t.Errorf("row %s/%s: median %v p99 %v", r.Group, r.Name, r.Median, r.P99)
		}
		if (r.Native > 0) != (r.Ratio > 0) {
			t.Errorf("row %s/%s: native %v ratio %v", r.Group, r.Name, r.Native, r.Ratio)
		}
	}
	wantRows := map[string]int{"kill": 10, "command": 5, "script": 3, "throughput": 4, "memory": 6, "sandbox": 4, "compute": 3, "responsiveness": 2, "startup": 1 + len(wasm.Modules()), "tools": 20, "python": 7, "bash": 7, "net": 2, "cluster": 19}
	for _, g := range groups {
		if seen[g] != wantRows[g] {
			t.Errorf("group %s: %d rows, want %d", g, seen[g], wantRows[g])
		}
	}
	var md, js bytes.Buffer
	if err := rep.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(md.String(), "\n| "); got != len(rep.Rows)+1 {
		t.Errorf("markdown has %d table lines for %d rows:\n%s", got, len(rep.Rows), md.String())
	}
	if err := rep.JSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Rows) != len(rep.Rows) {
		t.Fatalf("JSON round trip: %v (%d rows)", err, len(back.Rows))
	}
	t.Logf("\n%s", md.String())
}

// TestNativeKillLeavesNoProcess: the native side of the kill rows ends the
// whole process tree it started, not only its leader (a subshell of a
// killed bash went on spinning for good before).
func TestNativeKillLeavesNoProcess(t *testing.T) {
	if _, err := os.Stat("/usr/bin/bash"); err != nil {
		t.Skip("no /usr/bin/bash")
	}
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc")
	}
	marker := fmt.Sprintf("wasmbox-native-kill-%d", os.Getpid())
	left := func() []int {
		var pids []int
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, []byte(marker)) {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	defer func() {
		for _, pid := range left() { // never leave them running, even on failure
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	for _, script := range []string{"(while :; do :; done); : " + marker, "while :; do :; done | cat; : " + marker} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := nativeKill(ctx, []string{"/usr/bin/bash", "-c", script}, false)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		// The kernel reaps the killed group at once; a watchdog, not a
		// timing assertion.
		deadline := time.Now().Add(10 * time.Second)
		for len(left()) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if pids := left(); len(pids) > 0 {
			t.Errorf("%q: processes left running after the kill: %v", script, pids)
		}
	}
}
