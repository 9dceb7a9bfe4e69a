package native

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// configCases are config files in the spellings git accepts, each with
// the key the lane must refuse ("" when none).
var configCases = []struct {
	name, text, refused string
}{
	{"plain", "[core]\n\tbare = false\n[user]\n\tname = A U Thor\n", ""},
	{"trailer cmd", "[trailer \"x\"]\n\tcmd = touch /tmp/pwned ;\n", "trailer.x.cmd"},
	{"trailer command", "[trailer \"sign\"]\n\tkey = Signed-off-by\n\tcommand = id\n", "trailer.sign.command"},
	{"bom hides a section", "\xef\xbb\xbf[filter \"x\"]\n\tclean = touch pwned\n", "filter.x.clean"},
	{"bom then diff.external", "\xef\xbb\xbf[diff]\n\texternal = /bin/sh\n", "diff.external"},
	{"case of section and name", "[DIFF]\n\tExTeRnAl = sh\n", "diff.external"},
	{"deprecated subsection spelling", "[Filter.X]\n\tSmudge = sh\n", "filter.x.smudge"},
	{"two headers and a key on one line", "[core] [merge \"m\"] driver = sh %O\n", "merge.m.driver"},
	{"crlf", "[core]\r\n\tbare = false\r\n[include]\r\n\tpath = /etc/x\r\n", "include.path"},
	{"includeIf", "[includeIf \"gitdir:/\"]\n\tpath = /x\n", "includeif.gitdir:/.path"},
	{"commit.template", "[commit]\n\ttemplate = /etc/shadow\n", "commit.template"},
	{"hook section", "[hook \"h\"]\n\tcommand = id\n\tevent = pre-commit\n", "hook.h.command"},
	{"alias", "[alias]\n\tst = !sh -c id\n", "alias.st"},
	{"remote vcs", "[remote \"o\"]\n\tvcs = ext\n", "remote.o.vcs"},
	{"comment is not a key", "[core] ; [filter \"x\"] clean = sh\n\tbare = false\n# [diff] external = sh\n", ""},
	{"value continues on the next line", "[user]\n\tname = a \\\n[diff] \\\n\temail = x\n", ""},
	{"quoted value with a semicolon", "[user]\n\tname = \"a;b\" # c\n", ""},
	{"subsection escapes", "[remote \"a\\\"b\"]\n\turl = ../x\n[remote \"a\\\\b\"]\n\turl = ../y\n", ""},
	{"boolean key", "[core]\n\tbare\n", ""},
	{"fsmonitor is overridden", "[core]\n\tfsmonitor = sh\n\thooksPath = .husky\n", ""},
	{"credential helper", "[credential \"https://x\"]\n\thelper = !sh\n", "credential.https://x.helper"},
}

// TestGitConfigParse checks the lane's parse of each case against git's
// own (git config --list on this machine) and its decision.
func TestGitConfigParse(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	for _, tc := range configCases {
		t.Run(tc.name, func(t *testing.T) {
			entries, err := parseGitConfig([]byte(tc.text))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			var got []string
			refused := ""
			for _, e := range entries {
				kv := e.Key()
				if !e.NoValue {
					kv += "=" + e.Value
				}
				got = append(got, kv)
				if refused == "" && refusedKey(e) {
					refused = e.Key()
				}
			}
			if refused != tc.refused {
				t.Errorf("refused %q, want %q", refused, tc.refused)
			}
			f := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.WriteFile(f, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(git, "config", "--file", f, "--list")
			cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + dir}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("git config --list: %v\n%s", err, out)
			}
			want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if string(out) == "" {
				want = nil
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("parse differs from git's:\nours:\n%s\ngit's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestGitConfigErrors: what git refuses to parse, the lane refuses too.
func TestGitConfigErrors(t *testing.T) {
	git, _ := exec.LookPath("git")
	dir := t.TempDir()
	for _, text := range []string{
		"[core\n", "[]\nx = 1\n", "[core \"x]\n", "[core]\n\t1x = 2\n",
		"[core]\n\tname = \"open\n", "[core]\n\tname = a\\q\n", "[core]\n\tname # c\n",
		"[core x]\n", "[a b\"c\"]\n", "[sec\"x\"]\n",
	} {
		if _, err := parseGitConfig([]byte(text)); err == nil {
			t.Errorf("%q parsed", text)
		}
		if git != "" {
			f := filepath.Join(dir, "c")
			os.WriteFile(f, []byte(text), 0o644)
			cmd := exec.Command(git, "config", "--file", f, "--list")
			cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + dir}
			if out, err := cmd.CombinedOutput(); err == nil {
				t.Errorf("%q: git accepts it (%s) but the lane refuses", text, out)
			}
		}
	}
}

func FuzzGitConfig(f *testing.F) {
	for _, tc := range configCases {
		f.Add([]byte(tc.text))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := parseGitConfig(b)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.Name == "" {
				t.Fatalf("entry without section or name: %+v", e)
			}
			refusedKey(e)
		}
	})
}
