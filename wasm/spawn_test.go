package wasm

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestSpawnStatus checks what a command that starts another one through
// wasmbox.spawn sees of the child: its output, its exit status, 124 for a
// child killed by its timeout and 127 for an unknown command.
func TestSpawnStatus(t *testing.T) {
	h := getHost(t)
	root, _ := newRoot(t)
	tests := []struct {
		argv   []string
		stdout string
		status int
	}{
		{[]string{"env", "echo", "hi"}, "hi\n", 0},
		{[]string{"env", "false"}, "", 1},
		{[]string{"timeout", "0.05", "sleep", "5"}, "", 124},
		{[]string{"env", "no-such-command"}, "", 127},
		{[]string{"nice", "timeout", "0.05", "sleep", "5"}, "", 124}, // a child's child's status
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		st, err := h.run(ctx, &guest{argv: tc.argv, env: goldenEnv, cwd: "/", root: root,
			stdin: bytes.NewReader(nil), stdout: &out, stderr: &errOut})
		cancel()
		if err != nil || st != tc.status || out.String() != tc.stdout {
			t.Errorf("%q: status %d, err %v, stdout %q (stderr %q); want status %d, stdout %q",
				tc.argv, st, err, out.String(), errOut.String(), tc.status, tc.stdout)
		}
	}
}
