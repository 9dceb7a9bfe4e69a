package netpolicy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The servers of these tests listen on loopback only; a dial to any other
// address is refused by the tests' Dial before any packet is sent.

func hostPort(t *testing.T, srv *httptest.Server) (string, int) {
	t.Helper()
	a := srv.Listener.Addr().(*net.TCPAddr)
	return a.IP.String(), a.Port
}

func tlsPolicy(t *testing.T, srv *httptest.Server, extra ...string) *Policy {
	t.Helper()
	h, port := hostPort(t, srv)
	rules, err := ParseAllow(strings.Join(append([]string{h + ":" + strconv.Itoa(port)}, extra...), ","))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return &Policy{Allow: rules, RootCAs: pool}
}

// guest is the guest's side of one connection: Serve runs between pipes.
type guest struct {
	w    *io.PipeWriter
	r    *bufio.Reader
	done chan error
}

func connect(t *testing.T, ctx context.Context, b *Broker, host string, port int, useTLS bool) *guest {
	t.Helper()
	c, err := b.Connect(ctx, host, port, useTLS)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	g := &guest{w: inW, r: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() {
		err := c.Serve(inR, outW)
		outW.Close()
		inR.Close()
		g.done <- err
	}()
	t.Cleanup(func() { inW.Close(); outR.Close(); g.wait(t) })
	return g
}

func (g *guest) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-g.done:
		g.done <- err
		return err
	case <-time.After(time.Minute): // a watchdog, not a timing assertion
		t.Fatal("Serve did not end")
		return nil
	}
}

func echoHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Echo-Auth", r.Header.Get("Authorization"))
	fmt.Fprintf(w, "%s %s host=%s auth=%q\n", r.Method, r.URL.Path, r.Host, r.Header.Get("Authorization"))
	for k, v := range r.Header {
		fmt.Fprintf(w, "%s: %s\n", k, v)
	}
}

func TestBrokerSecretNeverReadBack(t *testing.T) {
	const secret = "tok-9f8e7d6c5b4a"
	var got atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Values("Authorization"))
		echoHandler(w, r)
	}))
	defer srv.Close()
	p := tlsPolicy(t, srv)
	h, port := hostPort(t, srv)
	s, err := ParseSecret(h+"=Authorization: Bearer $TOK", func(string) string { return secret })
	if err != nil {
		t.Fatal(err)
	}
	p.Secrets = []Secret{s}
	var recs []Record
	var mu sync.Mutex
	b := NewBroker(p, func(_ context.Context, r Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() })
	g := connect(t, context.Background(), b, h, port, true)
	hp := net.JoinHostPort(h, strconv.Itoa(port))
	// The guest sends its own Authorization (and a path with the secret's
	// name in it): the brokered one replaces it.
	fmt.Fprintf(g.w, "GET /echo HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer guess\r\n\r\n", hp)
	resp, err := http.ReadResponse(g.r, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), secret) || strings.Contains(resp.Header.Get("X-Echo-Auth"), secret) {
		t.Fatalf("the secret reached the guest: %q %v", body, resp.Header)
	}
	if v, _ := got.Load().([]string); len(v) != 1 || v[0] != "Bearer "+secret {
		t.Fatalf("the server got Authorization %q", v)
	}
	if !strings.Contains(string(body), `auth="`+strings.Repeat("*", len("Bearer "+secret))+`"`) {
		t.Fatalf("the echoed header is not masked: %q", body)
	}
	if strings.Contains(string(body), "guess") {
		t.Fatalf("the guest's own Authorization was sent: %q", body)
	}
	g.w.Close()
	g.wait(t)
	mu.Lock()
	defer mu.Unlock()
	if len(recs) != 1 || recs[0].Status != 200 || recs[0].Path != "/echo" || recs[0].Bytes != int64(len(body)) {
		t.Fatalf("records %+v", recs)
	}
	if strings.Contains(fmt.Sprint(recs), secret) {
		t.Fatal("the secret is in the records")
	}
}

func TestMaskAcrossReads(t *testing.T) {
	const secret = "abcdefgh"
	src := strings.Repeat("x", 5) + secret + "yy" + secret[:3]
	// One byte a read: every secret straddles reads.
	m := &maskReader{r: &oneByte{strings.NewReader(src)}, secrets: []string{secret}}
	out, err := io.ReadAll(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "xxxxx********yyabc" {
		t.Fatalf("%q", out)
	}
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(1, len(p))]) }

