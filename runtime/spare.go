package runtime

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental"
)

// Spare instances.
//
// Starting a run from a snapshot still instantiates the module: wazero
// builds the instance and fills its function table (one entry per
// function, each evaluated: about half a millisecond for the coreutils
// module), before the command runs at all. A reactor module therefore keeps
// a few instances ready — instantiated, mapped from the snapshot, globals
// restored — and a run takes one: the command starts at once, and the
// instantiation of the next spare happens off the run's path, on another
// goroutine. The work is the same; the latency a caller sees is the
// command's own.
//
// A spare is not counted as a live instance or memory until a run takes
// it. A run takes a spare only when its limit fits the spare's reservation
// (the runtime's default limit) and its budget can pay for the spare's
// memory; otherwise it instantiates as before.

// DefaultSpares is how many ready instances a runtime keeps per reactor
// module (see Config.Spares).
const DefaultSpares = 2

// spare is a ready instance of a reactor module.
type spare struct {
	mod     api.Module
	alloc   *limitAllocator
	adopted atomic.Bool
	closed  atomic.Bool
}

// sparePool is the ready instances of one module.
type sparePool struct {
	mu      sync.Mutex
	idle    []*spare
	filling bool
	stopped bool
	wg      sync.WaitGroup
}

// takeSpare returns a ready instance of m for a run with limit whose
// allocator (with its budget and what it prepaid) is alloc, or nil. It
// starts refilling the pool.
func (r *Runtime) takeSpare(m *Module, snap *snapshot, limit uint64, alloc *limitAllocator) *spare {
	if snap == nil || m.reactor.spares == nil || limit > r.memLimit {
		return nil
	}
	p := m.reactor.spares
	p.mu.Lock()
	var s *spare
	if n := len(p.idle); n > 0 {
		s, p.idle = p.idle[n-1], p.idle[:n-1]
	}
	p.mu.Unlock()
	r.refill(m, snap)
	if s == nil {
		return nil
	}
	mem := s.alloc.mem
	size := uint64(len(mem.buf))
	paid := alloc.charged.Load()
	if size > limit || (size > paid && alloc.budget.Reserve(size-paid) != nil) {
		s.discard()
		return nil
	}
	// From here on the instance is the run's: its limit, its budget (and
	// what the run prepaid of it), and the runtime's counts of live
	// instances and memories.
	s.alloc.limit = limit
	s.alloc.budget = alloc.budget
	s.alloc.charged.Store(max(size, paid))
	alloc.charged.Store(0)
	s.alloc.live = &r.liveMem
	r.liveMem.Add(1)
	r.live.Add(1)
	s.adopted.Store(true)
	return s
}

// refill starts a goroutine that tops the pool of m up, unless one runs.
func (r *Runtime) refill(m *Module, snap *snapshot) {
	p := m.reactor.spares
	p.mu.Lock()
	if p.filling || p.stopped || len(p.idle) >= r.spares {
		p.mu.Unlock()
		return
	}
	p.filling = true
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		for {
			p.mu.Lock()
			if p.stopped || len(p.idle) >= r.spares {
				p.filling = false
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			s, err := r.newSpare(m, snap)
			p.mu.Lock()
			if err != nil || p.stopped {
				p.filling = false
				p.mu.Unlock()
				if s != nil {
					s.discard()
				}
				return
			}
			p.idle = append(p.idle, s)
			p.mu.Unlock()
		}
	}()
}

// newSpare instantiates m from snap.
func (r *Runtime) newSpare(m *Module, snap *snapshot) (*spare, error) {
	ctx := context.Background()
	s := &spare{alloc: &limitAllocator{limit: r.memLimit, image: snap.img}}
	notify := experimental.CloseNotifyFunc(func(context.Context, uint32) {
		if s.closed.CompareAndSwap(false, true) && s.adopted.Load() {
			r.live.Add(-1)
		}
	})
	ictx := experimental.WithMemoryAllocator(ctx, s.alloc)
	ictx = experimental.WithCloseNotifier(ictx, notify)
	mod, err := m.instantiate(ictx, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if mod != nil {
		s.mod = mod
	}
	if err == nil {
		err = restore(mod, m.reactor, snap, s.alloc)
	}
	if err != nil {
		s.discard()
		return nil, err
	}
	return s, nil
}

// discard closes a spare no run took.
func (s *spare) discard() {
	if s.mod != nil {
		_ = s.mod.Close(context.Background())
	}
}

// stop discards the idle spares and stops refilling, waiting for a refill
// in progress.
func (p *sparePool) stop() {
	p.mu.Lock()
	p.stopped = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	p.wg.Wait()
	for _, s := range idle {
		s.discard()
	}
}
