package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/third_party/wazero/imports/wasi_snapshot_preview1"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/internal/wasmbin"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/sandbox"
	"github.com/wasmbox/wasmbox/server"
	"github.com/wasmbox/wasmbox/wasm"
)

// killWait is how long a command runs before its deadline in the kill
// measurements: long enough for it to be running (and blocked) for sure.
const killWait = 150 * time.Millisecond

// newSandbox returns a sandbox on the engine with a generous timeout.
func (e *Env) newSandbox(ctx context.Context) (*sandbox.Sandbox, error) {
	return sandbox.New(ctx, sandbox.WithEngine(e.Engine), sandbox.WithTimeout(5*time.Minute))
}

// measureKill times deadline → return for a guest spinning without host
// calls, cat blocked reading a pipe, sleep 100 and a shell busy loop, and
// the same kills of native processes (exec.CommandContext, SIGKILL).
func measureKill(ctx context.Context, e *Env) ([]Row, error) {
	n := e.reps(3, 20)
	rt := e.Engine.Runtime()
	var rows []Row
	for _, g := range []struct {
		name, note string
		wasm       []byte
	}{
		{"spin-loop guest (no host calls), wazero's check", "runtime.Run of a hand-assembled `loop br 0` without imports: WithCloseOnContextDone", runtimetest.Spin()},
		{"spin-loop guest (no host calls), fuel", "the same loop in a module importing sched_yield: metered (every Go guest is)", runtimetest.SpinMetered()},
	} {
		spin, err := rt.Compile(ctx, "bench-"+g.name, g.wasm)
		if err != nil {
			return nil, err
		}
		var guest []float64
		for i := 0; i < n; i++ {
			lat, err := killAfter(ctx, func(ctx context.Context) error {
				err := rt.Run(ctx, spin, wazero.NewModuleConfig(), runtime.RunOptions{})
				if !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("spin guest ended with %v, want a deadline", err)
				}
				return nil
			})
			if err != nil {
				return rows, err
			}
			guest = append(guest, lat)
		}
		rows = append(rows, row(g.name, Duration, guest, nil, g.note))
	}

	sb, err := e.newSandbox(ctx)
	if err != nil {
		return rows, err
	}
	defer sb.Close()
	cases := []struct {
		name, script string
		pipe         bool
		native       []string
	}{
		{"cat blocked on a pipe read", "cat", true, []string{"/usr/bin/cat"}},
		{"sleep 100", "sleep 100", false, []string{"/usr/bin/sleep", "100"}},
		{"while :; do :; done", "while :; do :; done", false, []string{"/usr/bin/bash", "-c", "while :; do :; done"}},
	}
	for _, c := range cases {
		var box, nat []float64
		for i := 0; i < n; i++ {
			var pw *io.PipeWriter
			var stdin io.Reader
			if c.pipe {
				var pr *io.PipeReader
				pr, pw = io.Pipe()
				stdin = pr
			}
			lat, err := killAfter(ctx, func(ctx context.Context) error {
				res, err := sb.Stream(ctx, c.script, stdin, io.Discard, io.Discard)
				if err != nil {
					return err
				}
				if res.ErrorClass != sandbox.ClassTimeout {
					return fmt.Errorf("%q ended with exit %d class %q, want TIMEOUT", c.script, res.ExitCode, res.ErrorClass)
				}
				return nil
			})
			if pw != nil {
				pw.Close()
			}
			if err != nil {
				return rows, err
			}
			box = append(box, lat)
			lat, err = killAfter(ctx, func(ctx context.Context) error {
				return nativeKill(ctx, c.native, c.pipe)
			})
			if err != nil {
				return rows, err
			}
			nat = append(nat, lat)
		}
		rows = append(rows, row(c.name, Duration, box, nat, "native: exec.CommandContext (SIGKILL) of "+filepath.Base(c.native[0])))
	}
	bashRows, err := measureBashKill(ctx, e, n)
	return append(rows, bashRows...), err
}

// measureBashKill times deadline → return of busy loops under GNU bash's
// session (sandbox.WithShell(ShellBash)): in the shell itself, in a forked
// subshell, in a pipeline stage, and in a command the shell spawned (bash
// -c, awk). The native column is bash -c under exec.CommandContext.
func measureBashKill(ctx context.Context, e *Env, n int) ([]Row, error) {
	if _, ok := wasm.Bash(); !ok {
		return nil, nil
	}
	sb, err := sandbox.New(ctx, sandbox.WithEngine(e.Engine), sandbox.WithTimeout(5*time.Minute), sandbox.WithShell(sandbox.ShellBash))
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	var rows []Row
	for _, c := range []struct{ name, script string }{
		{"bash: while :; do :; done", "while :; do :; done"},
		{"bash: the loop in a subshell (fork)", "(while :; do :; done)"},
		{"bash: the loop in a pipeline stage", "while :; do :; done | cat"},
		{"bash: the loop in a spawned bash -c", "bash -c 'while :; do :; done'"},
		{"bash: awk's loop, spawned", "awk 'BEGIN { while (1) {} }'"},
	} {
		var box, nat []float64
		for i := 0; i < n; i++ {
			lat, err := killAfter(ctx, func(ctx context.Context) error {
				res, err := sb.Stream(ctx, c.script, nil, io.Discard, io.Discard)
				if err != nil {
					return err
				}
				if res.ErrorClass != sandbox.ClassTimeout {
					return fmt.Errorf("bash %q ended with exit %d class %q, want TIMEOUT", c.script, res.ExitCode, res.ErrorClass)
				}
				return nil
			})
			if err != nil {
				return rows, err
			}
			box = append(box, lat)
			lat, err = killAfter(ctx, func(ctx context.Context) error {
				return nativeKill(ctx, []string{"/usr/bin/bash", "-c", c.script}, false)
			})
			if err != nil {
				return rows, err
			}
			nat = append(nat, lat)
		}
		rows = append(rows, row(c.name, Duration, box, nat, "GNU bash's session in wasm (sandbox.Stream, WithShell bash); native: exec.CommandContext (SIGKILL) of bash -c"))
	}
	return rows, nil
}

