package netpolicy

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is the class of a failed connect, which the guest maps to its own
// error (curl's exit code).
type Kind uint32

// Kinds of Error.
const (
	KindDenied   Kind = 1 // the host is not in the allowlist (curl: 6)
	KindResolve  Kind = 2 // the name did not resolve (curl: 6)
	KindAddress  Kind = 3 // resolved only to addresses refused by policy (curl: 7)
	KindConnect  Kind = 4 // the TCP connect failed (curl: 7)
	KindTLS      Kind = 5 // the TLS handshake or verification failed (curl: 35)
	KindTimeout  Kind = 6 // the run's deadline or the connect timeout (curl: 28)
	KindLimit    Kind = 7 // too many connections at once (curl: 7)
	KindRequest  Kind = 8 // a request refused on an open connection
	KindResponse Kind = 9 // the response limit, or a malformed response
)

// Error is a refusal or failure of the network boundary; Msg is the one
// line the guest prints ("wasmbox: network: ...").
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: "wasmbox: network: " + fmt.Sprintf(format, args...)}
}

// Record is what the host keeps of one request (or of one refused
// connect): secrets masked, the query left out.
type Record struct {
	Method string `json:"method"`
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Path   string `json:"path"`
	Status int    `json:"status"`
	// Bytes is the response body bytes passed to the guest.
	Bytes  int64  `json:"bytes"`
	Denied bool   `json:"denied,omitempty"`
	Error  string `json:"error,omitempty"`
	// Start and Duration bound the request (not in JSON: the audit
	// entry and the span carry them).
	Start    time.Time     `json:"-"`
	Duration time.Duration `json:"-"`
}

// Broker applies a Policy to the connections of one run. It is safe for
// concurrent use.
type Broker struct {
	p        *Policy
	sem      chan struct{}
	maxBytes int64
	used     atomic.Int64
	redact   []string
	onRecord func(context.Context, Record)

	mu      sync.Mutex
	records []Record
}

// MaxRecords bounds the records a Broker keeps for Records (the audit
// hook sees them all).
const MaxRecords = 1000

// NewBroker returns a broker of p (nil: nothing allowed). onRecord, when
// set, is called for every request and refused connect, with the context
// of the connect (the run's: for its span and audit log).
func NewBroker(p *Policy, onRecord func(context.Context, Record)) *Broker {
	if p == nil {
		p = &Policy{}
	}
	b := &Broker{p: p, onRecord: onRecord}
	n := p.MaxConns
	if n <= 0 {
		n = DefaultMaxConns
	}
	b.sem = make(chan struct{}, n)
	b.maxBytes = p.MaxResponseBytes
	if b.maxBytes <= 0 {
		b.maxBytes = DefaultMaxResponseBytes
	}
	for _, s := range p.Secrets {
		b.redact = append(b.redact, s.Value)
		b.redact = append(b.redact, s.Redact...)
	}
	return b
}

// Policy is the broker's policy.
func (b *Broker) Policy() *Policy { return b.p }

// Records returns the records so far (at most MaxRecords).
func (b *Broker) Records() []Record {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Record(nil), b.records...)
}

// Mask replaces every secret value in s by asterisks.
func (b *Broker) Mask(s string) string {
	for _, v := range b.redact {
		if v != "" && strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, strings.Repeat("*", len(v)))
		}
	}
	return s
}

func (b *Broker) record(ctx context.Context, r Record) {
	r.Path = b.Mask(r.Path)
	r.Error = b.Mask(r.Error)
	b.mu.Lock()
	if len(b.records) < MaxRecords {
		b.records = append(b.records, r)
	}
	b.mu.Unlock()
	if b.onRecord != nil {
		b.onRecord(ctx, r)
	}
}

// validHost reports whether h has only the bytes of a name or an address
// (so that a message or record naming it stays one line).
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' || c == ':' || c == '%') {
			return false
		}
	}
	return true
}

