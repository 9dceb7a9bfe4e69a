//go:build !wasip1

package gnet

import "net"

// Dial fails outside a wasmbox guest: the commands that use it are built
// natively only for their index and in-process tests.
func Dial(host string, port int, useTLS bool) (net.Conn, error) {
	return nil, &NetError{Kind: NetConnect, Msg: "wasmbox: network: only a wasmbox guest reaches the network"}
}
