package runtime

import (
	"errors"
	"sync/atomic"

	"github.com/wasmbox/wasmbox/internal/budget"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental"
)

// limitAllocator backs the linear memory of one instance and refuses to
// grow it past limit bytes. A refusal makes memory.grow return -1 in the
// guest and is recorded, so that a run that then fails is reported as
// ErrMemoryLimit instead of a generic trap.
type limitAllocator struct {
	limit  uint64
	budget *Budget // shared with other instances, may be nil
	// charged is what the memory holds of budget: reserved before the
	// instance was made for its initial size (see prepay), then as it
	// grows; given back when the memory is freed (release).
	charged atomic.Uint64
	// refusal is the budget's error when it refused a growth.
	refusal atomic.Pointer[budget.ExceededError]
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

// prepay reserves n bytes of the budget for the memory's initial size,
// before the instance is made: wazero cannot be refused the initial
// allocation, so it is admitted here, before it happens.
func (a *limitAllocator) prepay(n uint64) error {
	if err := a.budget.Reserve(n); err != nil {
		a.noteRefusal(err)
		return err
	}
	a.charged.Add(n)
	return nil
}

// release gives back what the memory holds of the budget; idempotent.
func (a *limitAllocator) release() {
	a.budget.Release(a.charged.Swap(0))
}

func (a *limitAllocator) noteRefusal(err error) {
	var ee *budget.ExceededError
	if errors.As(err, &ee) {
		a.refusal.Store(ee)
	}
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
	started bool // the initial allocation happened
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
	if c := m.a.charged.Load(); size > c {
		// The budget is charged for the memory's size (the pages the
		// guest can touch), before the memory grows.
		if err := m.a.budget.Reserve(size - c); err != nil {
			m.a.noteRefusal(err)
			if m.started {
				return m.a.refuse()
			}
			// The initial size cannot be refused (wazero requires
			// it): it was prepaid before the instance was made (see
			// prepay), so this is a size larger than announced;
			// report it as refused once the instance exists.
			m.a.hit.Store(true)
			m.a.imageErr = err
		} else {
			m.a.charged.Add(size - c)
		}
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
		m.a.release()
	}
}

// Budget is a memory allowance (package internal/budget): the runtime's
// own (Runtime.Budget, the process budget), and inside it what callers
// make with its Child and Carve methods. The executor gives a command and
// every command it spawns one budget, so that a tree of nested commands
// together stays within the limit of one, as a cgroup would; a sandbox
// gives each run one, inside the process's. Each instance is still bounded
// by its own limit too.
type Budget = budget.Budget

// ErrBudget is wrapped by the error of a reservation that a budget
// refused (a *budget.ExceededError says which one was full).
var ErrBudget = budget.ErrExceeded

// NewBudget returns a root budget of limit bytes. Budgets made with it
// are outside every runtime's process budget: prefer
// Runtime.Budget().Child.
func NewBudget(limit uint64) *Budget { return budget.New("command", limit) }
