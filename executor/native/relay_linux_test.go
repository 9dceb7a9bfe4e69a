package native

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/pem"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/internal/gitserver"
	"github.com/wasmbox/wasmbox/netpolicy"
)

// netRunner is a jailed Runner with the default git policy, where the
// relay can open (the OS jail, and root: entering the jail's network
// namespace takes CAP_SYS_ADMIN); else the test is skipped.
func netRunner(t testing.TB) *Runner {
	t.Helper()
	if _, err := findJail(); err != nil {
		if os.Getenv("WASMBOX_REQUIRE_JAIL") != "" {
			t.Fatalf("WASMBOX_REQUIRE_JAIL is set: %v", err)
		}
		t.Skipf("no OS jail here: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("the network relay enters the jail's network namespace, which takes root (CAP_SYS_ADMIN)")
	}
	r, err := New(Config{Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// netLog collects a broker's records.
type netLog struct {
	mu   sync.Mutex
	recs []netpolicy.Record
}

func (l *netLog) add(_ context.Context, r netpolicy.Record) {
	l.mu.Lock()
	l.recs = append(l.recs, r)
	l.mu.Unlock()
}

func (l *netLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, r := range l.recs {
		b.WriteString(r.Method + " " + r.Host + " " + r.Path + " " + itoa(r.Status) + " " + r.Error + "\n")
	}
	return b.String()
}

func gitIn(t *testing.T, r *Runner, jail string, p *netpolicy.Policy, log *netLog, args ...string) Result {
	t.Helper()
	var b *netpolicy.Broker
	if p != nil {
		b = netpolicy.NewBroker(p, log.add)
	}
	res, err := r.Run(context.Background(), Request{Argv: append([]string{"git"}, args...), Jail: jail, Guest: "/work", Network: b})
	if err != nil {
		t.Fatalf("git %v: %v (%s)", args, err, res.Reason)
	}
	return res
}

// TestGitNetwork clones, fetches and pushes over HTTPS through the relay,
// and checks the refusals: a host not in the allowlist, a redirect to
// one, a name that resolves to loopback, the relay pointed at itself or
// at the metadata address, and no network without a policy.
func TestGitNetwork(t *testing.T) {
	r := netRunner(t)
	srv := gitserver.Start(t)
	jail := realTempDir(t)
	base := "https://" + srv.Host

	t.Run("clone", func(t *testing.T) {
		log := &netLog{}
		res := gitIn(t, r, jail, srv.Policy(t), log, "clone", "-q", base+"/repo.git", "c")
		if res.ExitCode != 0 {
			t.Fatalf("exit %d\n%s%s\nrecords:\n%s", res.ExitCode, res.Stdout, res.Stderr, log)
		}
		if b, err := os.ReadFile(filepath.Join(jail, "c", "README")); err != nil || string(b) != "hello\n" {
			t.Fatalf("README: %q %v", b, err)
		}
		// The repository keeps the URL the agent gave, not the relay's.
		if cfg, _ := os.ReadFile(filepath.Join(jail, "c", ".git", "config")); !strings.Contains(string(cfg), "url = "+base+"/repo.git") {
			t.Errorf("remote url:\n%s", cfg)
		}
		if s := log.String(); !strings.Contains(s, "GET 127.0.0.1 /repo.git/info/refs 200") || !strings.Contains(s, "POST 127.0.0.1 /repo.git/git-upload-pack 200") {
			t.Errorf("records:\n%s", s)
		}
	})

	t.Run("push and fetch", func(t *testing.T) {
		c := filepath.Join(jail, "c")
		os.WriteFile(filepath.Join(c, "NEW"), []byte("from the sandbox\n"), 0o644)
		for _, args := range [][]string{{"add", "NEW"}, {"commit", "-q", "-m", "sandbox"}} {
			if res := gitIn(t, r, c, nil, nil, args...); res.ExitCode != 0 {
				t.Fatalf("git %v: exit %d %s", args, res.ExitCode, res.Stderr)
			}
		}
		log := &netLog{}
		res := gitIn(t, r, c, srv.Policy(t), log, "push", "-q", "origin", "main")
		if res.ExitCode != 0 {
			t.Fatalf("push: exit %d\n%s%s\nrecords:\n%s", res.ExitCode, res.Stdout, res.Stderr, log)
		}
		if got := gitserver.Git(t, filepath.Join(srv.Root, "repo.git"), "log", "--format=%s", "main"); got != "sandbox\ninit\n" {
			t.Fatalf("server's log after the push: %q", got)
		}
		// A commit made on the server, fetched into the sandbox.
		other := t.TempDir()
		gitserver.Git(t, other, "clone", "-q", filepath.Join(srv.Root, "repo.git"), "o")
		o := filepath.Join(other, "o")
		os.WriteFile(filepath.Join(o, "UP"), []byte("upstream\n"), 0o644)
		gitserver.Git(t, o, "add", "UP")
		gitserver.Git(t, o, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "upstream")
		gitserver.Git(t, o, "push", "-q", "origin", "main")
		res = gitIn(t, r, c, srv.Policy(t), log, "fetch", "-q", "origin")
		if res.ExitCode != 0 {
			t.Fatalf("fetch: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
		}
		if res := gitIn(t, r, c, nil, nil, "log", "--format=%s", "origin/main"); string(res.Stdout) != "upstream\nsandbox\ninit\n" {
			t.Fatalf("fetched log: %q %s", res.Stdout, res.Stderr)
		}
	})

	t.Run("a large push and clone", func(t *testing.T) {
		// 3 MiB that do not compress: git posts the pack chunked.
		c := filepath.Join(jail, "c")
		big := make([]byte, 3<<20)
		rand.Read(big)
		os.WriteFile(filepath.Join(c, "BIG"), big, 0o644)
		for _, args := range [][]string{{"merge", "-q", "--ff-only", "origin/main"}, {"add", "BIG"}, {"commit", "-q", "-m", "big"}} {
			if res := gitIn(t, r, c, nil, nil, args...); res.ExitCode != 0 {
				t.Fatalf("git %v: exit %d %s", args, res.ExitCode, res.Stderr)
			}
		}
		log := &netLog{}
		if res := gitIn(t, r, c, srv.Policy(t), log, "push", "-q", "origin", "main"); res.ExitCode != 0 {
			t.Fatalf("push: exit %d\n%s\nrecords:\n%s", res.ExitCode, res.Stderr, log)
		}
		if res := gitIn(t, r, jail, srv.Policy(t), log, "clone", "-q", base+"/repo.git", "big"); res.ExitCode != 0 {
			t.Fatalf("clone: exit %d\n%s\nrecords:\n%s", res.ExitCode, res.Stderr, log)
		}
		if b, err := os.ReadFile(filepath.Join(jail, "big", "BIG")); err != nil || !bytes.Equal(b, big) {
			t.Fatalf("BIG: %d bytes, %v", len(b), err)
		}
	})

	t.Run("redirect to an allowed host is followed through the relay", func(t *testing.T) {
		log := &netLog{}
		res := gitIn(t, r, jail, srv.Policy(t), log, "clone", "-q", base+"/redirect/"+base+"/repo.git", "redirected")
		if res.ExitCode != 0 {
			t.Fatalf("exit %d %s\nrecords:\n%s", res.ExitCode, res.Stderr, log)
		}
		if s := log.String(); !strings.Contains(s, "GET 127.0.0.1 /redirect/https://127.0.0.1:") || !strings.Contains(s, "GET 127.0.0.1 /repo.git/info/refs 200") {
			t.Fatalf("records:\n%s", s)
		}
	})

	t.Run("response limit", func(t *testing.T) {
		p := srv.Policy(t)
		p.MaxResponseBytes = 100
		log := &netLog{}
		res := gitIn(t, r, jail, p, log, "clone", "-q", base+"/repo.git", "limited")
		want := "remote: wasmbox: network: the response limit of 100 bytes was reached\n"
		if res.ExitCode != 128 || !strings.Contains(string(res.Stderr), want) {
			t.Fatalf("exit %d %s", res.ExitCode, res.Stderr)
		}
	})

	for _, tc := range []struct {
		name, url, want string
		policy          func() *netpolicy.Policy
	}{
		{"denied host", "https://denied.example/repo.git", "remote: wasmbox: network: denied.example is not in the allowlist\n", nil},
		{"redirect to a denied host", base + "/redirect/https://evil.example/repo.git", "remote: wasmbox: network: evil.example is not in the allowlist\n", nil},
		{"a name that resolves to loopback", "https://internal.test:" + strings.Split(srv.Host, ":")[1] + "/repo.git",
			"remote: wasmbox: network: internal.test resolves to 127.0.0.1, a loopback, private, link-local or metadata address that the allowlist does not name\n",
			func() *netpolicy.Policy {
				p := srv.Policy(t)
				p.Allow = append(p.Allow, netpolicy.Rule{Host: "internal.test", Port: p.Allow[0].Port})
				p.Resolver = fixedResolver{netip.MustParseAddr("127.0.0.1")}
				return p
			}},
		{"the relay pointed at itself", "http://127.0.0.1/https/" + srv.Host + "/repo.git", "remote: wasmbox: network: 127.0.0.1 is not in the allowlist\n", nil},
		{"the metadata address", "http://169.254.169.254/latest/meta-data/", "remote: wasmbox: network: 169.254.169.254 is not in the allowlist\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := srv.Policy(t)
			if tc.policy != nil {
				p = tc.policy()
			}
			log := &netLog{}
			res := gitIn(t, r, jail, p, log, "clone", "-q", tc.url, "x-"+strings.ReplaceAll(tc.name, " ", "-"))
			if res.ExitCode != 128 || !strings.Contains(string(res.Stderr), tc.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 128 and %q\nrecords:\n%s", res.ExitCode, res.Stderr, tc.want, log)
			}
			if s := log.String(); !strings.Contains(s, strings.TrimPrefix(strings.TrimSuffix(tc.want, "\n"), "remote: ")) {
				t.Errorf("no record of the refusal:\n%s", s)
			}
		})
	}

	t.Run("no network unjailed", func(t *testing.T) {
		u, err := New(Config{Unjailed: true})
		if err != nil {
			t.Fatal(err)
		}
		res, err := u.Run(context.Background(), Request{Argv: []string{"git", "clone", base + "/repo.git", "u"}, Jail: jail, Network: netpolicy.NewBroker(srv.Policy(t), nil)})
		if err == nil || res.ExitCode != ExitDenied || !strings.Contains(res.Reason, "git reaches the network only in the OS jail, and this lane runs unjailed") {
			t.Fatalf("exit %d, %v", res.ExitCode, err)
		}
	})

	t.Run("no network without a policy", func(t *testing.T) {
		for _, p := range []*netpolicy.Policy{nil, {}} {
			res, err := r.Run(context.Background(), Request{Argv: []string{"git", "clone", base + "/repo.git", "n"}, Jail: jail, Guest: "/work",
				Network: map[bool]*netpolicy.Broker{true: netpolicy.NewBroker(p, nil)}[p != nil]})
			if err == nil || res.ExitCode != ExitDenied || !strings.Contains(res.Reason, "is not a path inside the mount") {
				t.Fatalf("policy %v: exit %d, %v", p, res.ExitCode, err)
			}
		}
	})
}

// fixedResolver answers every name with its addresses.
type fixedResolver []netip.Addr

func (f fixedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return f, nil
}

// TestGitNetworkSecret: a brokered secret header reaches the server but
// nothing of the jail's: not its environment or files, not git's output,
// not even when the server echoes it back.
func TestGitNetworkSecret(t *testing.T) {
	r := netRunner(t)
	srv := gitserver.Start(t)
	jail := realTempDir(t)
	const secret = "Bearer s3cr3t-t0ken-of-the-host"
	p := srv.Policy(t)
	p.Secrets = []netpolicy.Secret{{Host: "127.0.0.1", Header: "Authorization", Value: secret}}
	log := &netLog{}
	res := gitIn(t, r, jail, p, log, "clone", "-q", "https://"+srv.Host+"/repo.git", "c")
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	seen := 0
	for _, a := range srv.Authorizations() {
		if a == secret {
			seen++
		}
	}
	if seen == 0 {
		t.Fatalf("the server never saw the secret: %q", srv.Authorizations())
	}
	// The server echoes the header in a text/plain refusal, which git
	// prints as "remote: ...".
	res = gitIn(t, r, jail, p, log, "clone", "-q", "https://"+srv.Host+"/echo/repo.git", "e")
	if res.ExitCode != 128 || !strings.Contains(string(res.Stderr), "remote: you sent: "+strings.Repeat("*", len(secret))) {
		t.Fatalf("echo: exit %d %s", res.ExitCode, res.Stderr)
	}
	// Nothing of the jail holds it: the environment, the repository.
	sh, err := New(Config{Policy: &Policy{Binaries: map[string]Rule{"sh": {}}}})
	if err != nil {
		t.Fatal(err)
	}
	look, err := sh.Run(context.Background(), Request{Argv: []string{"sh", "-c", "env; cat /proc/self/environ; grep -r s3cr3t /work /tmp; echo done"}, Jail: jail, Guest: "/work"})
	if err != nil || !strings.Contains(string(look.Stdout), "done") {
		t.Fatalf("look: %v %s", err, look.Stderr)
	}
	all := string(res.Stdout) + string(res.Stderr) + string(look.Stdout) + string(look.Stderr) + log.String()
	if strings.Contains(all, "s3cr3t") {
		t.Fatalf("the secret leaked:\n%s", all)
	}
}

// TestGitNetworkKilledMidClone: a clone from a server that never answers
// ends at the deadline with nothing left behind: no process of the jail,
// no goroutine of the relay.
func TestGitNetworkKilledMidClone(t *testing.T) {
	r := netRunner(t)
	srv := gitserver.Start(t)
	jail := realTempDir(t)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	b := netpolicy.NewBroker(srv.Policy(t), nil)
	res, err := r.Run(ctx, Request{Argv: []string{"git", "clone", "https://" + srv.Host + "/hang/repo-hang-marker.git", "h"}, Jail: jail, Guest: "/work", Network: b})
	if err == nil || res.Class != ClassTimeout || res.ExitCode != ExitTimeout {
		t.Fatalf("want a timeout: exit %d class %q err %v\n%s", res.ExitCode, res.Class, err, res.Stderr)
	}
	if !strings.Contains(strings.Join(srv.Requests(), "\n"), "/hang/repo-hang-marker.git/info/refs") {
		t.Fatalf("the request never reached the server: %q", srv.Requests())
	}
	// Watchdog, not a timing assertion: whatever remains is waited for.
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := runtime.NumGoroutine()
		left := processesWith("repo-hang-marker")
		if n <= before && left == 0 {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("after the kill: %d goroutines (before: %d), %d processes left\n%s", n, before, left, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rs := b.Records(); len(rs) == 0 {
		t.Error("no record of the request")
	}
}

// processesWith counts the live processes whose command line holds s.
func processesWith(s string) int {
	n := 0
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		b, err := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), s) {
			st, _ := os.ReadFile("/proc/" + p.Name() + "/stat")
			if i := strings.LastIndexByte(string(st), ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
				continue
			}
			n++
		}
	}
	return n
}

// BenchmarkGitClone clones the small repository of gitserver: through the
// jail and the relay, and with the host's git directly (TLS verified
// against the server's CA), to the same server.
//
//	go test ./executor/native -run '^$' -bench BenchmarkGitClone -benchtime 20x
func BenchmarkGitClone(b *testing.B) {
	r := netRunner(b)
	srv := gitserver.Start(b)
	url := "https://" + srv.Host + "/repo.git"
	b.Run("relay", func(b *testing.B) {
		p := srv.Policy(b)
		for i := 0; b.Loop(); i++ {
			jail := realTempDir(b)
			res, err := r.Run(context.Background(), Request{Argv: []string{"git", "clone", "-q", url, "c"}, Jail: jail, Guest: "/work",
				Network: netpolicy.NewBroker(p, nil)})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%v %s", err, res.Stderr)
			}
		}
	})
	b.Run("jail-local", func(b *testing.B) {
		// The jail alone: a clone of a local repository inside the mount.
		src := realTempDir(b)
		gitserver.Git(b, src, "clone", "-q", "--bare", filepath.Join(srv.Root, "repo.git"), "repo.git")
		for i := 0; b.Loop(); i++ {
			os.RemoveAll(filepath.Join(src, "c"))
			res, err := r.Run(context.Background(), Request{Argv: []string{"git", "clone", "-q", "repo.git", "c"}, Jail: src, Guest: "/work"})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%v %s", err, res.Stderr)
			}
		}
	})
	b.Run("host", func(b *testing.B) {
		ca := filepath.Join(b.TempDir(), "ca.pem")
		os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
		for i := 0; b.Loop(); i++ {
			dir := b.TempDir()
			cmd := exec.Command("git", "clone", "-q", url, "c")
			cmd.Dir = dir
			cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + dir, "PATH=/usr/bin:/bin", "GIT_SSL_CAINFO=" + ca}
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
		}
	})
}

