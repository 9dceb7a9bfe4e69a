package native

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gitPathOption is an option of git (or of one of its allowlisted
// subcommands) that names a file or directory.
type gitPathOption struct {
	sub   string // "" for git's own options, given before "status"
	short byte   // 0 if none
	long  string // without "--"; "" if none
}

// gitPathOptions lists the options that take a path, from the git 2.39
// manual pages (git-man: git(1) and git-<sub>(1) of every subcommand in
// GitSubcommands; placeholders <file>, <path>, <dir>, <root>,
// <orderfile>, <revs-file>, <config-file>, <template-directory>,
// <git-dir>, <repository>, <uri>, <path-pattern>).
var gitPathOptions = []gitPathOption{
	{"", 'C', ""}, {"", 0, "git-dir"}, {"", 0, "work-tree"}, {"", 0, "exec-path"},
	{"", 0, "namespace"}, {"", 0, "super-prefix"},
	{"add", 0, "pathspec-from-file"},
	{"am", 0, "directory"}, {"am", 0, "exclude"}, {"am", 0, "include"},
	{"apply", 0, "build-fake-ancestor"}, {"apply", 0, "directory"}, {"apply", 0, "exclude"}, {"apply", 0, "include"},
	{"blame", 'S', ""}, {"blame", 0, "contents"}, {"blame", 0, "ignore-revs-file"},
	{"cat-file", 0, "path"},
	{"checkout", 0, "pathspec-from-file"},
	{"clone", 0, "template"}, {"clone", 0, "separate-git-dir"}, {"clone", 0, "bundle-uri"}, {"clone", 0, "reference"},
	{"commit", 'F', "file"}, {"commit", 't', "template"}, {"commit", 0, "pathspec-from-file"},
	{"config", 'f', "file"},
	{"diff", 0, "output"}, {"diff", 'O', ""}, {"diff", 0, "skip-to"}, {"diff", 0, "rotate-to"}, {"diff", 0, "relative"},
	{"fetch", 0, "submodule-prefix"},
	{"format-patch", 'o', "output-directory"}, {"format-patch", 0, "signature-file"}, {"format-patch", 0, "output"},
	{"format-patch", 'O', ""}, {"format-patch", 0, "skip-to"}, {"format-patch", 0, "rotate-to"}, {"format-patch", 0, "relative"},
	{"grep", 'f', ""},
	{"init", 0, "template"}, {"init", 0, "separate-git-dir"},
	{"log", 0, "output"}, {"log", 'O', ""}, {"log", 0, "skip-to"}, {"log", 0, "rotate-to"}, {"log", 0, "relative"},
	{"ls-files", 'X', "exclude-from"}, {"ls-files", 0, "exclude-per-directory"},
	{"merge", 'F', "file"},
	{"push", 0, "repo"},
	{"reset", 0, "pathspec-from-file"},
	{"restore", 0, "pathspec-from-file"},
	{"rev-parse", 0, "git-path"}, {"rev-parse", 0, "resolve-git-dir"},
	{"rm", 0, "pathspec-from-file"},
	{"show", 0, "output"}, {"show", 'O', ""}, {"show", 0, "skip-to"}, {"show", 0, "rotate-to"}, {"show", 0, "relative"},
	{"stash", 0, "pathspec-from-file"},
	{"tag", 'F', "file"},
}

// forms returns every way git accepts o with the value v: long with a
// separate value, with "=", abbreviated with "="; short with a separate
// value, attached, and at the end of a cluster.
func (o gitPathOption) forms(v string) [][]string {
	var fs [][]string
	if o.long != "" {
		l := "--" + o.long
		fs = append(fs, []string{l, v}, []string{l + "=" + v}, []string{l[:len(l)-1] + "=" + v})
	}
	if o.short != 0 {
		s := "-" + string(o.short)
		fs = append(fs, []string{s, v}, []string{s + v}, []string{"-q" + s[1:] + v})
	}
	for i, f := range fs {
		if o.sub == "" {
			fs[i] = append(f, "status")
		} else {
			fs[i] = append([]string{o.sub}, f...)
		}
	}
	return fs
}

// Every path-taking option of git's manual, in every form git parses,
// with a canary outside the mount (absolute, and relative through ".."),
// is refused before git runs, jailed and unjailed.
func TestGitPathOptionsAllForms(t *testing.T) {
	top := realTempDir(t)
	jail := filepath.Join(top, "mount")
	canary := filepath.Join(top, "canary")
	os.Mkdir(jail, 0o755)
	os.WriteFile(canary, []byte("CANARY-outside-the-mount\n"), 0o644)
	// A directory named "-" lets "-/../../canary" resolve.
	os.Mkdir(filepath.Join(jail, "-"), 0o755)
	for _, cfg := range modes(t) {
		r := newRunner(t, cfg)
		n := 0
		for _, o := range gitPathOptions {
			for _, v := range []string{canary, "../canary", "-/../../canary"} {
				for _, args := range o.forms(v) {
					n++
					res, err := r.Run(context.Background(), Request{Argv: append([]string{"git"}, args...), Jail: jail})
					if !errors.Is(err, ErrDenied) || res.ExitCode != 126 {
						t.Errorf("%s: git %q: allowed (err %v, exit %d, out %q)", modeName(cfg), args, err, res.ExitCode, res.Stdout)
					}
				}
			}
		}
		t.Logf("%s: %d forms refused", modeName(cfg), n)
	}
}

// The attack of the issue, end to end: "git tag -F<file>" must not put a
// file outside the mount into a tag message; the same file inside the
// mount, in the same forms, works.
func TestGitTagFileAttachedForms(t *testing.T) {
	top := realTempDir(t)
	jail := filepath.Join(top, "mount")
	canary := filepath.Join(top, "canary")
	os.Mkdir(jail, 0o755)
	os.WriteFile(canary, []byte("CANARY-outside-the-mount\n"), 0o644)
	for _, cfg := range modes(t) {
		r := newRunner(t, cfg)
		os.RemoveAll(filepath.Join(jail, ".git"))
		gitRun(t, r, jail, "", "init", "-q")
		gitRun(t, r, jail, "", "commit", "-q", "--allow-empty", "-m", "one")
		for i, args := range [][]string{
			{"tag", "-F" + canary, "t0"},
			{"tag", "--file=" + canary, "t1"},
			{"tag", "--fil=" + canary, "t2"},
			{"tag", "-aF" + canary, "t3"},
			{"tag", "-F../canary", "t4"},
			{"format-patch", "-1", "--signature-file=" + canary, "--stdout"},
		} {
			res, err := r.Run(context.Background(), Request{Argv: append([]string{"git"}, args...), Jail: jail})
			if !errors.Is(err, ErrJail) || res.ExitCode != 126 {
				t.Errorf("%s %d: git %q: err %v exit %d", modeName(cfg), i, args, err, res.ExitCode)
			}
			if !strings.Contains(res.Reason, "outside the jail") {
				t.Errorf("%s: git %q: reason %q", modeName(cfg), args, res.Reason)
			}
		}
		res := gitRun(t, r, jail, "", "show-ref", "--tags")
		if len(res.Stdout) != 0 {
			t.Fatalf("%s: tags were made: %q", modeName(cfg), res.Stdout)
		}
		// Inside the mount the same forms work.
		os.WriteFile(filepath.Join(jail, "msg"), []byte("inside\n"), 0o644)
		for i, args := range [][]string{{"tag", "-Fmsg", "in0"}, {"tag", "--file=msg", "in1"}, {"tag", "-aFmsg", "in2"}, {"tag", "-F", "msg", "in3"}} {
			if res := gitRun(t, r, jail, "", args...); res.ExitCode != 0 {
				t.Errorf("%s %d: git %q: %s", modeName(cfg), i, args, res.Stderr)
			}
		}
		res = gitRun(t, r, jail, "", "cat-file", "-p", "in0")
		if !strings.HasSuffix(string(res.Stdout), "\n\ninside\n") {
			t.Errorf("%s: tag in0 message %q", modeName(cfg), res.Stdout)
		}
	}
}

func TestPathCandidates(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want []string
	}{
		{"README", []string{"README"}},
		{"--file=/x", []string{"--file=/x", "/x"}},
		{"--format=%H=%s", []string{"--format=%H=%s", "%H=%s"}},
		{"-F/x", []string{"-F/x", "/x"}},
		{"-aF/x", []string{"-aF/x", "F/x", "/x"}},
		{"-F=/x", []string{"-F=/x", "=/x"}},
		{"-F./x", []string{"-F./x", "./x"}},
		{"-", []string{"-"}},
	} {
		got := pathCandidates(tc.arg)
		if strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") {
			t.Errorf("pathCandidates(%q) = %q, want %q", tc.arg, got, tc.want)
		}
	}
}
