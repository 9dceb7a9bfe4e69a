package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/audit"
	"github.com/wasmbox/wasmbox/internal/gitserver"
	"github.com/wasmbox/wasmbox/netpolicy"
)

// gitNetSandbox is a sandbox with git on the native lane in the OS jail
// and opts, or the test is skipped: the relay needs the jail, and root
// to enter the jail's network namespace.
func gitNetSandbox(t *testing.T, repo string, opts ...Option) *Sandbox {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("git's network relay enters the jail's network namespace, which takes root (CAP_SYS_ADMIN)")
	}
	opts = append([]Option{WithNative("git"), WithMountSpec(repo + ":/home/user/repo:rw"), WithWorkdir("/home/user/repo"),
		WithTimeout(5 * time.Minute)}, opts...)
	sb, err := New(t.Context(), opts...)
	if err != nil {
		if os.Getenv("WASMBOX_REQUIRE_JAIL") == "" && strings.Contains(err.Error(), "no OS jail") {
			t.Skipf("no OS jail here: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

// TestGitOverHTTPS: git clone, push and fetch of an https:// URL from a
// script, under --allow-net with a brokered secret: the server gets the
// secret, the run's output, records and audit log never hold it; a host
// outside the allowlist is refused with the one-line message through git
// and an audit record; without the network option nothing changes.
func TestGitOverHTTPS(t *testing.T) {
	srv := gitserver.Start(t)
	const secret = "Bearer gitnet-s3cret-value"
	p := srv.Policy(t)
	p.Secrets = []netpolicy.Secret{{Host: "127.0.0.1", Header: "Authorization", Value: secret}}
	var auditLog bytes.Buffer
	sb := gitNetSandbox(t, t.TempDir(), WithNetwork(p), WithAudit(audit.New(&auditLog)))
	url := "https://" + srv.Host + "/repo.git"

	res := run(t, sb, `git clone -q `+url+` c && cat c/README && cd c && echo new > NEW && git add NEW && git commit -q -m sandbox &&
git push -q origin main && git fetch -q origin && git log --format=%s origin/main && env | grep -ci bearer; cat .git/config`)
	if !strings.HasPrefix(res.Stdout, "hello\nsandbox\ninit\n0\n") || res.ExitCode != 0 {
		t.Fatalf("exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if got := gitserver.Git(t, srv.Root+"/repo.git", "log", "--format=%s", "main"); got != "sandbox\ninit\n" {
		t.Fatalf("the server's log: %q", got)
	}
	gets, posts := 0, 0
	for _, r := range res.Network {
		switch {
		case r.Method == "GET" && r.Status == 200 && strings.HasSuffix(r.Path, "/info/refs"):
			gets++
		case r.Method == "POST" && r.Status == 200:
			posts++
		}
	}
	if gets < 3 || posts < 2 {
		t.Fatalf("network records: %+v", res.Network)
	}
	if !strings.Contains(auditLog.String(), `"msg":"net"`) || !strings.Contains(auditLog.String(), `"path":"/repo.git/git-receive-pack"`) {
		t.Fatalf("audit: %s", auditLog.String())
	}
	sent := 0
	for _, a := range srv.Authorizations() {
		if a == secret {
			sent++
		}
	}
	if sent == 0 {
		t.Fatalf("the server never got the secret: %q", srv.Authorizations())
	}

	denied := run(t, sb, `git clone -q https://denied.example/r.git d; echo rc=$?`)
	if denied.Stdout != "rc=128\n" || !strings.Contains(denied.Stderr, "remote: wasmbox: network: denied.example is not in the allowlist\n") {
		t.Fatalf("denied: stdout %q stderr %q", denied.Stdout, denied.Stderr)
	}
	if len(denied.Network) != 1 || !denied.Network[0].Denied || denied.Network[0].Host != "denied.example" {
		t.Fatalf("denied: records %+v", denied.Network)
	}
	if !strings.Contains(auditLog.String(), `"host":"denied.example"`) {
		t.Fatalf("no audit record of the refusal: %s", auditLog.String())
	}

	all := res.Stdout + res.Stderr + denied.Stdout + denied.Stderr + fmt.Sprint(res.Network) + auditLog.String()
	if strings.Contains(all, "s3cret") {
		t.Fatalf("the secret leaked: %s", all)
	}

	t.Run("no network without --allow-net", func(t *testing.T) {
		sb := gitNetSandbox(t, t.TempDir())
		before := len(srv.Requests())
		res := run(t, sb, `git clone -q `+url+` c; echo rc=$?`)
		if res.Stdout != "rc=126\n" || !strings.Contains(res.Stderr, "is not a path inside the mount") || len(res.Network) != 0 {
			t.Fatalf("stdout %q stderr %q records %+v", res.Stdout, res.Stderr, res.Network)
		}
		if after := len(srv.Requests()); after != before {
			t.Fatalf("the server got %d requests", after-before)
		}
	})
}
