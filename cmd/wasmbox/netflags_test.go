package main

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// TestRunNetworkFlags: --allow-net, --net-ca and --net-secret of run, the
// network records of --json, and the flags' errors.
func TestRunNetworkFlags(t *testing.T) {
	const secret = "cli-secret-0123456789"
	var gotAuth string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		fmt.Fprintf(w, "auth=%s\n", r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	u, _ := url.Parse(srv.URL)
	t.Setenv("WASMBOX_TEST_NET_TOKEN", secret)
	stdout, stderr, code := runMain(t, "", "run", "--json", "--allow-net", u.Host, "--net-ca", ca, "--net-methods", "get,head",
		"--net-secret", u.Hostname()+"=Authorization: Bearer $WASMBOX_TEST_NET_TOKEN",
		"-c", "curl -sS "+srv.URL+"/x?q=1; echo $WASMBOX_TEST_NET_TOKEN; curl -sS https://example.com/; echo rc=$?; curl -s -d x=1 "+srv.URL+"/; echo rc=$?")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
	if gotAuth != "Bearer "+secret {
		t.Fatalf("the server got %q", gotAuth)
	}
	var res struct {
		Stdout  string `json:"stdout"`
		Stderr  string `json:"stderr"`
		Network []struct {
			Method, Host, Path, Error string
			Status                    int
			Bytes                     int64
			Denied                    bool
		} `json:"network"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stdout, secret) {
		t.Fatalf("the secret is in the result: %s", stdout)
	}
	if res.Stdout != "auth="+strings.Repeat("*", len("Bearer "+secret))+"\n\nrc=6\nrc=56\n" ||
		res.Stderr != "wasmbox: network: example.com is not in the allowlist\nwasmbox: network: method POST is not allowed\n" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	if len(res.Network) != 3 || !res.Network[2].Denied || res.Network[2].Method != "POST" || res.Network[0].Method != "GET" || res.Network[0].Path != "/x" || res.Network[0].Status != 200 ||
		!res.Network[1].Denied || res.Network[1].Host != "example.com" {
		t.Fatalf("network %+v", res.Network)
	}
	for _, c := range []struct{ args []string }{
		{[]string{"--allow-net", "a:99999"}},
		{[]string{"--net-ca", filepath.Join(t.TempDir(), "none.pem")}},
		{[]string{"--net-secret", "h=Authorization: $WASMBOX_TEST_UNSET_VAR"}},
		{[]string{"--net-methods", "GET,BAD METHOD"}},
	} {
		_, stderr, code := runMain(t, "", append(append([]string{"run"}, c.args...), "-c", "true")...)
		if code != 2 || !strings.HasPrefix(stderr, "wasmbox: --") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d stderr %q", c.args, code, stderr)
		}
	}
}

// TestExecNetABI drives runtime.NetABI by hand through exec: raw requests,
// refusals, errno of bad calls.
func TestExecNetABI(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "host=%s path=%s\n", r.Host, r.URL.Path)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	guest := filepath.Join(t.TempDir(), "netraw.wasm")
	os.WriteFile(guest, runtimetest.Guest(t, "netraw"), 0o644)
	connect := fmt.Sprintf(`{"host":%q,"port":%s}`, u.Hostname(), u.Port())
	cases := []struct {
		name           string
		args           []string
		stdout, stderr string
		code           int
		hits           int32
	}{
		{name: "request", args: []string{connect, "GET /p HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: close\r\n\r\n"},
			stdout: "host=" + u.Host + " path=/p\n", stderr: "errno=0\nnet_error=\n", hits: 1},
		{name: "CONNECT smuggling", args: []string{connect, "CONNECT 10.0.0.1:22 HTTP/1.1\r\nHost: 10.0.0.1:22\r\n\r\n"},
			stderr: "errno=0\nnet_error=wasmbox: network: method CONNECT is not allowed\n"},
		{name: "second request for another host", args: []string{connect, "GET /a HTTP/1.1\r\nHost: " + u.Host + "\r\n\r\nGET /b HTTP/1.1\r\nHost: metadata.google.internal\r\n\r\n"},
			stdout: "host=" + u.Host + " path=/a\n", stderr: "errno=0\nnet_error=wasmbox: network: a request for metadata.google.internal on the connection to " + u.Host + " is not allowed\n", hits: 1},
		{name: "denied", args: []string{`{"host":"169.254.169.254","port":80}`},
			stderr: "errno=76\nkind=1 msg=wasmbox: network: 169.254.169.254 is not in the allowlist\n", code: 1},
		{name: "bad request", args: []string{`{"host":"x","port":0}`}, stderr: "errno=28\n", code: 2},
		{name: "net_error of a non-connection", args: []string{"badfd"}, stderr: "errno=8\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hits.Store(0)
			stdout, stderr, code := runMain(t, "", append([]string{"exec", "--allow-net", u.Host, guest}, c.args...)...)
			// stdout is the raw response: its body is compared.
			if _, body, _ := strings.Cut(stdout, "\r\n\r\n"); body != c.stdout || stderr != c.stderr || code != c.code || hits.Load() != c.hits {
				t.Fatalf("stdout %q stderr %q exit %d hits %d\nwant   %q        %q      %d      %d", stdout, stderr, code, hits.Load(), c.stdout, c.stderr, c.code, c.hits)
			}
		})
	}
}
