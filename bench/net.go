package bench

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/wasmbox/wasmbox/netpolicy"
	"github.com/wasmbox/wasmbox/sandbox"
)

// netBig is the size of the download row.
const netBig = 100 << 20

// measureNet times curl in the sandbox (through the host's broker: policy,
// TLS, re-framing) against the host's curl, to the same local HTTPS server
// on loopback.
func measureNet(ctx context.Context, e *Env) ([]Row, error) {
	hostCurl, _ := exec.LookPath("curl")                    // "": no native column
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/small" {
			w.Write([]byte("hello, world\n"))
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(netBig))
		for i := 0; i < netBig/len(chunk); i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	rules, err := netpolicy.ParseAllow(u.Host)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	ca := filepath.Join(e.Dir, "net-ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		return nil, err
	}
	sb, err := sandbox.New(ctx, sandbox.WithEngine(e.Engine), sandbox.WithTimeout(5*time.Minute),
		sandbox.WithNetwork(&netpolicy.Policy{Allow: rules, RootCAs: pool}))
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	cases := []struct {
		name, path, want string
		n                int
	}{
		{"curl small GET (HTTPS)", "/small", "hello, world\n", e.reps(5, 30)},
		{"curl 100 MB download (HTTPS)", "/big", strconv.Itoa(netBig), e.reps(1, 5)},
	}
	var rows []Row
	for _, c := range cases {
		args := []string{"-sS", srv.URL + c.path}
		if c.path == "/big" {
			args = []string{"-sS", "-o", "/dev/null", "-w", "%{size_download}", srv.URL + c.path}
		}
		script := "curl"
		for _, a := range args {
			script += " '" + a + "'"
		}
		// One untimed run each: the compile of the net module, the
		// host's page cache.
		if res, err := sb.Run(ctx, script); err != nil || res.Stdout != c.want {
			return rows, fmt.Errorf("%s: sandbox got %q %q (%v)", c.name, res.Stdout, res.Stderr, err)
		}
		var ours, native []float64
		for i := 0; i < c.n; i++ {
			if err := ctx.Err(); err != nil {
				return rows, err
			}
			res, err := sb.Run(ctx, script)
			if err != nil || res.Stdout != c.want {
				return rows, fmt.Errorf("%s: sandbox got %q %q (%v)", c.name, res.Stdout, res.Stderr, err)
			}
			ours = append(ours, seconds(res.Duration))
			if hostCurl == "" {
				continue
			}
			cmd := exec.CommandContext(ctx, hostCurl, append([]string{"--cacert", ca}, args...)...)
			start := time.Now()
			out, err := cmd.Output()
			d := time.Since(start)
			if err != nil || string(out) != c.want {
				return rows, fmt.Errorf("%s: host curl got %q (%v)", c.name, out, err)
			}
			native = append(native, seconds(d))
		}
		note := "sandbox Run of curl vs the host's curl process, same loopback HTTPS server"
		r := row(c.name, Duration, ours, native, note)
		if c.path == "/big" && r.Native > 0 {
			r.Note = fmt.Sprintf("%s; %.0f MB/s vs %.0f MB/s", note, netBig/1e6/r.Median, netBig/1e6/r.Native)
		}
		rows = append(rows, r)
	}
	return rows, nil
}
