// Package native runs a small set of allowlisted host binaries (git first)
// for the sandbox, in an OS jail and behind a policy.
//
// # The jail (the boundary)
//
// Every command runs in bubblewrap, on Linux only (see bwrap_linux.go for
// the whole list and why bubblewrap, and Platforms below): new user,
// mount, pid, network, IPC and UTS namespaces; uid and gid 1000 inside, no
// capabilities, no_new_privs; a root that holds only the system's
// read-only /usr (and its /bin, /lib links), a private /tmp, its own /proc
// and a minimal /dev, and the mount's host directory at the mount's guest
// path (read-only for a read-only mount); an empty network namespace
// (git's clone, fetch, push and pull of https:// URLs reach the network
// only through the host's relay under the sandbox's network policy, see
// relay.go); rlimits on CPU time, address space, processes, file size and open
// files. [New] refuses to build a Runner where the jail is unavailable
// (an error matching [ErrNoJail]) unless Config.Unjailed opts out.
//
// # The policy (the second layer)
//
// The binary must be allowlisted and is resolved once to an absolute real
// path, the subcommand must be allowed, denied flags are rejected, the
// working directory must lie inside the jail with no symlinked
// component, and the child gets a sanitized environment. There is no
// shell: argv only. For git the lane also parses every config file of the
// repository with git's grammar and refuses the keys that run programs,
// read files named by the config or reach other repositories (see
// [GitRule]), and keeps git from discovering a repository above the mount.
//
// A deadline sends SIGTERM to the command's processes (git removes its
// lock files) and, after a grace period, kills the jail (its pid
// namespace dies with it); when the command ends, whatever it left behind
// dies with the namespace. Output is capped at 1 MiB per stream while it
// is read; at the cap the pipe is closed, so the command gets SIGPIPE as
// it would writing into "head -c 1M" (exit status 141 unless it handles
// the signal).
//
// # Platforms
//
// The OS jail is Linux-only: it is built from Linux namespaces. On macOS
// and the BSDs the package builds, and [New] refuses a jailed Runner with
// an error matching [ErrNoJail] that says so. An unjailed Runner
// (Config.Unjailed, the CLI's --native-unjailed) works there with portable
// process control and the policy as the only layer: the command runs in
// its own process group, a deadline sends SIGTERM to the group and SIGKILL
// after the grace period, and the group is killed when the command ends.
// What it lacks besides the jail: there is no parent-death signal (Linux's
// Pdeathsig), so a command whose wasmbox is killed outright (SIGKILL, a
// crash) runs on until it ends by itself; and a process that leaves the
// group (setsid) survives the kill, as it does unjailed on Linux.
//
// # Exit codes
//
// A timeout gives exit code 124, a cancel 125, a policy denial 126 and a
// binary that is not installed 127, in line with the rest of wasmbox.
package native

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
)

// Sentinel errors; every error of this package for these conditions matches
// one of them with errors.Is.
var (
	// ErrDenied: the policy refused the command (exit code 126).
	ErrDenied = errors.New("native: denied by policy")
	// ErrJail: the working directory is outside the jail or reached
	// through a symlink. It also matches ErrDenied.
	ErrJail = errors.New("native: working directory escapes the jail")
	// ErrNotFound: the binary is allowlisted but not installed (exit
	// code 127).
	ErrNotFound = errors.New("native: binary not found")
)

// DeniedError is a policy denial. It matches [ErrDenied] (and [ErrJail] for
// jail violations) with errors.Is.
type DeniedError struct {
	// Reason says which rule refused the command.
	Reason string
	jail   bool
}

func (e *DeniedError) Error() string { return "native: denied: " + e.Reason }

// Is matches ErrDenied, and ErrJail for jail violations.
func (e *DeniedError) Is(target error) bool {
	return target == ErrDenied || (e.jail && target == ErrJail)
}

func denied(format string, args ...any) error {
	return &DeniedError{Reason: fmt.Sprintf(format, args...)}
}

func jailDenied(format string, args ...any) error {
	return &DeniedError{Reason: fmt.Sprintf(format, args...), jail: true}
}