// display is host, or host:port when port is not the scheme's default.
func display(host string, port int, useTLS bool) string {
	if (useTLS && port == 443) || (!useTLS && port == 80) {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// Connect opens a connection to host:port for the guest, as the policy
// allows, TLS done here when useTLS. The connection lives until Serve
// returns; ctx (the run's) bounds it.
func (b *Broker) Connect(ctx context.Context, host string, port int, useTLS bool) (*Conn, error) {
	start := time.Now()
	host, name, rule, e := b.match(host, port, useTLS)
	if e != nil {
		return b.fail(ctx, host, port, start, e)
	}
	select {
	case b.sem <- struct{}{}:
	default:
		return b.fail(ctx, host, port, start, errorf(KindLimit, "too many connections at once (the limit is %d)", cap(b.sem)))
	}
	release := sync.OnceFunc(func() { <-b.sem })
	conn, err := b.dial(ctx, host, port, rule)
	if err == nil && useTLS {
		conn, err = b.handshake(ctx, conn, host)
	}
	if err != nil {
		release()
		var e *Error
		if !errors.As(err, &e) {
			e = errorf(KindConnect, "%s: %v", name, err)
		}
		return b.fail(ctx, host, port, start, e)
	}
	c := &Conn{b: b, conn: conn, host: host, port: port, tls: useTLS, release: release, ctx: ctx}
	c.stop = context.AfterFunc(ctx, func() { conn.Close() })
	return c, nil
}

// Check does what Connect does before it dials: the allowlist, the name
// resolved here and the addresses refused. It opens no connection (a
// client that decides on TLS after its connect, as Python's sockets do,
// asks for Check first and Connect later). Connect checks again: a later
// answer of the resolver is checked anew. A refusal is recorded as
// Connect's is.
func (b *Broker) Check(ctx context.Context, host string, port int) error {
	start := time.Now()
	host, _, rule, e := b.match(host, port, false)
	if e == nil {
		_, e = b.resolve(ctx, host, port, rule)
	}
	if e != nil {
		_, err := b.fail(ctx, host, port, start, e)
		return err
	}
	return nil
}

func (b *Broker) fail(ctx context.Context, host string, port int, start time.Time, e *Error) (*Conn, error) {
	b.record(ctx, Record{Method: "CONNECT", Host: host, Port: port, Denied: e.Kind == KindDenied || e.Kind == KindAddress || e.Kind == KindLimit,
		Error: e.Msg, Start: start, Duration: time.Since(start)})
	return nil, e
}

// match normalizes host and finds the rule of the allowlist that allows
// host:port, or says why none does.
func (b *Broker) match(host string, port int, useTLS bool) (string, string, Rule, *Error) {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		host = a.Unmap().String()
	}
	if !validHost(host) {
		host = strconv.Quote(host)
	}
	name := display(host, port, useTLS)
	if host == "" || port < 1 || port > 65535 || !validHost(host) {
		return host, name, Rule{}, errorf(KindDenied, "%s is not in the allowlist", name)
	}
	rule, ok := b.p.Match(host, port)
	if !ok {
		return host, name, Rule{}, errorf(KindDenied, "%s is not in the allowlist", name)
	}
	return host, name, rule, nil
}

// resolve returns the addresses of host that the rule lets the guest
// reach: resolved here, loopback, private, link-local and metadata
// addresses left out unless the rule names the address exactly.
func (b *Broker) resolve(ctx context.Context, host string, port int, rule Rule) ([]netip.Addr, *Error) {
	name := host
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		var res Resolver = net.DefaultResolver
		if b.p.Resolver != nil {
			res = b.p.Resolver
		}
		rctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
		addrs, err = res.LookupNetIP(rctx, "ip", host)
		cancel()
		if ctx.Err() != nil {
			return nil, errorf(KindTimeout, "resolving %s: the run's deadline passed", name)
		}
		if err != nil || len(addrs) == 0 {
			return nil, errorf(KindResolve, "could not resolve %s", name)
		}
	}
	var ok []netip.Addr
	for _, a := range addrs {
		a = a.Unmap()
		if Refused(a) && (rule.Suffix || rule.Host != a.String()) {
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		return nil, errorf(KindAddress, "%s resolves to %s, a loopback, private, link-local or metadata address that the allowlist does not name", name, addrs[0].Unmap())
	}
	return ok, nil
}

func (b *Broker) dial(ctx context.Context, host string, port int, rule Rule) (net.Conn, error) {
	name := host
	// The addresses checked here are the ones dialed: a second lookup
	// (DNS rebinding) never happens.
	ok, rerr := b.resolve(ctx, host, port, rule)
	if rerr != nil {
		return nil, rerr
	}
	dial := b.p.Dial
	if dial == nil {
		dial = func(network, addr string, timeout time.Duration) (net.Conn, error) {
			d := net.Dialer{Timeout: timeout}
			dctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return d.DialContext(dctx, network, addr)
		}
	}
	var last error
	for _, a := range ok {
		timeout := ConnectTimeout
		if dl, has := ctx.Deadline(); has {
			timeout = min(timeout, time.Until(dl))
		}
		if timeout <= 0 || ctx.Err() != nil {
			return nil, errorf(KindTimeout, "connecting to %s: the run's deadline passed", name)
		}
		c, err := dial("tcp", netip.AddrPortFrom(a, uint16(port)).String(), timeout)
		if err == nil {
			return c, nil
		}
		last = err
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			last = errorf(KindTimeout, "connecting to %s: timed out", name)
		}
	}
	var e *Error
	if errors.As(last, &e) {
		return nil, e
	}
	return nil, errorf(KindConnect, "could not connect to %s port %d: %v", name, port, unwrapOp(last))
}

