package native

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wasmbox/wasmbox/netpolicy"
)

// Exit codes of runs that did not finish on their own.
const (
	ExitTimeout   = 124
	ExitCancelled = 125
	ExitDenied    = 126
	ExitNotFound  = 127
)

// Class names why a run did not finish normally; the empty string means it
// did (whatever its exit code). The values match the result contract of the
// sandbox and the HTTP API.
type Class string

// Classes.
const (
	ClassNone      Class = ""
	ClassTimeout   Class = "TIMEOUT"
	ClassCancelled Class = "CANCELLED"
	ClassDenied    Class = "DENIED"
	ClassNotFound  Class = "NOT_FOUND"
)

// TruncatedMarker is appended to a stream cut at the output cap.
const TruncatedMarker = "\n[TRUNCATED at 1MB]\n"

// Config configures a [Runner]. The zero value of every field gives its
// default.
type Config struct {
	// Policy is the allowlist; default [DefaultPolicy].
	Policy *Policy
	// MaxOutput caps each of stdout and stderr while it is read; default
	// 1 MiB.
	MaxOutput int
	// Timeout applies to requests without one; default 30s.
	Timeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL; default 5s.
	KillGrace time.Duration
	// OnDecision, when set, is called with every policy decision of a Run
	// (before the command starts), e.g. to write an audit entry. ctx is
	// the Run's context, so values the caller put in it (session, job id)
	// reach the hook. It must not block for long.
	OnDecision func(ctx context.Context, d Decision)
	// Unjailed runs commands without the OS jail (see the package doc):
	// with the host user's rights, the host's filesystem and network,
	// behind the policy alone. Off by default; New refuses to build a
	// Runner when the jail is unavailable unless it is set.
	Unjailed bool
	// Limits are the rlimits of a jailed command; zero fields take
	// DefaultJailLimits.
	Limits JailLimits
}

// Decision is a policy decision, reported through Config.OnDecision.
type Decision struct {
	Argv    []string
	Binary  string // resolved absolute path, "" if not resolved
	Dir     string // real working directory, "" if not resolved
	Allowed bool
	Reason  string // why it was refused, or "allowed"
}

// Request is one command to run.
type Request struct {
	// Argv is the command: Argv[0] is an allowlisted binary name.
	Argv []string
	// Jail is the host directory the command is confined to.
	Jail string
	// Dir is the working directory relative to Jail ("" for the root).
	Dir string
	// Guest is where Jail appears inside the OS jail: the guest path of
	// the sandbox's mount (default "/work"). Paths in the command's
	// output and errors are guest paths.
	Guest string
	// ReadOnly binds Jail read-only in the OS jail: the command can write
	// nothing (an unjailed Runner refuses such a request for a command
	// that is not known to only read).
	ReadOnly bool
	// Env sets variables listed in Policy.RequestEnv; any other name is
	// refused.
	Env map[string]string
	// Stdin is the command's standard input; nil means /dev/null.
	Stdin io.Reader
	// Timeout overrides Config.Timeout when positive.
	Timeout time.Duration
	// Network, when its policy allows any host, lets git clone, fetch,
	// push and pull reach https:// (and http://) URLs of that policy
	// through the host's relay (see relay.go); the jail keeps its empty
	// network namespace. Nil, an empty policy or an unjailed Runner: the
	// network subcommands reach local repositories only.
	Network *netpolicy.Broker
}

// Result is the outcome of a run. Stdout and Stderr are raw (not
// redacted); redaction is the caller's job before output leaves the
// sandbox.
type Result struct {
	Argv      []string
	Binary    string
	Dir       string
	Stdout    []byte
	Stderr    []byte
	ExitCode  int
	Class     Class
	Truncated bool
	Start     time.Time
	Duration  time.Duration
	// Reason explains a denial.
	Reason string
}

// Runner runs commands of the native lane. It is safe for concurrent use.
type Runner struct {
	cfg      Config
	policy   Policy
	binaries map[string]string // name -> real absolute path ("" = not installed)
	jail     osJail            // nil when Unjailed
}

