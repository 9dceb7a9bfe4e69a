package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/runtime"
)

// Every command that mounts host directories refuses a mount that covers a
// path the host reads or executes, with one line naming the path (and
// --cachedir for the cache): the compilation cache (the one in use and the
// default one), the engine's directory, the wasmbox executable, the token
// file, the audit log and the MCP configuration. Before b1f9305 was fixed,
// `run --mount $HOME:/home/user:rw` let a script rewrite the compiled code
// the host runs.
func TestMountRefusedOverProtectedPaths(t *testing.T) {
	tmp := t.TempDir()
	xdg := filepath.Join(tmp, "xdg")
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	dirs := map[string]string{}
	for _, d := range []string{"audit", "mcp", "token", "plain"} {
		dirs[d] = filepath.Join(tmp, d)
		os.MkdirAll(dirs[d], 0o700)
	}
	token := filepath.Join(dirs["token"], "tok")
	os.WriteFile(token, []byte("s3cret-token-value"), 0o600)
	mcpConfig := filepath.Join(dirs["mcp"], "mcp.json")
	os.WriteFile(mcpConfig, []byte(`{"mcpServers": {}}`), 0o600)
	audit := filepath.Join(dirs["audit"], "audit.jsonl")
	wasmFile := filepath.Join(dirs["plain"], "t.wasm")
	os.WriteFile(wasmFile, []byte("\x00asm\x01\x00\x00\x00"), 0o600)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cache := testCacheDir()
	cd := []string{"--cachedir", cache}
	cases := []struct {
		name  string
		args  []string
		names string // the protected path the error must name
	}{
		{"run: the cache in use", append(cd, "run", "--mount", cache+":/c:rw", "-c", "true"), cache},
		{"run: an ancestor of the cache", append(cd, "run", "--mount", filepath.Dir(cache)+":/c:rw", "-c", "true"), cache},
		{"run: inside the cache", append(cd, "run", "--mount", filepath.Join(cache, "prepared")+":/c:rw", "-c", "true"), cache},
		{"run: the default cache", append(cd, "run", "--mount", filepath.Dir(runtime.DefaultCacheDir())+":/c:ro", "-c", "true"), runtime.DefaultCacheDir()},
		{"run: the engine's directory", append(cd, "run", "--mount", xdg+":/c:rw", "-c", "true"), filepath.Join(xdg, "wasmbox")},
		{"run: the executable", append(cd, "run", "--mount", filepath.Dir(exe)+":/c:ro", "-c", "true"), exe},
		{"run: --audit-log", append(cd, "run", "--audit-log", audit, "--mount", dirs["audit"]+":/c:rw", "-c", "true"), audit},
		{"run: --mcp-config", append(cd, "run", "--mcp-config", mcpConfig, "--mount", dirs["mcp"]+":/c:ro", "-c", "true"), mcpConfig},
		{"serve: --token-file", append(cd, "serve", "--listen", "127.0.0.1:0", "--token-file", token, "--mount", dirs["token"]+":/c:ro"), token},
		{"serve: --audit-log", append(cd, "serve", "--listen", "127.0.0.1:0", "--audit-log", audit, "--mount", dirs["audit"]+":/c:ro"), audit},
		{"mcp: --token-file", append(cd, "mcp", "--listen", "127.0.0.1:0", "--token-file", token, "--mount", dirs["token"]+":/c:ro"), token},
		{"mcp: the cache", append(cd, "mcp", "--mount", cache+":/c:ro"), cache},
		{"exec: the cache", append(cd, "exec", "--mount", filepath.Dir(cache)+":/c:ro", wasmFile), cache},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A watchdog: serve and mcp would run until cancelled if the
			// mount were accepted.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
			code := a.main(ctx, c.args)
			msg := stderr.String()
			if code == 0 || !strings.Contains(msg, c.names) || !strings.Contains(msg, "covers") || strings.Count(msg, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q: want a one-line refusal naming %s", code, msg, c.names)
			}
			if c.names == cache && !strings.Contains(msg, "--cachedir") {
				t.Fatalf("stderr %q does not name --cachedir", msg)
			}
		})
	}
	// A mount beside them all works.
	var stdout, stderr bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
	if code := a.main(context.Background(), append(cd, "run", "--audit-log", audit, "--mount", dirs["plain"]+":/c:ro", "-c", "ls /c")); code != 0 || !strings.Contains(stdout.String(), "t.wasm") {
		t.Fatalf("an unrelated mount: exit %d %q %q", code, stdout.String(), stderr.String())
	}
}

// --cachemax takes a positive size; anything else is a one-line usage
// error before anything is compiled.
func TestCacheMaxFlag(t *testing.T) {
	for _, v := range []string{"nope", "0", "-5"} {
		var stdout, stderr bytes.Buffer
		a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
		code := a.main(context.Background(), []string{"--cachedir", t.TempDir(), "--cachemax", v, "run", "-c", "true"})
		if code == 0 || !strings.Contains(stderr.String(), "--cachemax") || strings.Count(stderr.String(), "\n") != 1 {
			t.Fatalf("--cachemax %s: exit %d, stderr %q", v, code, stderr.String())
		}
	}
}
