package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"

	"github.com/wasmbox/wasmbox/netpolicy"
	"github.com/wasmbox/wasmbox/wasi"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// NetABI documents the host calls through which a guest reaches the
// network: HTTP/1.1 over connections the host opens, checks and watches
// (package netpolicy). The guest never has a socket.
//
//	(import "wasmbox" "net_connect" (func (param $req_ptr i32) (param $req_len i32) (param $out_ptr i32) (param $out_cap i32) (result i32)))
//	(import "wasmbox" "net_error"   (func (param $rfd i32) (param $buf_ptr i32) (param $buf_cap i32) (param $len_ptr i32) (result i32)))
//
// net_connect asks for a connection. The request at req_ptr (req_len
// bytes, at most 4 KiB) is UTF-8 JSON:
//
//	{"host": "api.example.com", "port": 443, "tls": true}
//
// With "check": true the host only checks: the allowlist, the name
// resolved and the addresses refused, as below, but it dials nothing and
// returns 0 (writing nothing) or the refusal. A client that decides on
// TLS after its connect (Python's socket, then ssl.wrap_socket) checks at
// connect and connects at its first use; the connect checks again.
//
// The host checks host:port against the run's allowlist, resolves the name
// itself, refuses loopback, private, link-local and metadata addresses the
// allowlist does not name exactly, connects to the very address it checked
// (no second lookup: DNS rebinding cannot move it), and with "tls" does
// TLS itself: crypto/tls, SNI host, ALPN http/1.1, verified against the
// host's roots and the run's extra ones (--net-ca). On success it writes
// two little-endian u32 at out_ptr (out_cap at least 8): a descriptor to
// read the responses from and one to write the requests to, both
// non-blocking (FDFLAG_NONBLOCK, poll_oneoff waits for them) as the ends
// of a pipe of ProcessABI are.
//
// What the guest writes must be plaintext HTTP/1.1 requests for the host
// and port it connected to (the Host header, and an absolute URI if it
// sends one); the host re-frames each one, drops Upgrade and proxy
// headers, replaces any header the run brokers for that host
// (--net-secret) by the brokered value, and refuses CONNECT, methods the
// policy leaves out and requests for another host (which also stops
// smuggling a second request through a body or a header). Each response
// comes back re-framed, trailers dropped, every brokered secret value
// masked by as many asterisks, within the run's response byte limit.
// The run's deadline bounds the connection.
//
// On failure net_connect returns 76 (ENOTCAPABLE) and writes at out_ptr a
// u32 kind, a u32 length and that many bytes (cut at out_cap) of a
// one-line message ("wasmbox: network: api.example.com is not in the
// allowlist"). The kinds (netpolicy.Kind), with the curl exit code each
// stands for:
//
//	1 not in the allowlist (6)              6 timed out (28)
//	2 the name did not resolve (6)          7 too many connections at once (7)
//	3 only refused addresses (7)            8 request refused (on a connection)
//	4 the TCP connect failed (7)            9 response refused or over the limit
//	5 TLS failed (35)
//
// After the read descriptor ended (end of file), net_error writes at
// buf_ptr why the host ended the connection (a one-line message, cut at
// buf_cap), its length at len_ptr: 0 when the server or the guest closed
// it cleanly.
//
// Every call returns a WASI errno: 0 success, 76 ENOTCAPABLE (refused or
// failed, see above), 28 EINVAL (malformed request), 21 EFAULT (pointer
// out of memory), 8 EBADF (net_error of a descriptor that is not a
// connection's), 6 EAGAIN (too many streams), 52 ENOSYS (a run without
// wasmbox's WASI). A run without a network policy (WithNetwork) allows
// no host. Connections never outlive the run (or the call of a live
// instance) that opened them.
const NetABI = "wasmbox.net_connect/net_error"

// Errno values of the network calls besides those of spawn.
const (
	ErrnoNotcapable uint32 = 76
)

// MaxNetRequest is the largest net_connect request, in bytes.
const MaxNetRequest = 4 << 10

type networkKey struct{}

// WithNetwork returns ctx carrying b: the net_connect calls of modules run
// with this context (and of the commands they spawn) go through b.
func WithNetwork(ctx context.Context, b *netpolicy.Broker) context.Context {
	return context.WithValue(ctx, networkKey{}, b)
}

// NetworkFrom returns the broker of ctx, nil if none.
func NetworkFrom(ctx context.Context) *netpolicy.Broker {
	b, _ := ctx.Value(networkKey{}).(*netpolicy.Broker)
	return b
}

var denyAll = netpolicy.NewBroker(nil, nil)