// New resolves every allowlisted binary once (exec.LookPath in
// Policy.Path, then filepath.EvalSymlinks) and returns a Runner. A binary
// that is not installed is not an error here: running it gives exit code
// 127 and [ErrNotFound]. New fails for an invalid policy (a binary name
// containing a path separator) and, unless Config.Unjailed is set, when
// the OS jail cannot be used here (an error matching [ErrNoJail]).
func New(cfg Config) (*Runner, error) {
	if cfg.Policy == nil {
		p := DefaultPolicy()
		cfg.Policy = &p
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = 1 << 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = 5 * time.Second
	}
	pol := *cfg.Policy
	if pol.Path == "" {
		pol.Path = "/usr/local/bin:/usr/bin:/bin"
	}
	if pol.Lang == "" {
		pol.Lang = "C.UTF-8"
	}
	r := &Runner{cfg: cfg, policy: pol, binaries: make(map[string]string)}
	if !cfg.Unjailed {
		t, err := findJail()
		if err != nil {
			return nil, fmt.Errorf("%w (native commands run only in the OS jail; an embedder can opt out with --native-unjailed)", err)
		}
		r.jail = t
	}
	for name := range pol.Binaries {
		if name == "" || strings.ContainsRune(name, '/') || strings.ContainsRune(name, 0) {
			return nil, fmt.Errorf("native: invalid binary name %q in policy", name)
		}
		r.binaries[name] = lookPath(name, pol.Path)
	}
	return r, nil
}

// lookPath resolves name in the given PATH to a real absolute path, or "".
func lookPath(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		return real
	}
	return ""
}

// Jailed reports whether the Runner runs its commands in the OS jail.
func (r *Runner) Jailed() bool { return r.jail != nil }

// Binary returns the resolved path of an allowlisted binary, or "".
func (r *Runner) Binary(name string) string { return r.binaries[name] }

// Run checks req against the policy and runs it.
//
// # Errors
//
// A non-zero exit status is not an error: Result.ExitCode has it. Run
// returns an error, with a Result whose ExitCode and Class say what
// happened, when the command was refused (a *[DeniedError], exit 126), the
// binary is not installed ([ErrNotFound], 127), the deadline passed
// (context.DeadlineExceeded, 124) or ctx was cancelled (context.Canceled,
// 125), or the process could not be started.
func (r *Runner) Run(ctx context.Context, req Request) (Result, error) {
	res := Result{Argv: append([]string(nil), req.Argv...), Start: time.Now()}
	finish := func(code int, class Class, err error) (Result, error) {
		res.ExitCode, res.Class = code, class
		res.Duration = time.Since(res.Start)
		var de *DeniedError
		if errors.As(err, &de) {
			res.Reason = de.Reason
		}
		return res, err
	}
	bin, jailReal, dirReal, env, useNet, err := r.prepare(req)
	res.Binary, res.Dir = bin, dirReal
	r.decide(ctx, res, err)
	switch {
	case errors.Is(err, ErrNotFound):
		return finish(ExitNotFound, ClassNotFound, err)
	case err != nil:
		return finish(ExitDenied, ClassDenied, err)
	}
	if err := ctx.Err(); err != nil {
		return finish(ctxCode(ctx))
	}
	timeout := r.cfg.Timeout
	if req.Timeout > 0 {
		timeout = req.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// Re-check the jail right before the process starts.
	if _, again, err := ResolveDir(req.Jail, req.Dir); err != nil || again != dirReal {
		if err == nil {
			err = jailDenied("working directory changed during the check")
		}
		r.decide(ctx, res, err)
		return finish(ExitDenied, ClassDenied, err)
	}
	out, errOut, code, truncated, err := r.exec(ctx, bin, req, jailReal, dirReal, env, useNet)
	res.Stdout, res.Stderr, res.Truncated = out, errOut, truncated
	if err != nil {
		if ctx.Err() != nil {
			return finish(ctxCode(ctx))
		}
		return finish(-1, ClassNone, err)
	}
	if ctx.Err() != nil {
		return finish(ctxCode(ctx))
	}
	return finish(code, ClassNone, nil)
}

func ctxCode(ctx context.Context) (int, Class, error) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ExitTimeout, ClassTimeout, fmt.Errorf("native: %w", context.DeadlineExceeded)
	}
	return ExitCancelled, ClassCancelled, fmt.Errorf("native: %w", context.Cause(ctx))
}

func (r *Runner) decide(ctx context.Context, res Result, err error) {
	if r.cfg.OnDecision == nil {
		return
	}
	d := Decision{Argv: res.Argv, Binary: res.Binary, Dir: res.Dir, Allowed: err == nil, Reason: "allowed"}
	if err != nil {
		d.Reason = err.Error()
		var de *DeniedError
		if errors.As(err, &de) {
			d.Reason = de.Reason
		}
	}
	r.cfg.OnDecision(ctx, d)
}

// prepare applies the policy: binary, arguments, jail, environment;
// useNet reports that the command reaches the network through the relay.
func (r *Runner) prepare(req Request) (bin, jailReal, dirReal string, env []string, useNet bool, err error) {
	bin, jailReal, dirReal, env, useNet, err = r.prepare1(req)
	if err != nil {
		useNet = false
	}
	return
}

