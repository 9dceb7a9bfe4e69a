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

// TestScriptSecretsRedaction: the value a script assigns to a secret-named
// variable, or the embedder sets in one, never reaches the audit log, and
// reaches the output only when the sandbox has no redactor.
func TestScriptSecretsRedaction(t *testing.T) {
	const script = `MYPASSWORD=hunter2hunter2 printenv MYPASSWORD; export API_KEY="key-in-script-1"; echo $EMBED_TOKEN`
	for _, redact := range []bool{false, true} {
		var log bytes.Buffer
		opts := []Option{WithAudit(audit.New(&log, audit.WithRedactor(audit.NewRedactor(audit.WithEnviron(nil))))),
			WithEnv("EMBED_TOKEN", "embedder-tok-1")}
		if redact {
			opts = append(opts, WithRedactor(audit.NewRedactor(audit.WithEnviron(nil))))
		}
		sb := newSandbox(t, opts...)
		res := run(t, sb, script)
		// A later run of the session prints the values without assigning them.
		res2 := run(t, sb, `echo "$API_KEY" hunter2hunter2`)
		if err := sb.SetEnv("OTHER_SECRET", "set-env-secret-1"); err != nil {
			t.Fatal(err)
		}
		res3 := run(t, sb, `echo $OTHER_SECRET`)
		out := res.Stdout + res2.Stdout + res3.Stdout
		if redact {
			if want := "[REDACTED]\n[REDACTED]\n[REDACTED] [REDACTED]\n[REDACTED]\n"; out != want {
				t.Errorf("redacted output %q, want %q", out, want)
			}
		} else if want := "hunter2hunter2\nembedder-tok-1\nkey-in-script-1 hunter2hunter2\nset-env-secret-1\n"; out != want {
			t.Errorf("output without a redactor %q, want %q (output is redacted only on request)", out, want)
		}
		for _, secret := range []string{"hunter2hunter2", "key-in-script-1", "embedder-tok-1", "set-env-secret-1"} {
			if strings.Contains(log.String(), secret) {
				t.Errorf("redact=%v: %q in the audit log:\n%s", redact, secret, log.String())
			}
		}
		if !strings.Contains(log.String(), `"script":"MYPASSWORD=[REDACTED] printenv MYPASSWORD; export API_KEY=[REDACTED]; echo $EMBED_TOKEN"`) {
			t.Errorf("audit log:\n%s", log.String())
		}
	}
}