func newNetFunctions(b wazero.HostModuleBuilder) wazero.HostModuleBuilder {
	i32 := api.ValueTypeI32
	return b.
		NewFunctionBuilder().
		WithGoModuleFunction(halting(hostNetConnect), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("req_ptr", "req_len", "out_ptr", "out_cap").WithResultNames("errno").
		Export("net_connect").
		NewFunctionBuilder().
		WithGoModuleFunction(halting(hostNetError), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("rfd", "buf_ptr", "buf_cap", "len_ptr").WithResultNames("errno").
		Export("net_error")
}

// netSession is one connection of a guest: the broker's Conn, served by a
// goroutine between two pipes.
type netSession struct {
	conn  *netpolicy.Conn
	reqR  *wasi.PipeReader // the host reads the guest's requests
	respR *wasi.PipeReader // the guest reads the responses

	mu  sync.Mutex
	err string
}

func (s *netSession) stop() {
	s.conn.Close()
	s.reqR.Close()
	s.respR.Close()
}

// netReader is the guest's read end of a connection.
type netReader struct {
	*wasi.PipeReader
	s *netSession
}

type netWire struct {
	Host  string `json:"host"`
	Port  int    `json:"port"`
	TLS   bool   `json:"tls"`
	Check bool   `json:"check"`
}

func hostNetConnect(ctx context.Context, mod api.Module, stack []uint64) {
	stack[0] = uint64(netConnectCall(ctx, mod, uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])))
}

func netConnectCall(ctx context.Context, mod api.Module, reqPtr, reqLen, outPtr, outCap uint32) uint32 {
	st := preview1.StateFrom(ctx)
	if st == nil {
		return ErrnoNosys
	}
	mem := mod.Memory()
	if mem == nil || outCap < 8 || uint64(outPtr)+uint64(outCap) > uint64(mem.Size()) {
		return ErrnoFault
	}
	if reqLen > MaxNetRequest {
		return ErrnoInval
	}
	raw, ok := mem.Read(reqPtr, reqLen)
	if !ok {
		return ErrnoFault
	}
	var w netWire
	if err := json.Unmarshal(append([]byte(nil), raw...), &w); err != nil || w.Host == "" || w.Port < 1 || w.Port > 65535 {
		return ErrnoInval
	}
	table, _ := ctx.Value(procTableKey{}).(*procTable)
	if table == nil {
		return ErrnoNosys
	}
	b := NetworkFrom(ctx)
	if b == nil {
		b = denyAll
	}
	var conn *netpolicy.Conn
	var err error
	if w.Check {
		err = b.Check(ctx, w.Host, w.Port)
	} else {
		conn, err = b.Connect(ctx, w.Host, w.Port, w.TLS)
	}
	if err != nil {
		var e *netpolicy.Error
		if !errors.As(err, &e) {
			e = &netpolicy.Error{Kind: netpolicy.KindConnect, Msg: "wasmbox: network: " + err.Error()}
		}
		msg := []byte(e.Msg)
		msg = msg[:min(len(msg), int(outCap-8))]
		mem.WriteUint32Le(outPtr, uint32(e.Kind))
		mem.WriteUint32Le(outPtr+4, uint32(len(msg)))
		mem.Write(outPtr+8, msg)
		return ErrnoNotcapable
	}
	if w.Check {
		return ErrnoSuccess
	}
	reqR, reqW := wasi.NewPipe(context.Background())
	respR, respW := wasi.NewPipe(context.Background())
	s := &netSession{conn: conn, reqR: reqR, respR: respR}
	rfd, err := st.AddStream(&netReader{PipeReader: respR, s: s}, nil, respR.Close, true)
	if err != nil {
		conn.Close()
		return ErrnoAgain
	}
	wfd, err := st.AddStream(nil, reqW, reqW.Close, true)
	if err != nil {
		conn.Close()
		_ = st.CloseFd(rfd)
		return ErrnoAgain
	}
	if !table.addNet(s) {
		conn.Close()
		_ = st.CloseFd(rfd)
		_ = st.CloseFd(wfd)
		return ErrnoAgain
	}
	go func() {
		defer table.doneNet(s)
		err := conn.Serve(reqR, respW)
		if err != nil {
			s.mu.Lock()
			s.err = err.Error()
			s.mu.Unlock()
		}
		// The message is set before the guest can see the end.
		respW.Close()
		reqR.Close()
	}()
	mem.WriteUint32Le(outPtr, rfd)
	mem.WriteUint32Le(outPtr+4, wfd)
	return ErrnoSuccess
}

func hostNetError(ctx context.Context, mod api.Module, stack []uint64) {
	stack[0] = uint64(netErrorCall(ctx, mod, uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])))
}

func netErrorCall(ctx context.Context, mod api.Module, rfd, bufPtr, bufCap, lenPtr uint32) uint32 {
	st := preview1.StateFrom(ctx)
	if st == nil {
		return ErrnoNosys
	}
	mem := mod.Memory()
	if mem == nil || uint64(bufPtr)+uint64(bufCap) > uint64(mem.Size()) || uint64(lenPtr)+4 > uint64(mem.Size()) {
		return ErrnoFault
	}
	r, err := st.StreamReader(rfd)
	if err != nil {
		return ErrnoBadf
	}
	nr, ok := r.(*netReader)
	if !ok {
		return ErrnoBadf
	}
	nr.s.mu.Lock()
	msg := []byte(nr.s.err)
	nr.s.mu.Unlock()
	msg = msg[:min(len(msg), int(bufCap))]
	mem.Write(bufPtr, msg)
	mem.WriteUint32Le(lenPtr, uint32(len(msg)))
	return ErrnoSuccess
}