// killAfter runs f under a deadline killWait from now and returns how long
// after the deadline f returned, in seconds.
func killAfter(ctx context.Context, f func(ctx context.Context) error) (float64, error) {
	deadline := time.Now().Add(killWait)
	cctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if err := f(cctx); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return seconds(time.Since(deadline)), nil
}

// nativeKill runs argv until ctx kills it; with pipe its stdin is a pipe
// nobody writes to. It runs in a process group of its own, which the kill
// ends whole, as the sandbox ends a whole tree: SIGKILL of bash alone
// leaves the subshell of `bash -c '(while :; do :; done)'` spinning as an
// orphan (the bench left 40 of them behind, running on for good).
func nativeKill(ctx context.Context, argv []string, pipe bool) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	defer func() {
		// Whatever of the group outlived its leader's kill.
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
	if pipe {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		defer r.Close()
		defer w.Close()
		cmd.Stdin = r
	}
	err := cmd.Run()
	if ctx.Err() == nil {
		return fmt.Errorf("native %s ended before its deadline: %v", argv[0], err)
	}
	return nil
}

// input1MB returns 1,000,000 bytes of text lines with repeated words, the
// same every time.
func input1MB() []byte {
	words := []string{"alpha", "beta", "gamma", "delta", "needle", "omega", "kappa", "sigma", "zeta", "theta"}
	var b bytes.Buffer
	x := uint32(1)
	for i := 0; b.Len() < 1_000_000; i++ {
		fmt.Fprintf(&b, "%06d", i%5000)
		for j := 0; j < 8; j++ {
			x = x*1664525 + 1013904223
			b.WriteByte(' ')
			b.WriteString(words[x>>28%uint32(len(words))])
		}
		b.WriteByte('\n')
	}
	out := b.Bytes()[:1_000_000]
	out[len(out)-1] = '\n'
	return out
}

// prepareInput writes the 1 MB input to /tmp/in.txt of sb and to the
// scratch directory; it returns the host path.
func (e *Env) prepareInput(sb *sandbox.Sandbox) (string, error) {
	data := input1MB()
	host := filepath.Join(e.Dir, "in.txt")
	if err := os.WriteFile(host, data, 0o644); err != nil {
		return "", err
	}
	return host, sb.WriteFile("/tmp/in.txt", data, 0o644)
}

// timeSandbox runs script n times in sb and returns the durations and the
// stdout of the first run; a run that does not exit 0 is an error.
func timeSandbox(ctx context.Context, sb *sandbox.Sandbox, script string, n int) ([]float64, string, error) {
	var ds []float64
	var first string
	for i := 0; i < n; i++ {
		start := time.Now()
		res, err := sb.Run(ctx, script)
		d := time.Since(start)
		if err != nil {
			return nil, "", err
		}
		if res.ExitCode != 0 || res.ErrorClass != "" {
			return nil, "", fmt.Errorf("%q: exit %d class %q: %s", script, res.ExitCode, res.ErrorClass, res.Stderr)
		}
		if i == 0 {
			first = res.Stdout
		}
		ds = append(ds, seconds(d))
	}
	return ds, first, nil
}

// timeNative fork/execs argv n times (C locale) and returns the durations
// and the stdout of the first run.
func timeNative(ctx context.Context, argv []string, n int) ([]float64, string, error) {
	return timeNativeEnv(ctx, argv, nil, n)
}

// timeNativeEnv is timeNative with env added to the environment.
func timeNativeEnv(ctx context.Context, argv, env []string, n int) ([]float64, string, error) {
	var ds []float64
	var first string
	for i := 0; i < n; i++ {
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		// The caller's environment (HOME locates wasmbox's compilation
		// cache) in the C locale, so GNU sort orders bytes like wasmbox.
		cmd.Env = append(append(os.Environ(), "LC_ALL=C"), env...)
		cmd.Stdout = &out
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		if err != nil {
			return nil, "", fmt.Errorf("native %q: %w", argv, err)
		}
		if i == 0 {
			first = out.String()
		}
		ds = append(ds, seconds(d))
	}
	return ds, first, nil
}

// sameOutput compares outputs field by field (wc pads differently).
func sameOutput(a, b string) bool {
	return strings.Join(strings.Fields(a), " ") == strings.Join(strings.Fields(b), " ")
}

