package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// The calls of ForkABI from a hand-assembled guest: their errnos, and what
// they write. The fork itself runs in executor/fork_test.go (a C guest
// built with build/posix).
func TestForkABIErrors(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	if !rt.OwnWASI() {
		t.Skip("the fork calls need wasmbox's WASI")
	}
	tests := []struct {
		name        string
		call        string
		args        []int32
		errno, byte int
	}{
		// No __stack_pointer or wasmbox_fork_child exported: ENOSYS.
		{"fork without exports", "fork", []int32{8}, 52, 0},
		{"fork ret out of memory", "fork", []int32{65532}, 21, 0},
		{"proc_self", "proc_self", []int32{0}, 0, 1},
		{"proc_self out of memory", "proc_self", []int32{65533}, 21, 0},
		{"fd_dup", "fd_dup", []int32{1, 5, 0}, 0, 5},
		{"fd_dup lowest", "fd_dup", []int32{2, 0, 0}, 0, 3},
		{"fd_dup closed fd", "fd_dup", []int32{9, 0, 0}, 8, 0},
		{"fd_dup min too large", "fd_dup", []int32{1, 1 << 16, 0}, 28, 0},
		{"fd_dup ret out of memory", "fd_dup", []int32{1, 0, 65534}, 21, 0},
		{"fd_dup2", "fd_dup2", []int32{1, 7}, 0, 0},
		{"fd_dup2 closed fd", "fd_dup2", []int32{9, 1}, 8, 0},
		{"fd_dup2 past the table", "fd_dup2", []int32{1, 1 << 16}, 8, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := preview1.NewState(preview1.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			m := compile(t, rt, tc.name, runtimetest.ForkCall(tc.call, tc.args...))
			err = rt.Run(context.Background(), m, wazero.NewModuleConfig(), runtime.RunOptions{WASI: st})
			code := exitCode(err)
			if code < 0 {
				t.Fatalf("run: %v", err)
			}
			if errno, b := code/256, code%256; errno != tc.errno || b != tc.byte {
				t.Errorf("errno=%d byte=%d, want errno=%d byte=%d", errno, b, tc.errno, tc.byte)
			}
		})
	}
}

// A live instance forks in a call as a run does (a session's shell): the
// child shares the instance's descriptors, and the call waits for it.
func TestForkInInstance(t *testing.T) {
	rt, m := forktest(t)
	var out bytes.Buffer
	st, err := preview1.NewState(preview1.Config{Args: []string{"forktest", "pipe"}, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	in, err := rt.Instantiate(ctx, m, runtime.InstanceOptions{WASI: st})
	if err != nil {
		t.Fatal(err)
	}
	_, err = in.Call(ctx, "_start")
	if code := exitCode(err); code != 0 {
		t.Errorf("_start: %v", err)
	}
	want := "I am 1, read: hello from 2, child of 1\nwaitpid 1: same 1 exited 1 status 7\n" +
		"handle at 1024: 1, closed by waitpid: 1\nno more children\n"
	if out.String() != want {
		t.Errorf("stdout\n got %q\nwant %q", out.String(), want)
	}
	in.Close(ctx)
	if n := rt.LiveInstances(); n != 0 {
		t.Errorf("%d live instances after Close", n)
	}
}

// A fork tree's limit ends the run for every process it refuses, not only
// the first: while the first refusal is still being handled (here its
// OnMemoryLimit takes a while, as a slow caller's would), a second process
// refused a fork must not see ENOMEM and go on. forktest's bomb has every
// process fork until fork fails; a root that saw ENOMEM printed "fork
// failed" and exited 0, and the run with it (TestForkBomb/budget, about
// one run in a hundred, before onTree made its later callers wait).
func TestForkTreeLimitEndsEveryRefused(t *testing.T) {
	rt, m := forktest(t)
	for i := range 8 {
		limit := uint64(12<<20 + i*(1<<20) + i*4096)
		var out bytes.Buffer
		st, err := preview1.NewState(preview1.Config{Args: []string{"forktest", "bomb"}, Stdout: &out})
		if err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int32
		err = rt.Run(context.Background(), m, wazero.NewModuleConfig(), runtime.RunOptions{
			WASI:   st,
			Budget: runtime.NewBudget(limit),
			OnMemoryLimit: func() {
				if calls.Add(1) == 1 {
					// Long enough for other processes to be refused
					// in the meantime; what is tested does not depend
					// on it.
					time.Sleep(20 * time.Millisecond)
				}
			},
		})
		st.Close()
		if !errors.Is(err, runtime.ErrMemoryLimit) || out.Len() != 0 {
			t.Errorf("budget %d: err %v, stdout %q; want ErrMemoryLimit and no output", limit, err, out.String())
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("budget %d: OnMemoryLimit called %d times, want once", limit, n)
		}
	}
	if n := rt.LiveInstances(); n != 0 {
		t.Errorf("%d live instances after the bombs", n)
	}
}

// forktest is a runtime with wasmbox's WASI and testdata/posix/forktest.wasm
// compiled in it (the test is skipped without that WASI).
func forktest(t *testing.T) (*runtime.Runtime, *runtime.Module) {
	t.Helper()
	rt := newRuntime(t, runtime.Config{})
	if !rt.OwnWASI() {
		t.Skip("the fork calls need wasmbox's WASI")
	}
	wasmBytes, err := os.ReadFile("../testdata/posix/forktest.wasm")
	if err != nil {
		t.Fatal(err)
	}
	return rt, compile(t, rt, "forktest", wasmBytes)
}
