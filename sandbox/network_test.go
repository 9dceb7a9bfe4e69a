package sandbox

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wasmbox/wasmbox/audit"
	"github.com/wasmbox/wasmbox/netpolicy"
)

// netServer is a local HTTPS server (loopback only) and a policy that
// allows it, trusting its CA (the test option for --net-ca).
func netServer(t *testing.T, h http.Handler) (*httptest.Server, *netpolicy.Policy) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	rules, err := netpolicy.ParseAllow(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, &netpolicy.Policy{Allow: rules, RootCAs: pool}
}

func TestNetworkCurl(t *testing.T) {
	const secret = "ghp_Zx81NetSecretValue77"
	var lastAuth atomic.Value
	var hits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		lastAuth.Store(r.Header.Values("Authorization"))
		// An allowed server that echoes every request header back, in
		// the body and in headers.
		for k, vs := range r.Header {
			w.Header().Set("X-Echo-"+k, strings.Join(vs, ","))
		}
		r.Header.Write(w)
	})
	mux.HandleFunc("/a/b", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s %s\n", r.Method, r.URL.Path)
	})
	mux.HandleFunc("/post", func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		fmt.Fprintf(w, "%s %s %s", r.Method, r.Header.Get("Content-Type"), b.String())
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/to-denied", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://denied.example/steal", http.StatusFound)
	})
	mux.HandleFunc("/to-self", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/a/b", http.StatusFound)
	})
	srv, p := netServer(t, mux)
	u, _ := url.Parse(srv.URL)
	sec, err := netpolicy.ParseSecret(u.Hostname()+"=Authorization: Bearer $TOKEN", func(string) string { return secret })
	if err != nil {
		t.Fatal(err)
	}
	p.Secrets = []netpolicy.Secret{sec}
	var auditLog bytes.Buffer
	spans := tracetest.NewSpanRecorder()
	// The first curl compiles net.wasm (11.7 MB) within the run's deadline:
	// over 30 s under the race detector on a loaded machine.
	sb := newSandbox(t, WithNetwork(p), WithTimeout(5*time.Minute), WithAudit(audit.New(&auditLog)), WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))))

	t.Run("get", func(t *testing.T) {
		res := run(t, sb, "curl -sS "+srv.URL+"/a/b")
		if res.Stdout != "hello GET /a/b\n" || res.ExitCode != 0 {
			t.Fatalf("stdout %q stderr %q exit %d", res.Stdout, res.Stderr, res.ExitCode)
		}
		if len(res.Network) != 1 || res.Network[0].Status != 200 || res.Network[0].Path != "/a/b" || res.Network[0].Bytes != 15 || res.Network[0].Method != "GET" {
			t.Fatalf("network records %+v", res.Network)
		}
		// The request's span is a child of the run's.
		var runSpan, netSpan sdktrace.ReadOnlySpan
		for _, s := range spans.Ended() {
			switch s.Name() {
			case "sandbox.run":
				runSpan = s
			case "net.request":
				netSpan = s
			}
		}
		if runSpan == nil || netSpan == nil || netSpan.Parent().SpanID() != runSpan.SpanContext().SpanID() {
			t.Fatalf("spans: run %v net %v", runSpan, netSpan)
		}
	})
	t.Run("flags", func(t *testing.T) {
		res := run(t, sb, `curl -sS -o /tmp/out -w '%{http_code}\n' `+srv.URL+`/a/b && cat /tmp/out
curl -s -X PUT -d x=1 -d y=2 `+srv.URL+`/post; echo
curl -sSf `+srv.URL+`/missing; echo "rc=$?"
curl -s -o /dev/null -w '%{http_code}' `+srv.URL+`/missing; echo
curl -sSL `+srv.URL+`/to-self
curl -sI `+srv.URL+`/a/b | head -n 1
wget -q -O - `+srv.URL+`/a/b
printf 'echo piped' > /tmp/s; curl -sS `+srv.URL+`/a/b | wc -l`)
		want := "200\nhello GET /a/b\nPUT application/x-www-form-urlencoded x=1&y=2\n" +
			"rc=22\n404\nhello GET /a/b\nHTTP/1.1 200 OK\r\nhello GET /a/b\n1\n"
		if res.Stdout != want {
			t.Fatalf("stdout %q, want %q (stderr %q)", res.Stdout, want, res.Stderr)
		}
		if res.Stderr != "curl: (22) The requested URL returned error: 404\n" {
			t.Fatalf("stderr %q", res.Stderr)
		}
	})
	t.Run("denied", func(t *testing.T) {
		res := run(t, sb, "curl -sS https://api.example.com/x; echo rc=$?; wget -q https://api.example.com/x; echo rc=$?")
		if res.Stdout != "rc=6\nrc=4\n" || res.Stderr != strings.Repeat("wasmbox: network: api.example.com is not in the allowlist\n", 2) {
			t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
		}
		if len(res.Network) != 2 || !res.Network[0].Denied || res.Network[0].Host != "api.example.com" {
			t.Fatalf("records %+v", res.Network)
		}
	})
	t.Run("redirect to a denied host is re-checked", func(t *testing.T) {
		res := run(t, sb, "curl -sSL "+srv.URL+"/to-denied; echo rc=$?")
		if res.Stdout != "rc=6\n" || res.Stderr != "wasmbox: network: denied.example is not in the allowlist\n" {
			t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
		}
	})
	t.Run("secret cannot be read back", func(t *testing.T) {
		hits.Store(0)
		res := run(t, sb, `curl -sS -i -H 'Authorization: Bearer mine' `+srv.URL+`/echo; env; cat /proc/self/environ 2>/dev/null
curl -sS -H "$(printf 'X-A: 1\r\nAuthorization: injected')" `+srv.URL+`/echo`)
		all := res.Stdout + res.Stderr + fmt.Sprint(res.Network) + auditLog.String()
		for _, leak := range []string{secret, secret[4:12]} {
			if strings.Contains(all, leak) {
				t.Fatalf("the secret leaked: %q", all)
			}
		}
		if v, _ := lastAuth.Load().([]string); len(v) != 1 || v[0] != "Bearer "+secret {
			t.Fatalf("the server got Authorization %q", v)
		}
		if hits.Load() != 2 || !strings.Contains(res.Stdout, "X-A: 1\r\n") || strings.Contains(res.Stdout, "injected") || strings.Contains(res.Stdout, "mine") {
			t.Fatalf("%d hits, stdout %q", hits.Load(), res.Stdout)
		}
		if !strings.Contains(auditLog.String(), `"msg":"net"`) {
			t.Fatalf("no audit entry: %s", auditLog.String())
		}
	})
}

