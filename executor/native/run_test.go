package native

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testPolicy allows git (the default rule plus init) and a few plain tools
// used to observe the lane: env, head, sh. sh is allowlisted only in tests.
func testPolicy() *Policy {
	p := DefaultPolicy()
	git := GitRule()
	git.Subcommands = append(git.Subcommands, "init")
	p.Binaries["git"] = git
	p.Binaries["env"] = Rule{}
	p.Binaries["head"] = Rule{}
	p.Binaries["yes"] = Rule{}
	p.Binaries["sh"] = Rule{}
	p.Binaries["pwd"] = Rule{}
	p.Binaries["no-such-binary-wasmbox"] = Rule{}
	return &p
}

// newRunner builds a Runner of testPolicy. It runs in the OS jail when the
// jail works here; without it, the test runs unjailed, unless
// WASMBOX_REQUIRE_JAIL is set (as in CI), which makes that a failure.
func newRunner(t testing.TB, cfg Config) *Runner {
	t.Helper()
	if cfg.Policy == nil {
		cfg.Policy = testPolicy()
	}
	if !cfg.Unjailed {
		if _, err := findJail(); err != nil {
			if os.Getenv("WASMBOX_REQUIRE_JAIL") != "" {
				t.Fatalf("WASMBOX_REQUIRE_JAIL is set: %v", err)
			}
			t.Logf("running unjailed: %v", err)
			cfg.Unjailed = true
		}
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// modes are the Runner configurations a lane test runs in: jailed (when
// the jail works here) and unjailed.
func modes(t *testing.T) []Config {
	if _, err := findJail(); err != nil {
		if os.Getenv("WASMBOX_REQUIRE_JAIL") != "" {
			t.Fatalf("WASMBOX_REQUIRE_JAIL is set: %v", err)
		}
		return []Config{{Unjailed: true}}
	}
	return []Config{{}, {Unjailed: true}}
}

func modeName(c Config) string {
	if c.Unjailed {
		return "unjailed"
	}
	return "jailed"
}

// guestOf is where the command sees jail: /work in the OS jail (requests
// without Guest), the host path itself without it.
func guestOf(r *Runner, jail string) string {
	if r.Jailed() {
		return "/work"
	}
	return jail
}

func realTempDir(t testing.TB) string {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestEnvSanitized(t *testing.T) {
	t.Setenv("WASMBOX_TEST_SECRET_TOKEN", "s3cr3t-value-123")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-xyz")
	jail := realTempDir(t)
	r := newRunner(t, Config{})
	res, err := r.Run(context.Background(), Request{Argv: []string{"env"}, Jail: jail})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("env: %v %+v", err, res)
	}
	out := string(res.Stdout)
	for _, bad := range []string{"s3cr3t-value-123", "aws-secret-xyz", "WASMBOX_TEST_SECRET_TOKEN"} {
		if strings.Contains(out, bad) {
			t.Errorf("child sees %q:\n%s", bad, out)
		}
	}
	home := jail
	if r.Jailed() {
		home = jailHome
		out = strings.Replace(out, "PWD=/work\n", "", 1) // bwrap's --chdir
	}
	for _, want := range []string{"PATH=/usr/local/bin:/usr/bin:/bin\n", "HOME=" + home + "\n", "LANG=C.UTF-8\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("child env lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 3 {
		t.Errorf("child env has %d variables, want exactly PATH, HOME, LANG:\n%s", n, out)
	}
}

func TestRequestEnvAllowlist(t *testing.T) {
	jail := realTempDir(t)
	r := newRunner(t, Config{})
	res, err := r.Run(context.Background(), Request{Argv: []string{"env"}, Jail: jail, Env: map[string]string{"LD_PRELOAD": "/x.so"}})
	if !errors.Is(err, ErrDenied) || res.ExitCode != ExitDenied || res.Class != ClassDenied {
		t.Fatalf("LD_PRELOAD: %v %+v", err, res)
	}
	res, err = r.Run(context.Background(), Request{Argv: []string{"env"}, Jail: jail, Env: map[string]string{"TZ": "UTC"}})
	if err != nil || !strings.Contains(string(res.Stdout), "TZ=UTC\n") {
		t.Fatalf("TZ: %v %q", err, res.Stdout)
	}
}

func TestOutputTruncated(t *testing.T) {
	jail := realTempDir(t)
	r := newRunner(t, Config{})
	res, err := r.Run(context.Background(), Request{Argv: []string{"head", "-c", "3000000", "/dev/zero"}, Jail: jail})
	if err != nil || res.ExitCode != 128+13 {
		t.Fatalf("head: %v, exit %d, want 141 (SIGPIPE at the cap)", err, res.ExitCode)
	}
	if !res.Truncated {
		t.Fatal("not marked truncated")
	}
	if want := 1<<20 + len(TruncatedMarker); len(res.Stdout) != want {
		t.Fatalf("stdout is %d bytes, want %d", len(res.Stdout), want)
	}
	if !bytes.HasSuffix(res.Stdout, []byte("[TRUNCATED at 1MB]\n")) {
		t.Fatal("no truncation marker")
	}
	// An endless writer stops at the cap instead of running to its timeout.
	start := time.Now()
	// (The timeout is far: a loaded machine takes its time; the bound
	// below only tells the cap from the timeout.)
	res, err = r.Run(context.Background(), Request{Argv: []string{"yes"}, Jail: jail, Timeout: 10 * time.Minute})
	if err != nil || !res.Truncated || time.Since(start) > 5*time.Minute || len(res.Stdout) != 1<<20+len(TruncatedMarker) {
		t.Fatalf("yes: %v truncated=%v after %v", err, res.Truncated, time.Since(start))
	}
	res, err = r.Run(context.Background(), Request{Argv: []string{"head", "-c", "10", "/dev/zero"}, Jail: jail})
	if err != nil || res.Truncated || len(res.Stdout) != 10 {
		t.Fatalf("small output: %v truncated=%v len=%d", err, res.Truncated, len(res.Stdout))
	}
}

func TestJail(t *testing.T) {
	root := realTempDir(t)
	jail := filepath.Join(root, "jail")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{jail + "/a/b", outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(jail, "file"), []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(jail, "out"))
	os.Symlink("a", filepath.Join(jail, "inner"))
	r := newRunner(t, Config{})
	g := guestOf(r, jail)
	tests := []struct {
		dir  string
		want string // "" = allowed, else the resulting real cwd
		ok   bool
	}{
		{"", g, true},
		{".", g, true},
		{"a/b", g + "/a/b", true},
		{"a/../a/b", g + "/a/b", true},
		{"..", "", false},
		{"../outside", "", false},
		{"a/../../outside", "", false},
		{"/etc", "", false},
		{outside, "", false},
		{"out", "", false},
		{"inner", "", false},
		{"inner/b", "", false},
		{"file", "", false},
		{"missing", "", false},
	}
	for _, tc := range tests {
		res, err := r.Run(context.Background(), Request{Argv: []string{"pwd"}, Jail: jail, Dir: tc.dir})
		if !tc.ok {
			if !errors.Is(err, ErrJail) || !errors.Is(err, ErrDenied) || res.ExitCode != ExitDenied {
				t.Errorf("dir %q: got %v (exit %d), want jail denial", tc.dir, err, res.ExitCode)
			}
			continue
		}
		if err != nil || strings.TrimSpace(string(res.Stdout)) != tc.want {
			t.Errorf("dir %q: %v, cwd %q, want %q", tc.dir, err, res.Stdout, tc.want)
		}
	}
	// The jail root itself may be reached through a symlink.
	link := filepath.Join(root, "jail-link")
	os.Symlink(jail, link)
	if res, err := r.Run(context.Background(), Request{Argv: []string{"pwd"}, Jail: link}); err != nil || strings.TrimSpace(string(res.Stdout)) != g {
		t.Errorf("symlinked jail root: %v %q", err, res.Stdout)
	}
}

func TestDeniedAndNotFound(t *testing.T) {
	jail := realTempDir(t)
	var decisions []Decision
	r := newRunner(t, Config{OnDecision: func(_ context.Context, d Decision) { decisions = append(decisions, d) }})
	res, err := r.Run(context.Background(), Request{Argv: []string{"rm", "-rf", "/"}, Jail: jail})
	var de *DeniedError
	if !errors.As(err, &de) || res.ExitCode != 126 || res.Class != ClassDenied || !strings.Contains(res.Reason, "not allowlisted") {
		t.Fatalf("rm: %v %+v", err, res)
	}
	res, err = r.Run(context.Background(), Request{Argv: []string{"no-such-binary-wasmbox"}, Jail: jail})
	if !errors.Is(err, ErrNotFound) || res.ExitCode != 127 || res.Class != ClassNotFound {
		t.Fatalf("missing binary: %v %+v", err, res)
	}
	res, err = r.Run(context.Background(), Request{Argv: []string{"git", "gc"}, Jail: jail})
	if !errors.Is(err, ErrDenied) || res.ExitCode != 126 {
		t.Fatalf("git gc: %v %+v", err, res)
	}
	if len(decisions) != 3 || decisions[0].Allowed || decisions[2].Reason == "" {
		t.Fatalf("decisions %+v", decisions)
	}
}

// sleeper returns a sleep argument unique to this test, to find its
// processes whatever pid namespace they run in (see sleeping).
func sleeper(t *testing.T) string {
	return fmt.Sprintf("1000.%d%06d", os.Getpid(), time.Now().UnixNano()%1e6)
}

// waitGone waits until no process runs "sleep arg".
func waitGone(t *testing.T, arg string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		if !sleeping(t, arg) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a process \"sleep %s\" survived", arg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	for _, cfg := range modes(t) {
		t.Run(modeName(cfg), func(t *testing.T) {
			jail := realTempDir(t)
			cfg.KillGrace = 100 * time.Millisecond
			r := newRunner(t, cfg)
			arg := sleeper(t)
			res, err := r.Run(context.Background(), Request{
				Argv:    []string{"sh", "-c", "sleep " + arg + " & echo started; sleep " + arg},
				Jail:    jail,
				Timeout: 300 * time.Millisecond,
			})
			if !errors.Is(err, context.DeadlineExceeded) || res.ExitCode != ExitTimeout || res.Class != ClassTimeout {
				t.Fatalf("got %v %+v", err, res)
			}
			if string(res.Stdout) != "started\n" {
				t.Errorf("stdout %q", res.Stdout)
			}
			waitGone(t, arg)
		})
	}
}

func TestSigtermIgnoredGetsSigkill(t *testing.T) {
	for _, cfg := range modes(t) {
		t.Run(modeName(cfg), func(t *testing.T) {
			jail := realTempDir(t)
			cfg.KillGrace = 200 * time.Millisecond
			r := newRunner(t, cfg)
			arg := sleeper(t)
			start := time.Now()
			res, err := r.Run(context.Background(), Request{
				Argv:    []string{"sh", "-c", "trap '' TERM; sleep " + arg + " & wait"},
				Jail:    jail,
				Timeout: 200 * time.Millisecond,
			})
			d := time.Since(start)
			if !errors.Is(err, context.DeadlineExceeded) || res.ExitCode != 124 {
				t.Fatalf("got %v %+v", err, res)
			}
			if d < 400*time.Millisecond {
				t.Fatalf("took %v, want timeout + grace (SIGTERM first)", d)
			}
			waitGone(t, arg)
		})
	}
}

// SIGTERM reaches the command first, so that it can clean up (git removes
// its lock files).
func TestSigtermReachesCommand(t *testing.T) {
	for _, cfg := range modes(t) {
		t.Run(modeName(cfg), func(t *testing.T) {
			jail := realTempDir(t)
			cfg.KillGrace = 5 * time.Second
			r := newRunner(t, cfg)
			arg := sleeper(t)
			res, err := r.Run(context.Background(), Request{
				Argv:    []string{"sh", "-c", "trap 'echo cleaned > cleanup; exit 1' TERM; echo ready; sleep " + arg + " & wait"},
				Jail:    jail,
				Timeout: 300 * time.Millisecond,
			})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v %+v", err, res)
			}
			if b, err := os.ReadFile(filepath.Join(jail, "cleanup")); err != nil || string(b) != "cleaned\n" {
				t.Fatalf("the TERM trap did not run: %v %q", err, b)
			}
			waitGone(t, arg)
		})
	}
}

func TestBackgroundChildKilledAfterNormalExit(t *testing.T) {
	for _, cfg := range modes(t) {
		t.Run(modeName(cfg), func(t *testing.T) {
			jail := realTempDir(t)
			r := newRunner(t, cfg)
			arg := sleeper(t)
			res, err := r.Run(context.Background(), Request{
				Argv: []string{"sh", "-c", "sleep " + arg + " & exit 3"},
				Jail: jail,
			})
			if err != nil || res.ExitCode != 3 {
				t.Fatalf("got %v %+v", err, res)
			}
			waitGone(t, arg)
		})
	}
}

func TestCancel(t *testing.T) {
	jail := realTempDir(t)
	r := newRunner(t, Config{KillGrace: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	res, err := r.Run(ctx, Request{Argv: []string{"sh", "-c", "sleep 1000"}, Jail: jail})
	if !errors.Is(err, context.Canceled) || res.ExitCode != ExitCancelled || res.Class != ClassCancelled {
		t.Fatalf("got %v %+v", err, res)
	}
}

func TestStdinAndExitCode(t *testing.T) {
	jail := realTempDir(t)
	r := newRunner(t, Config{})
	res, err := r.Run(context.Background(), Request{Argv: []string{"sh", "-c", "cat; echo err >&2; exit 7"}, Jail: jail, Stdin: strings.NewReader("in\n")})
	if err != nil || res.ExitCode != 7 || string(res.Stdout) != "in\n" || string(res.Stderr) != "err\n" {
		t.Fatalf("got %v %+v", err, res)
	}
}

func gitRun(t *testing.T, r *Runner, jail, dir string, args ...string) Result {
	t.Helper()
	res, err := r.Run(context.Background(), Request{
		Argv: append([]string{"git"}, args...),
		Jail: jail,
		Dir:  dir,
		Env: map[string]string{
			"GIT_AUTHOR_NAME": "Agent", "GIT_AUTHOR_EMAIL": "agent@example.com",
			"GIT_COMMITTER_NAME": "Agent", "GIT_COMMITTER_EMAIL": "agent@example.com",
			"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
		},
	})
	if err != nil {
		t.Fatalf("git %q: %v (%s)", args, err, res.Reason)
	}
	return res
}

func TestGitRepository(t *testing.T) {
	jail := realTempDir(t)
	r := newRunner(t, Config{})
	if res := gitRun(t, r, jail, "", "init", "-q", "-b", "main"); res.ExitCode != 0 {
		t.Fatalf("init: %s", res.Stderr)
	}
	os.WriteFile(filepath.Join(jail, "hello.txt"), []byte("hello\n"), 0o644)
	res := gitRun(t, r, jail, "", "status", "--porcelain")
	if got := string(res.Stdout); got != "?? hello.txt\n" {
		t.Fatalf("status %q", got)
	}
	gitRun(t, r, jail, "", "add", "hello.txt")
	// A hook written by the agent must not run on the host.
	hook := filepath.Join(jail, ".git", "hooks", "pre-commit")
	os.WriteFile(hook, []byte("#!/bin/sh\ntouch \"$HOME/pwned\" pwned\n"), 0o755)
	if res := gitRun(t, r, jail, "", "commit", "-q", "-m", "first"); res.ExitCode != 0 {
		t.Fatalf("commit: %s %s", res.Stdout, res.Stderr)
	}
	if _, err := os.Stat(filepath.Join(jail, "pwned")); err == nil {
		t.Fatal("pre-commit hook ran")
	}
	res = gitRun(t, r, jail, "", "log", "--format=%an %s")
	if got := string(res.Stdout); got != "Agent first\n" {
		t.Fatalf("log %q", got)
	}
	os.WriteFile(filepath.Join(jail, "hello.txt"), []byte("hello\nworld\n"), 0o644)
	res = gitRun(t, r, jail, "", "diff")
	if !strings.Contains(string(res.Stdout), "+world\n") {
		t.Fatalf("diff %q", res.Stdout)
	}
	os.Mkdir(filepath.Join(jail, "sub"), 0o755)
	res = gitRun(t, r, jail, "sub", "rev-parse", "--show-toplevel")
	if got := strings.TrimSpace(string(res.Stdout)); got != guestOf(r, jail) {
		t.Fatalf("toplevel from sub: %q", got)
	}
}

func TestGitDangerousRepoConfigDenied(t *testing.T) {
	jail := realTempDir(t)
	r := newRunner(t, Config{})
	gitRun(t, r, jail, "", "init", "-q")
	cfg := filepath.Join(jail, ".git", "config")
	orig, _ := os.ReadFile(cfg)
	for _, extra := range []string{
		"[filter \"x\"]\n\tclean = touch pwned\n",
		"[diff \"x\"]\n\ttextconv = touch pwned\n",
		"[diff]\n\texternal = touch pwned\n",
		"[include]\n\tpath = /tmp/evil\n",
		"[includeIf \"gitdir:/\"]\n\tpath = /tmp/evil\n",
		"[core]\n\tworktree = /etc\n",
		"[Core]\nWorkTree=/etc\n",
		"[credential \"https://x\"]\n\thelper = !touch pwned\n",
	} {
		os.WriteFile(cfg, append(append([]byte(nil), orig...), extra...), 0o644)
		res, err := r.Run(context.Background(), Request{Argv: []string{"git", "status"}, Jail: jail})
		if !errors.Is(err, ErrDenied) || res.ExitCode != 126 {
			t.Errorf("config %q: got %v exit %d", extra, err, res.ExitCode)
		}
	}
	if _, err := os.Stat(filepath.Join(jail, "pwned")); err == nil {
		t.Fatal("a configured program ran")
	}
}

// Keys that run programs but that the lane overrides on the command line
// are allowed in the repository config, and the programs never run.
func TestGitOverriddenRepoConfigDoesNotRun(t *testing.T) {
	jail := realTempDir(t)
	r := newRunner(t, Config{})
	gitRun(t, r, jail, "", "init", "-q")
	hooks := filepath.Join(jail, "myhooks")
	os.Mkdir(hooks, 0o755)
	g := guestOf(r, jail)
	os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("#!/bin/sh\ntouch "+g+"/pwned-hook\n"), 0o755)
	os.WriteFile(filepath.Join(jail, "fsmon.sh"), []byte("#!/bin/sh\ntouch "+g+"/pwned-fsmonitor\n"), 0o755)
	f, _ := os.OpenFile(filepath.Join(jail, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "[core]\n\tfsmonitor = %s/fsmon.sh\n\thooksPath = %s/myhooks\n\tpager = touch pwned-pager\n\teditor = touch pwned-editor\n", g, g)
	f.Close()
	os.WriteFile(filepath.Join(jail, "a"), []byte("a\n"), 0o644)
	for _, args := range [][]string{{"status"}, {"add", "a"}, {"commit", "-q", "-m", "x"}, {"log", "-p"}, {"commit", "-q", "--allow-empty", "-e", "-m", "y"}} {
		if res := gitRun(t, r, jail, "", args...); res.ExitCode != 0 {
			t.Fatalf("git %q: exit %d %s", args, res.ExitCode, res.Stderr)
		}
	}
	matches, _ := filepath.Glob(filepath.Join(jail, "pwned*"))
	if len(matches) != 0 {
		t.Fatalf("configured programs ran: %v", matches)
	}
}

func TestGitFileOutsideJailDenied(t *testing.T) {
	root := realTempDir(t)
	outside := filepath.Join(root, "outside")
	jail := filepath.Join(root, "jail")
	os.MkdirAll(jail, 0o755)
	if out, err := exec.Command("git", "init", "-q", outside).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	os.WriteFile(filepath.Join(jail, ".git"), []byte("gitdir: "+filepath.Join(outside, ".git")+"\n"), 0o644)
	r := newRunner(t, Config{})
	res, err := r.Run(context.Background(), Request{Argv: []string{"git", "status"}, Jail: jail})
	if !errors.Is(err, ErrDenied) || !strings.Contains(res.Reason, "outside the jail") {
		t.Fatalf("got %v %+v", err, res.Reason)
	}
}

func TestGitDoesNotDiscoverRepoAboveJail(t *testing.T) {
	outer := realTempDir(t)
	if out, err := exec.Command("git", "init", "-q", outer).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	jail := filepath.Join(outer, "jail")
	os.Mkdir(jail, 0o755)
	r := newRunner(t, Config{})
	res, err := r.Run(context.Background(), Request{Argv: []string{"git", "status"}, Jail: jail})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "not a git repository") {
		t.Fatalf("git found the repository above the jail: exit %d %s", res.ExitCode, res.Stderr)
	}
}

func BenchmarkGitStatusLane(b *testing.B) {
	jail := realTempDir(b)
	if out, err := exec.Command("git", "init", "-q", jail).CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	r := newRunner(b, Config{})
	ctx := context.Background()
	for b.Loop() {
		res, err := r.Run(ctx, Request{Argv: []string{"git", "status", "--porcelain"}, Jail: jail})
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res.ExitCode)
		}
	}
}

func BenchmarkGitStatusDirect(b *testing.B) {
	jail := realTempDir(b)
	if out, err := exec.Command("git", "init", "-q", jail).CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	for b.Loop() {
		cmd := exec.Command("git", "status", "--porcelain")
		cmd.Dir = jail
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestGitPathArgumentsStayInJail(t *testing.T) {
	jail := realTempDir(t)
	r := newRunner(t, Config{})
	gitRun(t, r, jail, "", "init", "-q")
	os.WriteFile(filepath.Join(jail, "README"), []byte("x\n"), 0o644)
	os.Mkdir(filepath.Join(jail, "sub"), 0o755)
	gitRun(t, r, jail, "", "add", "README")
	gitRun(t, r, jail, "", "commit", "-q", "-m", "one")
	gitRun(t, r, jail, "", "commit", "-q", "--allow-empty", "-m", "two")
	for _, args := range [][]string{
		{"diff", "/etc/hostname", "README"}, // implicit --no-index on a host file
		{"diff", "README", "../../etc/hostname"},
		{"log", "--", "/etc"},
		{"add", "sub/../../x"},
	} {
		res, err := r.Run(context.Background(), Request{Argv: append([]string{"git"}, args...), Jail: jail})
		if !errors.Is(err, ErrJail) || res.ExitCode != 126 {
			t.Errorf("git %q: %v exit %d", args, err, res.ExitCode)
		}
	}
	// Inside the jail, relative to a subdirectory, and revision ranges.
	if res := gitRun(t, r, jail, "sub", "log", "--format=%s", "HEAD~1..HEAD", "--", "../README"); res.ExitCode != 0 {
		t.Fatalf("log from sub: %s", res.Stderr)
	}
	if res := gitRun(t, r, jail, "", "log", "--format=%s", "HEAD~1..HEAD"); string(res.Stdout) != "two\n" {
		t.Fatalf("range: %q %s", res.Stdout, res.Stderr)
	}
}

func TestGitDiffNeedsRepository(t *testing.T) {
	jail := realTempDir(t)
	os.WriteFile(filepath.Join(jail, "a"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(jail, "b"), []byte("b\n"), 0o644)
	r := newRunner(t, Config{})
	res, err := r.Run(context.Background(), Request{Argv: []string{"git", "diff", "a", "b"}, Jail: jail})
	if !errors.Is(err, ErrDenied) || res.ExitCode != 126 {
		t.Fatalf("diff outside a repository: %v %d", err, res.ExitCode)
	}
	res, err = r.Run(context.Background(), Request{Argv: []string{"git", "--bare", "log"}, Jail: jail})
	if !errors.Is(err, ErrDenied) {
		t.Fatalf("--bare: %v", err)
	}
}

// A stdin that never ends must not keep Run waiting once the process exits.
func TestEndlessStdinDoesNotHang(t *testing.T) {
	jail := realTempDir(t)
	r := newRunner(t, Config{})
	pr, pw := io.Pipe()
	defer pw.Close()
	start := time.Now()
	res, err := r.Run(context.Background(), Request{Argv: []string{"sh", "-c", "exit 0"}, Jail: jail, Stdin: pr})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v %+v", err, res)
	}
	// The pipe is never closed: a watchdog, not a speed limit.
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("took %v", d)
	}
}

// BenchmarkPolicyChecks measures the lane's own work before a git command
// starts: policy, jail resolution and the repository config scan.
func BenchmarkPolicyChecks(b *testing.B) {
	jail := realTempDir(b)
	if out, err := exec.Command("git", "init", "-q", jail).CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	r := newRunner(b, Config{})
	req := Request{Argv: []string{"git", "status", "--porcelain"}, Jail: jail}
	for b.Loop() {
		if _, _, _, _, _, err := r.prepare(req); err != nil {
			b.Fatal(err)
		}
	}
}
