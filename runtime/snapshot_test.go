package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi"
	"github.com/wasmbox/wasmbox/wasi/preview1"
	"github.com/wasmbox/wasmbox/wasm"
)

// These tests run the real tool modules of wasm/ (reactor modules: see
// runtime.SnapshotABI) on wasmbox's WASI, once from the module's snapshot
// and once on a runtime with Config.NoSnapshots, and check that a
// snapshot changes nothing a command can observe, leaks nothing from one
// run into the next and releases every mapping and descriptor it holds.

// toolHost is a runtime with the tool modules compiled and pinned.
type toolHost struct {
	rt   *runtime.Runtime
	mods map[string]*runtime.Module // by module name
}

var (
	snapHostOnce, plainHostOnce sync.Once
	snapHost, plainHost         *toolHost
	snapHostErr, plainHostErr   error
)

// snapshotHost is the shared runtime that starts runs from snapshots; the
// snapshot of every module is taken before it returns.
func snapshotHost(tb testing.TB) *toolHost {
	tb.Helper()
	snapHostOnce.Do(func() { snapHost, snapHostErr = newToolHost(runtime.Config{CacheDir: sharedCacheDir}) })
	if snapHostErr != nil {
		tb.Fatal(snapHostErr)
	}
	return snapHost
}

// initHost is the shared runtime that initializes every instance.
func initHost(tb testing.TB) *toolHost {
	tb.Helper()
	plainHostOnce.Do(func() {
		plainHost, plainHostErr = newToolHost(runtime.Config{CacheDir: sharedCacheDir, NoSnapshots: true})
	})
	if plainHostErr != nil {
		tb.Fatal(plainHostErr)
	}
	return plainHost
}

func newToolHost(cfg runtime.Config) (*toolHost, error) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	h := &toolHost{rt: rt, mods: map[string]*runtime.Module{}}
	for _, name := range wasm.Modules() {
		bin, _ := wasm.Module(name)
		m, err := rt.Compile(ctx, name, bin)
		if err != nil {
			rt.Close(ctx)
			return nil, err
		}
		rt.Pin(m)
		h.mods[name] = m
	}
	// Take the snapshots now (a trivial run of each module), so that
	// tests measuring descriptors and mappings start from a runtime that
	// holds them.
	for _, c := range []cmd{{args: []string{"true"}}, {args: []string{"yq", "-n", "1"}}, {args: []string{"awk", "BEGIN{}"}}} {
		if r, err := h.run(ctx, c, runtime.RunOptions{}); err != nil || r.status != 0 {
			rt.Close(ctx)
			return nil, fmt.Errorf("%v: %v %+v", c.args, err, r)
		}
	}
	return h, nil
}

// module returns the module that provides the command argv0.
func (h *toolHost) module(argv0 string) *runtime.Module {
	if c, ok := wasm.Lookup(argv0); ok {
		return h.mods[c.Module]
	}
	return h.mods[wasm.CoreutilsModule]
}

// cmd is one command: its argv, environment, input and the files of its
// filesystem.
type cmd struct {
	args  []string
	env   []string
	stdin string
	files map[string]string // path -> content; a path ending in "/" is a directory
	fs    vfs.FS            // when set, used instead of a new one made from files
}

type result struct {
	stdout, stderr string
	status         int
}

// fixedTime is the clock of the test filesystems, so that ls -l prints
// the same in every run.
var fixedTime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

func newFS(tb testing.TB, files map[string]string) vfs.FS {
	tb.Helper()
	mem := vfs.NewMemFS(vfs.WithOwner(1000, 1000), vfs.WithClock(func() time.Time { return fixedTime }))
	for p, content := range files {
		if strings.HasSuffix(p, "/") {
			if err := mem.MkdirAll(p, 0o755); err != nil {
				tb.Fatal(err)
			}
			continue
		}
		if err := mem.MkdirAll(p[:strings.LastIndex(p, "/")+1], 0o755); err != nil {
			tb.Fatal(err)
		}
		f, err := mem.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := f.Write([]byte(content)); err != nil {
			tb.Fatal(err)
		}
		f.Close()
	}
	return mem
}

