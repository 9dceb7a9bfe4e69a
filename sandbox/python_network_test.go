package sandbox

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/netpolicy"
)

// TestPythonNetwork: Python's urllib, http.client, socket and ssl reach
// allowed hosts through the host (runtime.NetABI), TLS done by the host
// and verified against the test server's CA (the policy's RootCAs, what
// --net-ca gives), and are refused with the host's one-line message
// otherwise.
func TestPythonNetwork(t *testing.T) {
	const secret = "ghp_Py81NetSecretValue42"
	var lastAuth atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s %s", r.Method, r.URL.Path)
	})
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<17) // 2 MiB
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Write(big)
	})
	mux.HandleFunc("/post", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %d %s", r.Method, r.Header.Get("Content-Type"), len(b), b[:min(len(b), 16)])
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		lastAuth.Store(r.Header.Values("Authorization"))
		// An allowed server that echoes every request header back, in
		// the body and in headers.
		for k, vs := range r.Header {
			w.Header().Set("X-Echo-"+k, strings.Join(vs, ","))
		}
		r.Header.Write(w)
	})
	srv, p := netServer(t, mux)
	u, _ := url.Parse(srv.URL)
	sec, err := netpolicy.ParseSecret(u.Hostname()+"=Authorization: Bearer $TOKEN", func(string) string { return secret })
	if err != nil {
		t.Fatal(err)
	}
	p.Secrets = []netpolicy.Secret{sec}
	sb := pythonSandbox(t, WithNetwork(p), WithTimeout(5*time.Minute))

	py := func(t *testing.T, code string) Result {
		t.Helper()
		if err := sb.WriteFile("/tmp/t.py", []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		return run(t, sb, "python3 /tmp/t.py "+srv.URL+" 2>&1")
	}

	t.Run("urllib", func(t *testing.T) {
		res := py(t, `import sys, urllib.request
base = sys.argv[1]
print(urllib.request.urlopen(base + "/hello").read().decode())
req = urllib.request.Request(base + "/post", data=b"x" * 100000, headers={"Content-Type": "application/octet-stream"})
with urllib.request.urlopen(req) as r:
    print(r.status, r.read().decode())
# urllib closes its socket before the body is read (the response's
# stream keeps it open, as CPython's sockets do): 2 MiB cannot all be
# in the host's pipe by then.
body = urllib.request.urlopen(base + "/big").read()
print(len(body), body[-16:].decode())
`)
		want := "hello GET /hello\n200 POST application/octet-stream 100000 xxxxxxxxxxxxxxxx\n2097152 0123456789abcdef\n"
		if res.ExitCode != 0 || res.Stdout != want {
			t.Fatalf("exit %d, output %q, want %q", res.ExitCode, res.Stdout, want)
		}
		if len(res.Network) != 3 || res.Network[0].Path != "/hello" || res.Network[0].Status != 200 || res.Network[1].Method != "POST" {
			t.Fatalf("network records %+v", res.Network)
		}
	})

	t.Run("http.client", func(t *testing.T) {
		// Two requests on one connection (keep-alive), then the socket
		// and ssl modules directly.
		res := py(t, `import sys, http.client, socket, ssl, selectors, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
c = http.client.HTTPSConnection(u.hostname, u.port, timeout=60)
for path in ("/hello", "/hello"):
    c.request("GET", path)
    r = c.getresponse()
    print(r.status, r.read().decode())
c.close()
ctx = ssl.create_default_context()
with socket.create_connection((u.hostname, u.port)) as s:
    with ctx.wrap_socket(s, server_hostname=u.hostname) as t:
        t.sendall(b"GET /hello HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % u.netloc.encode())
        sel = selectors.DefaultSelector()
        sel.register(t, selectors.EVENT_READ)
        assert sel.select(timeout=60)[0][0].fileobj is t
        data = b""
        while True:
            b = t.recv(4096)
            if not b:
                break
            data += b
print(data.split(b"\r\n")[0].decode(), data.endswith(b"hello GET /hello"))
`)
		want := "200 hello GET /hello\n200 hello GET /hello\nHTTP/1.1 200 OK True\n"
		if res.ExitCode != 0 || res.Stdout != want {
			t.Fatalf("exit %d, output %q, want %q", res.ExitCode, res.Stdout, want)
		}
	})

	t.Run("pip's requests", func(t *testing.T) {
		// requests (pip's vendored copy: urllib3, its own ssl context and
		// hostname check over ssl's getpeercert).
		res := py(t, `import sys
from pip._vendor import requests
r = requests.get(sys.argv[1] + "/hello", timeout=60)
print(r.status_code, r.text)
r = requests.post(sys.argv[1] + "/post", data=b"abc", headers={"Content-Type": "text/plain"})
print(r.status_code, r.text)
`)
		want := "200 hello GET /hello\n200 POST text/plain 3 abc\n"
		if res.ExitCode != 0 || res.Stdout != want {
			t.Fatalf("exit %d, output %q, want %q", res.ExitCode, res.Stdout, want)
		}
	})

	t.Run("denied", func(t *testing.T) {
		res := py(t, `import socket, urllib.request, urllib.error
try:
    socket.create_connection(("denied.example", 443), timeout=30)
except ConnectionRefusedError as e:
    print("refused:", e.strerror)
try:
    urllib.request.urlopen("https://denied.example/x", timeout=30)
except urllib.error.URLError as e:
    print("urlerror:", e.reason)
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
except OSError as e:
    print("udp:", e.strerror)
`)
		want := "refused: wasmbox: network: denied.example:443 is not in the allowlist\n" +
			"urlerror: [Errno 14] wasmbox: network: denied.example:443 is not in the allowlist\n" +
			"udp: wasmbox: network: only TCP client sockets (AF_INET/AF_INET6, SOCK_STREAM) go through the host\n"
		if res.ExitCode != 0 || res.Stdout != want {
			t.Fatalf("exit %d, output %q, want %q", res.ExitCode, res.Stdout, want)
		}
		if len(res.Network) != 2 || !res.Network[0].Denied || res.Network[0].Host != "denied.example" {
			t.Fatalf("network records %+v", res.Network)
		}
	})

	t.Run("tls name", func(t *testing.T) {
		// SNI for another name than the one connected to is refused: the
		// host verifies the name it dials.
		res := py(t, `import sys, socket, ssl, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
s = socket.create_connection((u.hostname, u.port))
try:
    ssl.create_default_context().wrap_socket(s, server_hostname="example.com")
except ssl.SSLCertVerificationError as e:
    print("refused:", e)
`)
		if res.ExitCode != 0 || !strings.Contains(res.Stdout, "refused: wasmbox: network: TLS for example.com on a connection to 127.0.0.1") {
			t.Fatalf("exit %d, output %q", res.ExitCode, res.Stdout)
		}
	})

	t.Run("secret", func(t *testing.T) {
		// The script asks an allowed server that echoes headers for
		// everything it got, sets its own Authorization (replaced by the
		// host), and looks in its environment: the secret is nowhere.
		res := py(t, `import sys, os, urllib.request, http.client, urllib.parse
req = urllib.request.Request(sys.argv[1] + "/echo", headers={"Authorization": "Bearer mine"})
with urllib.request.urlopen(req) as r:
    print(r.read().decode())
    print(dict(r.headers))
u = urllib.parse.urlsplit(sys.argv[1])
c = http.client.HTTPSConnection(u.hostname, u.port)
c.request("GET", "/echo", headers={"Accept-Encoding": "identity"})
r = c.getresponse()
print(r.getheaders(), r.read())
print(sorted(os.environ.items()))
`)
		if res.ExitCode != 0 || !strings.Contains(res.Stdout, "Authorization: *******") {
			t.Fatalf("exit %d, output %q", res.ExitCode, res.Stdout)
		}
		if strings.Contains(res.Stdout+res.Stderr, secret) || strings.Contains(res.Stdout, "mine") {
			t.Fatalf("the script read the secret (or its own header went out): %q", res.Stdout)
		}
		if got, _ := lastAuth.Load().([]string); len(got) != 1 || got[0] != "Bearer "+secret {
			t.Fatalf("the server got Authorization %q", got)
		}
	})
}

