package preview1_test

import (
	"context"
	"errors"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// cancelingRand is a random source that cancels a context at its first
// read and counts the bytes asked of it.
type cancelingRand struct {
	cancel context.CancelFunc
	n      int
}

func (r *cancelingRand) Read(p []byte) (int, error) {
	r.cancel()
	r.n += len(p)
	clear(p)
	return len(p), nil
}

// TestRandomGetEndsAtCancel: one random_get over the whole of a 64 MiB
// memory ends the guest once its context is done, between two chunks,
// rather than fill it all: crypto/rand makes ~256 MiB a second, and a
// call over a 4 GiB memory ran 16 s that nothing could cut.
func TestRandomGetEndsAtCancel(t *testing.T) {
	randomGet := runtimetest.Import{Module: "wasi_snapshot_preview1", Name: "random_get",
		Type: runtimetest.FuncType{Params: []byte{runtimetest.I32, runtimetest.I32}, Results: []byte{runtimetest.I32}}}
	const size = 64 << 20
	bin := runtimetest.Module{Imports: []runtimetest.Import{randomGet}, MemoryMin: size / 65536,
		Funcs: []runtimetest.Func{{Type: runtimetest.FuncType{Results: []byte{runtimetest.I32}}, Export: "fill",
			Body: runtimetest.Cat(runtimetest.I32Const(0), runtimetest.I32Const(size), runtimetest.Call(0))}}}.Encode()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	if _, err := preview1.Instantiate(ctx, rt); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	src := &cancelingRand{cancel: cancel}
	st, err := preview1.NewState(preview1.Config{Rand: src})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mod, err := rt.InstantiateWithConfig(preview1.WithState(ctx, st), bin, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	res, err := mod.ExportedFunction("fill").Call(preview1.WithState(cctx, st))
	var ee *sys.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != sys.ExitCodeContextCanceled {
		t.Errorf("fill = %v, %v; want the guest ended as canceled", res, err)
	}
	if src.n >= size {
		t.Errorf("random_get wrote all %d bytes after the cancel", src.n)
	}
	t.Logf("%d of %d bytes written", src.n, size)
}
