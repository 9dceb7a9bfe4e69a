package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A mount is refused when its host path is a protected path, an ancestor
// of one, or inside a protected directory, through symlinks on either
// side, and also for a protected file that does not exist yet. Every other
// mount is allowed. The error is one line naming the mount and the path.
func TestCheckMount(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	cache := filepath.Join(home, ".cache", "wasmbox", "compile")
	for _, d := range []string{cache, filepath.Join(home, "src"), filepath.Join(home, "secrets"), filepath.Join(root, "run", "wasmbox"), filepath.Join(root, "bin")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	token := filepath.Join(home, "secrets", "token")
	exe := filepath.Join(root, "bin", "wasmbox")
	mcp := filepath.Join(home, "src", "mcp.json")
	for _, f := range []string{token, exe, mcp} {
		os.WriteFile(f, []byte("x"), 0o600)
	}
	audit := filepath.Join(home, "logs", "audit.jsonl") // not created yet
	homeLink := filepath.Join(root, "homelink")
	os.Symlink(home, homeLink)
	cacheLink := filepath.Join(root, "cachelink")
	os.Symlink(cache, cacheLink)
	protected := []ProtectedPath{
		{Path: cacheLink, What: CacheWhat}, // given through a link
		{Path: filepath.Join(root, "run", "wasmbox"), What: "the resident engine's directory"},
		{Path: token, What: "the token file (--token-file)"},
		{Path: audit, What: "the audit log (--audit-log)"},
		{Path: exe, What: "the wasmbox executable"},
		{Path: mcp, What: "the MCP configuration (--mcp-config)"},
	}
	cases := []struct {
		mount   string
		refused string // the protected path named, "" if allowed
	}{
		{cache, cacheLink},
		{filepath.Dir(cache), cacheLink},
		{home, cacheLink},
		{homeLink, cacheLink},                          // a link to an ancestor
		{filepath.Join(homeLink, ".cache"), cacheLink}, // through a link, below it
		{filepath.Join(cache, "prepared"), cacheLink},  // inside the cache
		{"/", cacheLink},
		{root, cacheLink},
		{filepath.Join(root, "run"), filepath.Join(root, "run", "wasmbox")},
		{filepath.Join(home, "secrets"), token},
		{token, token},
		{filepath.Join(home, "logs"), audit}, // where the log will be
		{filepath.Join(root, "bin"), exe},
		{filepath.Join(home, "src"), mcp},
		{filepath.Join(home, ".cache", "other"), ""},
		{filepath.Join(root, "elsewhere"), ""},
	}
	for _, c := range cases {
		err := CheckMount(c.mount, protected)
		if c.refused == "" {
			if err != nil {
				t.Errorf("mount %s: %v, want allowed", c.mount, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("mount %s: allowed, want refused (covers %s)", c.mount, c.refused)
			continue
		}
		msg := err.Error()
		if !errors.Is(err, ErrMountCoversProtected) || !strings.Contains(msg, c.refused) || !strings.Contains(msg, c.mount) || strings.Contains(msg, "\n") {
			t.Errorf("mount %s: error %q, want one line naming %s", c.mount, msg, c.refused)
		}
		if c.refused == cacheLink && !strings.Contains(msg, "--cachedir") {
			t.Errorf("mount %s: error %q does not name --cachedir", c.mount, msg)
		}
	}
}

// sandbox.New refuses a mount over its engine's compilation cache without
// being told (the library gets the rule too), and one over a path the
// embedder protects; a mount beside them works.
func TestNewRefusesMountOverCache(t *testing.T) {
	ctx := context.Background()
	eng, err := DefaultEngine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cache := eng.rt.CacheDir()
	if cache == "" {
		t.Skip("the default engine has no disk cache")
	}
	for _, m := range []string{cache, filepath.Dir(cache)} {
		_, err := New(ctx, WithMountSpec(m+":/x:ro"))
		if err == nil || !errors.Is(err, ErrMountCoversProtected) || !strings.Contains(err.Error(), "--cachedir") {
			t.Fatalf("mount of %s over the engine's cache: %v", m, err)
		}
	}
	dir := t.TempDir()
	secret := filepath.Join(dir, "token")
	os.WriteFile(secret, []byte("s3cret"), 0o600)
	_, err = New(ctx, WithMountSpec(dir+":/x:ro"), WithProtectedPaths(ProtectedPath{Path: secret, What: "the token file (--token-file)"}))
	if err == nil || !strings.Contains(err.Error(), secret) {
		t.Fatalf("mount over a protected token file: %v", err)
	}
	other := t.TempDir()
	sb := newSandbox(t, WithMountSpec(other+":/x:ro"), WithProtectedPaths(ProtectedPath{Path: secret}))
	if res := run(t, sb, "ls /x && echo ok"); !strings.Contains(res.Stdout, "ok") {
		t.Fatalf("an unrelated mount: %+v", res)
	}
}
