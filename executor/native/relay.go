package native

// git over HTTP(S) in the OS jail: the network relay.
//
// The jail keeps its empty network namespace (a loopback only). When a
// request carries a network broker (Request.Network: the sandbox's
// --allow-net policy) and runs git clone, fetch, push or pull, the lane
//
//   - starts bwrap held (--block-fd) once its namespaces exist;
//   - opens, from the host process, a listening socket on 127.0.0.1:80
//     inside the jail's network namespace (a thread of the host enters
//     the namespace with setns, creates the socket, and leaves: the socket
//     stays in the jail's namespace, its accept loop and everything behind
//     it stay in the host process), then lets the command start;
//   - gives git command-line configuration that rewrites every https://
//     URL to http://127.0.0.1/https/ (and http:// to .../http/), so git
//     speaks plain HTTP/1.1 to the relay, and nothing else can be reached
//     from the jail;
//   - serves each request on the host with the broker (package
//     netpolicy): the allowlist, host-side DNS and dialing of the checked
//     address, refusal of loopback, private, link-local and metadata
//     addresses not named exactly, TLS done by the host (no CA is trusted
//     in the jail), the methods, the limits (response bytes, connections
//     at once, the run's deadline), the brokered secret headers added here
//     and masked in what comes back, and a record (audit entry, span,
//     Result.Network) of every request;
//   - rewrites a redirect's Location into the relay's form, so that git
//     follows it through the relay and the next hop is checked again.
//
// A refusal is a 403 (a 502 or 504 for a failure) with a text/plain body
// of one line, which git prints as "remote: wasmbox: network: ..."
// before its own "fatal: unable to access ..." (exit code 128).
//
// Nothing of this is inside the jail: no socket file, no relay process,
// no certificate, no secret. Entering another network namespace takes
// CAP_SYS_ADMIN (wasmbox running as root); without it the network
// commands fail with a clear error and nothing else changes.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wasmbox/wasmbox/netpolicy"
)

// relayAddr is where the relay listens in the jail's network namespace
// (empty but for the loopback, so the port is free; below 1024, so no
// process of the jail could take it), and relayBase the URL git's
// rewritten URLs start with.
const (
	relayAddr = "127.0.0.1:80"
	relayBase = "http://127.0.0.1/"
)

// MaxRelayConns bounds the connections git holds to the relay at once
// (the broker bounds the connections upstream).
const MaxRelayConns = 16

// gitRelayConfig is the command-line configuration that sends git's
// http(s) URLs to the relay.
var gitRelayConfig = [][2]string{
	{"url." + relayBase + "https/.insteadOf", "https://"},
	{"url." + relayBase + "http/.insteadOf", "http://"},
	// The relay is reached directly, never through a proxy.
	{"http.proxy", ""},
}

// relay serves git's HTTP requests in the jail's network namespace from
// the host.
type relay struct {
	b      *netpolicy.Broker
	ctx    context.Context
	cancel context.CancelFunc
	ln     *limitListener
	srv    *http.Server
	wg     sync.WaitGroup // the accept loop, the connections, the request writers
}

// startRelay opens the relay in the network namespace of the process
// initPid (a child of parentPid, bwrap) and serves it until close. ctx
// (the run's) bounds every request.
func startRelay(ctx context.Context, b *netpolicy.Broker, initPid, parentPid int) (*relay, error) {
	ln, err := listenInNetns(initPid, parentPid, relayAddr)
	if err != nil {
		return nil, err
	}
	rl := &relay{b: b}
	rl.ctx, rl.cancel = context.WithCancel(ctx)
	rl.ln = &limitListener{Listener: ln, sem: make(chan struct{}, MaxRelayConns), done: make(chan struct{})}
	rl.srv = &http.Server{
		Handler:           rl,
		ReadHeaderTimeout: netpolicy.ConnectTimeout,
		MaxHeaderBytes:    netpolicy.MaxRequestHeader,
		ErrorLog:          log.New(io.Discard, "", 0),
		BaseContext:       func(net.Listener) context.Context { return rl.ctx },
		ConnState: func(_ net.Conn, s http.ConnState) {
			// StateNew is reported by the accept loop before the
			// connection's goroutine starts; StateClosed and
			// StateHijacked by that goroutine as it ends.
			switch s {
			case http.StateNew:
				rl.wg.Add(1)
			case http.StateClosed, http.StateHijacked:
				rl.wg.Done()
			}
		},
	}
	rl.wg.Add(1)
	go func() {
		defer rl.wg.Done()
		rl.srv.Serve(rl.ln)
	}()
	return rl, nil
}

// close ends the relay: the upstream connections, git's connections, the
// listener; it returns once every goroutine of the relay has.
func (rl *relay) close() {
	rl.cancel()
	close(rl.ln.done)
	rl.srv.Close()
	rl.wg.Wait()
}

// relayTarget is the upstream of a request git sent to the relay.
type relayTarget struct {
	tls      bool
	host     string // for the broker
	port     int
	hostport string // the Host header
	uri      string // path and query
}

