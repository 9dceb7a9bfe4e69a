package preview1_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// eofAfter reports whether the read end r of a pipe sees end of file
// (every write end closed) rather than "no data yet".
func eofAfter(t *testing.T, r *wasi.PipeReader) bool {
	t.Helper()
	_, err := r.TryRead(make([]byte, 1))
	switch {
	case err == io.EOF:
		return true
	case errors.Is(err, wasi.ErrWouldBlock):
		return false
	}
	t.Fatalf("TryRead: %v", err)
	return false
}

// Dup, Dup2 and Fork make descriptors of one object: the write end of a
// pipe stays open until the last of them is closed, in the State and in
// its fork.
func TestDupForkShareObject(t *testing.T) {
	st, err := preview1.NewState(preview1.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, w := wasi.NewPipe(context.Background())
	defer r.Close()
	wfd, err := st.AddStream(nil, w, w.Close, false)
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.Dup(wfd, 10)
	if err != nil || d != 10 {
		t.Fatalf("Dup = %d, %v; want 10", d, err)
	}
	if err := st.Dup2(wfd, 1); err != nil { // over stdout
		t.Fatal(err)
	}
	child := st.Fork()
	for _, fd := range []uint32{wfd, d, 1} {
		if err := st.CloseFd(fd); err != nil {
			t.Fatal(err)
		}
		if eofAfter(t, r) {
			t.Fatalf("end of file after closing %d of the parent: the fork still holds the pipe", fd)
		}
	}
	if n := child.OpenFiles(); n != 5 { // stdin, stderr, the pipe three times
		t.Errorf("the fork has %d descriptors, want 5", n)
	}
	child.Close()
	if !eofAfter(t, r) {
		t.Error("no end of file after the last holder closed")
	}
	if n := st.Streams(); n != 0 {
		t.Errorf("%d streams still counted", n)
	}
}

func TestDupErrors(t *testing.T) {
	st, err := preview1.NewState(preview1.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Dup(7, 0); !errors.Is(err, preview1.ErrnoBadf) {
		t.Errorf("Dup of a closed fd: %v", err)
	}
	if _, err := st.Dup(0, 1<<16); !errors.Is(err, preview1.ErrnoInval) {
		t.Errorf("Dup past the table: %v", err)
	}
	if err := st.Dup2(7, 1); !errors.Is(err, preview1.ErrnoBadf) {
		t.Errorf("Dup2 of a closed fd: %v", err)
	}
	if err := st.Dup2(0, 1<<16); !errors.Is(err, preview1.ErrnoBadf) {
		t.Errorf("Dup2 past the table: %v", err)
	}
	if err := st.Dup2(1, 1); err != nil {
		t.Errorf("Dup2 onto itself: %v", err)
	}
	if n := st.OpenFiles(); n != 3 {
		t.Errorf("%d descriptors open, want 3", n)
	}
}

// The host's standard streams are written by the parent and its forks at
// once: every write arrives whole (run with -race to see the data race a
// plain bytes.Buffer had).
func TestForkSharedStdout(t *testing.T) {
	var out bytes.Buffer
	st, err := preview1.NewState(preview1.Config{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	child := st.Fork()
	defer child.Close()
	var wg sync.WaitGroup
	for _, s := range []*preview1.State{st, child} {
		w, release, err := s.LendWriter(1)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer release()
			for i := 0; i < 1000; i++ {
				w.Write([]byte("0123456789\n"))
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(out.String(), "0123456789\n"); n != 2000 || out.Len() != 22000 {
		t.Errorf("%d whole lines in %d bytes, want 2000 in 22000", n, out.Len())
	}
}

// A pipe's write end given as stdout stays waitable and non-blocking
// after a fork wraps it.
func TestForkKeepsWaitableStdout(t *testing.T) {
	r, w := wasi.NewPipe(context.Background())
	defer r.Close()
	defer w.Close()
	st, err := preview1.NewState(preview1.Config{Stdout: w})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	child := st.Fork()
	defer child.Close()
	for _, s := range []*preview1.State{st, child} {
		lw, release, err := s.LendWriter(1)
		if err != nil {
			t.Fatal(err)
		}
		wt, ok := lw.(wasi.Waitable)
		if !ok || !wt.Ready(true) || wt.Wakers() == nil {
			t.Errorf("stdout after the fork is %T, not a ready wasi.Waitable", lw)
		}
		if _, ok := lw.(interface{ TryWrite([]byte) (int, error) }); !ok {
			t.Errorf("stdout after the fork is %T, without TryWrite", lw)
		}
		release()
	}
}

// TestInherited: a spawned child's inherited descriptors go to their
// numbers; a number that is taken (stdio, the root preopen), past
// MaxInherited, or with no stream is refused; LendableFDs reports the
// open descriptors from lo up, never the preopen or a directory, and
// LendStream lends a pipe's end in its direction.
func TestInherited(t *testing.T) {
	fsys := vfs.NewMemFS()
	r, w := io.Pipe()
	defer r.Close()
	for _, bad := range [][]preview1.Inherited{
		{{FD: 2, R: r}},
		{{FD: 3, R: r}},
		{{FD: preview1.MaxInherited, R: r}},
		{{FD: 5}},
		{{FD: 5, R: r, W: w}},
		{{FD: 5, R: r}, {FD: 5, W: w}},
	} {
		if st, err := preview1.NewState(preview1.Config{FS: fsys, Inherited: bad}); err == nil {
			st.Close()
			t.Errorf("%+v: no error", bad)
		}
	}
	st, err := preview1.NewState(preview1.Config{FS: fsys, Inherited: []preview1.Inherited{{FD: 40, R: r}, {FD: 7, W: w}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := st.LendableFDs(3, 100); len(got) != 2 || got[0] != 7 || got[1] != 40 {
		t.Errorf("LendableFDs(3) = %v, want [7 40]", got)
	}
	if got := st.LendableFDs(4, 1); len(got) != 1 || got[0] != 7 {
		t.Errorf("LendableFDs(4, max 1) = %v, want [7]", got)
	}
	in, rel, err := st.LendStream(40)
	if err != nil || in.R == nil || in.W != nil || in.FD != 40 {
		t.Fatalf("LendStream(40) = %+v, %v; want the reader", in, err)
	}
	rel()
	in, rel, err = st.LendStream(7)
	if err != nil || in.W == nil || in.R != nil {
		t.Fatalf("LendStream(7) = %+v, %v; want the writer", in, err)
	}
	rel()
	if _, _, err := st.LendStream(8); !errors.Is(err, preview1.ErrnoBadf) {
		t.Errorf("LendStream of a closed fd: %v", err)
	}
}