// measureCommands times cat, wc, grep and sort on the same 1 MB input
// through the sandbox and as GNU tools.
func measureCommands(ctx context.Context, e *Env) ([]Row, error) {
	n := e.reps(3, 20)
	sb, err := e.newSandbox(ctx)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	host, err := e.prepareInput(sb)
	if err != nil {
		return nil, err
	}
	var rows []Row
	// A small file: what a command costs when it has nearly nothing to do.
	small := []byte("hello, world\n")
	smallHost := filepath.Join(e.Dir, "small.txt")
	if err := os.WriteFile(smallHost, small, 0o644); err != nil {
		return nil, err
	}
	if err := sb.WriteFile("/tmp/small.txt", small, 0o644); err != nil {
		return nil, err
	}
	box, out, err := timeSandbox(ctx, sb, "cat /tmp/small.txt", n)
	if err != nil {
		return nil, err
	}
	nat, nout, err := timeNative(ctx, []string{"/usr/bin/cat", smallHost}, n)
	if err != nil {
		return nil, err
	}
	if out != nout {
		return nil, fmt.Errorf("cat of a small file: sandbox printed %q, GNU %q", out, nout)
	}
	rows = append(rows, row("cat /tmp/small.txt", Duration, box, nat, "13 bytes; sandbox.Run vs fork/exec /usr/bin/cat"))
	for _, c := range [][]string{{"cat"}, {"wc"}, {"grep", "-c", "needle"}, {"sort"}} {
		script := strings.Join(c, " ") + " /tmp/in.txt"
		box, out, err := timeSandbox(ctx, sb, script, n)
		if err != nil {
			return rows, err
		}
		nat, nout, err := timeNative(ctx, append(append([]string{"/usr/bin/" + c[0]}, c[1:]...), host), n)
		if err != nil {
			return rows, err
		}
		if !sameOutput(strings.ReplaceAll(out, "/tmp/in.txt", ""), strings.ReplaceAll(nout, host, "")) {
			return rows, fmt.Errorf("%s: sandbox output differs from GNU (%d vs %d bytes)", script, len(out), len(nout))
		}
		rows = append(rows, row(script, Duration, box, nat, "1 MB input; sandbox.Run vs fork/exec /usr/bin/"+c[0]))
	}
	return rows, nil
}

// measureScripts times a builtin-only loop and a 5-stage pipeline against
// /bin/bash running the same text.
func measureScripts(ctx context.Context, e *Env) ([]Row, error) {
	n := e.reps(3, 20)
	sb, err := e.newSandbox(ctx)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	host, err := e.prepareInput(sb)
	if err != nil {
		return nil, err
	}
	cases := []struct{ name, script, note string }{
		{"small builtin-only Run", `x=1; y=$((x+1)); echo "$x $y"`, "no external command; in-process p50 against a whole bash process"},
		{"builtin-only loop (2000 iterations)", `i=0; s=0; while [ $i -lt 2000 ]; do s=$((s+i*i)); i=$((i+1)); done; echo $s`, "no external command"},
		{"5-stage pipeline on 1 MB", `cat IN | tr a-z A-Z | sort | uniq -c | wc -l`, "cat | tr | sort | uniq -c | wc -l"},
	}
	var rows []Row
	for _, c := range cases {
		n := n
		if strings.HasPrefix(c.name, "small") {
			n = e.reps(50, 500)
		}
		box, out, err := timeSandbox(ctx, sb, strings.ReplaceAll(c.script, "IN", "/tmp/in.txt"), n)
		if err != nil {
			return rows, err
		}
		nat, nout, err := timeNative(ctx, []string{"/usr/bin/bash", "-c", strings.ReplaceAll(c.script, "IN", host)}, n)
		if err != nil {
			return rows, err
		}
		if !sameOutput(out, nout) {
			return rows, fmt.Errorf("%s: sandbox printed %q, bash %q", c.name, out, nout)
		}
		rows = append(rows, row(c.name, Duration, box, nat, c.note+"; native: /usr/bin/bash -c"))
	}
	return rows, nil
}

// measureThroughput runs `echo hi | cat` in N forked sandboxes at once for
// a fixed time and reports runs per second and the per-run latency.
func measureThroughput(ctx context.Context, e *Env) ([]Row, error) {
	span := e.span(700*time.Millisecond, 4*time.Second)
	base, err := e.newSandbox(ctx)
	if err != nil {
		return nil, err
	}
	defer base.Close()
	var rows []Row
	for _, n := range []int{1, 2, 8, 64} {
		boxes := make([]*sandbox.Sandbox, n)
		for i := range boxes {
			if boxes[i], err = base.Fork(); err != nil {
				for _, sb := range boxes[:i] {
					sb.Close()
				}
				return rows, err
			}
		}
		var mu sync.Mutex
		var lats []float64
		var firstErr error
		var wg sync.WaitGroup
		start := time.Now()
		stop := start.Add(span)
		for _, sb := range boxes {
			wg.Add(1)
			go func(sb *sandbox.Sandbox) {
				defer wg.Done()
				for time.Now().Before(stop) && ctx.Err() == nil {
					t0 := time.Now()
					res, err := sb.Run(ctx, "echo hi | cat")
					d := time.Since(t0)
					if err == nil && res.Stdout != "hi\n" {
						err = fmt.Errorf("echo hi | cat: exit %d class %q stdout %q", res.ExitCode, res.ErrorClass, res.Stdout)
					}
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = err
					}
					lats = append(lats, seconds(d))
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}(sb)
		}
		wg.Wait()
		elapsed := time.Since(start)
		for _, sb := range boxes {
			sb.Close()
		}
		if firstErr != nil {
			return rows, firstErr
		}
		r := row(fmt.Sprintf("%d concurrent sandboxes", n), Duration, lats, nil, "`echo hi | cat` in a loop; median/p99 per run")
		r.PerSecond = float64(len(lats)) / elapsed.Seconds()
		rows = append(rows, r)
	}
	return rows, nil
}