func TestBrokerRefusesOtherHostAndConnect(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "host=%s\n", r.Host)
	}))
	defer srv.Close()
	h, port := hostPort(t, srv)
	rules, _ := ParseAllow(h + ":" + strconv.Itoa(port))
	b := NewBroker(&Policy{Allow: rules}, nil)
	hp := net.JoinHostPort(h, strconv.Itoa(port))
	cases := []struct{ name, raw, want string }{
		{"CONNECT", "CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n", "method CONNECT is not allowed"},
		{"other Host", "GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n", "a request for evil.example on the connection"},
		{"absolute URI", "GET http://evil.example/ HTTP/1.1\r\nHost: " + hp + "\r\n\r\n", "a request for evil.example on the connection"},
		{"smuggled after a body", "POST / HTTP/1.1\r\nHost: " + hp + "\r\nContent-Length: 0\r\n\r\nGET / HTTP/1.1\r\nHost: evil.example\r\n\r\n", "a request for evil.example on the connection"},
		{"CRLF header injection", "GET / HTTP/1.1\r\nHost: " + hp + "\r\nX-A: 1\r\nHost: evil.example\r\n\r\n", "malformed request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := hits.Load()
			g := connect(t, context.Background(), b, h, port, false)
			io.WriteString(g.w, c.raw)
			go io.Copy(io.Discard, g.r)
			err := g.wait(t)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "wasmbox: network: ") {
				t.Fatalf("Serve: %v, want %q", err, c.want)
			}
			// A first allowed request may pass; the refused one never
			// reaches the server.
			if n := hits.Load() - before; n > 1 || n == 1 && c.name != "smuggled after a body" {
				t.Fatalf("the server got %d requests", n)
			}
		})
	}
}

// rebinder answers a public address first, then loopback: what a DNS
// rebinding attacker's server does.
type rebinder struct{ n atomic.Int32 }

func (r *rebinder) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if r.n.Add(1) == 1 {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

func TestBrokerDNSRebinding(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port := hostPort(t, srv)
	rules, _ := ParseAllow("rebind.example:" + strconv.Itoa(port))
	var dialed []string
	var mu sync.Mutex
	res := &rebinder{}
	b := NewBroker(&Policy{Allow: rules, Resolver: res,
		Dial: func(network, addr string, timeout time.Duration) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, addr)
			mu.Unlock()
			if ap, err := netip.ParseAddrPort(addr); err == nil && ap.Addr().IsLoopback() {
				return net.DialTimeout(network, addr, timeout)
			}
			// Never leave the machine: refuse the public address.
			return nil, errors.New("connection refused (test: not dialing a public address)")
		}}, nil)
	for i := 0; i < 3; i++ {
		_, err := b.Connect(context.Background(), "rebind.example", port, false)
		var e *Error
		if i == 0 {
			// The public answer was checked and dialed (refused by the test).
			if !errors.As(err, &e) || e.Kind != KindConnect {
				t.Fatalf("connect %d: %v", i, err)
			}
			continue
		}
		// Loopback answers are refused: the name is not the address.
		if !errors.As(err, &e) || e.Kind != KindAddress || !strings.Contains(e.Msg, "rebind.example") {
			t.Fatalf("connect %d: %v", i, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatal("the loopback server was reached")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dialed) != 1 || dialed[0] != "93.184.216.34:"+strconv.Itoa(port) {
		t.Fatalf("dialed %v", dialed)
	}
}

func TestBrokerPrivateAddressesNeedExactNames(t *testing.T) {
	rules, _ := ParseAllow("*.corp.example,meta.example,169.254.169.254")
	fixed := resolverFunc(func(host string) []netip.Addr {
		switch host {
		case "a.corp.example":
			return []netip.Addr{netip.MustParseAddr("10.0.0.5")}
		case "meta.example":
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}
		}
		return nil
	})
	dials := 0
	b := NewBroker(&Policy{Allow: rules, Resolver: fixed, Dial: func(network, addr string, timeout time.Duration) (net.Conn, error) {
		dials++
		return nil, errors.New("test: no dial")
	}}, nil)
	for _, h := range []string{"a.corp.example", "meta.example"} {
		_, err := b.Connect(context.Background(), h, 80, false)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindAddress {
			t.Fatalf("%s: %v", h, err)
		}
	}
	if dials != 0 {
		t.Fatalf("%d dials to refused addresses", dials)
	}
	// Named exactly, the metadata address is dialed (and refused by the
	// test's Dial: nothing leaves the machine).
	if _, err := b.Connect(context.Background(), "169.254.169.254", 80, false); err == nil || dials != 1 {
		t.Fatalf("exact address: %v, %d dials", err, dials)
	}
	_, err := b.Connect(context.Background(), "api.example.com", 443, true)
	if err == nil || err.Error() != "wasmbox: network: api.example.com is not in the allowlist" {
		t.Fatalf("denied: %v", err)
	}
}

type resolverFunc func(host string) []netip.Addr

