package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/audit"
	"github.com/wasmbox/wasmbox/vfs"
)

func TestAuditAndRedaction(t *testing.T) {
	var log bytes.Buffer
	red := audit.NewRedactor(audit.WithLiterals("s3cr3t-value-123"))
	sb := newSandbox(t, WithAudit(audit.New(&log, audit.WithRedactor(red))), WithRedactor(red), WithSession("sess-1"))
	res := run(t, sb, `echo token=s3cr3t-value-123; echo ghp_abcdefghijklmnopqrstuvwxyz0123456789 >&2; exit 2`)
	if strings.Contains(res.Stdout+res.Stderr, "s3cr3t-value-123") || strings.Contains(res.Stderr, "ghp_abcdefghijklmnopqrstuvwxyz0123456789") {
		t.Fatalf("secret left the sandbox: %+v", res)
	}
	if res.ExitCode != 2 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	line := log.String()
	if !strings.Contains(line, `"msg":"run"`) || !strings.Contains(line, `"session":"sess-1"`) || strings.Contains(line, "s3cr3t-value-123") {
		t.Fatalf("audit entry: %s", line)
	}
	if err := audit.Verify(bytes.NewReader(log.Bytes())); err != nil {
		t.Fatalf("audit chain: %v", err)
	}
}

func TestForkSharesHostMountsUntilLastClose(t *testing.T) {
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "f"), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := New(context.Background(), WithMount(vfs.MountSpec{Host: host, Guest: "/data", Mode: vfs.ReadOnly}))
	if err != nil {
		t.Fatal(err)
	}
	child, err := sb.Fork()
	if err != nil {
		t.Fatal(err)
	}
	sb.Close()
	defer child.Close()
	if res := run(t, child, "cat /data/f"); res.Stdout != "host\n" {
		t.Fatalf("fork lost the host mount after the parent closed: %+v", res)
	}
}