// unwrapOp drops net.OpError's "dial tcp ADDR:" prefix.
func unwrapOp(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}

func (b *Broker) handshake(ctx context.Context, conn net.Conn, host string) (net.Conn, error) {
	cfg := &tls.Config{
		ServerName: host,
		RootCAs:    b.p.RootCAs,
		// The broker reads the requests: HTTP/1.1 only.
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	}
	tc := tls.Client(conn, cfg)
	hctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		conn.Close()
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			return nil, errorf(KindTimeout, "TLS with %s: timed out", host)
		}
		return nil, errorf(KindTLS, "TLS with %s: %v", host, err)
	}
	return tc, nil
}

// Conn is one connection of the guest, opened by Connect. Serve passes
// the guest's HTTP/1.1 requests to it and its responses back.
type Conn struct {
	b       *Broker
	conn    net.Conn
	host    string
	port    int
	tls     bool
	release func()
	stop    func() bool
	ctx     context.Context

	closeOnce sync.Once
	closed    atomic.Bool // Close ran (the guest left, or the run ended)
}

// Close closes the connection (Serve then returns).
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.stop()
		c.conn.Close()
		c.release()
	})
	return nil
}

// limitReader fails once the broker's response bytes pass its limit.
type limitReader struct {
	r io.Reader
	b *Broker
}

var errResponseLimit = errors.New("response limit")

func (l *limitReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 && l.b.used.Add(int64(n)) > l.b.maxBytes {
		return 0, errResponseLimit
	}
	return n, err
}

// headerLimit fails a request header past MaxRequestHeader bytes.
type headerLimit struct {
	r    io.Reader
	left int64 // < 0: no limit (reading a body)
	rerr error // the last error of r
}

var errHeaderLimit = errors.New("request header too large")

func (h *headerLimit) Read(p []byte) (int, error) {
	if h.left >= 0 {
		if h.left == 0 {
			return 0, errHeaderLimit
		}
		if int64(len(p)) > h.left {
			p = p[:h.left]
		}
	}
	n, err := h.r.Read(p)
	if err != nil {
		h.rerr = err
	}
	if h.left >= 0 {
		h.left -= int64(n)
	}
	return n, err
}