// TestRelayTarget: the relay's URL form and the rewriting of redirects.
func TestRelayTarget(t *testing.T) {
	for _, tc := range []struct {
		uri, want string // want: "scheme host port hostport uri" or "error"
	}{
		{"/https/example.com/a/b.git/info/refs?service=git-upload-pack", "https example.com 443 example.com /a/b.git/info/refs?service=git-upload-pack"},
		{"/http/example.com:8080/x", "http example.com 8080 example.com:8080 /x"},
		{"/https/[::1]:8443/x", "https ::1 8443 [::1]:8443 /x"},
		{"/https/example.com?q", "https example.com 443 example.com /?q"},
		{"/https/user@example.com/x", "error"},
		{"/ftp/example.com/x", "error"},
		{"/x", "error"},
		{"/https/example.com:99999/x", "error"},
		{"/https/exa mple.com/x", "error"},
		{"/https//x", "error"},
	} {
		tg, err := parseRelayTarget(tc.uri)
		got := "error"
		if err == nil {
			got = tg.scheme() + " " + tg.host + " " + itoa(tg.port) + " " + tg.hostport + " " + tg.uri
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.uri, got, tc.want)
		}
	}
	tg, _ := parseRelayTarget("/https/a.example/r.git/info/refs?service=x")
	for loc, want := range map[string]string{
		"https://b.example/r.git/info/refs?service=x": "http://127.0.0.1/https/b.example/r.git/info/refs?service=x",
		"/other.git/info/refs":                        "http://127.0.0.1/https/a.example/other.git/info/refs",
		"other":                                       "http://127.0.0.1/https/a.example/r.git/info/other",
		"http://c.example:81/":                        "http://127.0.0.1/http/c.example:81/",
		"ssh://d.example/x":                           "ssh://d.example/x",
	} {
		if got := relayLocation(tg, loc); got != want {
			t.Errorf("Location %q: %q, want %q", loc, got, want)
		}
	}
}

// TestRelayConnLimit: the relay accepts at most its limit of git's
// connections at once; the next waits for one to close.
func TestRelayConnLimit(t *testing.T) {
	inner, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &limitListener{Listener: inner, sem: make(chan struct{}, 2), done: make(chan struct{})}
	defer l.Close()
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp4", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	a, _ := l.Accept()
	b, _ := l.Accept()
	third := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		third <- c
	}()
	select {
	case <-third:
		t.Fatal("a third connection was accepted while two were open")
	case <-time.After(200 * time.Millisecond):
	}
	a.Close()
	c := <-third // the watchdog is the test's timeout
	if c == nil {
		t.Fatal("no third connection after one closed")
	}
	c.Close()
	b.Close()
	close(l.done)
	l.Close()
	if _, err := l.Accept(); err == nil {
		t.Fatal("Accept after close")
	}
}