// TestPythonNetworkRebindingAndPrivateAddresses: Python's connections go
// to the address the host checked; a second answer of loopback (DNS
// rebinding) and a name that resolves to a private address are refused.
func TestPythonNetworkRebindingAndPrivateAddresses(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "public")
	}))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	rules, err := netpolicy.ParseAllow("rebind.example:" + strconv.Itoa(port) + ",*.corp.example:" + strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var dialed []string
	p := &netpolicy.Policy{Allow: rules,
		// rebind.example answers a public address until its server was
		// reached once, then loopback: what a DNS rebinding attacker's
		// server does.
		Resolver: resolverFunc(func(ctx context.Context, network, host string) ([]netip.Addr, error) {
			if host == "rebind.example" {
				if hits.Load() == 0 {
					return []netip.Addr{netip.MustParseAddr("203.0.113.7")}, nil
				}
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
		}),
		Dial: func(network, addr string, timeout time.Duration) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, addr)
			mu.Unlock()
			// The public address stands for the test server: the test
			// never leaves the machine.
			if addr != "203.0.113.7:"+strconv.Itoa(port) {
				return nil, errors.New("test: dialed an address that is not the checked public one")
			}
			return net.DialTimeout(network, srv.Listener.Addr().String(), timeout)
		}}
	sb := pythonSandbox(t, WithNetwork(p), WithTimeout(5*time.Minute))
	script := fmt.Sprintf(`import http.client, urllib.request, urllib.error
c = http.client.HTTPConnection("rebind.example", %d, timeout=60)
c.request("GET", "/")
print(c.getresponse().read().decode())
for host in ("rebind.example", "a.corp.example"):
    try:
        urllib.request.urlopen("http://%%s:%d/" %% host, timeout=60)
    except urllib.error.URLError as e:
        print(type(e.reason).__name__, e.reason.strerror)
`, port, port)
	if err := sb.WriteFile("/tmp/t.py", []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	res := run(t, sb, "python3 /tmp/t.py 2>&1")
	want := "public\n" +
		"ConnectionRefusedError wasmbox: network: rebind.example resolves to 127.0.0.1, a loopback, private, link-local or metadata address that the allowlist does not name\n" +
		"ConnectionRefusedError wasmbox: network: a.corp.example resolves to 10.1.2.3, a loopback, private, link-local or metadata address that the allowlist does not name\n"
	if res.ExitCode != 0 || res.Stdout != want {
		t.Fatalf("exit %d, output %q, want %q", res.ExitCode, res.Stdout, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dialed) != 1 || hits.Load() != 1 {
		t.Fatalf("dialed %v, %d requests", dialed, hits.Load())
	}
}

type resolverFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(ctx, network, host)
}