func (f resolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a := f(host); a != nil {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func TestBrokerResponseLimit(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for i := 0; i < 160; i++ { // 10 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	p := tlsPolicy(t, srv)
	p.MaxResponseBytes = 1 << 20
	b := NewBroker(p, nil)
	h, port := hostPort(t, srv)
	g := connect(t, context.Background(), b, h, port, true)
	fmt.Fprintf(g.w, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", net.JoinHostPort(h, strconv.Itoa(port)))
	n, _ := io.Copy(io.Discard, g.r)
	err := g.wait(t)
	if err == nil || !strings.Contains(err.Error(), "the response limit of 1048576 bytes was reached") {
		t.Fatalf("Serve: %v", err)
	}
	if n > 1<<20 {
		t.Fatalf("the guest got %d bytes", n)
	}
}

func TestBrokerSlowResponseEndsWithTheRun(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		select { // trickle nothing more until the client leaves
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	b := NewBroker(tlsPolicy(t, srv), nil)
	h, port := hostPort(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	g := connect(t, ctx, b, h, port, true)
	fmt.Fprintf(g.w, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", net.JoinHostPort(h, strconv.Itoa(port)))
	go io.Copy(io.Discard, g.r)
	cancel() // the run's deadline (or kill) ends the connection
	if err := g.wait(t); err == nil || !strings.Contains(err.Error(), "deadline") && !strings.Contains(err.Error(), "closed") {
		t.Logf("Serve: %v", err)
	}
	// And the slot is free again.
	if len(b.sem) != 0 {
		t.Fatalf("%d connections still counted", len(b.sem))
	}
}

func TestBrokerConnectionLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	h, port := hostPort(t, srv)
	rules, _ := ParseAllow(h + ":" + strconv.Itoa(port))
	b := NewBroker(&Policy{Allow: rules, MaxConns: 16}, nil)
	var wg sync.WaitGroup
	var ok, limited atomic.Int32
	conns := make(chan *Conn, 1000)
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := b.Connect(context.Background(), h, port, false)
			var e *Error
			switch {
			case err == nil:
				ok.Add(1)
				conns <- c
			case errors.As(err, &e) && e.Kind == KindLimit && e.Msg == "wasmbox: network: too many connections at once (the limit is 16)":
				limited.Add(1)
			default:
				t.Errorf("connect: %v", err)
			}
		}()
	}
	wg.Wait()
	close(conns)
	if ok.Load() != 16 || limited.Load() != 984 {
		t.Fatalf("%d connected, %d refused", ok.Load(), limited.Load())
	}
	for c := range conns {
		c.Close()
	}
	if c, err := b.Connect(context.Background(), h, port, false); err != nil {
		t.Fatalf("after closing: %v", err)
	} else {
		c.Close()
	}
}

func TestBrokerTLSVerified(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	p := tlsPolicy(t, srv)
	p.RootCAs = x509.NewCertPool() // not the server's CA
	b := NewBroker(p, nil)
	h, port := hostPort(t, srv)
	_, err := b.Connect(context.Background(), h, port, true)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindTLS || !strings.Contains(e.Msg, "certificate") {
		t.Fatalf("%v", err)
	}
}

// A server that gzips what it echoes, whatever the request asked: the
// guest must not find the secret after decompressing.
func TestBrokerSecretNotReadBackCompressed(t *testing.T) {
	const secret = "zip-secret-4c3b2a190817"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		fmt.Fprintf(zw, "auth=%s ae=%s\n", r.Header.Get("Authorization"), r.Header.Get("Accept-Encoding"))
		zw.Close()
	}))
	defer srv.Close()
	p := tlsPolicy(t, srv)
	h, port := hostPort(t, srv)
	s, _ := ParseSecret(h+"=Authorization: $T", func(string) string { return secret })
	p.Secrets = []Secret{s}
	b := NewBroker(p, nil)
	g := connect(t, context.Background(), b, h, port, true)
	fmt.Fprintf(g.w, "GET / HTTP/1.1\r\nHost: %s\r\nAccept-Encoding: gzip\r\n\r\n", net.JoinHostPort(h, strconv.Itoa(port)))
	resp, err := http.ReadResponse(g.r, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	body := raw
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(zr)
	}
	if bytes.Contains(body, []byte(secret)) {
		t.Fatalf("the secret came back through gzip: %q", body)
	}
	if string(body) != "auth="+strings.Repeat("*", len(secret))+" ae=identity\n" {
		t.Fatalf("body %q", body)
	}
	// The connection goes on after the re-framed (chunked) response.
	fmt.Fprintf(g.w, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", net.JoinHostPort(h, strconv.Itoa(port)))
	resp, err = http.ReadResponse(g.r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
}

func TestBrokerResponseHeaderLimit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		// The request is read first: a server that closes with it unread
		// resets the connection, which can reach the broker before the
		// header it had sent (the test failed so, once, with "bad
		// response: unexpected EOF"). Then the header never ends: the
		// writes stop when the broker gives up and closes.
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Pad: " + strings.Repeat("a", 1000) + "\r\n"
		for {
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	rules, _ := ParseAllow("127.0.0.1:" + strconv.Itoa(port))
	b := NewBroker(&Policy{Allow: rules}, nil)
	g := connect(t, context.Background(), b, "127.0.0.1", port, false)
	fmt.Fprintf(g.w, "GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", port)
	go io.Copy(io.Discard, g.r)
	if err := g.wait(t); err == nil || !strings.Contains(err.Error(), "a response header over 1048576 bytes") {
		t.Fatalf("Serve: %v", err)
	}
}

func TestBrokerHostIsOneLine(t *testing.T) {
	b := NewBroker(nil, nil)
	_, err := b.Connect(context.Background(), "evil\nwasmbox: network: forged", 443, true)
	if err == nil || strings.Count(err.Error(), "\n") != 0 || !strings.HasSuffix(err.Error(), "is not in the allowlist") {
		t.Fatalf("%q", err)
	}
}

// Over plain HTTP the brokered header is not sent (nor the guest's copy).
func TestBrokerSecretOnlyOverTLS(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Values("Authorization"))
	}))
	defer srv.Close()
	h, port := hostPort(t, srv)
	rules, _ := ParseAllow(h + ":" + strconv.Itoa(port))
	s, _ := ParseSecret(h+"=Authorization: $T", func(string) string { return "plain-secret-value" })
	b := NewBroker(&Policy{Allow: rules, Secrets: []Secret{s}}, nil)
	g := connect(t, context.Background(), b, h, port, false)
	fmt.Fprintf(g.w, "GET / HTTP/1.1\r\nHost: %s\r\nAuthorization: mine\r\n\r\n", net.JoinHostPort(h, strconv.Itoa(port)))
	resp, err := http.ReadResponse(g.r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	if v, _ := got.Load().([]string); len(v) != 0 {
		t.Fatalf("the server got Authorization %q over plain HTTP", v)
	}
}