// memSample is the resident set size (from /proc/self/statm) and the Go
// heap in use, after a garbage collection.
// memSample is the process's memory: resident set, proportional set (each
// page shared by k mappings counts 1/k: what the process really holds;
// RSS counts a shared page once per mapping, and every instance maps the
// snapshot) and Go heap in use.
type memSample struct{ rss, pss, heap float64 }

func sampleMem() (memSample, error) {
	// FreeOSMemory collects and returns freed pages to the OS, so that
	// memory released by earlier work does not show up as a negative delta.
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return memSample{}, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return memSample{}, fmt.Errorf("bad /proc/self/statm %q", b)
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return memSample{}, err
	}
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	m := memSample{rss: float64(pages * int64(os.Getpagesize())), heap: float64(ms.HeapInuse)}
	m.pss = m.rss
	if b, err := os.ReadFile("/proc/self/smaps_rollup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
				if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
					m.pss = kb * 1024
				}
			}
		}
	}
	return m, nil
}

// measureMemory reports RSS and Go heap per idle sandbox (K sandboxes
// created with New) and per live command (K forks each running sleep).
func measureMemory(ctx context.Context, e *Env) ([]Row, error) {
	k := e.reps(10, 100)
	// A first round warms up the pools and caches that all sandboxes share.
	for i := 0; i < k; i++ {
		sb, err := e.newSandbox(ctx)
		if err != nil {
			return nil, err
		}
		sb.Close()
	}
	before, err := sampleMem()
	if err != nil {
		return nil, err
	}
	pssNew := before.pss
	boxes := make([]*sandbox.Sandbox, 0, k)
	closeAll := func() {
		for _, sb := range boxes {
			sb.Close()
		}
		boxes = boxes[:0]
	}
	defer closeAll()
	for i := 0; i < k; i++ {
		sb, err := e.newSandbox(ctx)
		if err != nil {
			return nil, err
		}
		boxes = append(boxes, sb)
	}
	after, err := sampleMem()
	if err != nil {
		return nil, err
	}
	note := fmt.Sprintf("delta over %d sandboxes from New, divided by %d", k, k)
	rows := []Row{
		row("idle sandbox, RSS", Bytes, []float64{(after.rss - before.rss) / float64(k)}, nil, note),
		row("idle sandbox, Go heap", Bytes, []float64{(after.heap - before.heap) / float64(k)}, nil, note),
	}
	// The same sandboxes after a run: an idle session whose live shell
	// has run a script.
	for _, sb := range boxes {
		if res, err := sb.Run(ctx, `x=1; cd /tmp; echo $x | cat`); err != nil || res.Stdout != "1\n" {
			return rows, fmt.Errorf("idle session run: %v %+v", err, res)
		}
	}
	if after, err = sampleMem(); err != nil {
		return rows, err
	}
	note = fmt.Sprintf("delta over %d sandboxes from New and one run (`x=1; cd /tmp; echo $x | cat`), divided by %d", k, k)
	rows = append(rows, row("idle session with a live shell, PSS", Bytes, []float64{(after.pss - pssNew) / float64(k)}, nil, note+"; shared snapshot pages divided among their mappings"))
	closeAll()

	k = e.reps(8, 64)
	base, err := e.newSandbox(ctx)
	if err != nil {
		return rows, err
	}
	defer base.Close()
	for i := 0; i < k; i++ {
		sb, err := base.Fork()
		if err != nil {
			return rows, err
		}
		boxes = append(boxes, sb)
	}
	rt := e.Engine.Runtime()
	live0 := rt.LiveInstances()
	before, err = sampleMem()
	if err != nil {
		return rows, err
	}
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, sb := range boxes {
		wg.Add(1)
		go func(sb *sandbox.Sandbox) {
			defer wg.Done()
			sb.Run(cctx, "sleep 60")
		}(sb)
	}
	waitErr := waitFor(ctx, 60*time.Second, func() bool { return rt.LiveInstances() >= live0+int64(k) })
	if waitErr == nil {
		after, err = sampleMem()
	}
	cancel()
	wg.Wait()
	if waitErr != nil {
		return rows, fmt.Errorf("live commands: %w (%d of %d running)", waitErr, rt.LiveInstances()-live0, k)
	}
	if err != nil {
		return rows, err
	}
	note = fmt.Sprintf("delta with %d `sleep 60` running in %d forks, divided by %d", k, k, k)
	rows = append(rows,
		row("live command (sleep), RSS", Bytes, []float64{(after.rss - before.rss) / float64(k)}, nil, note+"; counts the shared snapshot pages once per instance"),
		row("live command (sleep), PSS", Bytes, []float64{(after.pss - before.pss) / float64(k)}, nil, note+"; shared pages divided among their mappings"),
		row("live command (sleep), Go heap", Bytes, []float64{(after.heap - before.heap) / float64(k)}, nil, note))
	return rows, nil
}

// errWaitTimeout is returned by waitFor when the condition never held.
var errWaitTimeout = errors.New("condition not reached in time")

func waitFor(ctx context.Context, limit time.Duration, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return errWaitTimeout
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}