// run runs c; err is an error other than an exit status.
func (h *toolHost) run(ctx context.Context, c cmd, opts runtime.RunOptions) (result, error) {
	fsys := c.fs
	if fsys == nil {
		fsys = vfs.NewMemFS(vfs.WithOwner(1000, 1000), vfs.WithClock(func() time.Time { return fixedTime }))
	}
	var stdout, stderr bytes.Buffer
	st, err := preview1.NewState(preview1.Config{
		FS: fsys, Args: c.args, Env: c.env,
		Stdin: strings.NewReader(c.stdin), Stdout: &stdout, Stderr: &stderr,
	})
	if err != nil {
		return result{}, err
	}
	defer st.Close()
	opts.WASI = st
	opts.FS = fsys
	err = h.rt.Run(ctx, h.module(c.args[0]), wazero.NewModuleConfig(), opts)
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *sys.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() < 256:
		r.status = int(ee.ExitCode())
		err = nil
	}
	return r, err
}

// mustRun runs c and fails tb on an error other than an exit status.
func (h *toolHost) mustRun(tb testing.TB, c cmd) result {
	tb.Helper()
	if c.fs == nil {
		c.fs = newFS(tb, c.files)
	}
	r, err := h.run(context.Background(), c, runtime.RunOptions{})
	if err != nil {
		tb.Fatalf("%q: %v", c.args, err)
	}
	return r
}

// TestSnapshotEquivalence runs each command from the snapshot and on a
// runtime that initializes every instance: a command sees no difference.
func TestSnapshotEquivalence(t *testing.T) {
	snap, plain := snapshotHost(t), initHost(t)
	files := map[string]string{
		"/data/words.txt": "pear\napple\nfig\napple\nbanana\n",
		"/data/nums.txt":  "3\n10\n2\n",
		"/data/sub/":      "",
		"/data/sub/a.txt": "alpha\n",
		"/data/doc.json":  `{"name":"wasmbox","tags":["a","b"],"n":3}`,
		"/tmp/":           "",
	}
	tests := []struct {
		name string
		c    cmd
		want string // expected stdout, when not empty
		fail bool   // the command must fail
	}{
		{"echo", cmd{args: []string{"echo", "hello", "world"}}, "hello world\n", false},
		{"cat", cmd{args: []string{"cat", "/data/words.txt"}}, files["/data/words.txt"], false},
		{"ls-l", cmd{args: []string{"ls", "-l", "/data"}}, "", false},
		{"wc", cmd{args: []string{"wc", "-l", "/data/words.txt"}}, "5 /data/words.txt\n", false},
		{"sort", cmd{args: []string{"sort", "-n", "/data/nums.txt"}}, "2\n3\n10\n", false},
		{"sort-u-stdin", cmd{args: []string{"sort", "-u"}, stdin: "b\na\nb\n"}, "a\nb\n", false},
		{"sed", cmd{args: []string{"sed", "s/p/P/g", "/data/words.txt"}}, "Pear\naPPle\nfig\naPPle\nbanana\n", false},
		{"grep", cmd{args: []string{"grep", "-c", "apple", "/data/words.txt"}}, "2\n", false},
		{"grep-miss", cmd{args: []string{"grep", "kiwi", "/data/words.txt"}}, "", true},
		{"printf", cmd{args: []string{"printf", "%s=%d\\n", "a", "1", "b", "2"}}, "a=1\nb=2\n", false},
		{"env", cmd{args: []string{"env"}, env: []string{"A=1", "B=two"}}, "A=1\nB=two\n", false},
		{"printenv", cmd{args: []string{"printenv", "B"}, env: []string{"A=1", "B=two"}}, "two\n", false},
		{"missing-file", cmd{args: []string{"cat", "/nope"}}, "", true},
		{"bad-option", cmd{args: []string{"sort", "--no-such-option"}}, "", true},
		{"pwd", cmd{args: []string{"pwd"}, env: []string{"PWD=/data/sub"}}, "/data/sub\n", false},
		{"relative", cmd{args: []string{"cat", "a.txt", "../nums.txt"}, env: []string{"PWD=/data/sub"}}, "alpha\n3\n10\n2\n", false},
		{"ls-relative", cmd{args: []string{"ls", ".."}, env: []string{"PWD=/data/sub"}}, "doc.json\nnums.txt\nsub\nwords.txt\n", false},
		// The working directory is gone: "." and relative paths are
		// ENOENT, as in a fresh instance; nothing resolves against the
		// snapshot's "/".
		{"removed-cwd-ls", cmd{args: []string{"ls"}, env: []string{"PWD=/gone"}}, "", true},
		{"removed-cwd-cat", cmd{args: []string{"cat", "data/words.txt"}, env: []string{"PWD=/gone"}}, "", true},
		{"jq", cmd{args: []string{"jq", "-c", ".tags + [.name]", "/data/doc.json"}}, "[\"a\",\"b\",\"wasmbox\"]\n", false},
		{"awk", cmd{args: []string{"awk", "{n[$1]++} END {print n[\"apple\"], NR}", "/data/words.txt"}}, "2 5\n", false},
		{"unknown", cmd{args: []string{"no-such-command"}}, "", true},
	}
	// What some failing commands must say.
	stderrHas := map[string]string{
		"removed-cwd-ls":  "ls: cannot access '.': No such file or directory",
		"removed-cwd-cat": "cat: data/words.txt: No such file or directory",
		"missing-file":    "No such file or directory",
		"unknown":         "command not found",
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			c.files = files
			got := snap.mustRun(t, c)
			want := plain.mustRun(t, c)
			if got != want {
				t.Fatalf("%q differs\nsnapshot: %+v\n    init: %+v", c.args, got, want)
			}
			if tc.want != "" && got.stdout != tc.want {
				t.Errorf("stdout = %q, want %q", got.stdout, tc.want)
			}
			if (got.status != 0) != tc.fail {
				t.Errorf("status = %d (stderr %q), want failure %v", got.status, got.stderr, tc.fail)
			}
			if tc.fail && tc.name != "grep-miss" && got.stderr == "" {
				t.Error("failed without a message")
			}
			if want, ok := stderrHas[tc.name]; ok && !strings.Contains(got.stderr, want) {
				t.Errorf("stderr = %q, want it to contain %q", got.stderr, want)
			}
		})
	}
}

