package wasi

import "sync"

// Waitable is a stream that a guest's poll_oneoff can wait on without
// polling: pipe ends, and the process handles of the wasmbox process ABI.
type Waitable interface {
	// Ready reports whether a read (write false) or a write (write true)
	// would return at once: data or room, end of file, or an error. A
	// stream that cannot be read (or written) reports false for it.
	Ready(write bool) bool
	// Wakers is the set of channels told of every change of the
	// stream's state.
	Wakers() *Wakers
}

// Wakers is a set of channels that are each sent a value, without
// blocking, when Wake is called. A waiter adds a channel with capacity 1,
// checks the state it waits for, and then receives from the channel: a
// change between the check and the receive is never missed. The zero
// value is an empty set; it is safe for concurrent use.
type Wakers struct {
	mu sync.Mutex
	cs map[chan struct{}]int
}

// Add adds c to the set (a channel added twice must be removed twice).
func (w *Wakers) Add(c chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cs == nil {
		w.cs = map[chan struct{}]int{}
	}
	w.cs[c]++
}

// Remove removes c once.
func (w *Wakers) Remove(c chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := w.cs[c]; n > 1 {
		w.cs[c] = n - 1
	} else {
		delete(w.cs, c)
	}
}

// Wake sends a value on every channel of the set that has room for it.
func (w *Wakers) Wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.cs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}
