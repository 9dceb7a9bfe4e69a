package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Through the resident engine, a run that mounts the engine's compilation
// cache (or a directory above it) is refused like in-process: the engine's
// sandbox knows its runtime's cache. (The engine cannot be given another
// cache: --cachedir runs in-process.)
func TestEngineRefusesMountOverCache(t *testing.T) {
	cache := testCacheDir()
	for _, m := range []string{cache, filepath.Dir(cache)} {
		res := viaTestEngine(t, t.TempDir(), "", false, "run", "--mount", m+":/c:rw", "-c", "echo reached")
		if res.err != nil {
			t.Fatal(res.err)
		}
		if res.rep.Exit == 0 || strings.Contains(res.stdout, "reached") || !strings.Contains(res.stderr, cache) || !strings.Contains(res.stderr, "--cachedir") {
			t.Fatalf("mount of %s through the engine: exit %d, stdout %q, stderr %q", m, res.rep.Exit, res.stdout, res.stderr)
		}
	}
}
