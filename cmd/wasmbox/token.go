package main

import "net"

// The HTTP front ends' access rules, one for serve and `wasmbox mcp
// --listen`: the bearer token comes from --token-file FILE or else
// WASMBOX_TOKEN (serveToken), is mandatory off loopback, and is checked by
// server.RequireToken; on a loopback listener server.LoopbackOnly refuses
// a non-loopback Host and a foreign browser Origin (DNS rebinding, web
// pages posting to the port).

func isLoopbackListener(l net.Listener) bool {
	a, ok := l.Addr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}
