package gnet

// NetError is the host's refusal or failure of a connection
// (runtime.NetABI): Kind is netpolicy.Kind, Msg the line to print.
type NetError struct {
	Kind uint32
	Msg  string
}

func (e *NetError) Error() string { return e.Msg }

// Kinds of NetError (netpolicy.Kind).
const (
	NetDenied   = 1
	NetResolve  = 2
	NetAddress  = 3
	NetConnect  = 4
	NetTLS      = 5
	NetTimeout  = 6
	NetLimit    = 7
	NetRequest  = 8
	NetResponse = 9
)

// Timeout reports whether the error is a timeout (net.Error).
func (e *NetError) Timeout() bool { return e.Kind == NetTimeout }

// Temporary implements net.Error.
func (e *NetError) Temporary() bool { return false }
