package runtime_test

import (
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/runtime"
)

// FuzzParseSpawnRequest: any bytes give a request that keeps the ABI's
// promises or an error, never a panic.
func FuzzParseSpawnRequest(f *testing.F) {
	for _, s := range []string{
		`{"argv":["ls","-l"]}`,
		`{"argv":["x"],"env":[],"dir":"/tmp","stdin":"null","timeout_ms":1500}`,
		`{"argv":["x"],"env":null}`, `{"argv":[]}`, `{"argv":["x"],"dir":"rel"}`,
		`{"argv":["x"],"timeout_ms":9223372036854775807}`, `{"argv":["a\u0000b"]}`, "\xff", `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := runtime.ParseSpawnRequest(b)
		if err != nil {
			return
		}
		if len(req.Argv) == 0 || req.Argv[0] == "" {
			t.Fatalf("empty argv accepted: %q", b)
		}
		if req.Dir != "" && !strings.HasPrefix(req.Dir, "/") {
			t.Fatalf("relative dir accepted: %q", b)
		}
		if req.Timeout < 0 {
			t.Fatalf("negative timeout: %q", b)
		}
		if req.InheritEnv != (req.Env == nil) {
			t.Fatalf("env inherit %v with env %v", req.InheritEnv, req.Env)
		}
	})
}
