//go:build !linux

package native

import (
	"errors"
	"net"
)

// listenInNetns: there is no OS jail, and so no network namespace, here.
func listenInNetns(pid, parent int, addr string) (net.Listener, error) {
	return nil, errors.New("native: network relay: the OS jail is Linux-only")
}
