package audit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/audit"
)

// With AUDIT_TEST_WRITER=path the test binary is one writer process of
// TestOpenFileParallelWriters: it appends AUDIT_TEST_N entries from each
// of AUDIT_TEST_G goroutines, through one Logger, and exits.
func TestMain(m *testing.M) {
	if path := os.Getenv("AUDIT_TEST_WRITER"); path != "" {
		g, _ := strconv.Atoi(os.Getenv("AUDIT_TEST_G"))
		n, _ := strconv.Atoi(os.Getenv("AUDIT_TEST_N"))
		if err := writeEntries(path, "p"+strconv.Itoa(os.Getpid()), g, n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// writeEntries opens path with OpenFile and logs n entries from each of g
// goroutines.
func writeEntries(path, who string, g, n int) error {
	l, err := audit.OpenFile(context.Background(), path, audit.WithRedactor(audit.NewRedactor(audit.WithEnviron(nil))))
	if err != nil {
		return err
	}
	defer l.Close()
	errs := make(chan error, g)
	var wg sync.WaitGroup
	for i := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range n {
				if err := l.Log(context.Background(), audit.Event{Kind: audit.KindRun, JobID: fmt.Sprintf("%s-%d-%d", who, i, j)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// Four processes and this one, each with four goroutines, append to one
// log at once: the log verifies as one chain holding every entry.
func TestOpenFileParallelWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	const procs, g, n = 4, 4, 25
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // watchdog
	defer cancel()
	var cmds []*exec.Cmd
	for range procs {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "AUDIT_TEST_WRITER="+path, "AUDIT_TEST_G="+strconv.Itoa(g), "AUDIT_TEST_N="+strconv.Itoa(n))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		t.Cleanup(func() {
			if stderr.Len() > 0 {
				t.Logf("writer %d: %s", cmd.Process.Pid, stderr.Bytes())
			}
		})
	}
	// A verifier beside the writers sees a whole chain each time.
	stop := make(chan struct{})
	verified := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				verified <- nil
				return
			default:
			}
			if _, err := audit.VerifyFile(ctx, path); err != nil && !errors.Is(err, os.ErrNotExist) {
				verified <- err
				return
			}
		}
	}()
	if err := writeEntries(path, "self", g, n); err != nil {
		t.Error(err)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer: %v", err)
		}
	}
	close(stop)
	if err := <-verified; err != nil {
		t.Errorf("verifying while the writers append: %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head, err := audit.VerifyFrom(f, audit.Head{})
	if err != nil {
		t.Fatalf("the log of parallel writers does not verify: %v", err)
	}
	if want := uint64((procs + 1) * g * n); head.Seq != want {
		t.Fatalf("%d entries, want %d", head.Seq, want)
	}
}

// A line another writer appended is verified before an entry is chained
// to it: a forged one makes Log fail with ErrTampered, and so does a log
// that shrank under an open Logger.
func TestOpenFileVerifiesOthersLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	ctx := context.Background()
	l, err := audit.OpenFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Log(ctx, audit.Event{Kind: audit.KindRun}); err != nil {
		t.Fatal(err)
	}
	// Another Logger continues the chain: fine.
	l2, err := audit.OpenFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.Log(ctx, audit.Event{Kind: audit.KindRun}); err != nil {
		t.Fatal(err)
	}
	l2.Close()
	if err := l2.Log(ctx, audit.Event{Kind: audit.KindRun}); err == nil {
		t.Fatal("Log after Close succeeded")
	}
	if err := l.Log(ctx, audit.Event{Kind: audit.KindRun}); err != nil {
		t.Fatalf("after another writer's entry: %v", err)
	}
	if h := l.Head(); h.Seq != 3 {
		t.Fatalf("head %+v, want seq 3", h)
	}
	// A forged line.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"seq":4,"prev":"x","hash":"y"}` + "\n")
	f.Close()
	if err := l.Log(ctx, audit.Event{Kind: audit.KindRun}); !errors.Is(err, audit.ErrTampered) {
		t.Fatalf("after a forged line: %v", err)
	}
	// A log cut shorter.
	os.Truncate(path, 10)
	if err := l.Log(ctx, audit.Event{Kind: audit.KindRun}); !errors.Is(err, audit.ErrTampered) {
		t.Fatalf("after the log shrank: %v", err)
	}
	// A tampered log is refused at open.
	if _, err := audit.OpenFile(ctx, path); !errors.Is(err, audit.ErrTampered) {
		t.Fatalf("open of a tampered log: %v", err)
	}
}

// A device (here /dev/null, which is written, never read back for a
// chain) works as before: entries are written, nothing is chained to
// what the device holds.
func TestOpenFileDevice(t *testing.T) {
	ctx := context.Background()
	l, err := audit.OpenFile(ctx, os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 3 {
		if err := l.Log(ctx, audit.Event{Kind: audit.KindRun}); err != nil {
			t.Fatal(err)
		}
	}
	if h := l.Head(); h.Seq != 3 {
		t.Fatalf("head %+v", h)
	}
}