// measureSandbox times New + the first command, Fork of a sandbox holding
// a 10 MB tree, and Snapshot and Restore of it.
func measureSandbox(ctx context.Context, e *Env) ([]Row, error) {
	n := e.reps(3, 20)
	var first []float64
	for i := 0; i < n; i++ {
		start := time.Now()
		sb, err := e.newSandbox(ctx)
		if err != nil {
			return nil, err
		}
		res, err := sb.Run(ctx, "echo hi | cat")
		d := time.Since(start)
		sb.Close()
		if err != nil {
			return nil, err
		}
		if res.Stdout != "hi\n" {
			return nil, fmt.Errorf("first command: %+v", res)
		}
		first = append(first, seconds(d))
	}
	rows := []Row{row("New + first command (echo hi | cat)", Duration, first, nil, "engine already compiled")}

	sb, err := e.newSandbox(ctx)
	if err != nil {
		return rows, err
	}
	defer sb.Close()
	const dirs, files, size = 100, 10, 10 << 10
	blob := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	for d := 0; d < dirs; d++ {
		dir := fmt.Sprintf("/home/user/tree/d%03d", d)
		if err := sb.MkdirAll(dir, 0o755); err != nil {
			return rows, err
		}
		for f := 0; f < files; f++ {
			if err := sb.WriteFile(fmt.Sprintf("%s/f%02d", dir, f), blob, 0o644); err != nil {
				return rows, err
			}
		}
	}
	tree := fmt.Sprintf("%d files of %d KiB (%.1f MB)", dirs*files, size>>10, float64(dirs*files*size)/1e6)
	// And a shell with state: functions, variables, exports, aliases, a
	// directory.
	if res, err := sb.Run(ctx, `cd /home/user/tree; f() { echo "$1"; }; g() { f "$@" | tr a-z A-Z; }; A=1; B=two; export C=3; arr=(x y z); alias ll='ls -l'; set -o pipefail`); err != nil || res.ExitCode != 0 {
		return rows, fmt.Errorf("shell state: %v %+v", err, res)
	}
	var forks []float64
	for i := 0; i < n; i++ {
		start := time.Now()
		f, err := sb.Fork()
		d := time.Since(start)
		if err != nil {
			return rows, err
		}
		if i == 0 {
			res, err := f.Run(ctx, `g hi; echo "$A $B $C ${arr[2]} $PWD"`)
			if err != nil || res.Stdout != "HI\n1 two 3 z /home/user/tree\n" {
				f.Close()
				return rows, fmt.Errorf("the fork's shell: %v %+v", err, res)
			}
		}
		f.Close()
		forks = append(forks, seconds(d))
	}
	rows = append(rows, row("Fork with a 10 MB tree and shell state", Duration, forks, nil, tree+"; functions, variables, aliases, options, directory"))

	var snaps, restores []float64
	var buf bytes.Buffer
	for i := 0; i < n; i++ {
		buf.Reset()
		start := time.Now()
		if err := sb.Snapshot(&buf); err != nil {
			return rows, err
		}
		snaps = append(snaps, seconds(time.Since(start)))
		dst, err := e.newSandbox(ctx)
		if err != nil {
			return rows, err
		}
		start = time.Now()
		err = dst.Restore(bytes.NewReader(buf.Bytes()))
		d := time.Since(start)
		if err == nil {
			var got []byte
			got, err = dst.ReadFile("/home/user/tree/d099/f09")
			if err == nil && !bytes.Equal(got, blob) {
				err = errors.New("restored file differs")
			}
		}
		dst.Close()
		if err != nil {
			return rows, fmt.Errorf("restore: %w", err)
		}
		restores = append(restores, seconds(d))
	}
	size1 := fmt.Sprintf("snapshot of %.1f MB", float64(buf.Len())/1e6)
	rows = append(rows,
		row("Snapshot of the 10 MB tree", Duration, snaps, nil, size1+" into a bytes.Buffer"),
		row("Restore of it", Duration, restores, nil, size1+" into a new sandbox"))
	return rows, nil
}

