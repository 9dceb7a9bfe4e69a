package session

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/wasmbox/wasmbox/shell/wire"
	"github.com/wasmbox/wasmbox/vfs"
)

// Pool keeps shells started ahead of use, so that a new session, a fork
// and the restart after a killed run do not wait for a shell to start.
//
// Starting a shell is more than taking an instance of shell.wasm: the
// guest initializes its interpreter for the session's configuration, and a
// fresh copy-on-write instance pays for every page it first touches (in a
// virtual machine, each costs microseconds). A Pool does that on a
// goroutine of its own, for each configuration in use (the environment,
// directory and limits of Config.Init, and the memory limit), over a
// placeholder filesystem, and hands the ready shell over: it takes the
// session's filesystem and spawner, and the state to come back to, if any.
// Sessions with Config.Deterministic are never pooled (their clocks must
// not have run ahead).
type Pool struct {
	perConfig int
	maxKeys   int

	mu      sync.Mutex
	ready   map[string][]*Session
	keys    []string // most recently used last
	filling map[string]bool
	closed  bool
	wg      sync.WaitGroup
}

// NewPool returns a pool that keeps perConfig shells ready for each of
// the last few configurations used.
func NewPool(perConfig int) *Pool {
	return &Pool{perConfig: max(perConfig, 1), maxKeys: 8, ready: map[string][]*Session{}, filling: map[string]bool{}}
}

// poolKey identifies the shells of one configuration.
func poolKey(cfg Config) (string, bool) {
	if cfg.Deterministic != nil {
		return "", false
	}
	ini := cfg.Init
	ini.State = nil
	b, err := json.Marshal(ini)
	if err != nil {
		return "", false
	}
	return fmt.Sprintf("%p/%p/%d/%s", cfg.Runtime, cfg.Module, cfg.MemoryLimit, b), true
}

// take hands a ready shell of cfg's configuration over to s (which has no
// instance), and starts making another. It reports false when none is
// ready.
func (p *Pool) take(ctx context.Context, s *Session) bool {
	key, ok := poolKey(s.cfg)
	if !ok {
		return false
	}
	p.mu.Lock()
	var r *Session
	if q := p.ready[key]; len(q) > 0 {
		r, p.ready[key] = q[0], q[1:]
	}
	p.touch(key)
	p.mu.Unlock()
	p.refill(key, s.cfg)
	if r == nil {
		return false
	}
	if r.in == nil || r.in.Dead() || r.st.SetFS(s.cfg.FS) != nil || r.in.Adopt(s.cfg.Budget) != nil {
		r.Close()
		return false
	}
	r.in.SetFS(s.cfg.FS)
	r.in.SetSpawner(s.cfg.Spawner)
	r.in.SetOnMemoryLimit(s.onMemoryLimit)
	s.st, s.in = r.st, r.in
	r.st, r.in = nil, nil
	if s.state != nil {
		if err := s.call(ctx, s.in, wire.OpRestore, s.state, nil); err != nil {
			s.discard()
			return false
		}
	}
	return true
}

// touch marks key as used, evicting the least recently used keys.
func (p *Pool) touch(key string) {
	for i, k := range p.keys {
		if k == key {
			p.keys = append(p.keys[:i], p.keys[i+1:]...)
			break
		}
	}
	p.keys = append(p.keys, key)
	for len(p.keys) > p.maxKeys {
		old := p.keys[0]
		p.keys = p.keys[1:]
		for _, r := range p.ready[old] {
			go r.Close()
		}
		delete(p.ready, old)
	}
}

// refill starts a goroutine that tops the shells of key up, unless one
// runs.
func (p *Pool) refill(key string, cfg Config) {
	p.mu.Lock()
	if p.closed || p.filling[key] || len(p.ready[key]) >= p.perConfig {
		p.mu.Unlock()
		return
	}
	p.filling[key] = true
	p.wg.Add(1)
	p.mu.Unlock()
	// The shell is made over a placeholder filesystem holding the working
	// directory, with no spawner: nothing of the session it will serve.
	cfg.Spawner = nil
	cfg.Pool = nil
	cfg.Budget = nil // the runtime's, until a session adopts it
	go func() {
		defer p.wg.Done()
		for {
			p.mu.Lock()
			inKeys := false
			for _, k := range p.keys {
				inKeys = inKeys || k == key
			}
			if p.closed || !inKeys || len(p.ready[key]) >= p.perConfig {
				p.filling[key] = false
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			r, err := p.prepare(cfg)
			p.mu.Lock()
			if err != nil || p.closed {
				p.filling[key] = false
				p.mu.Unlock()
				if r != nil {
					r.Close()
				}
				return
			}
			p.ready[key] = append(p.ready[key], r)
			p.mu.Unlock()
		}
	}()
}

// prepare starts a shell of cfg's configuration and runs a first script
// in it, so that what every session touches first is touched.
func (p *Pool) prepare(cfg Config) (*Session, error) {
	ctx := context.Background()
	placeholder := vfs.NewMemFS()
	dir := cfg.Init.Dir
	if dir == "" {
		dir = "/"
	}
	if err := placeholder.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg.FS = placeholder
	r, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := r.Run(ctx, `:`, nil, nil, nil); err != nil || r.in == nil {
		r.Close()
		return nil, fmt.Errorf("session: warming a pooled shell: %v", err)
	}
	// A fork loads a state into the shell it takes: go through that too.
	st, err := r.State(ctx)
	if err == nil {
		err = r.Restore(ctx, st)
	}
	if err != nil || r.in == nil {
		r.Close()
		return nil, fmt.Errorf("session: warming a pooled shell: %v", err)
	}
	return r, nil
}

// Ready returns how many shells are ready, over all configurations.
func (p *Pool) Ready() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, q := range p.ready {
		n += len(q)
	}
	return n
}

// Close stops refilling and closes the ready shells. It is idempotent.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	var all []*Session
	for _, q := range p.ready {
		all = append(all, q...)
	}
	p.ready = map[string][]*Session{}
	p.mu.Unlock()
	p.wg.Wait()
	for _, r := range all {
		r.Close()
	}
}