// TestBrokerCheckDialsNothing: Check applies the allowlist, the host's
// resolution and the refused addresses, and opens no connection.
func TestBrokerCheckDialsNothing(t *testing.T) {
	rules, _ := ParseAllow("ok.example:8443,*.corp.example")
	fixed := resolverFunc(func(host string) []netip.Addr {
		switch host {
		case "ok.example":
			return []netip.Addr{netip.MustParseAddr("203.0.113.9")}
		case "a.corp.example":
			return []netip.Addr{netip.MustParseAddr("10.0.0.5")}
		}
		return nil
	})
	var dials atomic.Int32
	var recs atomic.Int32
	b := NewBroker(&Policy{Allow: rules, Resolver: fixed, Dial: func(network, addr string, timeout time.Duration) (net.Conn, error) {
		dials.Add(1)
		return nil, errors.New("test: no dial")
	}}, func(ctx context.Context, r Record) { recs.Add(1) })
	ctx := context.Background()
	if err := b.Check(ctx, "OK.example.", 8443); err != nil {
		t.Fatalf("check of an allowed host: %v", err)
	}
	cases := []struct {
		host string
		port int
		kind Kind
		msg  string
	}{
		{"ok.example", 443, KindDenied, "wasmbox: network: ok.example:443 is not in the allowlist"},
		{"denied.example", 443, KindDenied, "wasmbox: network: denied.example:443 is not in the allowlist"},
		{"a.corp.example", 443, KindAddress, "wasmbox: network: a.corp.example resolves to 10.0.0.5, a loopback, private, link-local or metadata address that the allowlist does not name"},
		{"b.corp.example", 443, KindResolve, "wasmbox: network: could not resolve b.corp.example"},
		{"bad\nhost", 443, KindDenied, `wasmbox: network: "bad\nhost":443 is not in the allowlist`},
	}
	for _, c := range cases {
		err := b.Check(ctx, c.host, c.port)
		var e *Error
		if !errors.As(err, &e) || e.Kind != c.kind || e.Msg != c.msg {
			t.Errorf("Check(%q, %d) = %v, want kind %d %q", c.host, c.port, err, c.kind, c.msg)
		}
	}
	if dials.Load() != 0 {
		t.Fatalf("Check dialed %d times", dials.Load())
	}
	if recs.Load() != int32(len(cases)) {
		t.Fatalf("%d records, want one per refusal (%d)", recs.Load(), len(cases))
	}
}
