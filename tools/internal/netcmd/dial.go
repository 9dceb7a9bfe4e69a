package netcmd

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/internal/guest/gnet"
)

type netConn = net.Conn

type netError = gnet.NetError

// dialHost asks the host for a connection to addr (host:port).
func dialHost(addr string, useTLS bool) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	return gnet.Dial(host, p, useTLS)
}

func asNetError(err error, ne **netError) bool { return errors.As(err, ne) }

// netErrToCurl is curl's error for a refusal or failure of the host.
func netErrToCurl(ne *netError, u *url.URL, start time.Time) error {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	switch ne.Kind {
	case gnet.NetDenied:
		return &curlErr{code: 6, msg: ne.Msg, raw: true}
	case gnet.NetResolve:
		return cerr(6, "Could not resolve host: %s", host)
	case gnet.NetAddress, gnet.NetLimit:
		return &curlErr{code: 7, msg: ne.Msg, raw: true}
	case gnet.NetConnect:
		return cerr(7, "Failed to connect to %s port %s after %d ms: Couldn't connect to server", host, port, time.Since(start).Milliseconds())
	case gnet.NetTLS:
		if strings.Contains(ne.Msg, "certificate") {
			return cerr(60, "SSL certificate problem: %s", strings.TrimPrefix(ne.Msg, "wasmbox: network: "))
		}
		return cerr(35, "%s", strings.TrimPrefix(ne.Msg, "wasmbox: network: "))
	case gnet.NetTimeout:
		return cerr(28, "Operation timed out after %d milliseconds with 0 bytes received", time.Since(start).Milliseconds())
	}
	return &curlErr{code: 56, msg: ne.Msg, raw: true}
}
