package wasm

import (
	"context"
	"sync"

	"github.com/wasmbox/wasmbox/third_party/wazero/sys"
)

// callGuard defers the release of a module's resources while a call of
// it runs (wasmbox patch 25). A module can be closed from another
// goroutine while its code runs: Close, CloseWithExitCode, or the
// runtime's Close. Released then, its memory (an experimental.LinearMemory
// that unmaps itself on Free) would be gone under the running code, whose
// next load or store faults the host process or reaches whatever the host
// mapped there next. Closing marks the module closed at once (the code
// stops at its next termination check); the release waits for the last
// call to return.
type callGuard struct {
	mu       sync.Mutex
	running  int  // calls in progress, nested ones included
	pending  bool // closed while running: release when the last returns
	released bool
}

// EnterCall records that a call of the module's code begins: every entry
// into the module's code from the host (calls, start functions) is
// bracketed by EnterCall and ExitCall, and so is host code that reads or
// writes the memory of a module that is not running (a pin). It refuses a
// module already closed, with the error FailIfClosed gives (which also
// releases the resources of a module closed without them), and then
// ExitCall must not follow.
func (m *ModuleInstance) EnterCall() error {
	g := &m.calls
	g.mu.Lock()
	if m.Closed.Load() != 0 || g.released || g.pending {
		g.mu.Unlock()
		if err := m.FailIfClosed(); err != nil {
			return err
		}
		return sys.NewExitError(0)
	}
	g.running++
	g.mu.Unlock()
	return nil
}

// ExitCall records that a call ended, and releases the module's resources
// if it was closed during the call and no other call runs.
func (m *ModuleInstance) ExitCall() {
	g := &m.calls
	g.mu.Lock()
	g.running--
	release := g.running == 0 && g.pending
	if release {
		g.pending, g.released = false, true
	}
	g.mu.Unlock()
	if release {
		_ = m.ensureResourcesClosed(context.Background())
	}
}

// releaseResources releases the module's resources now, or when the last
// call of it returns; once.
func (m *ModuleInstance) releaseResources(ctx context.Context) error {
	g := &m.calls
	g.mu.Lock()
	if g.released || g.pending {
		g.mu.Unlock()
		return nil
	}
	if g.running > 0 {
		g.pending = true
		g.mu.Unlock()
		return nil
	}
	g.released = true
	g.mu.Unlock()
	return m.ensureResourcesClosed(ctx)
}
