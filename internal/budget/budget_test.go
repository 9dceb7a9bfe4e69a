package budget

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

func TestReserveRelease(t *testing.T) {
	b := New("run", 100)
	if err := b.Reserve(60); err != nil {
		t.Fatal(err)
	}
	err := b.Reserve(41)
	var ee *ExceededError
	if !errors.As(err, &ee) || !errors.Is(err, ErrExceeded) {
		t.Fatalf("Reserve past the limit: %v, want an *ExceededError", err)
	}
	if ee.Name != "run" || ee.Limit != 100 || ee.Used != 60 || ee.Asked != 41 {
		t.Fatalf("error = %+v", ee)
	}
	if got := err.Error(); got != "run memory budget (100B) exceeded: 60B in use, 41B more asked" {
		t.Fatalf("message %q", got)
	}
	if err := b.Reserve(40); err != nil {
		t.Fatalf("Reserve up to the limit: %v", err)
	}
	if b.Available() != 0 {
		t.Fatalf("Available = %d, want 0", b.Available())
	}
	b.Release(100)
	if b.Used() != 0 || b.Available() != 100 {
		t.Fatalf("after release: used %d avail %d", b.Used(), b.Available())
	}
	// Asking more than the limit at once never wraps around.
	if err := b.Reserve(Unlimited); err == nil {
		t.Fatal("Reserve(Unlimited) admitted")
	}
}

func TestHierarchy(t *testing.T) {
	proc := New("process", 1000)
	sess := proc.Child("session", 800)
	run := sess.Child("run", 300)
	cmd := run.Child("command", 200)
	if err := cmd.Reserve(200); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Budget{proc, sess, run, cmd} {
		if c.Used() != 200 {
			t.Fatalf("%s used %d, want 200", c.Name(), c.Used())
		}
	}
	// The command's own limit refuses first.
	if err := cmd.Reserve(1); !strings.HasPrefix(err.Error(), "command ") {
		t.Fatalf("got %v, want the command budget to refuse", err)
	}
	// A second command fits its own limit but not the run's: nothing is
	// taken anywhere.
	cmd2 := run.Child("command", 200)
	err := cmd2.Reserve(150)
	var ee *ExceededError
	if !errors.As(err, &ee) || ee.Name != "run" {
		t.Fatalf("got %v, want the run budget to refuse", err)
	}
	if cmd2.Used() != 0 || run.Used() != 200 || proc.Used() != 200 {
		t.Fatalf("a refused reservation kept bytes: cmd2 %d run %d proc %d", cmd2.Used(), run.Used(), proc.Used())
	}
	if cmd2.Available() != 100 {
		t.Fatalf("cmd2.Available = %d, want the run's 100", cmd2.Available())
	}
	// Another session fills the process: the run is refused by it.
	other := proc.Child("session", 800)
	if err := other.Reserve(750); err != nil {
		t.Fatal(err)
	}
	if err := cmd2.Reserve(60); !errors.As(err, &ee) || ee.Name != "process" {
		t.Fatalf("got %v, want the process budget to refuse", err)
	}
	other.Release(750)
	cmd.Release(200)
	if proc.Used() != 0 || sess.Used() != 0 || run.Used() != 0 {
		t.Fatalf("leak: proc %d sess %d run %d", proc.Used(), sess.Used(), run.Used())
	}
	if !cmd.Within(proc) || cmd.Within(other) {
		t.Fatal("Within")
	}
}

func TestCarve(t *testing.T) {
	proc := New("process", 1000)
	run, err := proc.Carve("run", 600)
	if err != nil {
		t.Fatal(err)
	}
	if proc.Used() != 600 {
		t.Fatalf("carve took %d, want 600", proc.Used())
	}
	if _, err := proc.Carve("run", 600); !errors.Is(err, ErrExceeded) {
		t.Fatalf("second carve: %v, want refused", err)
	}
	cmd := run.Child("command", 500)
	if err := cmd.Reserve(500); err != nil {
		t.Fatal(err)
	}
	if proc.Used() != 600 {
		t.Fatalf("a reservation inside a carve reached the parent: %d", proc.Used())
	}
	if err := run.Child("command", 500).Reserve(200); !strings.HasPrefix(err.Error(), "run ") {
		t.Fatalf("got %v, want the carved run to refuse", err)
	}
	run.Close()
	run.Close()
	if proc.Used() != 0 {
		t.Fatalf("Close gave back %d, want all 600", 600-proc.Used())
	}
}

func TestNil(t *testing.T) {
	var b *Budget
	if err := b.Reserve(1 << 60); err != nil {
		t.Fatal(err)
	}
	b.Release(5)
	b.Close()
	if b.Used() != 0 || b.Limit() != Unlimited || b.Available() != Unlimited {
		t.Fatal("nil budget")
	}
	c, err := b.Carve("x", 10)
	if err != nil || c.Reserve(11) == nil {
		t.Fatal("carve of nil")
	}
}

// TestConcurrent runs reservations from many goroutines in a tree: the
// limits hold at every moment and everything comes back. Run with -race.
func TestConcurrent(t *testing.T) {
	proc := New("process", 10_000)
	var wg sync.WaitGroup
	var over sync.Once
	for s := 0; s < 4; s++ {
		sess := proc.Child("session", 4000)
		for r := 0; r < 4; r++ {
			run, err := sess.Carve("run", 1000)
			if err != nil {
				continue // the session is full: fine
			}
			for c := 0; c < 4; c++ {
				cmd := run.Child("command", 400)
				wg.Go(func() {
					for i := 0; i < 2000; i++ {
						n := uint64(i%7*50 + 1)
						if cmd.Reserve(n) == nil {
							if proc.Used() > proc.Limit() || sess.Used() > sess.Limit() || run.Used() > run.Limit() || cmd.Used() > cmd.Limit() {
								over.Do(func() { t.Error("a limit was passed") })
							}
							cmd.Release(n)
						}
					}
				})
			}
			defer run.Close()
		}
	}
	wg.Wait()
	for _, c := range []*Budget{proc} {
		if c.Used() > c.Limit() {
			t.Fatal("over")
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[uint64]string{
		17: "17B", 256 << 20: "256MiB", 1536 << 10: "1536KiB", 3560000000: "3.3GiB", Unlimited: "unlimited", 0: "0B",
	} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestDefaultProcessLimit(t *testing.T) {
	n, ok := MachineMemory()
	if !ok {
		t.Skip("machine memory unknown here")
	}
	if d := DefaultProcessLimit(); d == 0 || d >= n {
		t.Fatalf("DefaultProcessLimit = %d for %d of memory", d, n)
	}
}
