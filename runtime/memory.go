package runtime

import (
	"sync/atomic"

	"github.com/wasmbox/wasmbox/third_party/wazero/experimental"
)

// limitAllocator backs the linear memory of one instance and refuses to
// grow it past limit bytes. A refusal makes memory.grow return -1 in the
// guest and is recorded, so that a run that then fails is reported as
// ErrMemoryLimit instead of a generic trap.
type limitAllocator struct {
	limit   uint64
	budget  *Budget // shared with other instances, may be nil
	hit     atomic.Bool
	peak    atomic.Uint64
	live    *atomic.Int64 // the runtime's count of live memories; nil for a spare (see takeSpare)
	created atomic.Bool
	// image, when set, is the snapshot the memory starts from.
	image    *image
	imageErr error
	mem      *limitedMemory // the memory Allocate made
	// onHit, when set, is called when a growth is refused (see
	// InstanceOptions.OnMemoryLimit).
	onHit atomic.Pointer[func()]
}

func (a *limitAllocator) setOnHit(f func()) {
	if f == nil {
		a.onHit.Store(nil)
		return
	}
	a.onHit.Store(&f)
}

// refuse records a growth refused for the limit or the budget.
func (a *limitAllocator) refuse() []byte {
	a.hit.Store(true)
	if f := a.onHit.Load(); f != nil {
		(*f)()
	}
	return nil
}

func (a *limitAllocator) Allocate(capacity, max uint64) experimental.LinearMemory {
	a.created.Store(true)
	if a.live != nil {
		a.live.Add(1)
	}
	if capacity > a.limit {
		capacity = a.limit
	}
	a.mem = &limitedMemory{a: a, capHint: capacity, max: max}
	return a.mem
}

// reserve is how far the memory may grow: its limit, or its declared
// maximum when smaller.
func (m *limitedMemory) reserve() uint64 {
	if m.max > 0 {
		return min(m.a.limit, m.max)
	}
	return m.a.limit
}

type limitedMemory struct {
	a       *limitAllocator
	buf     []byte
	capHint uint64
	max     uint64
	freed   bool
	charged uint64 // bytes taken from the budget
	started bool   // the initial allocation happened
	mapped  *mappedMemory
}

// Reallocate grows the memory to size bytes. Growth past the limit
// returns nil (memory.grow fails). The buffer grows geometrically within
// the limit so that a guest growing page by page does not copy its memory
// on every step.
func (m *limitedMemory) Reallocate(size uint64) []byte {
	if size > m.a.limit {
		return m.a.refuse()
	}
	if cur := uint64(len(m.buf)); size > cur && m.a.budget != nil {
		if !m.started {
			// The initial size cannot be refused (wazero requires it);
			// Run checked it against the budget just before.
			m.a.budget.used.Add(int64(size - cur))
		} else if !m.a.budget.take(size - cur) {
			return m.a.refuse()
		}
		m.charged += size - cur
	}
	if !m.started && m.a.image != nil {
		m.startFromImage(size)
	}
	m.started = true
	if m.mapped != nil {
		b := m.mapped.bytes(size)
		if b == nil {
			return m.a.refuse()
		}
		m.buf = b
	} else if size <= uint64(cap(m.buf)) {
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

// startFromImage backs the memory with the snapshot image: mapped when the
// system allows, else a copy in a buffer large enough for the whole image
// (the guest grows to the image's size at once). A failure is kept in the
// allocator (imageErr) for the run to report: the initial allocation
// itself cannot fail.
func (m *limitedMemory) startFromImage(size uint64) {
	im := m.a.image
	mm, err := im.mapMemory(m.reserve())
	if err == nil {
		m.mapped = mm
		return
	}
	c := min(max(size, im.size, m.capHint), max(m.reserve(), im.size))
	buf := make([]byte, c)
	if err := im.copyTo(buf); err != nil {
		m.a.imageErr = err
	}
	m.buf = buf[:0]
}

func (m *limitedMemory) Free() {
	if !m.freed {
		m.freed = true
		if m.mapped != nil {
			m.mapped.free()
			m.mapped = nil
		}
		m.buf = nil
		if m.a.live != nil {
			m.a.live.Add(-1)
		}
		if m.a.budget != nil {
			m.a.budget.used.Add(-int64(m.charged))
		}
	}
}

// Budget is a memory allowance shared by several instances: the executor
// gives a command and every command it spawns one budget, so that a tree
// of nested commands together stays within the limit of one, as a cgroup
// would. Each instance is still bounded by its own limit too.
type Budget struct {
	limit uint64
	used  atomic.Int64
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit uint64) *Budget { return &Budget{limit: limit} }

// Limit is the budget's size in bytes.
func (b *Budget) Limit() uint64 { return b.limit }

// Used is how many bytes of linear memory live instances hold now.
func (b *Budget) Used() uint64 { return uint64(b.used.Load()) }

func (b *Budget) take(n uint64) bool {
	for {
		u := b.used.Load()
		if uint64(u)+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+int64(n)) {
			return true
		}
	}
}
