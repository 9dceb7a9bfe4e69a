package runtime_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// snapshotMemfdBytes is the memory the process's snapshot memfds hold
// (their allocated blocks).
func snapshotMemfdBytes(tb testing.TB) uint64 {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Skipf("no /proc/self/fd: %v", err)
	}
	var n uint64
	for _, e := range ents {
		p := "/proc/self/fd/" + e.Name()
		if l, err := os.Readlink(p); err != nil || !strings.HasPrefix(l, "/memfd:wasmbox-snapshot") {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(p, &st) == nil {
			n += uint64(st.Blocks) * 512
		}
	}
	return n
}

// TestSnapshotUnderRunLimit: the first run of a reactor module takes its
// snapshot under its own memory limit. A module whose initialization
// grows its memory to 16 MiB, run under a 2 MiB limit, leaves no 16 MiB
// image behind (it was taken under the runtime's 256 MiB before).
func TestSnapshotUnderRunLimit(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, runtime.Config{DisableCache: true})
	m := compile(t, rt, "grow", runtimetest.GrowingReactor(256))
	before := snapshotMemfdBytes(t)
	err := rt.Run(ctx, m, wazero.NewModuleConfig(), runtime.RunOptions{MemoryLimit: 2 << 20})
	if !errors.Is(err, runtime.ErrMemoryLimit) {
		t.Errorf("run: %v, want the memory limit", err)
	}
	if held := snapshotMemfdBytes(t) - before; held > 2<<20 {
		t.Fatalf("a run limited to 2 MiB left snapshots holding %d bytes", held)
	}
}