// Rule is the policy of one binary.
type Rule struct {
	// Subcommands lists the allowed subcommands (the first argument that
	// is not a flag). Empty means the binary takes no subcommand and any
	// arguments that pass the flag checks are allowed.
	Subcommands []string
	// DeniedFlags are refused anywhere in argv, for every subcommand. A
	// long flag ("--git-dir") is refused as "--git-dir", "--git-dir=x" and
	// as any abbreviation of it ("--git-d"), since git accepts unique
	// prefixes of long options. A short flag ("-c") is refused alone, with
	// a stuck value ("-cfoo"), and inside a cluster ("-qc") up to the
	// first letter of ValueShorts.
	DeniedFlags []string
	// GlobalFlags are denied flags only before the subcommand, where
	// they are the binary's own options (git's "-c key=value" and
	// "-C dir"); after it they are the subcommand's ("switch -c",
	// "grep -C 3").
	GlobalFlags []string
	// SubcommandDeniedFlags adds denied flags per subcommand.
	SubcommandDeniedFlags map[string][]string
	// ValueShorts are the short options that take a stuck value: in a
	// cluster like "-mfoo" scanning stops after 'm'.
	ValueShorts string
	// DeniedArgPrefixes are config-key prefixes ("core.", "alias.")
	// refused, case-insensitively, in any argument of the form key=value
	// (also "-ckey=value", "--config=key=value", "--x=key=value"), and as
	// the start of any argument to a "config" subcommand. A plain path
	// such as "core.go" stays allowed.
	DeniedArgPrefixes []string
	// Env is added to the child's environment (after sanitization).
	Env map[string]string
	// AllowedConfig lists config keys (lowercase, "user.name") that
	// "-c key=value" may set on the command line although "-c" is a
	// denied flag.
	AllowedConfig []string
	// ReadOnlySubcommands are the subcommands that never write the
	// repository; only they may run in a read-only mount when the lane
	// runs without the OS jail (in the jail a read-only mount is a
	// read-only bind, whatever the subcommand).
	ReadOnlySubcommands []string
	// Git turns on git's repository checks: the repository config is
	// scanned for command-running keys, a ".git" file must point inside
	// the jail, git is kept from discovering a repository above the jail,
	// "diff" needs a repository (outside one, git diff compares any two
	// host files), and no argument may name a path outside the jail
	// (which would also make "git diff a b" compare host files).
	Git bool
}

// Policy maps binary names to their rules, plus the environment policy.
type Policy struct {
	// Binaries maps a command name (as it appears in argv[0], without a
	// slash) to its rule. Only these binaries run.
	Binaries map[string]Rule
	// Path is the PATH used to look binaries up and given to the child.
	// Default "/usr/local/bin:/usr/bin:/bin".
	Path string
	// Lang is the child's LANG. Default "C.UTF-8".
	Lang string
	// HostEnv lists host environment variables copied to the child when
	// set (e.g. "TZ"). Nothing else of the host environment reaches it.
	HostEnv []string
	// RequestEnv lists variables a [Request] may set (e.g.
	// "GIT_AUTHOR_NAME"); other names in Request.Env are refused.
	RequestEnv []string
}

// GitSubcommands is the default git allowlist: the local porcelain agents
// use. clone, fetch, push and pull work only between paths inside the
// mount (see checkGitArgs), or with https:// and http:// URLs when the
// request carries a network policy (Request.Network; relay.go); rebase only non-interactively; config only
// reads, and sets user.name and user.email.
var GitSubcommands = []string{
	"status", "log", "diff", "show", "rev-parse", "ls-files", "branch", "add", "commit",
	"init", "checkout", "switch", "restore", "reset", "stash", "merge", "rebase", "cherry-pick",
	"revert", "tag", "blame", "grep", "mv", "rm", "apply", "am", "format-patch", "cat-file",
	"show-ref", "config", "clone", "fetch", "push", "pull",
}