// measureStartup times a cold compile of the tool module (an engine
// without the on-disk cache) and a warm `wasmbox run -c true` process
// against /usr/bin/true.
func measureStartup(ctx context.Context, e *Env) ([]Row, error) {
	n := e.reps(1, 3)
	var cold []float64
	for i := 0; i < n; i++ {
		start := time.Now()
		eng, err := sandbox.NewEngine(ctx, runtime.Config{DisableCache: true})
		d := time.Since(start)
		if err != nil {
			return nil, err
		}
		eng.Close(ctx)
		cold = append(cold, seconds(d))
	}
	rows := []Row{row("cold compile of the tool module", Duration, cold, nil, "sandbox.NewEngine with the disk cache disabled")}
	// Each module on its own: what the first use of its commands costs
	// without the disk cache (NewEngine compiles only the shell and
	// coreutils; the others are compiled on first use).
	for _, name := range wasm.Modules() {
		bin, _ := wasm.Module(name)
		var ds []float64
		for i := 0; i < n; i++ {
			rt, err := runtime.New(ctx, runtime.Config{DisableCache: true})
			if err != nil {
				return nil, err
			}
			start := time.Now()
			_, err = rt.Compile(ctx, name, bin)
			d := time.Since(start)
			rt.Close(ctx)
			if err != nil {
				return nil, fmt.Errorf("compile %s: %w", name, err)
			}
			ds = append(ds, seconds(d))
		}
		rows = append(rows, row("cold compile: "+name+" module", Duration, ds, nil,
			fmt.Sprintf("%d bytes; runtime.Compile with the disk cache disabled", len(bin))))
	}
	if e.Binary == "" {
		return rows, nil
	}
	// The engine of these rows is the bench's own: a private runtime
	// directory, stopped at the end.
	rt, err := os.MkdirTemp("", "wasmbox-bench-engine-")
	if err != nil {
		return rows, err
	}
	defer os.RemoveAll(rt)
	engineEnv := []string{"XDG_RUNTIME_DIR=" + rt, "WASMBOX_ENGINE_IDLE=5m"}
	defer func() {
		stop := exec.Command(e.Binary, "engine", "stop")
		stop.Env = append(os.Environ(), engineEnv...)
		stop.Run()
	}()
	inProcess := []string{"WASMBOX_ENGINE=off"}
	host, err := os.MkdirTemp("", "wasmbox-bench-start-")
	if err != nil {
		return rows, err
	}
	defer os.RemoveAll(host)
	if err := os.WriteFile(filepath.Join(host, "f"), []byte(strings.Repeat("a line\n", 100)), 0o644); err != nil {
		return rows, err
	}
	n = e.reps(3, 20)
	cases := []struct {
		name string
		argv []string
		env  []string
		nat  []string
		note string
	}{
		{"warm process start: wasmbox run -c true", []string{e.Binary, "run", "-c", "true"}, engineEnv,
			[]string{"/usr/bin/true"}, "fork/exec of the built binary, through its resident engine; native: /usr/bin/true"},
		{"warm process start, in-process (WASMBOX_ENGINE=off)", []string{e.Binary, "run", "-c", "true"}, inProcess,
			[]string{"/usr/bin/true"}, "fork/exec of the built binary loading the cached tools itself; native: /usr/bin/true"},
		{"warm wasmbox run -c 'echo hi | cat'", []string{e.Binary, "run", "-c", "echo hi | cat"}, engineEnv,
			[]string{"/usr/bin/bash", "-c", "echo hi | cat"}, "through the resident engine; native: bash -c"},
		{"warm wasmbox run -c 'wc -l f' (host mount)", []string{e.Binary, "run", "--mount", host + ":/h", "--workdir", "/h", "-c", "wc -l f"}, engineEnv,
			[]string{"/usr/bin/bash", "-c", "cd " + host + " && wc -l f"}, "through the resident engine; native: bash -c"},
	}
	for _, c := range cases {
		// Two runs first: the first fills the on-disk compilation cache
		// if empty, and starts the engine.
		if _, _, err := timeNativeEnv(ctx, c.argv, c.env, 2); err != nil {
			return rows, err
		}
		box, _, err := timeNativeEnv(ctx, c.argv, c.env, n)
		if err != nil {
			return rows, err
		}
		nat, _, err := timeNative(ctx, c.nat, n)
		if err != nil {
			return rows, err
		}
		rows = append(rows, row(c.name, Duration, box, nat, c.note))
	}
	return rows, nil
}

// killCheck is how a compute row stops its guest.
type killCheck int

const (
	checkWazero killCheck = iota // WithCloseOnContextDone: an exit to Go at every loop header
	checkFuel                    // wasmbin.InstrumentLoops: a decrement per iteration (the default)
	checkNone                    // nothing: the guest cannot be stopped
)

func (k killCheck) String() string {
	return [...]string{"kill check armed (WithCloseOnContextDone)", "fuel metering (the default)", "no kill check"}[k]
}

// runtimeFor is a plain wazero runtime for k, with WASI (whose sched_yield
// the metered code calls) instantiated.
func runtimeFor(ctx context.Context, k killCheck, cache wazero.CompilationCache) (wazero.Runtime, error) {
	rc := wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(k == checkWazero)
	if cache != nil {
		rc = rc.WithCompilationCache(cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		r.Close(ctx)
		return nil, err
	}
	return r, nil
}

// meter returns wasm with its loops metered when k is checkFuel.
func meter(k killCheck, wasm []byte) ([]byte, error) {
	if k != checkFuel {
		return wasm, nil
	}
	out, ok, err := wasmbin.InstrumentLoops(wasm)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("module cannot be metered")
	}
	return out, nil
}

// measureCompute runs the same LCG loop as a wasm guest with each kill
// check, and as Go.
func measureCompute(ctx context.Context, e *Env) ([]Row, error) {
	n := e.reps(3, 7)
	iters := uint32(e.reps(20_000_000, 50_000_000))
	want := lcg(iters)
	nat := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		got := lcg(iters)
		nat = append(nat, seconds(time.Since(start)))
		if got != want {
			return nil, errors.New("native loop is not deterministic")
		}
	}
	var rows []Row
	for _, k := range []killCheck{checkWazero, checkFuel, checkNone} {
		ds, err := timeLoopGuest(ctx, k, iters, want, n)
		if err != nil {
			return rows, err
		}
		name := "guest loop, " + k.String()
		rows = append(rows, row(name, Duration, ds, nat, fmt.Sprintf("%d iterations of x=x*1664525+1013904223; native: the Go loop", iters)))
	}
	if e.Quick {
		// The tool module compiles in tens of seconds per configuration
		// on a loaded machine (cached on disk afterwards).
		return rows, nil
	}
	input := input1MB()
	host := filepath.Join(e.Dir, "wc-in.txt")
	if err := os.WriteFile(host, input, 0o644); err != nil {
		return rows, err
	}
	nat, nout, err := timeNative(ctx, []string{"/usr/bin/wc", "-w", host}, n)
	if err != nil {
		return rows, err
	}
	for _, k := range []killCheck{checkWazero, checkFuel, checkNone} {
		ds, out, err := timeToolGuest(ctx, k, []string{"wc", "-w"}, input, n)
		if err != nil {
			return rows, err
		}
		if !sameOutput(out, strings.ReplaceAll(nout, host, "")) {
			return rows, fmt.Errorf("wc -w guest printed %q, GNU %q", out, nout)
		}
		name := "wc -w of 1 MB in raw wazero, " + k.String()
		rows = append(rows, row(name, Duration, ds, nat, "the embedded coreutils module, initialized and run in plain wazero (no snapshot), stdin from memory; native: GNU wc"))
	}
	return rows, nil
}

