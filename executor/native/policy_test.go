package native

import (
	"errors"
	"testing"
)

func TestGitArgs(t *testing.T) {
	rule := GitRule()
	tests := []struct {
		args []string
		ok   bool
	}{
		{[]string{"status"}, true},
		{[]string{"status", "--porcelain", "-uno"}, true},
		{[]string{"status", "-u"}, true},
		{[]string{"--no-pager", "log", "--oneline", "-n", "3"}, true},
		{[]string{"log", "-p", "--stat", "--", "core.go"}, true},
		{[]string{"log", "-Sneedle"}, true},
		{[]string{"diff", "--cached", "--no-ext-diff"}, true},
		{[]string{"diff", "--output-indicator-new=+"}, true},
		{[]string{"commit", "-m", "fix core.c"}, true},
		{[]string{"commit", "-am", "msg"}, true},
		{[]string{"commit", "-mcfoo"}, true},
		{[]string{"add", "-u"}, true},
		{[]string{"add", "."}, true},
		{[]string{"branch", "--list"}, true},
		{[]string{"rev-parse", "HEAD"}, true},
		{[]string{"ls-files", "--exclude-standard", "-o"}, true},
		{[]string{"show", "HEAD:README"}, true},
		// denied
		{nil, false},
		{[]string{"--version"}, false},
		{[]string{"push"}, false},
		{[]string{"config", "core.fsmonitor", "x"}, false},
		{[]string{"clone", "x"}, false},
		{[]string{"-c", "core.pager=sh", "status"}, false},
		{[]string{"-ccore.pager=sh", "status"}, false},
		{[]string{"status", "-c", "x=y"}, false},
		{[]string{"-C", "/", "status"}, false},
		{[]string{"-C/", "status"}, false},
		{[]string{"--git-dir=/etc", "status"}, false},
		{[]string{"--git-dir", "/etc", "status"}, false},
		{[]string{"--git-d=/etc", "status"}, false},
		{[]string{"--work-tree=/", "status"}, false},
		{[]string{"--exec-path=/tmp", "status"}, false},
		{[]string{"--config-env=core.pager=X", "status"}, false},
		{[]string{"--namespace=x", "log"}, false},
		{[]string{"log", "--output=/tmp/x"}, false},
		{[]string{"log", "--outp=/tmp/x"}, false},
		{[]string{"diff", "--no-index", "/etc/passwd", "/dev/null"}, false},
		{[]string{"diff", "--ext-diff"}, false},
		{[]string{"status", "--help"}, false},
		{[]string{"log", "--show-signature"}, false},
		{[]string{"log", "-O/etc/order"}, false},
		{[]string{"commit", "-F", "/etc/passwd"}, false},
		{[]string{"commit", "-aF/etc/passwd"}, false},
		{[]string{"commit", "--file=/etc/passwd"}, false},
		{[]string{"commit", "-t", "/etc/passwd"}, false},
		{[]string{"commit", "-S"}, false},
		{[]string{"commit", "--template=/etc/passwd"}, false},
		{[]string{"add", "--pathspec-from-file=/etc/passwd"}, false},
		{[]string{"rev-parse", "--resolve-git-dir", "/x"}, false},
		{[]string{"log", "--format=x", "--upload-pack=evil"}, false},
		{[]string{"status", "--x=core.fsmonitor=evil"}, false},
		{[]string{"status", "ALIAS.st=!sh"}, false},
		{[]string{"status", "a\x00b"}, false},
	}
	for _, tc := range tests {
		_, err := checkArgs(rule, tc.args)
		if tc.ok && err != nil {
			t.Errorf("git %q: unexpected denial: %v", tc.args, err)
		}
		if !tc.ok && !errors.Is(err, ErrDenied) {
			t.Errorf("git %q: allowed, want denied", tc.args)
		}
	}
}

func TestNetworkSubcommandsDenyUploadPack(t *testing.T) {
	rule := GitRule()
	rule.Subcommands = append(rule.Subcommands, "fetch", "clone")
	for _, args := range [][]string{{"fetch", "-u", "evil"}, {"clone", "-uevil", "x"}, {"fetch", "--upload-pack=evil"}} {
		if _, err := checkArgs(rule, args); !errors.Is(err, ErrDenied) {
			t.Errorf("%q allowed", args)
		}
	}
	if _, err := checkArgs(rule, []string{"fetch", "origin"}); err != nil {
		t.Errorf("fetch origin: %v", err)
	}
}

func TestRefusedConfigKeys(t *testing.T) {
	for key, want := range map[string]bool{
		"core.fsmonitor":               false, // overridden on the command line
		"core.hookspath":               false,
		"core.gitproxy":                true,
		"core.worktree":                true,
		"core.repositoryformatversion": false,
		"core.bare":                    false,
		"filter.lfs.clean":             true,
		"diff.external":                true,
		"diff.pdf.textconv":            true,
		"diff.renames":                 false,
		"include.path":                 true,
		"includeif.gitdir:/x.path":     true,
		"merge.ours.driver":            true,
		"user.name":                    false,
		"remote.origin.url":            false,
		"remote.origin.uploadpack":     true,
		"alias.st":                     false,
	} {
		if got := refusedKey(key); got != want {
			t.Errorf("refusedKey(%q) = %v, want %v", key, got, want)
		}
	}
}
