package sandbox

import (
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/netpolicy"
)

// netServer is a local HTTPS server (loopback only) and a policy that
// allows it, trusting its CA.
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

func TestNetworkCurlGet(t *testing.T) {
	srv, p := netServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s %s\n", r.Method, r.URL.Path)
	}))
	sb := newSandbox(t, WithNetwork(p))
	res := run(t, sb, "curl -sS "+srv.URL+"/a/b")
	if res.Stdout != "hello GET /a/b\n" || res.ExitCode != 0 {
		t.Fatalf("stdout %q stderr %q exit %d", res.Stdout, res.Stderr, res.ExitCode)
	}
	if len(res.Network) != 1 || res.Network[0].Status != 200 || res.Network[0].Path != "/a/b" || res.Network[0].Bytes != 15 {
		t.Fatalf("network records %+v", res.Network)
	}
	_ = io.Discard
	_ = strings.Contains
}