func TestNetworkOffByDefault(t *testing.T) {
	sb := newSandbox(t)
	res := run(t, sb, "curl -sS http://127.0.0.1:1/; echo rc=$?")
	if res.Stdout != "rc=6\n" || res.Stderr != "wasmbox: network: 127.0.0.1:1 is not in the allowlist\n" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
}

// A server that never finishes its response: the run's deadline ends the
// request, the run ends TIMEOUT, and nothing is left behind.
func TestNetworkSlowResponseBoundByTheRunDeadline(t *testing.T) {
	release := make(chan struct{})
	srv, p := netServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		w.Write([]byte("first bytes"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer close(release)
	sb := newSandbox(t, WithNetwork(p), WithTimeout(3*time.Second))
	res := run(t, sb, "curl -sS "+srv.URL+"/slow; echo after")
	if res.ErrorClass != ClassTimeout || strings.Contains(res.Stdout, "after") {
		t.Fatalf("class %q stdout %q stderr %q", res.ErrorClass, res.Stdout, res.Stderr)
	}
	// The sandbox still works, and the connection slot was given back.
	res = run(t, sb, "echo ok")
	if res.Stdout != "ok\n" {
		t.Fatalf("after the timeout: %q %q", res.Stdout, res.Stderr)
	}
}

// curl's messages and exit codes, compared with the host's curl against
// the same local server.
func TestNetworkCurlLikeHostCurl(t *testing.T) {
	hostCurl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no host curl")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok body") })
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/post", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %q %s\n", r.Method, b, r.Header.Get("Content-Type"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	cu, _ := url.Parse(closedURL)
	su, _ := url.Parse(srv.URL)
	rules, _ := netpolicy.ParseAllow(su.Host + "," + cu.Host)
	sb := newSandbox(t, WithNetwork(&netpolicy.Policy{Allow: rules}))
	ms := regexp.MustCompile(`after [0-9]+ ms`)
	for _, args := range []string{
		"-sS " + srv.URL + "/ok",
		"-sSf " + srv.URL + "/missing",
		"-s -o /dev/null -w %{http_code} " + srv.URL + "/missing",
		"-sS -d a=1 -d b=2 " + srv.URL + "/post",
		"-sS --data-binary @/tmp/d " + srv.URL + "/post",
		"-sSL --max-redirs 3 " + srv.URL + "/loop",
		"-sS " + closedURL + "/",
		"-s " + closedURL + "/",
		"-sS ftp2://x/",
	} {
		t.Run(args, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "d"), []byte("line1\nline2\n"), 0o644)
			hostArgs := strings.ReplaceAll(args, "@/tmp/d", "@"+filepath.Join(dir, "d"))
			cmd := exec.Command(hostCurl, strings.Fields(hostArgs)...)
			var hout, herr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &hout, &herr
			cmd.Run()
			sb.WriteFile("/tmp/d", []byte("line1\nline2\n"), 0o644)
			res := run(t, sb, "curl "+args)
			if res.ExitCode != cmd.ProcessState.ExitCode() || res.Stdout != hout.String() ||
				ms.ReplaceAllString(res.Stderr, "after N ms") != ms.ReplaceAllString(herr.String(), "after N ms") {
				t.Fatalf("sandbox: %d %q %q\nhost:    %d %q %q", res.ExitCode, res.Stdout, res.Stderr, cmd.ProcessState.ExitCode(), hout.String(), herr.String())
			}
		})
	}
}