// timeToolGuest runs a command of the embedded coreutils module n times in
// a plain wazero runtime with kill check k, input on stdin, and returns the
// durations and the first output. Every run initializes its instance
// (_initialize, then wasmbox_run): no snapshot, so that the row shows the
// cost of the check alone. The compiled code is cached under the user
// cache directory (wasmbox/bench-compile).
func timeToolGuest(ctx context.Context, k killCheck, argv []string, input []byte, n int) ([]float64, string, error) {
	var cache wazero.CompilationCache
	if base, err := os.UserCacheDir(); err == nil {
		if c, err := wazero.NewCompilationCacheWithDir(filepath.Join(base, "wasmbox", "bench-compile", fmt.Sprint(int(k)))); err == nil {
			defer c.Close(ctx)
			cache = c
		}
	}
	r, err := runtimeFor(ctx, k, cache)
	if err != nil {
		return nil, "", err
	}
	defer r.Close(ctx)
	bin, err := meter(k, wasm.Coreutils())
	if err != nil {
		return nil, "", err
	}
	cm, err := r.CompileModule(ctx, bin)
	if err != nil {
		return nil, "", err
	}
	// The wasmbox host calls (spawn, ...) are all answered with errno 52
	// (ENOSYS, "not supported"): the commands timed here need none of them.
	host := r.NewHostModuleBuilder(runtime.SpawnModuleName)
	for _, f := range cm.ImportedFunctions() {
		if mod, name, _ := f.Import(); mod == runtime.SpawnModuleName {
			results := f.ResultTypes()
			host.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, m api.Module, stack []uint64) {
				if len(results) > 0 {
					stack[0] = 52
				}
			}), f.ParamTypes(), results).Export(name)
		}
	}
	if _, err := host.Instantiate(ctx); err != nil {
		return nil, "", err
	}
	var ds []float64
	var first string
	for i := 0; i < n; i++ {
		var out, errOut bytes.Buffer
		mc := wazero.NewModuleConfig().WithName("").WithArgs(argv...).
			WithStdin(bytes.NewReader(input)).WithStdout(&out).WithStderr(&errOut).
			WithStartFunctions(wasmbin.ExportInitialize)
		start := time.Now()
		mod, err := r.InstantiateModule(ctx, cm, mc)
		var res []uint64
		if err == nil {
			res, err = mod.ExportedFunction(wasmbin.ExportRun).Call(ctx)
		}
		d := time.Since(start)
		if mod != nil {
			mod.Close(ctx)
		}
		var exit *sys.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 0) {
			return nil, "", fmt.Errorf("%v: %w (stderr %q)", argv, err, errOut.String())
		}
		if err == nil && uint32(res[0]) != 0 {
			return nil, "", fmt.Errorf("%v: exit status %d (stderr %q)", argv, uint32(res[0]), errOut.String())
		}
		if i == 0 {
			first = out.String()
		}
		ds = append(ds, seconds(d))
	}
	return ds, first, nil
}

// lcg is the native twin of the loop guest.
//
//go:noinline
func lcg(n uint32) uint32 {
	var x uint32
	for ; n != 0; n-- {
		x = x*1664525 + 1013904223
	}
	return x
}

// loopModule returns a module exporting loop(n i32) i32, the wasm twin of
// lcg. It imports sched_yield, which the fuel metering calls.
func loopModule() []byte {
	const (
		opLocalSet = 0x21
		opI32Eqz   = 0x45
		opI32Sub   = 0x6b
		opI32Mul   = 0x6c
		opBlock    = 0x02
	)
	rt := runtimetest.OpLocalGet
	var body []byte
	body = append(body, opBlock, runtimetest.OpBlockVoid, runtimetest.OpLoop, runtimetest.OpBlockVoid)
	body = append(body, rt, 0x00, opI32Eqz, runtimetest.OpBrIf, 0x01)
	body = append(body, rt, 0x01)
	body = append(body, runtimetest.I32Const(1664525)...)
	body = append(body, opI32Mul)
	body = append(body, runtimetest.I32Const(1013904223)...)
	body = append(body, runtimetest.OpI32Add, opLocalSet, 0x01)
	body = append(body, rt, 0x00)
	body = append(body, runtimetest.I32Const(1)...)
	body = append(body, opI32Sub, opLocalSet, 0x00)
	body = append(body, runtimetest.OpBr, 0x00, runtimetest.OpEnd, runtimetest.OpEnd)
	body = append(body, rt, 0x01)
	return runtimetest.Module{Imports: []runtimetest.Import{runtimetest.SchedYield}, Funcs: []runtimetest.Func{{
		Type:   runtimetest.FuncType{Params: []byte{runtimetest.I32}, Results: []byte{runtimetest.I32}},
		Locals: []byte{runtimetest.I32},
		Body:   body,
		Export: "loop",
	}}}.Encode()
}