func (r *Runner) prepare1(req Request) (bin, jailReal, dirReal string, env []string, useNet bool, err error) {
	if len(req.Argv) == 0 {
		return "", "", "", nil, false, denied("empty command")
	}
	name := req.Argv[0]
	rule, ok := r.policy.Binaries[name]
	if !ok {
		return "", "", "", nil, false, denied("binary %q is not allowlisted", name)
	}
	bin = r.binaries[name]
	if bin == "" {
		return "", "", "", nil, false, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	sub, err := checkArgs(rule, req.Argv[1:])
	if err != nil {
		return bin, "", "", nil, false, err
	}
	jailReal, dirReal, err = ResolveDir(req.Jail, req.Dir)
	if err != nil {
		return bin, "", "", nil, false, err
	}
	if within(jailReal, bin) {
		return bin, jailReal, dirReal, nil, false, denied("binary %s lies inside the jail", bin)
	}
	if req.ReadOnly && r.jail == nil && !slices.Contains(rule.ReadOnlySubcommands, sub) {
		return bin, jailReal, dirReal, nil, false, denied("%s %s may write, and a read-only mount is enforced only by the OS jail (this lane runs unjailed)", name, sub)
	}
	guest := r.guestRoot(req)
	pathGuest := "" // absolute paths in argv are host paths unjailed
	if r.jail != nil {
		pathGuest = guest
	}
	var cfg gitConfigFacts
	netSub := rule.Git && slices.Contains([]string{"clone", "fetch", "push", "pull"}, sub)
	// The network: in the OS jail only (unjailed, git would have the
	// host's network), with a policy that allows some host.
	netOK := netSub && r.jail != nil && req.Network != nil && req.Network.Policy().Enabled()
	// unjailedNet: a network policy that an unjailed lane cannot apply.
	unjailedNet := ""
	if netSub && r.jail == nil && req.Network != nil && req.Network.Policy().Enabled() {
		unjailedNet = " (git reaches the network only in the OS jail, and this lane runs unjailed)"
	}
	if rule.Git {
		if err := checkPathArgs(jailReal, dirReal, pathGuest, req.Argv[1:]); err != nil {
			return bin, jailReal, dirReal, nil, false, err
		}
		if err := checkGitArgs(rule, sub, req.Argv[1:], jailReal, dirReal, pathGuest, netOK); err != nil {
			var de *DeniedError
			if unjailedNet != "" && errors.As(err, &de) {
				err = denied("%s%s", de.Reason, unjailedNet)
			}
			return bin, jailReal, dirReal, nil, false, err
		}
		found, facts, err := gitRepoCheck(jailReal, dirReal)
		if err != nil {
			return bin, jailReal, dirReal, nil, false, err
		}
		if !found && sub == "diff" {
			return bin, jailReal, dirReal, nil, false, denied("git diff outside a repository (it would compare arbitrary files)")
		}
		cfg = facts
		switch sub {
		case "fetch", "push", "pull":
			for name, urls := range cfg.remotes {
				for _, u := range urls {
					if netOK && networkRepoArg(u) {
						useNet = true
						continue
					}
					if !localRepoArg(jailReal, dirReal, pathGuest, u) {
						return bin, jailReal, dirReal, nil, false, denied("git %s: remote %q is %q, not a path inside the mount (only local repositories inside the mount can be reached)%s", sub, name, u, unjailedNet)
					}
				}
			}
		}
	}
	home := jailReal
	if r.jail != nil {
		home = jailHome
	}
	vars := map[string]string{"PATH": r.policy.Path, "HOME": home, "LANG": r.policy.Lang}
	for _, k := range r.policy.HostEnv {
		if v, ok := os.LookupEnv(k); ok {
			vars[k] = v
		}
	}
	for k, v := range req.Env {
		if !slices.Contains(r.policy.RequestEnv, k) {
			return bin, jailReal, dirReal, nil, false, denied("environment variable %q may not be set", k)
		}
		if strings.ContainsRune(v, 0) {
			return bin, jailReal, dirReal, nil, false, denied("environment variable %q contains a NUL byte", k)
		}
		vars[k] = v
	}
	for k, v := range rule.Env {
		vars[k] = v
	}
	if netSub {
		// Local paths only: their repositories were checked above.
		vars["GIT_ALLOW_PROTOCOL"] = "file"
	}
	if netOK && !useNet {
		// An http(s) URL on the command line (remotes were seen above).
		for _, a := range req.Argv[1:] {
			useNet = useNet || !strings.HasPrefix(a, "-") && networkRepoArg(a)
		}
	}
	var relayConfig [][2]string
	if useNet {
		// git speaks plain HTTP to the relay in its own network
		// namespace (its https:// URLs are rewritten to it); the
		// relay applies the network policy on the host.
		vars["GIT_ALLOW_PROTOCOL"] = "file:http"
		relayConfig = gitRelayConfig
	}
	if rule.Git {
		// Never discover a repository above the jail.
		vars["GIT_CEILING_DIRECTORIES"] = filepath.Dir(jailReal)
		if r.jail != nil {
			vars["GIT_CEILING_DIRECTORIES"] = path.Dir(guest)
		}
		// The sandbox's identity, unless the repository, the command
		// line or the request's environment gives one: as the lowest
		// of git's command-line configuration, it outranks no setting
		// of the user's.
		n, _ := strconv.Atoi(vars["GIT_CONFIG_COUNT"])
		for _, kv := range relayConfig {
			vars[fmt.Sprintf("GIT_CONFIG_KEY_%d", n)] = kv[0]
			vars[fmt.Sprintf("GIT_CONFIG_VALUE_%d", n)] = kv[1]
			n++
		}
		for _, id := range [][2]string{{"user.name", DefaultGitName}, {"user.email", DefaultGitEmail}} {
			if cfg.sets(id[0]) || argsSetConfig(req.Argv[1:], id[0]) {
				continue
			}
			vars[fmt.Sprintf("GIT_CONFIG_KEY_%d", n)] = id[0]
			vars[fmt.Sprintf("GIT_CONFIG_VALUE_%d", n)] = id[1]
			n++
		}
		vars["GIT_CONFIG_COUNT"] = strconv.Itoa(n)
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return bin, jailReal, dirReal, env, useNet, nil
}

// jailHome is HOME in the OS jail: a directory of its private /tmp.
const jailHome = "/tmp/home"

// guestRoot is where the jail root appears in the OS jail: the request's
// guest path, or /work when it is unset or would shadow (or be shadowed
// by) a directory of the jail itself.
func (r *Runner) guestRoot(req Request) string {
	if req.Guest == "" {
		return "/work"
	}
	g := path.Clean("/" + filepath.ToSlash(req.Guest))
	switch top, _, _ := strings.Cut(g[1:], "/"); top {
	case "", "tmp", "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "proc", "dev":
		return "/work"
	}
	return g
}

// exec starts the process in its own process group and waits for it,
// killing the whole group on ctx's end (SIGTERM, then SIGKILL after the
// grace period) and whatever is left of the group once the leader exits.
func (r *Runner) exec(ctx context.Context, bin string, req Request, jailReal, dir string, env []string, useNet bool) (stdout, stderr []byte, code int, truncated bool, err error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, 0, false, fmt.Errorf("native: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, 0, false, fmt.Errorf("native: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        bin,
		Args:        append([]string{req.Argv[0]}, req.Argv[1:]...),
		Env:         env,
		Dir:         dir,
		Stdout:      outW,
		Stderr:      errW,
		SysProcAttr: procAttr(),
	}
	var info jailRun
	if r.jail != nil {
		info, err = r.jail.wrap(cmd, bin, req.Argv[1:], jailReal, r.guestRoot(req), dir, !req.ReadOnly, env, r.cfg.Limits.withDefaults(), useNet)
		if err != nil {
			outR.Close()
			outW.Close()
			errR.Close()
			errW.Close()
			return nil, nil, 0, false, err
		}
		defer info.close()
	}
	// Stdin other than a file is copied through a pipe of our own (not by
	// os/exec, whose Wait would wait for a reader that may never end).
	var inW *os.File
	var closeIn sync.Once
	switch in := req.Stdin.(type) {
	case nil:
	case *os.File:
		cmd.Stdin = in
	default:
		var inR *os.File
		if inR, inW, err = os.Pipe(); err != nil {
			outR.Close()
			outW.Close()
			errR.Close()
			errW.Close()
			return nil, nil, 0, false, fmt.Errorf("native: %w", err)
		}
		cmd.Stdin = inR // closed in the parent right after Start
	}
	startErr := cmd.Start()
	outW.Close()
	errW.Close()
	if info != nil {
		info.started()
	}
	if cmd.Stdin != nil && inW != nil {
		cmd.Stdin.(*os.File).Close()
	}
	if startErr != nil {
		outR.Close()
		errR.Close()
		if inW != nil {
			inW.Close()
		}
		return nil, nil, 0, false, fmt.Errorf("native: start %s: %w", req.Argv[0], startErr)
	}
	pid := cmd.Process.Pid
	if useNet {
		// The command waits in its namespaces while the relay opens in
		// its network namespace; if the relay cannot, it never starts.
		rl, err := r.openRelay(ctx, info, req.Network, pid)
		if err != nil {
			unix.Kill(-pid, unix.SIGKILL)
			cmd.Wait()
			outR.Close()
			errR.Close()
			if inW != nil {
				inW.Close()
			}
			return nil, nil, 0, false, err
		}
		defer rl.close()
		info.release()
	}
	if inW != nil {
		// This goroutine ends when req.Stdin returns (EOF or error) or
		// the pipe is closed after the process exits; a Stdin that blocks
		// forever keeps it until the caller closes Stdin.
		go func() {
			io.Copy(inW, req.Stdin)
			closeIn.Do(func() { inW.Close() })
		}()
	}

	var wg sync.WaitGroup
	outBuf := &capBuffer{max: r.cfg.MaxOutput}
	errBuf := &capBuffer{max: r.cfg.MaxOutput}
	for _, p := range []struct {
		r *os.File
		b *capBuffer
	}{{outR, outBuf}, {errR, errBuf}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := io.Copy(p.b, p.r); errors.Is(err, errCapped) {
				// Like "| head -c 1M": close the pipe, so the writer
				// gets EPIPE/SIGPIPE instead of running on for nothing.
				p.r.Close()
			}
		}()
	}

	exited := make(chan struct{})
	var watchErr error
	go func() {
		// Wait for the leader to exit without reaping it, so that its
		// pid (the group id) stays reserved until the group is killed.
		watchErr = waitExited(pid)
		close(exited)
	}()
	select {
	case <-exited:
	case <-ctx.Done():
		if info == nil {
			unix.Kill(-pid, unix.SIGTERM)
		} else if !info.terminate() {
			// Killing bwrap ends the jail: its init dies with it, and
			// the kernel kills every process of the pid namespace.
			unix.Kill(-pid, unix.SIGKILL)
		}
		grace := time.NewTimer(r.cfg.KillGrace)
		select {
		case <-exited:
			grace.Stop()
		case <-grace.C:
			unix.Kill(-pid, unix.SIGKILL)
			<-exited
		}
	}
	// No process of the command's group outlives it.
	unix.Kill(-pid, unix.SIGKILL)
	if inW != nil {
		closeIn.Do(func() { inW.Close() })
	}
	waitErr := cmd.Wait()

	// The pipes reach EOF once every writer is gone. A process that left
	// the group (setsid) could keep them open: do not wait for it forever.
	readers := make(chan struct{})
	go func() { wg.Wait(); close(readers) }()
	select {
	case <-readers:
	case <-time.After(time.Second):
		outR.Close()
		errR.Close()
		<-readers
	}
	outR.Close()
	errR.Close()
	if watchErr != nil {
		// The leader could not be watched: its group was killed at once.
		return outBuf.bytes(), errBuf.bytes(), -1, outBuf.truncated || errBuf.truncated, fmt.Errorf("native: watch %s: %w", req.Argv[0], watchErr)
	}

	code = 0
	if waitErr != nil {
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) {
			return outBuf.bytes(), errBuf.bytes(), -1, outBuf.truncated || errBuf.truncated, fmt.Errorf("native: wait: %w", waitErr)
		}
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	return outBuf.bytes(), errBuf.bytes(), code, outBuf.truncated || errBuf.truncated, nil
}

// openRelay opens the network relay in the network namespace of the held
// jail whose bwrap is pid.
func (r *Runner) openRelay(ctx context.Context, info jailRun, b *netpolicy.Broker, pid int) (*relay, error) {
	hctx, cancel := context.WithTimeout(ctx, relayHoldTimeout)
	defer cancel()
	init, err := info.initPid(hctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("native: network relay: %w", ctx.Err())
		}
		return nil, fmt.Errorf("native: network relay: %w", err)
	}
	return startRelay(ctx, b, init, pid)
}

// capBuffer keeps the first max bytes written to it; past them it reports
// errCapped and the pipe is closed.
type capBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

// errCapped stops the copy from a pipe once its cap is reached.
var errCapped = errors.New("native: output cap reached")

func (c *capBuffer) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if len(p) <= room {
		return c.buf.Write(p)
	}
	c.buf.Write(p[:room])
	c.truncated = true
	return room, errCapped
}

func (c *capBuffer) bytes() []byte {
	if c.truncated {
		c.buf.WriteString(TruncatedMarker)
	}
	return c.buf.Bytes()
}

// Policy returns the Runner's policy (with its defaults filled in).
func (r *Runner) Policy() Policy { return r.policy }
