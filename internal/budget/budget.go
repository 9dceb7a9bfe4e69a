// Package budget accounts memory before it is allocated: a Budget is a
// number of bytes that reservations take from and releases give back, in
// a tree (a process budget, a session's inside it, a run's inside that, a
// command's inside the run's).
//
// A reservation is admitted before the allocation it stands for, or
// refused with an *ExceededError that names the budget that was full; the
// allocation then does not happen. Two kinds of children exist:
//
//   - Child: a budget of its own limit whose reservations are also taken
//     from every ancestor when they are made (memory reserved as it is
//     used: a guest's memory growing page by page).
//   - Carve: a budget whose whole limit is reserved from the parent when
//     it is made, and given back by Close; its own reservations then touch
//     only it (an admission: a run that starts only when its whole
//     allowance is free, and cannot be starved half-way by others).
//
// Every method is safe for concurrent use, and every method of a nil
// *Budget is a no-op that admits everything: code that may run without a
// budget does not check for one.
package budget

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrExceeded is wrapped by the error of a refused reservation.
var ErrExceeded = errors.New("memory budget exceeded")

// Unlimited is the limit of a budget that refuses nothing (it still
// counts, and its ancestors still refuse).
const Unlimited = ^uint64(0)

// Budget is an allowance of bytes. The zero value is not usable: make one
// with New, Child or Carve.
type Budget struct {
	name   string
	limit  uint64
	parent *Budget
	carved bool // the limit was reserved from parent at creation
	used   atomic.Uint64

	closeOnce sync.Once
}

// ExceededError is a refused reservation.
type ExceededError struct {
	// Name and Limit are those of the budget that was full.
	Name  string
	Limit uint64
	// Used is what that budget held, Asked what was asked of it.
	Used, Asked uint64
}

func (e *ExceededError) Error() string {
	return fmt.Sprintf("%s memory budget (%s) exceeded: %s in use, %s more asked",
		e.Name, Format(e.Limit), Format(e.Used), Format(e.Asked))
}

// Is makes errors.Is(err, ErrExceeded) true.
func (e *ExceededError) Is(target error) bool { return target == ErrExceeded }

// New returns a root budget of limit bytes.
func New(name string, limit uint64) *Budget {
	return &Budget{name: name, limit: limit}
}

// Child returns a budget of limit bytes inside b: its reservations are
// taken from it and from b (and b's ancestors, up to a carved budget).
// A nil b gives a root budget.
func (b *Budget) Child(name string, limit uint64) *Budget {
	return &Budget{name: name, limit: limit, parent: b}
}

// Carve reserves limit bytes of b at once and returns a budget of that
// size whose reservations touch nothing else. Close gives the bytes back
// to b. A nil b gives a root budget.
func (b *Budget) Carve(name string, limit uint64) (*Budget, error) {
	if err := b.Reserve(limit); err != nil {
		return nil, err
	}
	return &Budget{name: name, limit: limit, parent: b, carved: true}, nil
}

// Close gives the bytes of a carved budget back to its parent; it is
// idempotent, and a no-op for other budgets. Reservations still held in a
// carved budget are dropped with it: close it when what it paid for is
// gone.
func (b *Budget) Close() {
	if b == nil || !b.carved {
		return
	}
	b.closeOnce.Do(func() { b.parent.Release(b.limit) })
}

// Name is the budget's name, as errors show it.
func (b *Budget) Name() string {
	if b == nil {
		return ""
	}
	return b.name
}

// Limit is the budget's size in bytes (Unlimited for a nil budget).
func (b *Budget) Limit() uint64 {
	if b == nil {
		return Unlimited
	}
	return b.limit
}

// Used is how many bytes are reserved in the budget now.
func (b *Budget) Used() uint64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Parent is the budget b is inside (nil for a root).
func (b *Budget) Parent() *Budget {
	if b == nil {
		return nil
	}
	return b.parent
}

// Available is how many bytes a reservation in b could take now: the
// least room of b and of the ancestors its reservations reach.
func (b *Budget) Available() uint64 {
	avail := Unlimited
	for c := b; c != nil; c = c.parent {
		u := c.used.Load()
		room := uint64(0)
		if u < c.limit {
			room = c.limit - u
		}
		avail = min(avail, room)
		if c.carved {
			break
		}
	}
	return avail
}

// Within reports whether b is a (nested) child of a, or a itself.
func (b *Budget) Within(a *Budget) bool {
	for c := b; c != nil; c = c.parent {
		if c == a {
			return true
		}
	}
	return false
}

// Reserve takes n bytes from b and from each ancestor its reservations
// reach, or none of them: the error (an *ExceededError) names the first
// budget that had no room. Reserve(0) always succeeds.
func (b *Budget) Reserve(n uint64) error {
	if n == 0 {
		return nil
	}
	for c := b; c != nil; c = c.parent {
		if !c.take(n) {
			e := &ExceededError{Name: c.name, Limit: c.limit, Used: c.used.Load(), Asked: n}
			b.releaseUpTo(c, n)
			return e
		}
		if c.carved {
			break
		}
	}
	return nil
}

// Release gives back n bytes that Reserve took from b.
func (b *Budget) Release(n uint64) {
	b.releaseUpTo(nil, n)
}

// releaseUpTo gives n bytes back to b and its ancestors, stopping before
// stop (or after a carved budget).
func (b *Budget) releaseUpTo(stop *Budget, n uint64) {
	if n == 0 {
		return
	}
	for c := b; c != nil && c != stop; c = c.parent {
		for {
			u := c.used.Load()
			if n > u {
				// More released than reserved: a bug of the caller.
				// Clamp rather than wrap around to a full budget.
				if c.used.CompareAndSwap(u, 0) {
					break
				}
				continue
			}
			if c.used.CompareAndSwap(u, u-n) {
				break
			}
		}
		if c.carved {
			break
		}
	}
}

// take reserves n bytes of c alone.
func (c *Budget) take(n uint64) bool {
	for {
		u := c.used.Load()
		if n > c.limit || u > c.limit-n {
			return false
		}
		if c.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// Format renders n in the largest binary unit that divides it evenly
// when that gives a short number ("256MiB", "1536KiB", "17B"), else with
// one decimal in the largest unit it reaches ("3.3GiB"); Unlimited is
// "unlimited".
func Format(n uint64) string {
	if n == Unlimited {
		return "unlimited"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i, m := 0, n
	for m >= 1024 && m%1024 == 0 && i < len(units)-1 {
		m /= 1024
		i++
	}
	if m < 10240 {
		return fmt.Sprintf("%d%s", m, units[i])
	}
	f := float64(n)
	i = 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f%s", f, units[i])
}