// Serve reads the guest's requests from in, sends them, and writes the
// responses to out, until the guest closes in, the server closes, a
// request is refused, or the run ends. It returns nil at a clean end,
// else the Error the guest is told. It closes the connection.
func (c *Conn) Serve(in io.Reader, out io.Writer) error {
	defer c.Close()
	hl := &headerLimit{r: in}
	gr := bufio.NewReaderSize(hl, 64<<10)
	sl := &headerLimit{r: &limitReader{r: c.conn, b: c.b}, left: -1}
	sr := bufio.NewReaderSize(sl, 64<<10)
	scheme := "http"
	if c.tls {
		scheme = "https"
	}
	for {
		hl.left = MaxRequestHeader
		req, err := http.ReadRequest(gr)
		hl.left = -1
		if err != nil {
			if c.ctx.Err() != nil || errors.Is(err, io.EOF) && gr.Buffered() == 0 ||
				hl.rerr != nil && hl.rerr != errHeaderLimit && gr.Buffered() == 0 {
				// The guest closed the connection (or the run ended)
				// between requests.
				return nil
			}
			e := errorf(KindRequest, "%s: malformed request: %v", display(c.host, c.port, c.tls), err)
			c.b.record(c.ctx, Record{Host: c.host, Port: c.port, Denied: true, Error: e.Msg, Start: time.Now()})
			return e
		}
		start := time.Now()
		rec := Record{Method: req.Method, Host: c.host, Port: c.port, Path: req.URL.Path, Start: start}
		if e := c.check(req, scheme); e != nil {
			rec.Denied, rec.Error, rec.Duration = true, e.Msg, time.Since(start)
			c.b.record(c.ctx, rec)
			return e
		}
		for _, s := range c.b.p.Secrets {
			if s.applies(c.host) {
				req.Header.Del(s.Header)
			}
		}
		for _, s := range c.b.p.Secrets {
			// Over TLS only: a secret never crosses the network in clear.
			if c.tls && s.applies(c.host) {
				req.Header.Add(s.Header, s.Value)
			}
		}
		// The broker reads the responses: no protocol switch.
		req.Header.Del("Upgrade")
		// Request trailers are dropped: they would pass unchecked.
		req.Header.Del("Trailer")
		req.Trailer = nil
		secretHost := c.secretHost()
		if secretHost {
			// The secret is masked in what comes back: it must come back
			// as it was sent, not compressed (see decode).
			req.Header.Set("Accept-Encoding", "identity")
		}
		req.Header.Del("Proxy-Authorization")
		req.Header.Del("Proxy-Connection")
		req.RequestURI = ""
		if req.URL.IsAbs() {
			u := *req.URL
			u.Scheme, u.Host = "", ""
			req.URL = &u
		}
		if err := req.Write(c.conn); err != nil {
			return c.fail(rec, KindConnect, "sending the request to %s: %v", display(c.host, c.port, c.tls), unwrapOp(err))
		}
		resp, err := c.readResponse(sl, sr, req)
		for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			if err = c.writeHead(resp, out); err != nil {
				return nil // the guest left
			}
			resp, err = c.readResponse(sl, sr, req)
		}
		if err != nil {
			if errors.Is(err, errResponseLimit) {
				return c.fail(rec, KindResponse, "the response limit of %d bytes was reached", c.b.maxBytes)
			}
			if c.ctx.Err() != nil {
				return c.fail(rec, KindTimeout, "%s: the run's deadline passed", display(c.host, c.port, c.tls))
			}
			return c.fail(rec, KindResponse, "%s: bad response: %v", display(c.host, c.port, c.tls), unwrapOp(err))
		}
		rec.Status = resp.StatusCode
		if resp.StatusCode == http.StatusSwitchingProtocols {
			resp.Body.Close()
			return c.fail(rec, KindResponse, "%s: switching protocols is not allowed", display(c.host, c.port, c.tls))
		}
		if secretHost {
			if err := c.decode(resp); err != nil {
				resp.Body.Close()
				return c.fail(rec, KindResponse, "%s", err)
			}
		}
		c.maskHeader(resp.Header)
		resp.Status = c.b.Mask(resp.Status)
		// Trailers are dropped: they would pass unmasked.
		resp.Trailer = nil
		if resp.ContentLength < 0 && len(resp.TransferEncoding) == 0 && req.Method != "HEAD" {
			// A body that ends when the server closes: the guest's
			// connection ends with it.
			resp.Close = true
		}
		body := &maskReader{r: resp.Body, secrets: c.b.redact}
		resp.Body = io.NopCloser(body)
		werr := resp.Write(out)
		rec.Bytes, rec.Duration = body.n, time.Since(start)
		if werr != nil {
			switch {
			case c.closed.Load():
				rec.Error = "the connection was closed before the response was read (the run ended)"
				c.b.record(c.ctx, rec)
				return nil
			case errors.Is(werr, errResponseLimit):
				return c.fail(rec, KindResponse, "the response limit of %d bytes was reached", c.b.maxBytes)
			case c.ctx.Err() != nil:
				return c.fail(rec, KindTimeout, "%s: the run's deadline passed", display(c.host, c.port, c.tls))
			case body.err != nil:
				return c.fail(rec, KindResponse, "%s: reading the response: %v", display(c.host, c.port, c.tls), unwrapOp(body.err))
			}
			// The guest stopped reading.
			rec.Error = "the guest closed the connection"
			c.b.record(c.ctx, rec)
			return nil
		}
		c.b.record(c.ctx, rec)
		if resp.Close || req.Close {
			return nil
		}
	}
}

// MaxResponseHeader bounds the header of one response.
const MaxResponseHeader = 1 << 20

func (c *Conn) readResponse(sl *headerLimit, sr *bufio.Reader, req *http.Request) (*http.Response, error) {
	sl.left = MaxResponseHeader
	resp, err := http.ReadResponse(sr, req)
	sl.left = -1
	if errors.Is(err, errHeaderLimit) {
		return nil, fmt.Errorf("a response header over %d bytes", MaxResponseHeader)
	}
	return resp, err
}

