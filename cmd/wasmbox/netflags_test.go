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
	"testing"
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
	stdout, stderr, code := runMain(t, "", "run", "--json", "--allow-net", u.Host, "--net-ca", ca,
		"--net-secret", u.Hostname()+"=Authorization: Bearer $WASMBOX_TEST_NET_TOKEN",
		"-c", "curl -sS "+srv.URL+"/x?q=1; echo $WASMBOX_TEST_NET_TOKEN; curl -sS https://example.com/; echo rc=$?")
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
	if res.Stdout != "auth="+strings.Repeat("*", len("Bearer "+secret))+"\n\nrc=6\n" ||
		res.Stderr != "wasmbox: network: example.com is not in the allowlist\n" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	if len(res.Network) != 2 || res.Network[0].Method != "GET" || res.Network[0].Path != "/x" || res.Network[0].Status != 200 ||
		!res.Network[1].Denied || res.Network[1].Host != "example.com" {
		t.Fatalf("network %+v", res.Network)
	}
	for _, c := range []struct{ args []string }{
		{[]string{"--allow-net", "a:99999"}},
		{[]string{"--net-ca", filepath.Join(t.TempDir(), "none.pem")}},
		{[]string{"--net-secret", "h=Authorization: $WASMBOX_TEST_UNSET_VAR"}},
	} {
		_, stderr, code := runMain(t, "", append(append([]string{"run"}, c.args...), "-c", "true")...)
		if code != 2 || !strings.HasPrefix(stderr, "wasmbox: --") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d stderr %q", c.args, code, stderr)
		}
	}
}
