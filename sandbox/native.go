package sandbox

import (
	"log/slog"

	"context"
	"errors"
	"fmt"
	"github.com/google/uuid"
	"github.com/wasmbox/wasmbox/audit"
	"path"
	"slices"
	"strings"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/executor/native"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/vfs"
)

// NativeConfig enables the native lane: allowlisted host binaries (git
// first) that run in an OS jail (bubblewrap: user, mount, pid, network,
// IPC and UTS namespaces, uid 1000, no capabilities, rlimits; see package
// executor/native) under a policy (subcommands, denied flags, sanitized
// environment, output caps, kill on the deadline). A native command can
// only run in a directory of a read-only or read-write host mount: the
// jail sees that host directory at the mount's guest path (read-only for
// a read-only mount), never the in-memory VFS.
type NativeConfig struct {
	// Runner runs the commands; its policy decides what is allowed.
	Runner *native.Runner
	// Names are the command names routed to the native lane.
	Names []string
}

// WithNative routes the named binaries (e.g. "git") to the native lane with
// the default policy (git: status, log, diff, show, rev-parse, ls-files,
// branch, add, commit; dangerous flags and config injection denied).
// Every policy decision and native exec is written to the audit log of
// WithAudit, if any.
func WithNative(names ...string) Option {
	return func(c *config) {
		pol := native.DefaultPolicy()
		kept := map[string]native.Rule{}
		var use []string
		for _, n := range names {
			n = strings.TrimSpace(n)
			if n == "" {
				continue
			}
			r, ok := pol.Binaries[n]
			if !ok {
				c.errs = append(c.errs, fmt.Errorf("native lane: no policy for %q (known: %s)", n, knownNative(pol)))
				return
			}
			kept[n] = r
			use = append(use, n)
		}
		pol.Binaries = kept
		c.native = &NativeConfig{Names: use}
		c.nativePolicy = &pol
	}
}

// WithNativeUnjailed lets the native lane of WithNative run without the
// OS jail where the jail is unavailable (no bubblewrap, or no user
// namespaces): its commands then run with the host user's rights, behind
// the policy alone, and a read-only mount admits only git's read-only
// subcommands. Without this option, New fails in that case with an error
// matching native.ErrNoJail. Do not use it for untrusted agents.
func WithNativeUnjailed() Option {
	return func(c *config) { c.unjailed = true }
}

// WithNativeRunner routes names to a native lane with a runner (and
// policy) of the caller's.
func WithNativeRunner(r *native.Runner, names ...string) Option {
	return func(c *config) { c.native = &NativeConfig{Runner: r, Names: names}; c.nativePolicy = nil }
}

// buildNative creates the native runner of WithNative, reporting policy
// decisions to the audit log.
func (c *config) buildNative() error {
	if c.native == nil || c.native.Runner != nil || c.nativePolicy == nil {
		return nil
	}
	cfg := native.Config{Policy: c.nativePolicy, Unjailed: c.unjailed}
	if l := c.audit; l != nil {
		session := c.session
		cfg.OnDecision = func(ctx context.Context, d native.Decision) {
			allowed := d.Allowed
			l.Log(ctx, audit.Event{Kind: "decision", Session: session, Argv: d.Argv, Allowed: &allowed, Reason: d.Reason,
				Attrs: []slog.Attr{slog.String("binary", d.Binary), slog.String("dir", d.Dir)}, Secrets: c.secrets.list()})
		}
	}
	rn, err := native.New(cfg)
	if err != nil {
		return fmt.Errorf("native lane: %w", err)
	}
	c.native.Runner = rn
	return nil
}

// nativeEnv picks from a command's environment the variables the native
// lane's policy lets a request set (the git identity, TZ).
func (s *Sandbox) nativeEnv(env []string) map[string]string {
	pol := s.cfg.native.Runner.Policy()
	var out map[string]string
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if ok && slices.Contains(pol.RequestEnv, k) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

func knownNative(p native.Policy) string {
	var ks []string
	for k := range p.Binaries {
		ks = append(ks, k)
	}
	return strings.Join(ks, ", ")
}

func (s *Sandbox) isNative(name string) bool {
	if s.cfg.native == nil {
		return false
	}
	for _, n := range s.cfg.native.Names {
		if n == name {
			return true
		}
	}
	return false
}

// errNotHostBacked is the reason a native command cannot run in a
// directory of the in-memory VFS.
var errNotHostBacked = errors.New("the working directory is not on a host mount (native commands cannot see the in-memory filesystem)")

// hostDirFor maps a guest directory onto a host mount: the host root of
// the mount (the jail) and the directory relative to it.
func (s *Sandbox) hostDirFor(dir string) (m vfs.MountSpec, rel string, err error) {
	best := -1
	for i, m := range s.mounts {
		g := path.Clean(m.Guest)
		if dir == g || g == "/" || strings.HasPrefix(dir, g+"/") {
			if best < 0 || len(g) > len(path.Clean(s.mounts[best].Guest)) {
				best = i
			}
		}
	}
	if best < 0 {
		return m, "", errNotHostBacked
	}
	m = s.mounts[best]
	if m.Mode == vfs.CopyOnWrite {
		return m, "", errors.New("the working directory is on a copy-on-write mount (its changes live in memory, where native commands cannot see them)")
	}
	rel = strings.TrimPrefix(strings.TrimPrefix(dir, path.Clean(m.Guest)), "/")
	return m, rel, nil
}

// runNative runs one command of the native lane and copies its (capped)
// output to the command's streams.
func (s *Sandbox) runNative(ctx context.Context, c command) (int, ErrorClass) {
	name := path.Base(c.Argv[0])
	stderr := orDiscard(c.Stderr)
	if allow := s.allowFunc(); allow != nil {
		if err := allow(name); err != nil {
			fmt.Fprintf(stderr, "%s: not allowed in this sandbox\n", name)
			return executor.ExitDenied, ClassDenied
		}
	}
	m, rel, err := s.hostDirFor(c.Dir)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return executor.ExitCannotExecute, ClassDenied
	}
	argv := append([]string{name}, c.Argv[1:]...)
	req := native.Request{
		Argv: argv, Jail: m.Host, Dir: rel, Guest: path.Clean(m.Guest), ReadOnly: m.Mode == vfs.ReadOnly,
		Env: s.nativeEnv(c.Env), Stdin: c.Stdin,
	}
	if s.cfg.network.Enabled() {
		// git clone/fetch/push/pull of https:// URLs through the
		// host's relay, under the run's broker (its records, audit and
		// spans are the run's).
		req.Network = runtime.NetworkFrom(ctx)
	}
	res, err := s.cfg.native.Runner.Run(ctx, req)
	if l := s.cfg.audit; l != nil {
		ev := audit.Event{Kind: "native", JobID: uuid.NewString(), Session: s.cfg.session, Argv: argv,
			Start: res.Start, End: res.Start.Add(res.Duration), Exit: res.ExitCode, Class: string(res.Class), Truncated: res.Truncated,
			Secrets: s.cfg.secrets.list()}
		if res.Reason != "" {
			denied := false
			ev.Allowed, ev.Reason = &denied, res.Reason
		}
		l.Log(ctx, ev)
	}
	orDiscard(c.Stdout).Write(res.Stdout)
	stderr.Write(res.Stderr)
	if err != nil {
		msg := err.Error()
		if res.Reason != "" {
			msg = res.Reason
		}
		fmt.Fprintf(stderr, "%s: %s\n", name, msg)
	}
	code := res.ExitCode
	if err != nil && code == 0 {
		code = executor.ExitCannotExecute
	}
	return code, ErrorClass(res.Class)
}
