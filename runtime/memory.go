package runtime

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// limitAllocator backs the linear memory of one instance and refuses to
// grow it past limit bytes. A refusal makes memory.grow return -1 in the
// guest and is recorded, so that a run that then fails is reported as
// ErrMemoryLimit instead of a generic trap.
type limitAllocator struct {
	limit   uint64
	hit     atomic.Bool
	peak    atomic.Uint64
	live    *atomic.Int64 // the runtime's count of live memories
	created atomic.Bool
}

func (a *limitAllocator) Allocate(capacity, max uint64) experimental.LinearMemory {
	a.created.Store(true)
	a.live.Add(1)
	if capacity > a.limit {
		capacity = a.limit
	}
	return &limitedMemory{a: a, capHint: capacity, max: max}
}

type limitedMemory struct {
	a       *limitAllocator
	buf     []byte
	capHint uint64
	max     uint64
	freed   bool
}

// Reallocate grows the memory to size bytes. Growth past the limit
// returns nil (memory.grow fails). The buffer grows geometrically within
// the limit so that a guest growing page by page does not copy its memory
// on every step.
func (m *limitedMemory) Reallocate(size uint64) []byte {
	if size > m.a.limit {
		m.a.hit.Store(true)
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
	} else {
		c := max(size, uint64(cap(m.buf))*2, m.capHint)
		c = min(c, m.a.limit)
		if m.max > 0 {
			c = min(max(c, size), max(m.max, size))
		}
		nb := make([]byte, size, c)
		copy(nb, m.buf)
		m.buf = nb
	}
	for {
		p := m.a.peak.Load()
		if size <= p || m.a.peak.CompareAndSwap(p, size) {
			break
		}
	}
	return m.buf
}

func (m *limitedMemory) Free() {
	if !m.freed {
		m.freed = true
		m.buf = nil
		m.a.live.Add(-1)
	}
}
