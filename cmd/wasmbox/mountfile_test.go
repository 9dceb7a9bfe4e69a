package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunMountFile: --mount FILE:/path mounts one host file, read-only by
// default or read-write, like a bind mount of a file: nothing else of its
// host directory is reachable, and the mount point cannot be removed,
// renamed, replaced or linked (EBUSY), so the guest can neither unlink the
// host file nor swap it for another. Before, a file was refused ("is not a
// directory").
func TestRunMountFile(t *testing.T) {
	host := t.TempDir()
	file := filepath.Join(host, "f.txt")
	canary := filepath.Join(host, "canary")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(file, "hello\n")
	write(canary, "secret\n")
	if err := os.Symlink("f.txt", filepath.Join(host, "link")); err != nil {
		t.Fatal(err)
	}
	// Every change of the mount point itself, and every way around it.
	attacks := `rm /work/f.txt; rm -f /work/f.txt; mv /work/f.txt /work/g; echo o > /tmp/o; mv /tmp/o /work/f.txt
ln -s /etc/passwd /work/f.txt; ln /work/f.txt /work/hard; mkdir /work/f.txt/d; cat /work/f.txt/../canary
ls -a /work; cat /work/f.txt`
	cases := []struct {
		name, mount, script, stdout, host string
		code                              int
		stderr                            []string
	}{
		{name: "ro", mount: file + ":/work/f.txt", script: attacks + "\necho x > /work/f.txt; chmod 600 /work/f.txt; touch /work/f.txt",
			stdout: ".\n..\nf.txt\nhello\n", host: "hello\n", code: 1,
			stderr: []string{
				"rm: cannot remove '/work/f.txt': Device or resource busy",
				"mv: cannot move '/work/f.txt' to '/work/g': Device or resource busy",
				"mv: cannot move '/tmp/o' to '/work/f.txt': Device or resource busy",
				"ln: failed to create hard link '/work/hard' => '/work/f.txt': Invalid cross-device link",
				"cat: /work/f.txt/../canary: No such file or directory",
				"bash: line 4: /work/f.txt: Read-only file system",
				"chmod: changing permissions of '/work/f.txt': Read-only file system",
			}},
		{name: "rw", mount: file + ":/work/f.txt:rw", script: "echo new > /work/f.txt; echo more >> /work/f.txt\n" + attacks,
			stdout: ".\n..\nf.txt\nnew\nmore\n", host: "new\nmore\n",
			stderr: []string{
				"rm: cannot remove '/work/f.txt': Device or resource busy",
				"mv: cannot move '/tmp/o' to '/work/f.txt': Device or resource busy",
			}},
		{name: "symlink source", mount: filepath.Join(host, "link") + ":/f:ro", script: "cat /f; ls /", stdout: "hello\n", host: "hello\n"},
		{name: "cow refused", mount: file + ":/f:cow", script: "true", host: "hello\n", code: 1,
			stderr: []string{"a single file is mounted ro or rw, not cow"}},
		{name: "at / refused", mount: file + ":/", script: "true", host: "hello\n", code: 1,
			stderr: []string{"a file cannot be mounted at /"}},
		{name: "on a directory refused", mount: file + ":/tmp", script: "true", host: "hello\n", code: 1,
			stderr: []string{"mount /tmp: is a directory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			write(file, "hello\n")
			stdout, stderr, code := runMain(t, "", "run", "--mount", c.mount, "-c", c.script)
			if c.name == "symlink source" {
				stdout = strings.SplitN(stdout, "\n", 2)[0] + "\n"
			}
			if stdout != c.stdout || code != c.code {
				t.Errorf("stdout %q exit %d, want %q %d (stderr %q)", stdout, code, c.stdout, c.code, stderr)
			}
			for _, want := range c.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if b, _ := os.ReadFile(file); string(b) != c.host {
				t.Errorf("host file %q, want %q", b, c.host)
			}
			if b, _ := os.ReadFile(canary); string(b) != "secret\n" {
				t.Errorf("canary %q", b)
			}
			ents, _ := os.ReadDir(host)
			if len(ents) != 3 {
				t.Errorf("host directory changed: %v", ents)
			}
			if fi, err := os.Lstat(file); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("host file replaced: %v %v", fi, err)
			}
		})
	}
}
