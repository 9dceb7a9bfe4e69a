package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Eight "wasmbox run --audit-log L" processes at once append one chain
// that audit-verify accepts (each read the head at start and appended
// without a lock: "tampered").
func TestAuditLogConcurrentRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts eight wasmbox processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // watchdog
	defer cancel()
	const n = 8
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := range n {
		cmd := exec.CommandContext(ctx, exe, "--cachedir", testCacheDir(), "run", "--audit-log", log, "-c", fmt.Sprintf("echo run %d", i))
		cmd.Env = append(os.Environ(), "WASMBOX_TEST_AS_WASMBOX=1", "WASMBOX_ENGINE=off")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil || outs[i].String() != fmt.Sprintf("run %d\n", i) {
			t.Errorf("run %d: %v %q", i, err, outs[i])
		}
	}
	stdout, stderr, code := runMain(t, "", "audit-verify", log)
	if code != 0 {
		t.Fatalf("audit-verify: exit %d %s%s", code, stdout, stderr)
	}
	b, _ := os.ReadFile(log)
	if got := strings.Count(string(b), "\n"); got != n {
		t.Fatalf("%d entries, want %d", got, n)
	}
}
