// Package gitserver is a local git smart-HTTP server over TLS for tests
// (loopback only): the host's `git http-backend` (CGI) behind a small Go
// handler in an httptest TLS server, serving bare repositories of a temp
// dir, with a few extra paths the network tests of the native lane need.
package gitserver

import (
	"bytes"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wasmbox/wasmbox/netpolicy"
)

// Backend is where Debian's git keeps git-http-backend.
const Backend = "/usr/lib/git-core/git-http-backend"

// Server serves the bare repositories under Root over HTTPS:
//
//   - /NAME.git/...: git http-backend (push enabled);
//   - /redirect/TARGET: a 302 to TARGET (an absolute URL, query kept);
//   - /echo/...: a 403 text/plain that echoes the request's
//     Authorization header (what a hostile server would do with a secret);
//   - /hang/...: answers nothing until the client leaves.
type Server struct {
	*httptest.Server
	Root string
	// Host is the server's host:port (127.0.0.1:PORT).
	Host string

	mu   sync.Mutex
	auth []string
	reqs []string
}

// Start starts a server with one bare repository, "repo.git", holding
// one commit of README ("hello\n") on main. It skips the test when the
// host has no git or git-http-backend.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	if _, err := os.Stat(Backend); err != nil {
		t.Skipf("%s: %v", Backend, err)
	}
	s := &Server{Root: t.TempDir()}
	work := t.TempDir()
	home := t.TempDir()
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + home, "PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	os.WriteFile(filepath.Join(work, "README"), []byte("hello\n"), 0o644)
	run(work, "init", "-q", "-b", "main")
	run(work, "add", "README")
	run(work, "-c", "user.name=Server", "-c", "user.email=server@example.com", "commit", "-q", "-m", "init")
	run(s.Root, "clone", "-q", "--bare", work, "repo.git")
	run(filepath.Join(s.Root, "repo.git"), "config", "http.receivepack", "true")

	backend := &cgi.Handler{
		Path: Backend,
		Env: []string{"GIT_PROJECT_ROOT=" + s.Root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + home},
	}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.reqs = append(s.reqs, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/redirect/"):
			target := strings.TrimPrefix(r.URL.Path, "/redirect/")
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, target, http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/echo/"):
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte("you sent: " + r.Header.Get("Authorization") + "\n"))
		case strings.HasPrefix(r.URL.Path, "/hang/"):
			<-r.Context().Done()
		default:
			if r.ContentLength < 0 {
				// Go's CGI handler refuses chunked bodies (git posts a
				// large pack chunked): buffer it, as web servers in
				// front of git http-backend do.
				b, err := io.ReadAll(io.LimitReader(r.Body, 256<<20))
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil
			}
			backend.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(s.Server.Close)
	u, _ := url.Parse(s.Server.URL)
	s.Host = u.Host
	return s
}

// Policy allows the server and trusts its CA (the test option for
// --net-ca).
func (s *Server) Policy(t testing.TB) *netpolicy.Policy {
	t.Helper()
	rules, err := netpolicy.ParseAllow(s.Host)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	return &netpolicy.Policy{Allow: rules, RootCAs: pool}
}

// Authorizations returns the Authorization headers of the requests so
// far ("" for a request without one).
func (s *Server) Authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

// Requests returns "METHOD PATH" of the requests so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

// Git runs the host's git with a clean configuration (no system or user
// config) in dir and returns its combined output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + dir, "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
