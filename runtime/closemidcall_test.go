package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// TestCloseDuringCall: closing an instance, or the whole runtime, while a
// call of it is writing its memory stops the call and only then releases
// the memory. The memory of an instance started from an image is a
// mapping: released under the running guest, the guest's next store would
// fault the host process, or write into whatever the host mapped there
// next.
func TestCloseDuringCall(t *testing.T) {
	for _, whole := range []bool{false, true} {
		name := "instance"
		if whole {
			name = "runtime"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			rt := newRuntime(t, runtime.Config{DisableCache: true})
			m := compile(t, rt, "scribbler", runtimetest.Scribbler())
			img, err := rt.FreshImage(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 20; i++ {
				st, err := preview1.NewState(preview1.Config{})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				in, err := rt.InstantiateImage(ctx, m, img, runtime.InstanceOptions{WASI: st})
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() {
					_, err := in.Call(ctx, "scribble")
					done <- err
				}()
				time.Sleep(time.Duration(1+i%5) * time.Millisecond)
				if whole {
					err = rt.Close(ctx)
				} else {
					err = in.Close(ctx)
				}
				if err != nil {
					t.Fatalf("close: %v", err)
				}
				select {
				case err := <-done:
					if !errors.Is(err, runtime.ErrInstanceDead) {
						t.Fatalf("the call ended with %v after its instance was closed, want ErrInstanceDead", err)
					}
				case <-time.After(time.Minute):
					t.Fatal("the call did not end after its instance was closed")
				}
				if _, err := in.Call(ctx, "scribble"); !errors.Is(err, runtime.ErrInstanceDead) {
					t.Fatalf("a call after Close: %v, want ErrInstanceDead", err)
				}
				if whole {
					break
				}
			}
			if n := rt.LiveInstances(); n != 0 {
				t.Fatalf("%d live instances", n)
			}
			if n := rt.LiveMemories(); n != 0 {
				t.Fatalf("%d live memories", n)
			}
		})
	}
}