// A removed working directory must not turn into the snapshot's "/".
func TestSnapshotRemovedWorkingDirectory(t *testing.T) {
	h := snapshotHost(t)
	fsys := newFS(t, map[string]string{"/w/dir/f.txt": "x\n", "/f.txt": "root\n"})
	if err := fsys.RemoveAll("/w/dir"); err != nil {
		t.Fatal(err)
	}
	// cat, grep, sed and awk are C (wasi-libc's working directory) and
	// Go modules alike.
	for _, args := range [][]string{{"cat", "f.txt"}, {"grep", "o", "f.txt"}, {"sed", "p", "f.txt"}, {"awk", "1", "f.txt"}, {"head", "f.txt"}, {"wc", "-l", "f.txt"}} {
		r := h.mustRun(t, cmd{args: args, env: []string{"PWD=/w/dir"}, fs: fsys})
		if r.status == 0 || r.stdout != "" {
			t.Errorf("%q in a removed directory: %+v (read the root's file?)", args, r)
		} else if !strings.Contains(strings.ToLower(r.stderr), "no such file") {
			t.Errorf("%q: stderr = %q, want ENOENT", args, r.stderr)
		}
	}
	r := h.mustRun(t, cmd{args: []string{"cat", "/f.txt"}, env: []string{"PWD=/w/dir"}, fs: fsys})
	if r.status != 0 || r.stdout != "root\n" {
		t.Errorf("cat /f.txt in a removed directory: %+v", r)
	}
	r = h.mustRun(t, cmd{args: []string{"ls", "."}, env: []string{"PWD=/w/dir"}, fs: fsys})
	if r.status == 0 || strings.Contains(r.stdout, "f.txt") {
		t.Errorf("ls . in a removed directory: %+v", r)
	}
}

