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
		{[]string{"push"}, true},
		{[]string{"clone", "x"}, true},
		{[]string{"-c", "user.name=A", "-cuser.email=a@b", "commit", "-m", "x"}, true},
		{[]string{"rebase", "main"}, true},
		{[]string{"config", "user.name", "A"}, true},
		{[]string{"gc"}, false},
		{[]string{"remote", "add", "o", "x"}, false},
		{[]string{"submodule", "update"}, false},
		{[]string{"config", "core.fsmonitor", "x"}, false},
		{[]string{"config", "--global", "user.name", "x"}, false},
		{[]string{"config", "-f", "/etc/x", "user.name", "x"}, false},
		{[]string{"rebase", "-i", "main"}, false},
		{[]string{"rebase", "--exec=sh", "main"}, false},
		{[]string{"grep", "-O", "x"}, false},
		{[]string{"clone", "--recurse-submodules", "a", "b"}, false},
		{[]string{"clone", "--reference=/x", "a", "b"}, false},
		{[]string{"clone", "--config=core.x=y", "a", "b"}, false},
		{[]string{"init", "--separate-git-dir=/tmp/x"}, false},
		{[]string{"apply", "--unsafe-paths", "p"}, false},
		{[]string{"-c", "user.name", "status"}, true},
		{[]string{"-c", "core.pager=sh", "status"}, false},
		{[]string{"-c"}, false},
		{[]string{"-c", "user.name=x", "-c", "core.pager=sh", "status"}, false},
		{[]string{"-ccore.pager=sh", "status"}, false},
		{[]string{"status", "-c", "x=y"}, true}, // a subcommand option, not git -c
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

func TestGitRepoArgs(t *testing.T) {
	rule := GitRule()
	jail := "/srv/jail"
	for _, tc := range []struct {
		guest string
		args  []string
		ok    bool
	}{
		{"", []string{"clone", "a", "b"}, true},
		{"", []string{"clone", "/srv/jail/a", "b"}, true},
		{"", []string{"clone", "file:///srv/jail/a", "b"}, true},
		{"", []string{"fetch", "origin"}, true},
		{"", []string{"push", "../jail/a", "main"}, true},
		{"/home/user/repo", []string{"clone", "/home/user/repo/a", "b"}, true},
		{"/home/user/repo", []string{"clone", "/srv/jail/a", "b"}, false},
		{"", []string{"clone", "https://example.com/x", "b"}, false},
		{"", []string{"clone", "file:///etc", "b"}, false},
		{"", []string{"clone", "file://host/srv/jail", "b"}, false},
		{"", []string{"clone", "git@example.com:x", "b"}, false},
		{"", []string{"clone", "ext::sh -c id", "b"}, false},
		{"", []string{"fetch", "/etc"}, false},
		{"", []string{"pull", "ssh://x/y"}, false},
		{"", []string{"config", "--list"}, true},
		{"", []string{"config", "--get", "remote.origin.url"}, true},
		{"", []string{"config", "User.Email", "a@b"}, true},
		{"", []string{"config", "user.signingkey", "x"}, false},
		{"", []string{"config", "--unset", "core.bare"}, false},
		{"", []string{"config"}, false},
	} {
		err := checkGitArgs(rule, tc.args[0], tc.args, jail, jail, tc.guest, false)
		if tc.ok != (err == nil) {
			t.Errorf("guest %q, git %q: %v", tc.guest, tc.args, err)
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