// gitReadOnly are the subcommands of GitSubcommands that never write.
var gitReadOnly = []string{"status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "grep", "cat-file", "show-ref"}

// The identity git commits with in the sandbox unless the repository's
// config, "-c user.name=…", or the GIT_AUTHOR_*/GIT_COMMITTER_* variables
// give another.
const (
	DefaultGitName  = "wasmbox sandbox"
	DefaultGitEmail = "sandbox@wasmbox.invalid"
)

// GitRule returns the default rule for git.
//
// Denied everywhere: options that change where git looks for its repository
// or programs (-c, -C, --config-env, --git-dir, --work-tree, --exec-path,
// --namespace, --super-prefix, --bare), that name remote helpers (--upload-pack,
// --receive-pack, --exec), that read or write host files outside the
// repository (--output, --no-index, --template, --pathspec-from-file,
// --orderfile, --resolve-git-dir), that start other programs (--ext-diff,
// --help, --show-signature), and config injection: a "core." or "alias."
// key in a key=value argument, or any such argument to "git config" should
// it be allowed. Per subcommand: commit -F/--file/-t/-S/--gpg-sign (read
// host files, run gpg); -O for diff, log and show; -u (upload-pack) for the network
// subcommands clone, fetch, pull, ls-remote and archive, should they be
// allowed. Note "-u" is harmless for status, add and commit and stays
// allowed there.
//
// The child gets GIT_CONFIG_NOSYSTEM=1, GIT_CONFIG_GLOBAL=/dev/null,
// GIT_TERMINAL_PROMPT=0, no pager, ":" as editor, no protocols, and
// command-line config (via GIT_CONFIG_COUNT, which outranks the
// repository's config) that turns off hooks, fsmonitor, gpg programs,
// credential helpers, submodule recursion and symlinks (core.symlinks:
// checkout writes a symlink of a tree as a file holding its target).
func GitRule() Rule {
	over := [][2]string{
		{"core.fsmonitor", "false"},
		{"core.hooksPath", "/dev/null"},
		{"core.pager", "cat"},
		{"core.editor", ":"},
		{"core.sshCommand", "false"},
		{"core.askPass", "false"},
		{"sequence.editor", ":"},
		{"commit.gpgSign", "false"},
		{"tag.gpgSign", "false"},
		{"log.showSignature", "false"},
		{"gpg.program", "false"},
		{"gpg.openpgp.program", "false"},
		{"gpg.x509.program", "false"},
		{"gpg.ssh.program", "false"},
		{"credential.helper", ""},
		{"protocol.allow", "never"},
		{"submodule.recurse", "false"},
		{"diff.ignoreSubmodules", "all"},
		{"status.submoduleSummary", "false"},
		{"safe.bareRepository", "explicit"},
		// A symlink in a tree the guest committed is checked out as a
		// file holding its target: git never makes a host symlink.
		{"core.symlinks", "false"},
	}
	env := map[string]string{
		"GIT_CONFIG_NOSYSTEM":    "1",
		"GIT_CONFIG_GLOBAL":      "/dev/null",
		"GIT_TERMINAL_PROMPT":    "0",
		"GIT_PAGER":              "cat",
		"PAGER":                  "cat",
		"GIT_EDITOR":             ":",
		"GIT_SEQUENCE_EDITOR":    ":",
		"GIT_ATTR_NOSYSTEM":      "1",
		"GIT_ALLOW_PROTOCOL":     "none",
		"GIT_PROTOCOL_FROM_USER": "0",
		"GIT_OPTIONAL_LOCKS":     "0",
		"GIT_NO_REPLACE_OBJECTS": "1",
		"GIT_CONFIG_COUNT":       fmt.Sprint(len(over)),
		"GIT_ADVICE":             "0",
		"GIT_MERGE_AUTOEDIT":     "no",
		"GIT_SSH_COMMAND":        "false",
		"GIT_ASKPASS":            "false",
		"SSH_ASKPASS":            "false",
		"GIT_FLUSH":              "1",
	}
	for i, kv := range over {
		env[fmt.Sprintf("GIT_CONFIG_KEY_%d", i)] = kv[0]
		env[fmt.Sprintf("GIT_CONFIG_VALUE_%d", i)] = kv[1]
	}
	network := []string{"-u", "-c", "--upload-pack", "--receive-pack", "--exec", "--config", "--reference", "--reference-if-able", "--shared", "--separate-git-dir", "--server-option"}
	diffish := []string{"-O", "--orderfile"}
	return Rule{
		Subcommands: append([]string(nil), GitSubcommands...),
		GlobalFlags: []string{"-c", "-C"},
		DeniedFlags: []string{
			"--config-env", "--git-dir", "--work-tree", "--exec-path",
			"--namespace", "--super-prefix", "--bare", "--upload-pack", "--receive-pack", "--exec",
			"--output", "--no-index", "--template", "--pathspec-from-file", "--orderfile",
			"--resolve-git-dir", "--ext-diff", "--help", "--show-signature",
			"--recurse-submodules", "--recursive", "--separate-git-dir", "--unsafe-paths",
		},
		SubcommandDeniedFlags: map[string][]string{
			"commit":    {"-F", "--file", "-t", "-S", "--gpg-sign"},
			"diff":      diffish,
			"log":       diffish,
			"show":      diffish,
			"clone":     network,
			"fetch":     network,
			"pull":      network,
			"ls-remote": network,
			"archive":   append([]string{"--remote"}, network...),
			"push":      network,
			"grep":      {"-O", "--open-files-in-pager"},
			"rebase":    {"-i", "--interactive", "-x", "--exec", "--edit-todo"},
			"config":    {"-f", "--file", "--global", "--system", "--worktree", "--blob", "--includes", "-e", "--edit"},
		},
		ValueShorts:         "mFCctSGnOLXABUlNjgeIBM",
		DeniedArgPrefixes:   []string{"core.", "alias."},
		Env:                 env,
		AllowedConfig:       []string{"user.name", "user.email"},
		ReadOnlySubcommands: append([]string(nil), gitReadOnly...),
		Git:                 true,
	}
}

// DefaultPolicy allows git with [GitRule] and lets requests set the git
// identity variables.
func DefaultPolicy() Policy {
	return Policy{
		Binaries: map[string]Rule{"git": GitRule()},
		RequestEnv: []string{
			"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
			"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "TZ",
		},
	}
}

// checkPathArgs refuses arguments that, read as paths relative to dirReal,
// lie outside the jail; revision ranges such as "HEAD~2..HEAD" stay
// inside. guest, when set, is where the jail root appears to the command
// (the OS jail): absolute paths under it are paths in the jail.
//
// An option's value is checked whatever the option, in every form git
// accepts it (see [pathCandidates]): "--file=/x", "--fil=/x", "-F/x",
// "-aF/x" and "-F /x" alike. The check does not depend on a list of
// git's path-taking options, so an option this package does not know
// cannot name a host file; the price is that a non-path value that looks
// like a path outside the jail ("-S/usr/bin", "--grep=/api") is refused
// as well, as its separate form ("-S /usr/bin") always was.
func checkPathArgs(jailReal, dirReal, guest string, args []string) error {
	for _, a := range args {
		for _, v := range pathCandidates(a) {
			if h, ok := hostPath(jailReal, dirReal, guest, v); !ok || !within(jailReal, h) {
				if v == a {
					return jailDenied("argument %q names a path outside the jail", a)
				}
				return jailDenied("argument %q names a path outside the jail (%q)", a, v)
			}
		}
	}
	return nil
}

// pathCandidates returns every string that git could read as a path in
// the argument a, under each parse git's option parsers make of it:
//
//   - a itself: an operand, a pathspec, or the value of the option before
//     it ("-F" "/x", "--file" "/x"), even when it starts with "-"
//     ("-F" "-/../../x" reads through a directory named "-");
//   - for a long option, the value after the first "=" ("--file=/x", and
//     any unambiguous abbreviation "--fil=/x", "--signature-file=/x");
//   - for a short option or a cluster of them, every rest of the argument
//     after an option letter ("-F/x", "-aF/x", "-qaF../x"), since any
//     letter of the cluster may be one that takes a value.
//
// "--" does not stop the scan: tokens after it are checked as paths all
// the same, and not every git command treats "--" alike (rev-parse).
func pathCandidates(a string) []string {
	c := []string{a}
	switch {
	case strings.HasPrefix(a, "--"):
		if _, v, ok := strings.Cut(a, "="); ok {
			c = append(c, v)
		}
	case strings.HasPrefix(a, "-"):
		for i := 2; i < len(a) && shortOptionByte(a[i-1]); i++ {
			c = append(c, a[i:])
		}
	}
	return c
}

// shortOptionByte reports whether b could be the letter of a short
// option in a cluster. git's are letters and digits; anything else but
// the bytes that start or separate a path is counted too, to err on the
// side of checking one more value.
func shortOptionByte(b byte) bool {
	return b > ' ' && b < 0x7f && b != '/' && b != '.' && b != '='
}

// hostPath maps a path argument of the command onto the host; ok is
// false for an absolute path outside the mount in the OS jail, where it
// names nothing of the host.
func hostPath(jailReal, dirReal, guest, p string) (h string, ok bool) {
	switch {
	case !filepath.IsAbs(p):
		return filepath.Clean(filepath.Join(dirReal, p)), true
	case guest != "":
		p = filepath.Clean(p)
		if rel, err := filepath.Rel(guest, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.Join(jailReal, rel), true
		}
		return "", false
	}
	return filepath.Clean(p), true
}

// checkGitArgs applies the per-subcommand rules of git's arguments:
// repository arguments of clone, fetch, push and pull must be local
// paths inside the jail (a path, or a file:// URL); config only reads,
// or sets the keys of Rule.AllowedConfig.
func checkGitArgs(rule Rule, sub string, args []string, jailReal, dirReal, guest string, network bool) error {
	rest := args
	for i, a := range args {
		if a == sub {
			rest = args[i+1:]
			break
		}
	}
	switch sub {
	case "clone", "fetch", "push", "pull":
		for _, a := range rest {
			if strings.HasPrefix(a, "-") {
				continue
			}
			if network && networkRepoArg(a) {
				continue // the relay applies the network policy
			}
			if !localRepoArg(jailReal, dirReal, guest, a) {
				if network {
					return denied("git %s: %q is neither an https:// URL nor a path inside the mount", sub, a)
				}
				return denied("git %s: %q is not a path inside the mount (only local repositories inside the mount can be reached)", sub, a)
			}
		}
	case "config":
		reading := false
		var names []string
		for _, a := range rest {
			switch {
			case a == "--get" || a == "--get-all" || a == "--get-regexp" || a == "--list" || a == "-l" ||
				a == "--get-urlmatch" || a == "--get-color" || a == "--get-colorbool":
				reading = true
			case a == "--local" || a == "--unset" || a == "--unset-all" || a == "--replace-all" || a == "--add" ||
				a == "--null" || a == "-z" || a == "--name-only" || a == "--show-origin" || a == "--show-scope" ||
				a == "--bool" || a == "--int" || a == "--path" || a == "--bool-or-int" || strings.HasPrefix(a, "--type=") ||
				a == "--default" || strings.HasPrefix(a, "--default="):
			case strings.HasPrefix(a, "-"):
				return denied("git config %s is not allowed", a)
			default:
				names = append(names, a)
			}
		}
		if reading {
			return nil
		}
		if len(names) == 0 {
			return denied("git config: name a key")
		}
		if !slices.Contains(rule.AllowedConfig, strings.ToLower(names[0])) {
			return denied("git config may set only %s (not %q)", strings.Join(rule.AllowedConfig, ", "), names[0])
		}
	}
	return nil
}

// networkRepoArg reports whether a is an https:// or http:// URL of a
// host, which the network relay can serve (no remote helper syntax, no
// other scheme).
func networkRepoArg(a string) bool {
	low := strings.ToLower(a)
	if !strings.HasPrefix(low, "https://") && !strings.HasPrefix(low, "http://") {
		return false
	}
	if strings.ContainsAny(a, " \t\r\n\x00") {
		return false
	}
	u, err := url.Parse(a)
	return err == nil && u.Host != "" && u.Opaque == ""
}

// localRepoArg reports whether a repository argument (a path, a file://
// URL or a remote's name) is local and inside the jail.
func localRepoArg(jailReal, dirReal, guest, a string) bool {
	if u, ok := strings.CutPrefix(a, "file://"); ok {
		a = u
		if a == "" || a[0] != '/' {
			return false
		}
	} else if strings.Contains(a, "://") || strings.Contains(a, "::") {
		return false
	} else if i := strings.IndexByte(a, ':'); i >= 0 && !strings.Contains(a[:i], "/") {
		return false // host:path, an ssh address
	}
	h, ok := hostPath(jailReal, dirReal, guest, a)
	return ok && within(jailReal, h)
}

// checkArgs applies rule to args (argv without argv[0]) and returns the
// subcommand, if the rule has any.
func checkArgs(rule Rule, args []string) (string, error) {
	sub := ""
	args, err := allowedConfigArgs(rule, args)
	if err != nil {
		return "", err
	}
	if len(rule.Subcommands) > 0 {
		for _, a := range args {
			if a == "--" {
				break
			}
			if !strings.HasPrefix(a, "-") {
				sub = a
				break
			}
		}
		if sub == "" {
			return "", denied("no subcommand (allowed: %s)", strings.Join(rule.Subcommands, ", "))
		}
		ok := false
		for _, s := range rule.Subcommands {
			ok = ok || s == sub
		}
		if !ok {
			return "", denied("subcommand %q is not allowed (allowed: %s)", sub, strings.Join(rule.Subcommands, ", "))
		}
	}
	deny := append(append([]string(nil), rule.DeniedFlags...), rule.SubcommandDeniedFlags[sub]...)
	global := append(append([]string(nil), deny...), rule.GlobalFlags...)
	seenSub := sub == ""
	for _, a := range args {
		if !seenSub && a == sub {
			seenSub = true
			continue
		}
		if strings.ContainsRune(a, 0) {
			return "", denied("argument contains a NUL byte")
		}
		d := deny
		if !seenSub {
			d = global
		}
		if f := matchDenied(a, d, rule.ValueShorts); f != "" {
			return "", denied("flag %s is not allowed (argument %q)", f, a)
		}
		if p := matchPrefix(a, rule.DeniedArgPrefixes, sub == "config"); p != "" {
			return "", denied("argument %q injects %s* configuration", a, p)
		}
	}
	return sub, nil
}

// allowedConfigArgs returns args without the "-c key=value" options
// (before the subcommand) whose key is in rule.AllowedConfig; any other
// "-c" stays for the denied-flag check.
func allowedConfigArgs(rule Rule, args []string) ([]string, error) {
	if len(rule.AllowedConfig) == 0 {
		return args, nil
	}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return append(out, args[i:]...), nil // the subcommand
		}
		kv, ok := strings.CutPrefix(a, "-c")
		if !ok {
			out = append(out, a)
			continue
		}
		if kv == "" {
			if i+1 == len(args) {
				return nil, denied("-c needs key=value")
			}
			i++
			kv = args[i]
		}
		key, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(rule.AllowedConfig, strings.ToLower(key)) {
			return nil, denied("-c %s is not allowed (only %s)", kv, strings.Join(rule.AllowedConfig, ", "))
		}
	}
	return out, nil
}

