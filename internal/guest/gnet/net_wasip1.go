//go:build wasip1

package gnet

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"time"
	"unsafe"

	"github.com/wasmbox/wasmbox/internal/guest"
)

//go:wasmimport wasmbox net_connect
func hostNetConnect(reqPtr unsafe.Pointer, reqLen uint32, outPtr unsafe.Pointer, outCap uint32) uint32

//go:wasmimport wasmbox net_error
func hostNetError(rfd uint32, bufPtr unsafe.Pointer, bufCap uint32, lenPtr unsafe.Pointer) uint32

// Dial asks the host for a connection to host:port (TLS done by the host
// when useTLS). The connection carries HTTP/1.1 requests for that host.
func Dial(host string, port int, useTLS bool) (net.Conn, error) {
	req, _ := json.Marshal(struct {
		Host string `json:"host"`
		Port int    `json:"port"`
		TLS  bool   `json:"tls"`
	}{host, port, useTLS})
	var out [1024]byte
	e := hostNetConnect(unsafe.Pointer(unsafe.SliceData(req)), uint32(len(req)), unsafe.Pointer(&out[0]), uint32(len(out)))
	switch e {
	case 0:
	case 76:
		kind := binary.LittleEndian.Uint32(out[0:])
		n := min(binary.LittleEndian.Uint32(out[4:]), uint32(len(out)-8))
		return nil, &NetError{Kind: kind, Msg: string(out[8 : 8+n])}
	default:
		return nil, &os.SyscallError{Syscall: "net_connect", Err: guest.Errno(e)}
	}
	rfd, wfd := binary.LittleEndian.Uint32(out[0:]), binary.LittleEndian.Uint32(out[4:])
	addr := hostAddr(net.JoinHostPort(host, strconv.Itoa(port)))
	return &conn{
		r:    os.NewFile(uintptr(rfd), "net:"+string(addr)),
		w:    os.NewFile(uintptr(wfd), "net:"+string(addr)),
		rfd:  rfd,
		addr: addr,
	}, nil
}

type hostAddr string

func (a hostAddr) Network() string { return "tcp" }
func (a hostAddr) String() string  { return string(a) }

// conn is a connection of the network ABI: two non-blocking descriptors,
// which Go's netpoller waits for.
type conn struct {
	r, w *os.File
	rfd  uint32
	addr hostAddr
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if errors.Is(err, io.EOF) {
		if msg := c.hostError(); msg != "" {
			return n, &NetError{Kind: NetResponse, Msg: msg}
		}
	}
	return n, err
}

// hostError is why the host ended the connection ("" for a clean end).
func (c *conn) hostError() string {
	var buf [1024]byte
	var n uint32
	if hostNetError(c.rfd, unsafe.Pointer(&buf[0]), uint32(len(buf)), unsafe.Pointer(&n)) != 0 {
		return ""
	}
	return string(buf[:min(n, uint32(len(buf)))])
}

func (c *conn) Write(p []byte) (int, error) { return c.w.Write(p) }

func (c *conn) Close() error {
	err := c.w.Close()
	if e := c.r.Close(); err == nil {
		err = e
	}
	return err
}

func (c *conn) LocalAddr() net.Addr  { return hostAddr("sandbox") }
func (c *conn) RemoteAddr() net.Addr { return c.addr }

func (c *conn) SetDeadline(t time.Time) error {
	c.r.SetDeadline(t)
	c.w.SetDeadline(t)
	return nil
}
func (c *conn) SetReadDeadline(t time.Time) error  { c.r.SetReadDeadline(t); return nil }
func (c *conn) SetWriteDeadline(t time.Time) error { c.w.SetWriteDeadline(t); return nil }
