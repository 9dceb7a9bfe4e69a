package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runMain(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = doMain(args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func TestRunCommand(t *testing.T) {
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "in.txt"), []byte("from host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(host, "s.sh")
	if err := os.WriteFile(script, []byte("echo from file; exit 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		stdin  string
		args   []string
		stdout string
		stderr string
		code   int
	}{
		{name: "-c", args: []string{"run", "-c", "echo hello | cat"}, stdout: "hello\n"},
		{name: "stdin script", stdin: "echo from stdin\n", args: []string{"run"}, stdout: "from stdin\n"},
		{name: "file", args: []string{"run", script}, stdout: "from file\n", code: 4},
		{name: "stdin to script", stdin: "piped\n", args: []string{"run", "-c", "cat"}, stdout: "piped\n"},
		{name: "exit status", args: []string{"run", "-c", "exit 7"}, code: 7},
		{name: "not found", args: []string{"run", "-c", "nosuch"}, stderr: "bash: line 1: nosuch: command not found\n", code: 127},
		{name: "timeout", args: []string{"run", "--timeout", "200ms", "-c", "while :; do :; done"}, code: 124},
		{name: "git hint", args: []string{"run", "-c", "git status"}, code: 127,
			stderr: "bash: line 1: git: command not found (git runs in the native lane: wasmbox run --native git)\n"},
		{name: "git hint status", args: []string{"run", "-c", "git status 2>/dev/null; echo $?"}, stdout: "127\n"},
		{name: "env", args: []string{"run", "--env", "A=b", "-c", "echo $A"}, stdout: "b\n"},
		{name: "workdir", args: []string{"run", "--workdir", "/tmp/x", "-c", "pwd"}, stdout: "/tmp/x\n"},
		{name: "mount ro", args: []string{"run", "--mount", host + ":/data:ro", "-c", "cat /data/in.txt; echo x > /data/new 2>/dev/null || echo refused"}, stdout: "from host\nrefused\n"},
		{name: "mount cow", args: []string{"run", "--mount", host + ":/data:cow", "-c", "echo changed > /data/in.txt; cat /data/in.txt"}, stdout: "changed\n"},
		{name: "allow", args: []string{"run", "--allow", "cat", "-c", "head -n1 /etc/passwd"}, code: 126},
		{name: "bad flag", args: []string{"run", "--nope"}, code: 2},
		{name: "bad timeout", args: []string{"run", "--timeout", "-1s", "-c", "true"}, code: 2},
		{name: "bad mount", args: []string{"run", "--mount", "/no/such/dir:/x", "-c", "true"}, code: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, c.stdin, c.args...)
			if stdout != c.stdout || code != c.code || (c.stderr != "" && stderr != c.stderr) {
				t.Fatalf("got stdout %q stderr %q exit %d; want %q %q %d", stdout, stderr, code, c.stdout, c.stderr, c.code)
			}
		})
	}
	// The host file of the cow mount is untouched.
	if b, _ := os.ReadFile(filepath.Join(host, "in.txt")); string(b) != "from host\n" {
		t.Fatalf("cow mount wrote the host: %q", b)
	}
}

func TestRunJSON(t *testing.T) {
	stdout, _, code := runMain(t, "", "run", "--json", "-c", "echo out; echo err >&2; exit 3")
	if code != 3 {
		t.Fatalf("exit %d", code)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v: %q", err, stdout)
	}
	want := map[string]any{"stdout": "out\n", "stderr": "err\n", "exit_code": 3.0, "error_class": "", "truncated": false}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	if _, ok := got["duration_ms"].(float64); !ok || len(got) != 6 {
		t.Errorf("fields: %v", got)
	}
	if strings.Count(stdout, "\n") != 1 {
		t.Errorf("not exactly one object: %q", stdout)
	}
}

func TestShellCommand(t *testing.T) {
	in := "x=1\ncd /tmp\nif true; then\necho $x\nfi\npwd\nf() {\n  echo in f\n}\nf\nexit 5\necho after exit\n"
	stdout, stderr, code := runMain(t, in, "shell")
	if stdout != "1\n/tmp\nin f\n" || code != 5 {
		t.Fatalf("got %q %q %d", stdout, stderr, code)
	}
}
