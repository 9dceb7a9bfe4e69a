// Package gnet is the guest side of wasmbox's network ABI (runtime.NetABI):
// connections the host opens, checks and watches, as net.Conn. It is a
// package of its own so that only the modules that reach the network link
// package net.
package gnet