// TestSnapshotNoLeakBetweenRuns checks that what one run is given —
// environment, arguments, working directory — is gone in the next run
// from the same snapshot, and that randomness is fresh every run.
func TestSnapshotNoLeakBetweenRuns(t *testing.T) {
	h := snapshotHost(t)
	steps := []struct {
		c          cmd
		stdout     string
		status     int
		anyFailure bool
	}{
		{cmd{args: []string{"printenv", "FOO"}, env: []string{"FOO=1"}}, "1\n", 0, false},
		{cmd{args: []string{"printenv", "FOO"}}, "", 1, false},
		{cmd{args: []string{"env"}, env: []string{"FOO=1", "BAR=2"}}, "FOO=1\nBAR=2\n", 0, false},
		{cmd{args: []string{"env"}}, "", 0, false},
		{cmd{args: []string{"echo", "a", "b", "c"}}, "a b c\n", 0, false},
		{cmd{args: []string{"echo"}}, "\n", 0, false},
		{cmd{args: []string{"pwd"}, env: []string{"PWD=/data/sub"}}, "/data/sub\n", 0, false},
		{cmd{args: []string{"pwd"}}, "/\n", 0, false},
		{cmd{args: []string{"cat", "a.txt"}, env: []string{"PWD=/data/sub"}}, "alpha\n", 0, false},
		{cmd{args: []string{"cat", "a.txt"}}, "", 0, true},
		{cmd{args: []string{"ls"}}, "data\n", 0, false},
		// Flags parsed into package state by one run are not the next's.
		{cmd{args: []string{"sort", "-r"}, stdin: "a\nc\nb\n"}, "c\nb\na\n", 0, false},
		{cmd{args: []string{"sort"}, stdin: "a\nc\nb\n"}, "a\nb\nc\n", 0, false},
		{cmd{args: []string{"grep", "-v", "-i", "A"}, stdin: "a\nb\n"}, "b\n", 0, false},
		{cmd{args: []string{"grep", "A"}, stdin: "a\nA\n"}, "A\n", 0, false},
	}
	for i, s := range steps {
		s.c.files = map[string]string{"/data/sub/a.txt": "alpha\n"}
		r := h.mustRun(t, s.c)
		if r.stdout != s.stdout || (s.anyFailure && r.status == 0) || (!s.anyFailure && r.status != s.status) {
			t.Errorf("step %d %q env %q: %+v, want stdout %q status %d (any failure: %v)", i, s.c.args, s.c.env, r, s.stdout, s.status, s.anyFailure)
		}
	}

	// Randomness comes from WASI at run time, not from the snapshot.
	shuf := func() string {
		r := h.mustRun(t, cmd{args: []string{"shuf", "-i", "1-1000"}})
		if r.status != 0 || strings.Count(r.stdout, "\n") != 1000 {
			t.Fatalf("shuf: %+v", r)
		}
		return r.stdout
	}
	if shuf() == shuf() {
		t.Error("two shuf -i 1-1000 runs gave the same permutation")
	}
	// Each mktemp in a filesystem of its own: a name picked from state
	// the snapshot holds would repeat.
	mktemp := func() string {
		r := h.mustRun(t, cmd{args: []string{"mktemp"}, files: map[string]string{"/tmp/": ""}})
		if r.status != 0 || !strings.HasPrefix(r.stdout, "/tmp/") {
			t.Fatalf("mktemp: %+v", r)
		}
		return r.stdout
	}
	if a, b := mktemp(), mktemp(); a == b {
		t.Errorf("two mktemp runs gave the same name %q", a)
	}
	// And awk's rand() after srand() (seeded from the time of day).
	awk := func() string {
		return h.mustRun(t, cmd{args: []string{"awk", "BEGIN{srand(); print rand()}"}}).stdout
	}
	first := awk()
	time.Sleep(1100 * time.Millisecond) // srand() seeds from the second
	if first == awk() {
		t.Errorf("awk srand(); rand() repeated %q a second later", first)
	}
}