// TestPythonPipInstallFromIndex: pip installs a wheel from a PyPI-style
// simple index over HTTPS (a local server, its CA the policy's).
func TestPythonPipInstallFromIndex(t *testing.T) {
	files := map[string]string{
		"netdemo/__init__.py":            "V = 'from the index'\n",
		"netdemo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: netdemo\nVersion: 1.0\n",
		"netdemo-1.0.dist-info/WHEEL":    "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, name := range []string{"netdemo/__init__.py", "netdemo-1.0.dist-info/METADATA", "netdemo-1.0.dist-info/WHEEL"} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, files[name])
		sum := sha256.Sum256([]byte(files[name]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[name]))
	}
	record.WriteString("netdemo-1.0.dist-info/RECORD,,\n")
	w, _ := zw.Create("netdemo-1.0.dist-info/RECORD")
	io.WriteString(w, record.String())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	wheel := buf.Bytes()
	sum := sha256.Sum256(wheel)
	var fetched atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/simple/netdemo/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/netdemo-1.0-py3-none-any.whl#sha256=%s">netdemo-1.0-py3-none-any.whl</a></body></html>`, hex.EncodeToString(sum[:]))
	})
	mux.HandleFunc("/files/netdemo-1.0-py3-none-any.whl", func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(wheel)
	})
	srv, p := netServer(t, mux)
	sb := pythonSandbox(t, WithNetwork(p), WithTimeout(5*time.Minute))
	res := run(t, sb, "python3 -m pip install -q --disable-pip-version-check --no-cache-dir --index-url "+srv.URL+"/simple/ netdemo 2>&1 && python3 -c 'import netdemo; print(netdemo.V)'")
	if res.ExitCode != 0 || res.Stdout != "from the index\n" || fetched.Load() != 1 {
		t.Fatalf("exit %d, output %q, wheel fetched %d times", res.ExitCode, res.Stdout, fetched.Load())
	}
}

// TestPythonNetworkCertNoneStillVerified: a context that turns
// verification off (ssl.CERT_NONE, requests' verify=False) does not lower
// the host's: a server whose CA the host does not trust is refused.
func TestPythonNetworkCertNoneStillVerified(t *testing.T) {
	srv, p := netServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "untrusted server reached")
	}))
	p.RootCAs = x509.NewCertPool() // trusts nothing
	sb := pythonSandbox(t, WithNetwork(p), WithTimeout(5*time.Minute))
	script := `import sys, ssl, urllib.request, urllib.error
ctx = ssl._create_unverified_context()
print(ctx.verify_mode == ssl.CERT_NONE, ctx.check_hostname)
try:
    print(urllib.request.urlopen(sys.argv[1], context=ctx).read())
except urllib.error.URLError as e:
    print(type(e.reason).__name__, e.reason)
from pip._vendor import requests
try:
    print(requests.get(sys.argv[1], verify=False).text)
except requests.exceptions.SSLError as e:
    print("requests: SSLError")
`
	if err := sb.WriteFile("/tmp/t.py", []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	res := run(t, sb, "python3 /tmp/t.py "+srv.URL+" 2>&1")
	if res.ExitCode != 0 || strings.Contains(res.Stdout, "reached") ||
		!strings.HasPrefix(res.Stdout, "True False\nSSLCertVerificationError wasmbox: network: TLS with 127.0.0.1: tls: failed to verify certificate") ||
		!strings.HasSuffix(res.Stdout, "requests: SSLError\n") {
		t.Fatalf("exit %d, output %q", res.ExitCode, res.Stdout)
	}
}
