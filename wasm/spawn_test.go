package wasm

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
)

// memModule is a module exporting one page of memory, to call the spawn
// host function directly with chosen pointers.
var memModule = []byte("\x00asm\x01\x00\x00\x00" +
	"\x05\x03\x01\x00\x01" + // memory: min 1 page
	"\x07\x07\x01\x03mem\x02\x00") // export "mem"

// TestSpawnABI checks the errno contract of wasmbox.spawn as the test host
// implements it (the executor's implementation must give the same answers).
func TestSpawnABI(t *testing.T) {
	h := getHost(t)
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, memModule)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := newRoot(t)
	var out bytes.Buffer
	parent := &guest{env: goldenEnv, cwd: "/", root: root, stdin: bytes.NewReader(nil), stdout: &out, stderr: &out}
	gctx := context.WithValue(ctx, guestKey{}, parent)
	const reqAt, statusAt = 1024, 16
	call := func(req string, ptr, n, status uint32) uint64 {
		mod.Memory().Write(reqAt, []byte(req))
		return h.spawnErrno(gctx, mod, ptr, n, status)
	}
	tests := []struct {
		name string
		req  string
		ptr  uint32
		len  int // -1: len(req)
		stat uint32
		want uint64
	}{
		{"ok", `{"argv":["echo","hi"]}`, reqAt, -1, statusAt, 0},
		{"bad json", `{"argv":`, reqAt, -1, statusAt, errnoInval},
		{"empty argv", `{"argv":[]}`, reqAt, -1, statusAt, errnoInval},
		{"bad stdin", `{"argv":["true"],"stdin":"tty"}`, reqAt, -1, statusAt, errnoInval},
		{"relative dir", `{"argv":["true"],"dir":"tmp"}`, reqAt, -1, statusAt, errnoInval},
		{"not found", `{"argv":["no-such-command"]}`, reqAt, -1, statusAt, errnoNoent},
		{"request outside memory", `{"argv":["true"]}`, 65530, 100, statusAt, errnoFault},
		{"status outside memory", `{"argv":["true"]}`, reqAt, -1, 65535, errnoFault},
	}
	for _, tt := range tests {
		n := uint32(len(tt.req))
		if tt.len >= 0 {
			n = uint32(tt.len)
		}
		if got := call(tt.req, tt.ptr, n, tt.stat); got != tt.want {
			t.Errorf("%s: errno %d, want %d", tt.name, got, tt.want)
		}
	}
	if out.String() != "hi\n" {
		t.Errorf("child output %q, want %q", out.String(), "hi\n")
	}
	out.Reset()
	if errno := call(`{"argv":["sh","-c","exit 3"]}`, reqAt, uint32(len(`{"argv":["sh","-c","exit 3"]}`)), statusAt); errno != errnoNoent {
		t.Errorf("sh is not a sandbox command: errno %d", errno)
	}
	req := `{"argv":["false"]}`
	if errno := call(req, reqAt, uint32(len(req)), statusAt); errno != 0 {
		t.Fatalf("false: errno %d", errno)
	}
	if st, _ := mod.Memory().ReadUint32Le(statusAt); st != 1 {
		t.Errorf("false: status %d, want 1", st)
	}
	req = `{"argv":["sleep","5"],"timeout_ms":50}`
	if errno := call(req, reqAt, uint32(len(req)), statusAt); errno != 0 {
		t.Fatalf("timeout: errno %d", errno)
	}
	if st, _ := mod.Memory().ReadUint32Le(statusAt); st != 124 {
		t.Errorf("timed-out child: status %d, want 124", st)
	}
}