// TestSnapshotClock checks the guest's clocks: the wall clock is the
// host's (not the snapshot's epoch) and the monotonic clock runs forward
// from the snapshot, so that a sleep lasts as long as it says.
func TestSnapshotClock(t *testing.T) {
	h := snapshotHost(t)
	r := h.mustRun(t, cmd{args: []string{"date", "+%s"}})
	secs, err := strconv.ParseInt(strings.TrimSpace(r.stdout), 10, 64)
	if err != nil || r.status != 0 {
		t.Fatalf("date +%%s: %+v", r)
	}
	if d := time.Now().Unix() - secs; d < -5 || d > 5 {
		t.Errorf("guest wall clock %d is %ds off the host's", secs, d)
	}
	for i := 0; i < 3; i++ {
		start := time.Now()
		r := h.mustRun(t, cmd{args: []string{"sleep", "0.05"}})
		el := time.Since(start)
		if r.status != 0 {
			t.Fatalf("sleep: %+v", r)
		}
		if el < 40*time.Millisecond || el > 2*time.Second {
			t.Errorf("sleep 0.05 took %v", el)
		}
	}
	// A clock that starts at zero in every run (as the default does: time
	// since NewState) is shifted past the snapshot's last reading.
	var stdout bytes.Buffer
	var tick int64
	st, err := preview1.NewState(preview1.Config{
		Args:     []string{"sleep", "0.05"},
		Stdout:   &stdout,
		Nanotime: func() int64 { tick += 1000; return tick },
		Sleep:    func(context.Context, time.Duration) error { tick += int64(50 * time.Millisecond); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.rt.Run(ctx, h.mods[wasm.CoreutilsModule], wazero.NewModuleConfig(), runtime.RunOptions{WASI: st}); err != nil {
		t.Errorf("sleep on a clock starting at zero: %v", err)
	}
}

// TestSnapshotFirstRunDeadline ends the first run of a module while its
// snapshot is being taken: that run reports its deadline, and the next one
// takes the snapshot and runs.
func TestSnapshotFirstRunDeadline(t *testing.T) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{CacheDir: sharedCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	bin, _ := wasm.Module(wasm.CoreutilsModule)
	m, err := rt.Compile(ctx, wasm.CoreutilsModule, bin)
	if err != nil {
		t.Fatal(err)
	}
	h := &toolHost{rt: rt, mods: map[string]*runtime.Module{wasm.CoreutilsModule: m}}
	var memfds0 int
	if goruntime.GOOS == "linux" {
		_, memfds0 = openFDs(t)
	}
	// A deadline already past: whether the snapshot is taken before the
	// run notices it or not (initialization is now well under a
	// millisecond, so a 1 ms deadline may not even be reached), the run
	// reports the deadline, and later runs are not hurt.
	dctx, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Millisecond))
	defer cancel()
	if _, err := h.run(dctx, cmd{args: []string{"echo", "first"}}, runtime.RunOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("first run with a deadline past: %v", err)
	}
	for _, word := range []string{"second", "third"} {
		r, err := h.run(ctx, cmd{args: []string{"echo", word}}, runtime.RunOptions{})
		if err != nil || r.stdout != word+"\n" {
			t.Errorf("run after the deadline: %+v %v", r, err)
		}
	}
	if !settle(func() bool { return rt.LiveInstances() == 0 && rt.LiveMemories() == 0 }) {
		t.Errorf("live instances %d, memories %d", rt.LiveInstances(), rt.LiveMemories())
	}
	if goruntime.GOOS == "linux" {
		if _, n := openFDs(t); n-memfds0 != 1 {
			t.Errorf("%d snapshot memfds for one module, want 1", n-memfds0)
		}
	}
}

// With a default memory limit below what the module's initialization
// needs, no snapshot can be taken: runs are refused under that limit and
// still run under a larger one of their own.
func TestSnapshotSmallDefaultLimit(t *testing.T) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{CacheDir: sharedCacheDir, MemoryLimit: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	bin, _ := wasm.Module(wasm.CoreutilsModule)
	m, err := rt.Compile(ctx, wasm.CoreutilsModule, bin)
	if err != nil {
		t.Fatal(err)
	}
	h := &toolHost{rt: rt, mods: map[string]*runtime.Module{wasm.CoreutilsModule: m}}
	if r, err := h.run(ctx, cmd{args: []string{"echo", "x"}}, runtime.RunOptions{}); !errors.Is(err, runtime.ErrMemoryLimit) || r.stdout != "" {
		t.Errorf("echo under 2MiB: %+v %v", r, err)
	}
	r, err := h.run(ctx, cmd{args: []string{"echo", "y"}}, runtime.RunOptions{MemoryLimit: 64 << 20})
	if err != nil || r.stdout != "y\n" {
		t.Errorf("echo under 64MiB: %+v %v", r, err)
	}
	if !settle(func() bool { return rt.LiveInstances() == 0 && rt.LiveMemories() == 0 }) {
		t.Errorf("live instances %d, memories %d", rt.LiveInstances(), rt.LiveMemories())
	}
}

// openFDs counts this process's open descriptors, and those that are a
// snapshot's memfd.
func openFDs(t *testing.T) (all, memfds int) {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	for _, e := range entries {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.Contains(target, "memfd:wasmbox-snapshot") {
			memfds++
		}
	}
	return len(entries), memfds
}

// snapshotMappings counts the mappings of a snapshot memfd.
func snapshotMappings(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps")
	}
	return strings.Count(string(b), "wasmbox-snapshot")
}

