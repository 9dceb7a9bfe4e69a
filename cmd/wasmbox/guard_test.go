package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/audit"
)

const leak = "MYPASSWORD=hunter2hunter2 printenv MYPASSWORD"

// auditLines verifies the log at path and returns its text.
func auditLines(t *testing.T, path string, want uint64) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, err := audit.VerifyFrom(bytes.NewReader(b), audit.Head{})
	if err != nil || head.Seq != want {
		t.Fatalf("audit log: %v, %d entries, want %d:\n%s", err, head.Seq, want, b)
	}
	return string(b)
}

// TestRunRedactAndAudit: run redacts its output only with --redact-output,
// and with --audit-log appends to a log that never holds the secret.
func TestRunRedactAndAudit(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	if out, _, code := runMain(t, "", "run", "--audit-log", logPath, "-c", leak); out != "hunter2hunter2\n" || code != 0 {
		t.Fatalf("without --redact-output: %q exit %d", out, code)
	}
	if out, _, code := runMain(t, "", "run", "--redact-output", "--audit-log", logPath, "--env", "DEPLOY_TOKEN=env-token-1", "-c", leak+"; echo $DEPLOY_TOKEN"); out != "[REDACTED]\n[REDACTED]\n" || code != 0 {
		t.Fatalf("with --redact-output: %q exit %d", out, code)
	}
	out, _, _ := runMain(t, "", "run", "--redact-output", "--json", "-c", leak)
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || res["stdout"] != "[REDACTED]\n" {
		t.Fatalf("--json --redact-output: %v %q", err, out)
	}
	text := auditLines(t, logPath, 2)
	if strings.Contains(text, "hunter2hunter2") || strings.Contains(text, "env-token-1") || !strings.Contains(text, `"script":"MYPASSWORD=[REDACTED] printenv MYPASSWORD"`) {
		t.Fatalf("audit log:\n%s", text)
	}
	if _, stderr, code := runMain(t, "", "run", "--audit-log", filepath.Join(t.TempDir(), "no", "such", "dir", "log"), "-c", "true"); code != 1 || !strings.Contains(stderr, "no such file") {
		t.Fatalf("bad --audit-log: exit %d %q", code, stderr)
	}
}

// TestShellRedactAndAudit: shell's lines go to the audit log, and with
// --redact-output a secret assigned on one line is redacted from a later
// line's output.
func TestShellRedactAndAudit(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	in := "export API_TOKEN=tok-abcdef12\necho $API_TOKEN\n"
	if out, stderr, code := runMain(t, in, "shell", "--redact-output", "--audit-log", logPath); out != "[REDACTED]\n" || code != 0 {
		t.Fatalf("shell: %q %q exit %d", out, stderr, code)
	}
	if out, _, _ := runMain(t, in, "shell"); out != "tok-abcdef12\n" {
		t.Fatalf("shell without --redact-output: %q", out)
	}
	if text := auditLines(t, logPath, 2); strings.Contains(text, "tok-abcdef12") {
		t.Fatalf("audit log:\n%s", text)
	}
}

func TestServeTokenRequired(t *testing.T) {
	t.Setenv(tokenEnv, "")
	os.Unsetenv(tokenEnv)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte(" \n\t\n"), 0o600)
	cases := []struct {
		args []string
		env  string
		code int
		msg  string
	}{
		{[]string{"--listen", "0.0.0.0:0", "--allow-non-loopback"}, "", 2, "a bearer token is required"},
		{[]string{"--listen", "[::]:0", "--allow-non-loopback"}, "", 2, "a bearer token is required"},
		{[]string{"--token-file", empty}, "", 2, "is empty"},
		{[]string{"--token-file", filepath.Join(dir, "missing")}, "", 1, "no such file"},
		{[]string{"--session-ttl", "-1s"}, "", 2, "--session-ttl"},
		{[]string{"--listen", "127.0.0.1:0"}, " ", 2, "WASMBOX_TOKEN is set but empty"},
	}
	for _, c := range cases {
		if c.env != "" {
			os.Setenv(tokenEnv, c.env)
		}
		var stderr bytes.Buffer
		done := make(chan int, 1)
		go func() {
			done <- doMain(append([]string{"serve"}, c.args...), strings.NewReader(""), io.Discard, &stderr)
		}()
		var code int
		select {
		case code = <-done:
		case <-time.After(30 * time.Second):
			// It serves: stop it and fail.
			syscall.Kill(os.Getpid(), syscall.SIGTERM)
			<-done
			t.Fatalf("serve %q started without a usable token", c.args)
		}
		os.Unsetenv(tokenEnv)
		if code != c.code || !strings.Contains(stderr.String(), c.msg) {
			t.Errorf("serve %q (env %q): exit %d %q, want %d %q", c.args, c.env, code, stderr.String(), c.code, c.msg)
		}
	}
}

// TestServeTokenTTLRedact runs serve with --token-file, --session-ttl and
// --redact-output against real sandboxes.
func TestServeTokenTTLRedact(t *testing.T) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	cache := filepath.Join(base, "wasmbox-test", "compile")
	tokFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokFile, []byte("serve-token-123\n"), 0o600)
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- doMain([]string{"--cachedir", cache, "serve", "--listen", "127.0.0.1:0", "--workers", "1",
			"--token-file", tokFile, "--session-ttl", "1h", "--redact-output"}, strings.NewReader(""), pw, &stderr)
		pw.Close()
	}()
	defer func() {
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d: %s", code, stderr.String())
			}
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v %s", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	url := strings.TrimPrefix(strings.TrimSpace(line), "wasmbox: serving on ")
	call := func(method, path, auth, body string) (int, []byte) {
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for _, path := range []string{"/health", "/metrics", "/v1/sessions"} {
		if code, body := call("GET", path, "Bearer nope", ""); code != 401 || !strings.Contains(string(body), `"code":"unauthorized"`) {
			t.Errorf("%s with a wrong token: %d %s", path, code, body)
		}
	}
	const auth = "Bearer serve-token-123"
	code, body := call("POST", "/v1/sessions", auth, "")
	var sess struct{ ID string }
	if json.Unmarshal(body, &sess); code != 201 || sess.ID == "" {
		t.Fatalf("create: %d %s", code, body)
	}
	code, body = call("POST", "/v1/sessions/"+sess.ID+"/run", auth, `{"script":"`+leak+`; echo secret=hunter2hunter2 > /tmp/f"}`)
	var res map[string]any
	if json.Unmarshal(body, &res); code != 200 || res["stdout"] != "[REDACTED]\n" {
		t.Fatalf("run: %d %s", code, body)
	}
	if code, body = call("GET", "/v1/sessions/"+sess.ID+"/files?path=/tmp/f", auth, ""); code != 200 || string(body) != "secret=[REDACTED]\n" {
		t.Fatalf("file read: %d %q", code, body)
	}
}