// parseRelayTarget reads "/https/HOST[:PORT]/PATH?QUERY" (or /http/...).
func parseRelayTarget(uri string) (relayTarget, error) {
	var t relayTarget
	rest, ok := strings.CutPrefix(uri, "/")
	scheme, rest, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || (scheme != "https" && scheme != "http") {
		return t, fmt.Errorf("the relay serves only %shttps/HOST/PATH (an https:// URL rewritten by git)", relayBase)
	}
	i := strings.IndexAny(rest, "/?")
	if i < 0 {
		i = len(rest)
	}
	hostport, path := rest[:i], rest[i:]
	u, err := url.Parse(scheme + "://" + hostport + "/")
	if err != nil || u.Host == "" || u.User != nil || u.Host != hostport {
		return t, fmt.Errorf("bad host %q", hostport)
	}
	t.tls = scheme == "https"
	t.host, t.hostport = u.Hostname(), u.Host
	t.port = 80
	if t.tls {
		t.port = 443
	}
	if p := u.Port(); p != "" {
		if t.port, err = strconv.Atoi(p); err != nil || t.port < 1 || t.port > 65535 {
			return t, fmt.Errorf("bad port in %q", hostport)
		}
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	t.uri = path
	return t, nil
}

func (t relayTarget) scheme() string {
	if t.tls {
		return "https"
	}
	return "http"
}

// hopHeaders are the headers of one hop, never passed on.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Expect"}

// errServeEnded ends the request writer once the broker stopped reading.
var errServeEnded = errors.New("the upstream connection ended")

// ServeHTTP relays one request of git: a connection through the broker,
// the request re-framed for the upstream host, the response back.
func (rl *relay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t, err := parseRelayTarget(r.RequestURI)
	if err != nil {
		rl.fail(w, &netpolicy.Error{Kind: netpolicy.KindRequest, Msg: "wasmbox: network: " + err.Error()})
		return
	}
	conn, err := rl.b.Connect(rl.ctx, t.host, t.port, t.tls)
	if err != nil {
		rl.fail(w, err)
		return
	}
	out := r.Clone(rl.ctx)
	out.RequestURI = ""
	out.URL = &url.URL{Opaque: t.uri}
	if u, err := url.ParseRequestURI(t.uri); err == nil {
		out.URL = u
	}
	out.Host = t.hostport
	out.Close = true // one request per upstream connection: Serve returns after it
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := conn.Serve(reqR, respW)
		reqR.CloseWithError(errServeEnded)
		respW.Close()
		served <- err
	}()
	// The writer may wait on git's request body after the handler
	// returns (a refused request): close waits for it once git's
	// connections are closed.
	rl.wg.Add(1)
	go func() {
		defer rl.wg.Done()
		reqW.CloseWithError(out.Write(reqW))
	}()
	defer func() {
		conn.Close()
		respR.Close()
		reqR.Close()
		<-served
	}()
	br := bufio.NewReader(respR)
	resp, err := http.ReadResponse(br, out)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 {
		resp, err = http.ReadResponse(br, out)
	}
	if err != nil {
		respR.Close()
		conn.Close()
		serr := <-served
		served <- serr
		if serr == nil {
			serr = &netpolicy.Error{Kind: netpolicy.KindResponse, Msg: fmt.Sprintf("wasmbox: network: %s://%s: no response", t.scheme(), t.hostport)}
		}
		rl.fail(w, serr)
		return
	}
	defer resp.Body.Close()
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		h.Set("Location", relayLocation(t, loc))
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil {
		// A cut response must not look whole to git.
		panic(http.ErrAbortHandler)
	}
}

// relayLocation rewrites a redirect's target (absolute or relative to the
// request's URL) into the relay's form, so that git follows it through
// the relay and the broker checks the new host.
func relayLocation(t relayTarget, loc string) string {
	base, err := url.Parse(t.scheme() + "://" + t.hostport + t.uri)
	if err != nil {
		return loc
	}
	u, err := base.Parse(loc)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return loc
	}
	return relayBase + u.Scheme + "/" + u.Host + u.RequestURI()
}

// fail answers a refused or failed request with the broker's one-line
// message, which git prints as "remote: ...".
func (rl *relay) fail(w http.ResponseWriter, err error) {
	code, msg := http.StatusBadGateway, err.Error()
	var e *netpolicy.Error
	if errors.As(err, &e) {
		switch e.Kind {
		case netpolicy.KindDenied, netpolicy.KindAddress, netpolicy.KindLimit, netpolicy.KindRequest:
			code = http.StatusForbidden
		case netpolicy.KindTimeout:
			code = http.StatusGatewayTimeout
		}
	}
	if !strings.HasPrefix(msg, "wasmbox: network: ") {
		msg = "wasmbox: network: " + msg
	}
	msg = strings.ReplaceAll(strings.ReplaceAll(rl.b.Mask(msg), "\r", " "), "\n", " ")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	io.WriteString(w, msg+"\n")
}

// limitListener bounds the connections accepted at once.
type limitListener struct {
	net.Listener
	sem  chan struct{}
	done chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: sync.OnceFunc(func() { <-l.sem })}, nil
}

type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// relayHoldTimeout bounds the wait for bwrap's report of the jail's
// first process (the run's deadline bounds it too).
const relayHoldTimeout = 30 * time.Second
