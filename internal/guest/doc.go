// Package guest is the guest side of wasmbox's host calls, for Go programs
// built for GOOS=wasip1 that run inside wasmbox: the metadata calls (modes
// and owners, runtime.MetaABI), the process calls (pipes, concurrent
// children and their handles, runtime.ProcessABI) and the call data of a
// live instance's exports (runtime.CallABI).
//
// Outside wasip1 the package is empty.
package guest