// settle polls cond for up to two seconds.
func settle(cond func() bool) bool {
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// checkReleased fails t unless the runtime's instances, memories,
// snapshot mappings and the process's descriptors are back to the
// numbers before the runs.
func checkReleased(t *testing.T, rt *runtime.Runtime, fds, maps int) {
	t.Helper()
	if !settle(func() bool { return rt.LiveInstances() == 0 && rt.LiveMemories() == 0 }) {
		t.Errorf("live instances %d, memories %d", rt.LiveInstances(), rt.LiveMemories())
	}
	if goruntime.GOOS != "linux" {
		return
	}
	if !settle(func() bool { return snapshotMappings(t) == maps }) {
		t.Errorf("snapshot mappings: %d before, %d after", maps, snapshotMappings(t))
	}
	if !settle(func() bool { n, _ := openFDs(t); return n <= fds }) {
		n, _ := openFDs(t)
		t.Errorf("open descriptors: %d before, %d after", fds, n)
	}
}

func isCanceled(err error) bool {
	var ee *sys.ExitError
	return errors.Is(err, context.Canceled) || errors.As(err, &ee) && ee.ExitCode() == sys.ExitCodeContextCanceled
}

// TestSnapshotKill cancels commands started from a snapshot while they
// block on input and while they compute: Run returns at once and every
// instance, memory, mapping, descriptor and goroutine is released.
func TestSnapshotKill(t *testing.T) {
	h := snapshotHost(t)
	mod := h.mods[wasm.CoreutilsModule]
	fds, _ := openFDs(t)
	maps := snapshotMappings(t)
	defer runtimetest.CheckGoroutines(t)()

	for _, tc := range []struct {
		name  string
		args  []string
		stdin func(ctx context.Context) (*wasi.PipeReader, func())
	}{
		{"cat-blocked-on-pipe", []string{"cat"}, func(ctx context.Context) (*wasi.PipeReader, func()) {
			pr, pw := wasi.NewPipe(ctx)
			pw.Write([]byte("some input, then nothing\n"))
			return pr, func() { pw.Close() }
		}},
		{"yes", []string{"yes"}, nil},
		{"sleep", []string{"sleep", "60"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := preview1.Config{Args: tc.args, Stdout: &countingWriter{}}
			if tc.stdin != nil {
				r, closeIt := tc.stdin(ctx)
				defer closeIt()
				cfg.Stdin = r
			}
			st, err := preview1.NewState(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			done := make(chan error, 1)
			go func() { done <- h.rt.Run(ctx, mod, wazero.NewModuleConfig(), runtime.RunOptions{WASI: st}) }()
			time.Sleep(150 * time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("%q ended before the cancel: %v", tc.args, err)
			default:
			}
			cancel()
			start := time.Now()
			select {
			case err = <-done:
			case <-time.After(2 * time.Second):
				t.Fatalf("%q still running 2s after the cancel", tc.args)
			}
			if !isCanceled(err) {
				t.Errorf("err = %v, want context canceled", err)
			}
			t.Logf("%q returned %v after the cancel", tc.args, time.Since(start))
			if w := cfg.Stdout.(*countingWriter); tc.name == "yes" && w.n.Load() == 0 {
				t.Error("yes wrote nothing before the cancel")
			}
		})
	}
	checkReleased(t, h.rt, fds, maps)
}

// TestSnapshotMemoryLimit checks the memory limit of runs started from a
// snapshot, alone and with a budget shared by two runs.
func TestSnapshotMemoryLimit(t *testing.T) {
	h := snapshotHost(t)
	fds, _ := openFDs(t)
	maps := snapshotMappings(t)
	ctx := context.Background()

	// The snapshot's own size, from a run that does next to nothing.
	tst, err := preview1.NewState(preview1.Config{Args: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tst.Close()
	st, err := h.rt.RunStats(ctx, h.mods[wasm.CoreutilsModule], wazero.NewModuleConfig(), runtime.RunOptions{WASI: tst})
	if err != nil {
		t.Fatal(err)
	}
	base := st.PeakMemory
	t.Logf("coreutils snapshot: %s of linear memory", runtime.FormatBytes(base))
	if base < 1<<20 {
		t.Fatalf("peak memory of an empty run %d: not the snapshot's", base)
	}

	// Below the snapshot: refused before the run, no panic.
	r, err := h.run(ctx, cmd{args: []string{"echo", "hi"}}, runtime.RunOptions{MemoryLimit: 1 << 20})
	if !errors.Is(err, runtime.ErrMemoryLimit) || r.stdout != "" {
		t.Errorf("1MiB limit: %+v %v", r, err)
	}

	// A bit above the snapshot: small commands run, sorting 20 MB fails.
	limit := base + 8<<20
	r, err = h.run(ctx, cmd{args: []string{"echo", "hi"}}, runtime.RunOptions{MemoryLimit: limit})
	if err != nil || r.stdout != "hi\n" {
		t.Errorf("echo under %s: %+v %v", runtime.FormatBytes(limit), r, err)
	}
	var big strings.Builder
	for i := 0; big.Len() < 20<<20; i++ {
		fmt.Fprintf(&big, "line %09d %x\n", (i*7919)%1000003, i)
	}
	fsys := newFS(t, map[string]string{"/big.txt": big.String()})
	big.Reset()
	var stderr bytes.Buffer
	wst, err := preview1.NewState(preview1.Config{FS: fsys, Args: []string{"sort", "/big.txt"}, Stdout: &countingWriter{}, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := h.rt.RunStats(ctx, h.mods[wasm.CoreutilsModule], wazero.NewModuleConfig(), runtime.RunOptions{MemoryLimit: limit, WASI: wst, FS: fsys})
	wst.Close()
	if !errors.Is(err, runtime.ErrMemoryLimit) || !stats.LimitHit {
		t.Errorf("sort of 20MB under %s: %+v %v\nstderr: %.300s", runtime.FormatBytes(limit), stats, err, stderr.String())
	}
	if stats.PeakMemory > limit {
		t.Errorf("peak %d past the limit %d", stats.PeakMemory, limit)
	}

	// A budget smaller than two snapshots: a second run while the first
	// holds its memory is refused (before it starts).
	budget := runtime.NewBudget(2*base - 64<<10)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := wasi.NewPipe(rctx)
	defer pw.Close()
	var out1, err1 syncBuffer
	st1, err := preview1.NewState(preview1.Config{Args: []string{"cat"}, Stdin: pr, Stdout: &out1, Stderr: &err1})
	if err != nil {
		t.Fatal(err)
	}
	defer st1.Close()
	first := make(chan error, 1)
	go func() {
		first <- h.rt.Run(rctx, h.mods[wasm.CoreutilsModule], wazero.NewModuleConfig(), runtime.RunOptions{WASI: st1, Budget: budget})
	}()
	pw.Write([]byte("ping\n"))
	// cat buffers its output until EOF: the run has started when it holds
	// the snapshot's memory.
	if !settle(func() bool { return budget.Used() >= base }) {
		select {
		case err := <-first:
			t.Fatalf("first run under the budget ended: %v (stderr %q)", err, err1.String())
		default:
			t.Fatalf("first run under the budget holds %d bytes", budget.Used())
		}
	}
	r, err = h.run(ctx, cmd{args: []string{"echo", "second"}}, runtime.RunOptions{Budget: budget})
	if !errors.Is(err, runtime.ErrMemoryLimit) || r.stdout != "" {
		t.Errorf("second run under a budget of 1.5 snapshots: %+v %v", r, err)
	}
	pw.Close() // cat ends at EOF
	select {
	case err := <-first:
		if err != nil || out1.String() != "ping\n" {
			t.Errorf("first run: %v, output %q", err, out1.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cat did not end at EOF")
	}
	if u := budget.Used(); u != 0 {
		t.Errorf("budget used after the runs: %d", u)
	}
	r, err = h.run(ctx, cmd{args: []string{"echo", "third"}}, runtime.RunOptions{Budget: budget})
	if err != nil || r.stdout != "third\n" {
		t.Errorf("run after the budget was freed: %+v %v", r, err)
	}
	checkReleased(t, h.rt, fds, maps)
}

// TestSnapshotConcurrent runs 16 goroutines × 10 commands from one
// snapshot at once.
func TestSnapshotConcurrent(t *testing.T) {
	h := snapshotHost(t)
	const workers, runs = 16, 10
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range runs {
				var c cmd
				var want string
				switch i % 3 {
				case 0:
					c, want = cmd{args: []string{"echo", strconv.Itoa(w), strconv.Itoa(i)}}, fmt.Sprintf("%d %d\n", w, i)
				case 1:
					c, want = cmd{args: []string{"printenv", "N"}, env: []string{fmt.Sprintf("N=%d-%d", w, i)}}, fmt.Sprintf("%d-%d\n", w, i)
				case 2:
					c, want = cmd{args: []string{"wc", "-c"}, stdin: strings.Repeat("x", w*100+i)}, fmt.Sprintf("%d\n", w*100+i)
				}
				r, err := h.run(context.Background(), c, runtime.RunOptions{})
				if err != nil || r.status != 0 || r.stdout != want {
					t.Errorf("worker %d run %d %q: %+v %v, want %q", w, i, c.args, r, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	if !settle(func() bool { return h.rt.LiveInstances() == 0 && h.rt.LiveMemories() == 0 }) {
		t.Errorf("live instances %d, memories %d", h.rt.LiveInstances(), h.rt.LiveMemories())
	}
}

// TestSnapshotRelease checks that a module evicted from the cache keeps
// no snapshot memfd open.
func TestSnapshotRelease(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("memfd snapshots are Linux only")
	}
	snapshotHost(t) // its memfds are part of the baseline
	ctx := context.Background()
	_, before := openFDs(t)
	rt, err := runtime.New(ctx, runtime.Config{CacheDir: sharedCacheDir, MaxCachedModules: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	runAll(t, rt, func(i int) {
		// The previous module was evicted when this one was compiled:
		// only this module's snapshot is open.
		if _, n := openFDs(t); n-before != 1 {
			t.Errorf("after %d modules (cache of 1): %d snapshot memfds open, want 1", i+1, n-before)
		}
	})
}

// TestSnapshotReleaseOnClose checks that Runtime.Close releases the
// snapshots of the modules still compiled.
func TestSnapshotReleaseOnClose(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("memfd snapshots are Linux only")
	}
	snapshotHost(t) // its memfds are part of the baseline
	ctx := context.Background()
	_, before := openFDs(t)
	rt, err := runtime.New(ctx, runtime.Config{CacheDir: sharedCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	runAll(t, rt, func(int) {})
	if _, n := openFDs(t); n-before != 3 {
		t.Errorf("%d snapshot memfds open, want 3 (one per module)", n-before)
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, n := openFDs(t); n != before {
		t.Errorf("after Runtime.Close: %d snapshot memfds open, want 0", n-before)
	}
}

// runAll compiles each tool module on rt and runs a command of it,
// calling after(i) after the i-th.
func runAll(t *testing.T, rt *runtime.Runtime, after func(i int)) {
	t.Helper()
	ctx := context.Background()
	for i, name := range []string{wasm.CoreutilsModule, wasm.JQModule, wasm.AWKModule} {
		bin, _ := wasm.Module(name)
		m, err := rt.Compile(ctx, name, bin)
		if err != nil {
			t.Fatal(err)
		}
		h := &toolHost{rt: rt, mods: map[string]*runtime.Module{name: m}}
		args := map[string][]string{
			wasm.CoreutilsModule: {"echo", "ok"},
			wasm.JQModule:        {"yq", "-n", `"ok"`},          // jq is jq 1.6 (wasm.JQ16Module)
			wasm.AWKModule:       {"gawk", `BEGIN{print "ok"}`}, // awk is mawk (wasm.MawkModule)
		}[name]
		r, err := h.run(ctx, cmd{args: args}, runtime.RunOptions{})
		if err != nil || r.status != 0 || !strings.Contains(r.stdout, "ok") {
			t.Fatalf("%s: %+v %v", name, r, err)
		}
		after(i)
	}
}

// countingWriter counts what is written to it, from any goroutine.
type countingWriter struct{ n atomic.Int64 }

func (w *countingWriter) Write(b []byte) (int, error) { w.n.Add(int64(len(b))); return len(b), nil }

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
