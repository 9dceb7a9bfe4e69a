package runtime

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/wasi/preview1"
	"github.com/wasmbox/wasmbox/wasm"
)

// idleSpares waits until m's pool holds n ready instances.
func idleSpares(t *testing.T, m *Module, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p := m.reactor.spares
		p.mu.Lock()
		got, filling := len(p.idle), p.filling
		p.mu.Unlock()
		if got == n && !filling {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool holds %d spares (filling %v), want %d", got, filling, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func snapshotMaps(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps")
	}
	return strings.Count(string(b), "wasmbox-snapshot")
}

// TestSpares checks the pool of ready instances: runs take them (and the
// pool refills), they are counted as live only while a run holds them, a
// run's budget pays for a spare it takes, a run whose limit is above the
// runtime's does not take one, and Close discards them.
func TestSpares(t *testing.T) {
	ctx := context.Background()
	base := snapshotMaps(t) // other tests' runtimes may hold some
	rt, err := New(ctx, Config{Spares: 2})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			rt.Close(ctx)
		}
	}()
	bin, _ := wasm.Module(wasm.CoreutilsModule)
	m, err := rt.Compile(ctx, "coreutils", bin)
	if err != nil {
		t.Fatal(err)
	}
	run := func(opts RunOptions, args ...string) (string, error) {
		var out bytes.Buffer
		st, err := preview1.NewState(preview1.Config{Args: args, Stdout: &out})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		opts.WASI = st
		err = rt.Run(ctx, m, wazero.NewModuleConfig(), opts)
		return out.String(), err
	}
	if out, err := run(RunOptions{}, "echo", "first"); err != nil || out != "first\n" {
		t.Fatalf("first run: %q %v", out, err)
	}
	idleSpares(t, m, 2)
	if l, mem := rt.LiveInstances(), rt.LiveMemories(); l != 0 || mem != 0 {
		t.Errorf("idle spares counted as live: %d instances, %d memories", l, mem)
	}
	for i := 0; i < 5; i++ {
		want := strings.Repeat("x", i) + "\n"
		if out, err := run(RunOptions{}, "echo", strings.Repeat("x", i)); err != nil || out != want {
			t.Fatalf("run %d: %q %v", i, out, err)
		}
	}
	idleSpares(t, m, 2)
	if l, mem := rt.LiveInstances(), rt.LiveMemories(); l != 0 || mem != 0 {
		t.Errorf("after runs: %d live instances, %d memories", l, mem)
	}

	// A budget pays for the spare's memory while the run holds it, and
	// gets it back after.
	b := NewBudget(64 << 20)
	if _, err := run(RunOptions{Budget: b}, "true"); err != nil {
		t.Fatal(err)
	}
	if u := b.Used(); u != 0 {
		t.Errorf("budget used %d after the run", u)
	}
	small := NewBudget(1 << 20) // less than the snapshot
	if _, err := run(RunOptions{Budget: small}, "true"); !errors.Is(err, ErrMemoryLimit) {
		t.Errorf("run under a 1 MiB budget: %v", err)
	}
	idleSpares(t, m, 2)

	// A limit above the runtime's: the spare's reservation is too small,
	// the run instantiates its own instance.
	p := m.reactor.spares
	if out, err := run(RunOptions{MemoryLimit: rt.MemoryLimit() * 2}, "echo", "big"); err != nil || out != "big\n" {
		t.Fatalf("run with a larger limit: %q %v", out, err)
	}
	p.mu.Lock()
	if len(p.idle) != 2 {
		t.Errorf("a run with a larger limit took a spare: %d left", len(p.idle))
	}
	p.mu.Unlock()

	// Close discards the spares and their mappings.
	before := snapshotMaps(t) - base
	if before < 2 {
		t.Errorf("%d snapshot mappings with 2 spares ready", before)
	}
	rt.Close(ctx)
	closed = true
	if after := snapshotMaps(t) - base; after != 0 {
		t.Errorf("%d snapshot mappings after Close", after)
	}
}