// timeLoopGuest instantiates the loop module in a wazero runtime with kill
// check k and times n calls of loop(iters).
func timeLoopGuest(ctx context.Context, k killCheck, iters, want uint32, n int) ([]float64, error) {
	r, err := runtimeFor(ctx, k, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close(ctx)
	bin, err := meter(k, loopModule())
	if err != nil {
		return nil, err
	}
	mod, err := r.Instantiate(ctx, bin)
	if err != nil {
		return nil, fmt.Errorf("loop module: %w", err)
	}
	fn := mod.ExportedFunction("loop")
	var ds []float64
	for i := 0; i < n; i++ {
		start := time.Now()
		res, err := fn.Call(ctx, uint64(iters))
		d := time.Since(start)
		if err != nil {
			return nil, err
		}
		if uint32(res[0]) != want {
			return nil, fmt.Errorf("guest loop returned %d, Go %d", uint32(res[0]), want)
		}
		ds = append(ds, seconds(d))
	}
	return ds, nil
}

// measureResponsiveness measures a 1 ms timer's lateness and GET /health
// latency of a real server.Server on loopback, while 2×NumCPU guests spin
// (2×GOMAXPROCS of a default process; the CLI raises GOMAXPROCS to
// sandbox.ResponsiveProcs per CPU, which is what keeps the host
// responsive) and (the "native" column) with no guest running.
func measureResponsiveness(ctx context.Context, e *Env) ([]Row, error) {
	span := e.span(time.Second, 5*time.Second)
	srv, err := server.New(server.Config{Backend: backend{e}})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go srv.Serve(l)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	url := "http://" + l.Addr().String() + "/health"
	client := &http.Client{Timeout: 10 * time.Second}

	idleTimer := timerLateness(ctx, span)
	idleHealth, err := healthLatency(ctx, client, url, span)
	if err != nil {
		return nil, err
	}
	spinners := 2 * goruntime.NumCPU()
	stop, err := e.spin(ctx, spinners)
	if err != nil {
		return nil, err
	}
	busyTimer := timerLateness(ctx, span)
	busyHealth, herr := healthLatency(ctx, client, url, span)
	if err := stop(); err != nil {
		return nil, err
	}
	if herr != nil {
		return nil, herr
	}
	note := fmt.Sprintf("while %d metered guests spin; native column: no guest running", spinners)
	return []Row{
		row("1 ms timer lateness", Duration, busyTimer, idleTimer, note),
		row("GET /health latency (loopback server.Server)", Duration, busyHealth, idleHealth, note+"; target p99 < 10 ms"),
	}, nil
}

// spin starts k spin-loop guests, metered as Go guests are (they reach the
// host every wasmbin.Fuel iterations); stop cancels them and checks they
// all ended by the cancel.
func (e *Env) spin(ctx context.Context, k int) (stop func() error, err error) {
	rt := e.Engine.Runtime()
	mod, err := rt.Compile(ctx, "bench-spin-metered", runtimetest.SpinMetered())
	if err != nil {
		return nil, err
	}
	live0 := rt.LiveInstances()
	cctx, cancel := context.WithCancel(ctx)
	errs := make(chan error, k)
	for i := 0; i < k; i++ {
		go func() { errs <- rt.Run(cctx, mod, wazero.NewModuleConfig(), runtime.RunOptions{}) }()
	}
	stop = func() error {
		cancel()
		var first error
		for i := 0; i < k; i++ {
			if err := <-errs; !errors.Is(err, context.Canceled) && first == nil {
				first = fmt.Errorf("spinning guest ended with %v, want a cancel", err)
			}
		}
		return first
	}
	if err := waitFor(ctx, 30*time.Second, func() bool { return rt.LiveInstances() >= live0+int64(k) }); err != nil {
		stop()
		return nil, fmt.Errorf("spinners: %w", err)
	}
	return stop, nil
}

// timerLateness sleeps 1 ms on a timer again and again for span and
// returns how late each wake-up was.
func timerLateness(ctx context.Context, span time.Duration) []float64 {
	var late []float64
	t := time.NewTimer(time.Millisecond)
	defer t.Stop()
	end := time.Now().Add(span)
	for time.Now().Before(end) && ctx.Err() == nil {
		start := time.Now()
		t.Reset(time.Millisecond)
		<-t.C
		l := time.Since(start) - time.Millisecond
		if l < 0 {
			l = 0
		}
		late = append(late, seconds(l))
	}
	return late
}

// healthLatency GETs url again and again for span.
func healthLatency(ctx context.Context, c *http.Client, url string, span time.Duration) ([]float64, error) {
	var ds []float64
	end := time.Now().Add(span)
	for time.Now().Before(end) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET /health: %s", resp.Status)
		}
		ds = append(ds, seconds(d))
	}
	return ds, nil
}

// backend makes the server's sessions from sandboxes on the bench engine.
type backend struct{ e *Env }

func (b backend) NewSession(ctx context.Context) (server.Session, error) {
	sb, err := b.e.newSandbox(ctx)
	if err != nil {
		return nil, err
	}
	return session{sb}, nil
}

type session struct{ sb *sandbox.Sandbox }

func (s session) Run(ctx context.Context, script string, timeout time.Duration) (server.RunResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := s.sb.Run(ctx, script)
	if err != nil {
		return server.RunResult{}, err
	}
	return server.RunResult{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode,
		ErrorClass: string(res.ErrorClass), Truncated: res.Truncated, Duration: res.Duration}, nil
}

func (s session) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return s.sb.ReadFile(path)
}

func (s session) WriteFile(ctx context.Context, path string, data []byte) error {
	return s.sb.WriteFile(path, data, 0o644)
}

func (s session) Close() error { return s.sb.Close() }
