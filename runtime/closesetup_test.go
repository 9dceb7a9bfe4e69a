package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// A Close of the runtime that comes while an instance is being set up
// (its module made, its memory not yet the image's) ends the setup with
// ErrClosed: the memory is released after the setup's writes (pin), not
// under them. Before, the setup went on on the released memory (an
// image's memory is a mapping that the release unmaps) and returned an
// instance of a closed runtime as if nothing had happened.
func TestRuntimeCloseDuringSetup(t *testing.T) {
	body := runtimetest.Cat(runtimetest.I32Const(0), runtimetest.I32Const(1), []byte{0x36, 0x02, 0x00})
	bin := runtimetest.Module{
		MemoryMin: 2, Globals: []int32{65536}, GlobalExports: []string{"__stack_pointer"},
		Funcs: []runtimetest.Func{{Type: runtimetest.FuncType{}, Export: "poke", Body: body}},
	}.Encode()
	for _, mapped := range []bool{true, false} {
		name := "mapped image"
		if !mapped {
			name = "copied image"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			rt, err := New(ctx, Config{DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(ctx)
			m, err := rt.Compile(ctx, "poker", bin)
			if err != nil {
				t.Fatal(err)
			}
			img, err := rt.FreshImage(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			if !mapped {
				// An image of its own, larger than the module's memory:
				// copied into a fresh instance, grown first.
				b := make([]byte, 4*65536)
				b[3*65536] = 7
				img = NewMemoryImage(b, 65536)
			}
			testHookInstantiated = func(mod api.Module) {
				go rt.Close(context.Background())
				for deadline := time.Now().Add(time.Minute); !mod.IsClosed(); {
					if time.Now().After(deadline) {
						t.Error("the runtime's Close did not close the module in a minute")
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
			defer func() { testHookInstantiated = nil }()
			st, err := preview1.NewState(preview1.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			in, err := rt.InstantiateImage(ctx, m, img, InstanceOptions{WASI: st})
			if err == nil {
				in.Close(ctx)
				t.Fatal("InstantiateImage made an instance of a runtime closed during its setup")
			}
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("InstantiateImage: %v, want ErrClosed", err)
			}
			for deadline := time.Now().Add(time.Minute); rt.LiveMemories() != 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d memories live a minute after the close", rt.LiveMemories())
				}
			}
		})
	}
}
