package executor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/vfs"
)

// A job whose command is compiled on first use (a cold compile of a tool
// module takes seconds) ends at its own deadline, classed as a timeout;
// the compile goes on and serves the next job. The job waited for the
// whole compile before, however short its deadline.
func TestCompileUnderJobDeadline(t *testing.T) {
	rt, err := runtime.New(context.Background(), runtime.Config{DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	ex := executor.New(rt)
	bin := runtimetest.Guest(t, "big")
	if err := ex.Register("big", bin, "big"); err != nil {
		t.Fatal(err)
	}
	fsys := vfs.NewMemFS()
	if err := ex.Install(fsys, "/bin"); err != nil {
		t.Fatal(err)
	}
	// 20 ms: far less than compiling a 3 MB module without a cache.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	res := ex.Run(ctx, executor.Job{Argv: []string{"big"}, FS: fsys})
	if res.Class != executor.ClassTimeout || res.ExitCode != executor.ExitTimeout {
		t.Fatalf("job during a cold compile: %+v", res)
	}
	if rt.Cached(bin) {
		t.Fatal("the job returned only once the module was compiled")
	}
	// The compile was not abandoned: the next job runs the module.
	res = ex.Run(context.Background(), executor.Job{Argv: []string{"big"}, FS: fsys})
	if res.ExitCode != 0 {
		t.Fatalf("job after the compile: %+v", res)
	}
}

// A guest's own module (a script wrote it, ./x.wasm runs it) is compiled
// under the job's context: the job ends at its deadline, classed as a
// timeout, and the compile stops with it instead of going on to its end
// for nobody (it did, and the module was then kept compiled).
func TestGuestModuleCompileUnderJobDeadline(t *testing.T) {
	rt, err := runtime.New(context.Background(), runtime.Config{DisableCache: true, CompilationWorkers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	ex := executor.New(rt)
	fsys := vfs.NewMemFS()
	// Under the caps, seconds of compile.
	bin := runtimetest.NestedLoops(190, 1000, true)
	if err := vfs.WriteExecutable(fsys, "/x.wasm", bin); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res := ex.Run(ctx, executor.Job{Argv: []string{"/x.wasm"}, FS: fsys})
	if res.Class != executor.ClassTimeout || res.ExitCode != executor.ExitTimeout {
		t.Fatalf("job during the compile of its module: %+v", res)
	}
	for deadline := time.Now().Add(3 * time.Minute); runtime.CompilesInFlight() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the compile still runs after 3 minutes")
		}
	}
	if rt.Cached(bin) {
		t.Fatal("the compile went on to its end after the job's deadline")
	}
}

// TestGuestModuleCompileInRunBudget: the estimated heap of a guest's own
// module's compile is reserved in the job's budget before the compile
// starts. A run budget smaller than the estimate refuses the command as a
// memory limit (137, LIMIT_EXCEEDED) without compiling it, and the budget
// is whole again after; one large enough compiles and runs it.
func TestGuestModuleCompileInRunBudget(t *testing.T) {
	rt, err := runtime.New(context.Background(), runtime.Config{DisableCache: true, CompilationWorkers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	ex := executor.New(rt)
	fsys := vfs.NewMemFS()
	bin := runtimetest.NestedLoops(30, 100, true)
	if err := vfs.WriteExecutable(fsys, "/x.wasm", bin); err != nil {
		t.Fatal(err)
	}
	cost, err := rt.CompileCost(bin)
	if err != nil {
		t.Fatal(err)
	}
	small := rt.Budget().Child("run", cost/2)
	res := ex.Run(context.Background(), executor.Job{Argv: []string{"/x.wasm"}, FS: fsys, Budget: small})
	if res.ExitCode != executor.ExitLimitExceeded || res.Class != executor.ClassLimitExceeded || !errors.Is(res.Err, runtime.ErrMemoryLimit) {
		t.Fatalf("compile of %d estimated bytes in a %d-byte run budget: %+v", cost, cost/2, res)
	}
	if rt.Cached(bin) {
		t.Fatal("the module was compiled although its run budget refused the compile")
	}
	if used := small.Used(); used != 0 {
		t.Fatalf("%d bytes of the run budget still reserved after the refusal", used)
	}
	big := rt.Budget().Child("run", cost+256<<20)
	if res := ex.Run(context.Background(), executor.Job{Argv: []string{"/x.wasm"}, FS: fsys, Budget: big}); res.Err != nil {
		t.Fatalf("compile in a large enough run budget: %+v", res)
	}
	if used := big.Used(); used != 0 {
		t.Fatalf("%d bytes of the run budget still reserved after the run", used)
	}
}