// secretHost reports whether a brokered secret is sent to the
// connection's host.
func (c *Conn) secretHost() bool {
	for _, s := range c.b.p.Secrets {
		if s.applies(c.host) {
			return true
		}
	}
	return false
}

// decode undoes a gzip Content-Encoding host-side, so that the secret is
// masked in the bytes the guest decodes (a server that compresses an
// echoed header would otherwise pass it through); other encodings are
// refused on a host that gets a secret.
func (c *Conn) decode(resp *http.Response) error {
	ce := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	switch ce {
	case "", "identity":
		return nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return fmt.Errorf("%s: bad gzip response: %v", display(c.host, c.port, c.tls), err)
		}
		body := resp.Body
		resp.Body = struct {
			io.Reader
			io.Closer
		}{zr, body}
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.TransferEncoding = []string{"chunked"}
		return nil
	}
	return fmt.Errorf("%s answered with Content-Encoding %q, which the host cannot check for the brokered secret", display(c.host, c.port, c.tls), ce)
}

func (c *Conn) fail(rec Record, k Kind, format string, args ...any) error {
	e := errorf(k, format, args...)
	rec.Error = e.Msg
	if rec.Duration == 0 {
		rec.Duration = time.Since(rec.Start)
	}
	c.b.record(c.ctx, rec)
	return e
}

func (c *Conn) writeHead(resp *http.Response, out io.Writer) error {
	c.maskHeader(resp.Header)
	resp.Status = c.b.Mask(resp.Status)
	return resp.Write(out)
}

func (c *Conn) maskHeader(h http.Header) {
	for k, vs := range h {
		for i, v := range vs {
			vs[i] = c.b.Mask(v)
		}
		if m := c.b.Mask(k); m != k {
			h[m] = vs
			delete(h, k)
		}
	}
}

// check refuses a request the connection may not carry.
func (c *Conn) check(req *http.Request, scheme string) *Error {
	name := display(c.host, c.port, c.tls)
	if !c.b.p.MethodAllowed(req.Method) {
		return errorf(KindRequest, "method %s is not allowed", req.Method)
	}
	if req.URL.IsAbs() {
		if !strings.EqualFold(req.URL.Scheme, scheme) || !c.sameHost(req.URL.Host) {
			return errorf(KindRequest, "a request for %s on the connection to %s is not allowed", req.URL.Host, name)
		}
	}
	if !c.sameHost(req.Host) {
		return errorf(KindRequest, "a request for %s on the connection to %s is not allowed", req.Host, name)
	}
	return nil
}

// sameHost reports whether a Host header (host or host:port) names the
// connection's host and port.
func (c *Conn) sameHost(hp string) bool {
	host, port := hp, ""
	if h, p, err := net.SplitHostPort(hp); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(hp, "[") && strings.HasSuffix(hp, "]") {
		host = hp[1 : len(hp)-1]
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	}
	if host != c.host {
		return false
	}
	if port == "" {
		return (c.tls && c.port == 443) || (!c.tls && c.port == 80)
	}
	return port == strconv.Itoa(c.port)
}

// maskReader masks secrets in a stream, each by as many asterisks (the
// length, and so Content-Length, is kept). It holds back the bytes that
// could start a secret until the bytes after them arrive.
type maskReader struct {
	r       io.Reader
	secrets []string
	buf     []byte // read, not yet given
	n       int64
	eof     bool
	err     error // of r, other than EOF
}

func (m *maskReader) Read(p []byte) (int, error) {
	hold := 0
	for _, s := range m.secrets {
		hold = max(hold, len(s)-1)
	}
	for {
		if len(m.buf) > hold || (m.eof && len(m.buf) > 0) {
			mask(m.buf, m.secrets)
			give := len(m.buf)
			if !m.eof {
				give -= hold
			}
			n := copy(p, m.buf[:give])
			m.buf = m.buf[n:]
			m.n += int64(n)
			return n, nil
		}
		if m.eof {
			if m.err != nil {
				return 0, m.err
			}
			return 0, io.EOF
		}
		var tmp [32 << 10]byte
		n, err := m.r.Read(tmp[:])
		m.buf = append(m.buf, tmp[:n]...)
		if err != nil {
			m.eof = true
			if err != io.EOF {
				m.err = err
			}
		}
	}
}

func mask(b []byte, secrets []string) {
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for i := 0; ; {
			j := strings.Index(string(b[i:]), s)
			if j < 0 {
				break
			}
			for k := i + j; k < i+j+len(s); k++ {
				b[k] = '*'
			}
			i += j + len(s)
		}
	}
}
