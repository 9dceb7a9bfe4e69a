package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

// TestPermissions: the guest is uid 1000, and the filesystem enforces the
// permission bits for it as Linux does. Every expected output is what
// bash 5.2 and GNU coreutils print on this machine for the same script run
// as uid 1000 (setpriv --reuid=1000 --regid=1000 --clear-groups) with
// LANG=C; the layout is a real system's: / /etc /usr/bin root's 0755,
// /root 0700, /tmp 1777, $HOME the user's.
func TestPermissions(t *testing.T) {
	sb := newSandbox(t)
	// A file of root's in /tmp, made by the host (which is not checked).
	if err := sb.WriteFile("/tmp/rootf", []byte("r\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := sb.FS().Chown("/tmp/rootf", 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := sb.FS().Chmod("/tmp/rootf", 0o666); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		script, stdout, stderr string
		code                   int
	}{
		{script: "cd /tmp; echo hi > f; chmod 000 f; cat f", stderr: "cat: f: Permission denied\n", code: 1},
		{script: "cd /tmp; mkdir d; chmod 555 d; touch d/x", stderr: "touch: cannot touch 'd/x': Permission denied\n", code: 1},
		{script: "touch /etc/x", stderr: "touch: cannot touch '/etc/x': Permission denied\n", code: 1},
		{script: "echo x > /etc/passwd", stderr: "bash: line 1: /etc/passwd: Permission denied\n", code: 1},
		{script: "rm /etc/passwd", stderr: "rm: cannot remove '/etc/passwd': Permission denied\n", code: 1},
		{script: "ls /root", stderr: "ls: cannot open directory '/root': Permission denied\n", code: 2},
		{script: "mkdir /x", stderr: "mkdir: cannot create directory '/x': Permission denied\n", code: 1},
		{script: "chmod 644 /etc/passwd", stderr: "chmod: changing permissions of '/etc/passwd': Operation not permitted\n", code: 1},
		{script: "find /root", stdout: "/root\n", stderr: "find: '/root': Permission denied\n", code: 1},
		{script: "mv /etc/passwd /tmp/p", stderr: "mv: cannot move '/etc/passwd' to '/tmp/p': Permission denied\n", code: 1},
		{script: "ln -s x /etc/l", stderr: "ln: failed to create symbolic link '/etc/l': Permission denied\n", code: 1},
		{script: "rm -f /tmp/rootf", stderr: "rm: cannot remove '/tmp/rootf': Operation not permitted\n", code: 1},
		{script: "cat /tmp/rootf; echo w >> /tmp/rootf; cat /tmp/rootf", stdout: "r\nr\nw\n"},
		{script: "cd /tmp; mkdir e; chmod 555 e; rm -rf e; echo $?", stdout: "0\n"},
		{script: "echo ok > ~/f; cat ~/f; echo ok2 > /tmp/g; cat /tmp/g", stdout: "ok\nok2\n"},
		{script: "cd; mkdir -p a/b; echo x > a/b/c; chmod 700 a; cat a/b/c; chmod 000 a; cat a/b/c; chmod 755 a", stdout: "x\n", stderr: "cat: a/b/c: Permission denied\n"},
		{script: "head -n 1 /etc/passwd; ls /bin/cat /usr/bin/cat", stdout: "root:x:0:0:root:/root:/bin/sh\n/bin/cat\n/usr/bin/cat\n"},
	}
	for _, c := range cases {
		t.Run(c.script, func(t *testing.T) {
			res := run(t, sb, c.script)
			if res.Stdout != c.stdout || res.Stderr != c.stderr || res.ExitCode != c.code {
				t.Errorf("got stdout %q stderr %q exit %d, want %q %q %d", res.Stdout, res.Stderr, res.ExitCode, c.stdout, c.stderr, c.code)
			}
		})
	}
}

// TestPermissionsCd: cd, open, create and unlink follow the same rules:
// a directory that the user may not search cannot be entered, nor can
// anything below it be reached.
func TestPermissionsCd(t *testing.T) {
	sb := newSandbox(t)
	res := run(t, sb, `cd /root; echo $?; cd /root/x; echo $?; cat /root/x; mkdir -p ~/p/q; chmod 600 ~/p; cd ~/p/q; echo $?; cat ~/p/q/f; chmod 700 ~/p; cd ~/p/q && echo in`)
	want := "1\n1\n1\nin\n"
	if res.Stdout != want {
		t.Errorf("stdout %q, want %q (stderr %q)", res.Stdout, want, res.Stderr)
	}
	// bash's words, as /bin/bash 5.2.15 says them for a user other than root.
	for _, msg := range []string{`cd: /root: Permission denied`, `cd: /root/x: Permission denied`, "cat: /root/x: Permission denied", "cat: /home/user/p/q/f: Permission denied"} {
		if !strings.Contains(res.Stderr, msg) {
			t.Errorf("stderr %q lacks %q", res.Stderr, msg)
		}
	}
}

// TestPermissionsHostMount: a host directory of the user running wasmbox
// (every file, when that is root) is the sandbox user's: a private
// (0700) directory can be entered, and its mode bits still count.
func TestPermissionsHostMount(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "priv"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "ro"), 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "ro"), 0o755) })
	sb := newSandbox(t, WithMount(vfs.MountSpec{Host: dir, Guest: "/work", Mode: vfs.ReadWrite}))
	res := run(t, sb, `cd /work/priv && echo a > f && cat f; touch /work/ro/x; echo $?; chmod 700 /work/ro && touch /work/ro/x && echo ok`)
	if want := "a\n1\nok\n"; res.Stdout != want {
		t.Errorf("stdout %q, want %q (stderr %q)", res.Stdout, want, res.Stderr)
	}
	if want := "touch: cannot touch '/work/ro/x': Permission denied\n"; res.Stderr != want {
		t.Errorf("stderr %q, want %q", res.Stderr, want)
	}
}