// argsSetConfig reports whether argv (without argv[0]) sets key with -c.
func argsSetConfig(args []string, key string) bool {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			return false
		}
		kv, ok := strings.CutPrefix(a, "-c")
		if ok && kv == "" && i+1 < len(args) {
			kv = args[i+1]
		}
		if k, _, _ := strings.Cut(kv, "="); ok && strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// matchDenied returns the denied flag that arg uses, or "".
func matchDenied(arg string, deny []string, valueShorts string) string {
	switch {
	case strings.HasPrefix(arg, "--") && len(arg) > 2:
		name, _, _ := strings.Cut(arg, "=")
		for _, d := range deny {
			// Exact, or an abbreviation git would expand to d.
			if strings.HasPrefix(d, "--") && strings.HasPrefix(d, name) && len(name) >= 3 {
				return d
			}
		}
	case strings.HasPrefix(arg, "-") && len(arg) > 1 && arg[1] != '-':
		for _, c := range arg[1:] {
			for _, d := range deny {
				if len(d) == 2 && d[0] == '-' && rune(d[1]) == c {
					return d
				}
			}
			if strings.ContainsRune(valueShorts, c) {
				break // the rest of the cluster is this option's value
			}
		}
	}
	return ""
}

// matchPrefix returns the config-key prefix that arg injects, or "". Only
// key=value arguments are looked at, unless all is set.
func matchPrefix(arg string, prefixes []string, all bool) string {
	low := strings.ToLower(arg)
	if !all && !strings.Contains(low, "=") {
		return ""
	}
	cands := []string{strings.TrimSpace(strings.TrimLeft(low, "-"))}
	for i := 0; i < len(low); i++ {
		if low[i] == '=' {
			cands = append(cands, strings.TrimSpace(low[i+1:]))
		}
	}
	if strings.HasPrefix(low, "-c") {
		cands = append(cands, strings.TrimSpace(low[2:]))
	}
	for _, c := range cands {
		for _, p := range prefixes {
			if strings.HasPrefix(c, p) {
				return p
			}
		}
	}
	return ""
}
