package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/executor/native"
	"github.com/wasmbox/wasmbox/vfs"
)

// nativeSandbox mounts host directory repo at /home/user/repo (mode) with
// git on the native lane: in the OS jail where it works here, else
// unjailed (a failure when WASMBOX_REQUIRE_JAIL is set, as in CI).
func nativeSandbox(t *testing.T, repo string, mode string) *Sandbox {
	t.Helper()
	opts := []Option{WithNative("git"), WithMountSpec(repo + ":/home/user/repo:" + mode), WithWorkdir("/home/user/repo")}
	sb, err := New(context.Background(), opts...)
	if err != nil {
		if !strings.Contains(err.Error(), native.ErrNoJail.Error()) {
			t.Fatal(err)
		}
		if os.Getenv("WASMBOX_REQUIRE_JAIL") != "" {
			t.Fatalf("WASMBOX_REQUIRE_JAIL is set: %v", err)
		}
		t.Logf("running unjailed: %v", err)
		if sb, err = New(context.Background(), append(opts, WithNativeUnjailed())...); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

func jailed(sb *Sandbox) bool { return sb.cfg.native.Runner.Jailed() }

// hostRepo makes a git repository with one commit under a temp dir and a
// canary file beside it (outside the mount). It uses the host's git
// directly: test setup, as a user's checkout would be.
func hostRepo(t *testing.T) (repo, canary string) {
	t.Helper()
	root := t.TempDir()
	repo = filepath.Join(root, "repo")
	canary = filepath.Join(root, "canary")
	if err := os.WriteFile(canary, []byte("canary: host secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "README"), []byte("hello\n"), 0o644)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "README"}, {"-c", "user.name=Host", "-c", "user.email=host@example.com", "commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + root}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("host git: %v %s", err, out)
		}
	}
	return repo, canary
}

func appendHost(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(text)
	f.Close()
}

func checkCanary(t *testing.T, canary string) {
	t.Helper()
	b, err := os.ReadFile(canary)
	if err != nil || string(b) != "canary: host secret\n" {
		t.Fatalf("the canary outside the mount changed: %v %q", err, b)
	}
	pwned, _ := filepath.Glob(filepath.Join(filepath.Dir(canary), "pwned*"))
	if len(pwned) > 0 {
		t.Fatalf("a command ran on the host: %v", pwned)
	}
}

// The escapes of the native git lane found by the red team, each through
// the sandbox as an agent would try it.
func TestNativeGitEscapes(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, repo, canary string) // on the host, as a planted repository
		// script runs in the sandbox; it must not reach the host.
		script string
		// jailOnly marks an escape only the OS jail stops.
		jailOnly bool
		// check inspects the result.
		check func(t *testing.T, res Result)
	}{
		{
			name:   "trailer cmd written by the guest",
			script: `printf '[trailer "x"]\n\tcmd = touch CANARY_DIR/pwned ;\n' >> .git/config; git commit --allow-empty --trailer "x: y" -m m`,
			check: func(t *testing.T, res Result) {
				if !strings.Contains(res.Stderr, "Read-only file system") {
					t.Errorf("the guest wrote .git/config: %q", res.Stderr)
				}
			},
		},
		{
			name: "trailer cmd planted in the repository",
			setup: func(t *testing.T, repo, canary string) {
				appendHost(t, filepath.Join(repo, ".git", "config"), "[trailer \"x\"]\n\tcmd = touch "+filepath.Dir(canary)+"/pwned ;\n")
			},
			script: `git commit --allow-empty --trailer "x: y" -m m`,
			check: func(t *testing.T, res Result) {
				if res.ExitCode != 126 || !strings.Contains(res.Stderr, "trailer.x.cmd") {
					t.Errorf("exit %d %q", res.ExitCode, res.Stderr)
				}
			},
		},
		{
			name: "a byte order mark hides a filter",
			setup: func(t *testing.T, repo, canary string) {
				cfg := filepath.Join(repo, ".git", "config")
				b, _ := os.ReadFile(cfg)
				os.WriteFile(cfg, append([]byte("\xef\xbb\xbf[filter \"x\"]\n\tclean = touch "+filepath.Dir(canary)+"/pwned\n"), b...), 0o644)
				appendHost(t, filepath.Join(repo, ".gitattributes"), "* filter=x\n")
			},
			script: `echo new > n.txt; git add n.txt`,
			check: func(t *testing.T, res Result) {
				if res.ExitCode != 126 || !strings.Contains(res.Stderr, "filter.x.clean") {
					t.Errorf("exit %d %q", res.ExitCode, res.Stderr)
				}
			},
		},
		{
			name: "bom then diff.external",
			setup: func(t *testing.T, repo, canary string) {
				os.WriteFile(filepath.Join(repo, ".git", "config"), []byte("\xef\xbb\xbf[core]\n\trepositoryformatversion = 0\n[Diff]\n\tExternal = touch "+filepath.Dir(canary)+"/pwned\n"), 0o644)
			},
			script: `echo changed >> README; git diff`,
			check: func(t *testing.T, res Result) {
				if res.ExitCode != 126 {
					t.Errorf("exit %d %q", res.ExitCode, res.Stderr)
				}
			},
		},
		{
			name:   "guest symlink COMMIT_EDITMSG to a host file",
			script: `ln -sf CANARY .git/COMMIT_EDITMSG; git commit -q --allow-empty -m TEXT`,
			check: func(t *testing.T, res Result) {
				if !strings.Contains(res.Stderr, "Read-only file system") {
					t.Errorf("the guest made a link in .git: %q", res.Stderr)
				}
			},
		},
		{
			name: "planted symlink COMMIT_EDITMSG to a host file",
			setup: func(t *testing.T, repo, canary string) {
				os.Symlink(canary, filepath.Join(repo, ".git", "COMMIT_EDITMSG"))
			},
			script:   `git commit -q --allow-empty -m TEXT; echo exit=$?`,
			jailOnly: true,
		},
		{
			name:   "guest symlink out of a rw mount",
			script: `ln -s CANARY_DIR out; ln -s /etc etc; ls -l out etc`,
			check: func(t *testing.T, res Result) {
				if strings.Count(res.Stderr, "Operation not permitted") != 2 {
					t.Errorf("links out of the mount: %q %q", res.Stdout, res.Stderr)
				}
			},
		},
		{
			name: "commit.template reads a host file",
			setup: func(t *testing.T, repo, canary string) {
				appendHost(t, filepath.Join(repo, ".git", "config"), "[commit]\n\ttemplate = "+canary+"\n")
			},
			script: `git commit -q --allow-empty; git log -1 --format=%B`,
			check: func(t *testing.T, res Result) {
				if strings.Contains(res.Stdout, "host secret") {
					t.Errorf("the template was read: %q", res.Stdout)
				}
			},
		},
		{
			name: "alternates reach another host repository",
			setup: func(t *testing.T, repo, canary string) {
				other := filepath.Join(filepath.Dir(canary), "other")
				exec.Command("git", "init", "-q", other).Run()
				appendHost(t, filepath.Join(repo, ".git", "objects", "info", "alternates"), other+"/.git/objects\n")
			},
			script: `git log --oneline`,
			check: func(t *testing.T, res Result) {
				if res.ExitCode != 126 || !strings.Contains(res.Stderr, "alternates") {
					t.Errorf("exit %d %q", res.ExitCode, res.Stderr)
				}
			},
		},
		{
			name:   "remote outside the mount",
			script: `git fetch CANARY_DIR; git clone file://CANARY_DIR x; git clone https://example.com/x y`,
			check: func(t *testing.T, res Result) {
				if strings.Count(res.Stderr, "git: ") != 3 || res.ExitCode != 126 {
					t.Errorf("%q", res.Stderr)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo, canary := hostRepo(t)
			if tc.setup != nil {
				tc.setup(t, repo, canary)
			}
			sb := nativeSandbox(t, repo, "rw")
			if tc.jailOnly && !jailed(sb) {
				t.Skip("only the OS jail stops this one")
			}
			script := strings.NewReplacer("CANARY_DIR", filepath.Dir(canary), "CANARY", canary).Replace(tc.script)
			res := run(t, sb, script)
			checkCanary(t, canary)
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

// treeHash hashes every file, link and mode under dir.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		line := p + " " + fi.Mode().String()
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// A symlink committed by the guest (as a file the VFS refuses to make a
// link) cannot become a host symlink through git checkout.
func TestNativeGitCheckoutMakesNoSymlink(t *testing.T) {
	repo, canary := hostRepo(t)
	// A tree with a symlink to the canary, as a hostile commit would hold.
	link := filepath.Join(repo, "evil")
	os.Symlink(canary, link)
	cmd := exec.Command("git", "-c", "user.name=H", "-c", "user.email=h@x", "commit", "-q", "-m", "evil", "--", "evil")
	cmd.Dir = repo
	exec.Command("git", "-C", repo, "add", "evil").Run()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	os.Remove(link)
	sb := nativeSandbox(t, repo, "rw")
	res := run(t, sb, `git checkout -- evil; echo s=$?; cat evil`)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("checkout made a host symlink (or nothing): %v %v %q %q", fi, err, res.Stdout, res.Stderr)
	}
	if !strings.Contains(res.Stdout, "s=0\n"+canary) {
		t.Fatalf("%q %q", res.Stdout, res.Stderr)
	}
	checkCanary(t, canary)
}

// Native git through a read-only mount leaves the host repository
// byte-identical: index, refs, objects.
func TestNativeGitReadOnlyMount(t *testing.T) {
	repo, canary := hostRepo(t)
	os.WriteFile(filepath.Join(repo, "u.txt"), []byte("untracked\n"), 0o644)
	before := treeHash(t, repo)
	sb := nativeSandbox(t, repo, "ro")
	res := run(t, sb, `git add u.txt; echo add=$?; git branch evil; echo branch=$?; git commit -qm x; echo commit=$?; git tag t; echo tag=$?; git status --porcelain; git log --format=%s`)
	for _, want := range []string{"add=1", "branch=1", "commit=1", "tag=1"} {
		if !strings.Contains(res.Stdout, want) && !strings.Contains(res.Stdout, strings.Replace(want, "=1", "=126", 1)) {
			t.Errorf("want %s: %q %q", want, res.Stdout, res.Stderr)
		}
	}
	if !strings.Contains(res.Stdout, "?? u.txt\ninit\n") {
		t.Errorf("reads through a read-only mount: %q %q", res.Stdout, res.Stderr)
	}
	if after := treeHash(t, repo); after != before {
		t.Fatal("the host repository changed through a read-only mount")
	}
	checkCanary(t, canary)
}

// git commits with a sandbox identity by default, and with the agent's
// when it gives one.
func TestNativeGitIdentity(t *testing.T) {
	repo, _ := hostRepo(t)
	sb := nativeSandbox(t, repo, "rw")
	res := run(t, sb, `
git commit -q --allow-empty -m default && git log -1 --format='%an <%ae>|%cn <%ce>'
GIT_AUTHOR_NAME=Env GIT_AUTHOR_EMAIL=env@example.com git commit -q --allow-empty -m env && git log -1 --format='%an <%ae>'
export GIT_COMMITTER_NAME=Exported; git commit -q --allow-empty -m exported && git log -1 --format='%cn'; unset GIT_COMMITTER_NAME
git -c user.name=Flag -c user.email=flag@example.com commit -q --allow-empty -m flag && git log -1 --format='%an <%ae>'
git config user.name Configured && git config user.email conf@example.com && git commit -q --allow-empty -m conf && git log -1 --format='%an <%ae>'
git config user.name
`)
	want := "wasmbox sandbox <sandbox@wasmbox.invalid>|wasmbox sandbox <sandbox@wasmbox.invalid>\nEnv <env@example.com>\nExported\nFlag <flag@example.com>\nConfigured <conf@example.com>\nConfigured\n"
	if res.Stdout != want || res.ExitCode != 0 {
		t.Fatalf("got %q (exit %d, %q), want %q", res.Stdout, res.ExitCode, res.Stderr, want)
	}
	if strings.Contains(res.Stderr, "root@") {
		t.Fatalf("the host identity shows: %q", res.Stderr)
	}
}

// The porcelain agents use works in the lane.
func TestNativeGitPorcelain(t *testing.T) {
	repo, _ := hostRepo(t)
	sb := nativeSandbox(t, repo, "rw")
	res := run(t, sb, `set -e
git switch -q -c feature
echo feature > f.txt; git add f.txt; git commit -qm feature
git checkout -q main
echo main >> README; git commit -qam main
git merge -q --no-edit feature
git log --format=%s | head -3 | tr '\n' ' '; echo
git tag v1; git show-ref --tags | wc -l
git mv f.txt g.txt; git commit -qm mv
git rm -q g.txt; git commit -qm rm
echo stash >> README; git stash -q; git stash pop -q; git diff --stat | tail -1
git restore README
git revert --no-edit HEAD >/dev/null; git log -1 --format=%s
git cherry-pick -n HEAD~1 >/dev/null 2>&1 || true; git reset -q --hard
git blame README | wc -l
git grep -c hello
git cat-file -t HEAD
git format-patch -1 -o patches >/dev/null; ls patches | wc -l
git clone -q . copy
cd copy; git log --oneline | wc -l; git pull -q; git log -1 --format=%s; cd ..
git rebase -q main feature; git rev-parse --abbrev-ref HEAD
`)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	for _, want := range []string{"Merge branch 'feature'", "Revert \"rm\"", "commit\n", "feature\n"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, res.Stdout)
		}
	}
	_ = vfs.ReadWrite
}
