package wasi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"
)

func TestPipeRoundTrip(t *testing.T) {
	r, w := NewPipe(context.Background())
	want := make([]byte, 5*PipeCapacity+123)
	for i := range want {
		want[i] = byte(i * 7)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := w.Write(want)
		if err == nil {
			err = w.Close()
		}
		errc <- err
	}()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, want %d (content differs: %v)", len(got), len(want), len(got) == len(want))
	}
}

// TestPipeBackPressure: a write larger than the capacity blocks until the
// reader drains, and never buffers more than PipeCapacity.
func TestPipeBackPressure(t *testing.T) {
	r, w := NewPipe(context.Background())
	wrote := make(chan int, 1)
	go func() {
		n, _ := w.Write(make([]byte, PipeCapacity+10))
		wrote <- n
	}()
	waitFor(t, func() bool { return r.Buffered() == PipeCapacity })
	select {
	case n := <-wrote:
		t.Fatalf("Write returned %d while the pipe was full", n)
	case <-time.After(20 * time.Millisecond):
	}
	buf := make([]byte, 100)
	if n, err := r.Read(buf); n != 100 || err != nil {
		t.Fatalf("Read = %d, %v", n, err)
	}
	if n := <-wrote; n != PipeCapacity+10 {
		t.Fatalf("Write = %d", n)
	}
	if got := r.Buffered(); got != PipeCapacity-90 {
		t.Fatalf("Buffered = %d, want %d", got, PipeCapacity-90)
	}
}

func TestPipeClose(t *testing.T) {
	sentinel := errors.New("boom")
	tests := []struct {
		name  string
		setup func(r *PipeReader, w *PipeWriter)
		// what Read and Write then return
		readN   int
		readErr func(error) bool
		writeOK bool
		wErr    func(error) bool
	}{
		{
			name:    "writer Close: drain then EOF",
			setup:   func(r *PipeReader, w *PipeWriter) { w.Write([]byte("abc")); w.Close() },
			readN:   3,
			readErr: func(err error) bool { return err == nil },
			wErr:    func(err error) bool { return errors.Is(err, os.ErrClosed) },
		},
		{
			name:    "writer CloseWithError: drain then the error",
			setup:   func(r *PipeReader, w *PipeWriter) { w.Write([]byte("abc")); w.CloseWithError(sentinel) },
			readN:   3,
			readErr: func(err error) bool { return err == nil },
			wErr:    func(err error) bool { return err != nil },
		},
		{
			name:    "reader Close: EPIPE for writers",
			setup:   func(r *PipeReader, w *PipeWriter) { r.Close() },
			readErr: func(err error) bool { return errors.Is(err, ErrReadClosed) },
			wErr:    func(err error) bool { return errors.Is(err, syscall.EPIPE) },
		},
		{
			name:    "reader CloseWithError: EPIPE and the error",
			setup:   func(r *PipeReader, w *PipeWriter) { r.CloseWithError(sentinel) },
			readErr: func(err error) bool { return errors.Is(err, sentinel) },
			wErr: func(err error) bool {
				return errors.Is(err, syscall.EPIPE) && errors.Is(err, sentinel)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, w := NewPipe(context.Background())
			tc.setup(r, w)
			buf := make([]byte, 10)
			n, err := r.Read(buf)
			if n != tc.readN || !tc.readErr(err) {
				t.Errorf("first Read = %d, %v", n, err)
			}
			if _, err := w.Write([]byte("x")); !tc.wErr(err) {
				t.Errorf("Write after close: %v", err)
			}
			// Idempotent closes never block nor panic.
			r.Close()
			w.Close()
			r.Close()
			w.Close()
		})
	}
	t.Run("EOF after drain", func(t *testing.T) {
		r, w := NewPipe(context.Background())
		w.Write([]byte("abc"))
		w.Close()
		b, err := io.ReadAll(r)
		if string(b) != "abc" || err != nil {
			t.Fatalf("ReadAll = %q, %v", b, err)
		}
		if n, err := r.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Fatalf("Read after EOF = %d, %v", n, err)
		}
	})
	t.Run("writer CloseWithError after drain", func(t *testing.T) {
		r, w := NewPipe(context.Background())
		w.Write([]byte("abc"))
		w.CloseWithError(sentinel)
		b, err := io.ReadAll(r)
		if string(b) != "abc" || !errors.Is(err, sentinel) {
			t.Fatalf("ReadAll = %q, %v", b, err)
		}
	})
}

// TestPipeBlockedUnblocks: a Read blocked on an empty pipe and a Write
// blocked on a full one return promptly on cancel and on close of the other
// end.
func TestPipeBlockedUnblocks(t *testing.T) {
	type op func(r *PipeReader, w *PipeWriter) error
	blockedRead := func(r *PipeReader, w *PipeWriter) error {
		_, err := r.Read(make([]byte, 10))
		return err
	}
	blockedWrite := func(r *PipeReader, w *PipeWriter) error {
		_, err := w.Write(make([]byte, PipeCapacity+1))
		return err
	}
	tests := []struct {
		name    string
		op      op
		unblock func(cancel context.CancelFunc, r *PipeReader, w *PipeWriter)
		want    func(error) bool
	}{
		{"read/cancel", blockedRead, func(c context.CancelFunc, r *PipeReader, w *PipeWriter) { c() },
			func(err error) bool { return errors.Is(err, context.Canceled) }},
		{"read/writer closes", blockedRead, func(c context.CancelFunc, r *PipeReader, w *PipeWriter) { w.Close() },
			func(err error) bool { return err == io.EOF }},
		{"read/reader closes", blockedRead, func(c context.CancelFunc, r *PipeReader, w *PipeWriter) { r.Close() },
			func(err error) bool { return errors.Is(err, ErrReadClosed) }},
		{"write/cancel", blockedWrite, func(c context.CancelFunc, r *PipeReader, w *PipeWriter) { c() },
			func(err error) bool { return errors.Is(err, context.Canceled) }},
		{"write/reader closes", blockedWrite, func(c context.CancelFunc, r *PipeReader, w *PipeWriter) { r.Close() },
			func(err error) bool { return errors.Is(err, syscall.EPIPE) }},
		{"write/writer closes", blockedWrite, func(c context.CancelFunc, r *PipeReader, w *PipeWriter) { w.Close() },
			func(err error) bool { return err != nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, w := NewPipe(ctx)
			errc := make(chan error, 1)
			go func() { errc <- tc.op(r, w) }()
			select {
			case err := <-errc:
				t.Fatalf("did not block: %v", err)
			case <-time.After(30 * time.Millisecond):
			}
			start := time.Now()
			tc.unblock(cancel, r, w)
			select {
			case err := <-errc:
				t.Logf("returned after %v", time.Since(start))
				if !tc.want(err) {
					t.Errorf("err = %v", err)
				}
			case <-time.After(30 * time.Second): // a watchdog, not a speed limit
				t.Fatal("still blocked 2s after unblock")
			}
			if after := settleGoroutines(before); after > before {
				t.Errorf("goroutines: %d before, %d after", before, after)
			}
		})
	}
}

func TestPipePoll(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, w := NewPipe(ctx)

	if _, errno := r.Poll(experimentalsys.POLLOUT, 0); errno != experimentalsys.ENOTSUP {
		t.Errorf("POLLOUT errno = %v, want ENOTSUP", errno)
	}
	if ready, errno := r.Poll(experimentalsys.POLLIN, 0); ready || errno != 0 {
		t.Errorf("empty pipe, zero timeout: %v %v", ready, errno)
	}
	start := time.Now()
	if ready, errno := r.Poll(experimentalsys.POLLIN, 30); ready || errno != 0 {
		t.Errorf("empty pipe, 30ms: %v %v", ready, errno)
	}
	if d := time.Since(start); d < 25*time.Millisecond {
		t.Errorf("30ms poll returned after %v", d)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("x"))
	}()
	if ready, errno := r.Poll(experimentalsys.POLLIN, -1); !ready || errno != 0 {
		t.Errorf("poll until data: %v %v", ready, errno)
	}
	// The wake-up Poll consumed is still there for Read: it must not block.
	if n, err := r.Read(make([]byte, 4)); n != 1 || err != nil {
		t.Errorf("Read after poll = %d, %v", n, err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	if ready, errno := r.Poll(experimentalsys.POLLIN, -1); ready || errno != experimentalsys.EINTR {
		t.Errorf("poll on cancel: %v %v, want false EINTR", ready, errno)
	}

	r2, w2 := NewPipe(context.Background())
	w2.Close()
	if ready, errno := r2.Poll(experimentalsys.POLLIN, -1); !ready || errno != 0 {
		t.Errorf("closed writer: %v %v, want ready (EOF)", ready, errno)
	}
}

// TestPipeHammer runs several writers and readers at once (run with -race)
// and checks no byte is lost or duplicated.
func TestPipeHammer(t *testing.T) {
	r, w := NewPipe(context.Background())
	const writers, perWriter = 4, 200
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for j := range perWriter {
				msg := bytes.Repeat([]byte{byte('a' + i)}, 1+rng.IntN(3000))
				if _, err := w.Write(msg); err != nil {
					t.Errorf("writer %d msg %d: %v", i, j, err)
					return
				}
			}
		}()
	}
	counts := make([]int, writers)
	var mu sync.Mutex
	var rg sync.WaitGroup
	for range 3 {
		rg.Add(1)
		go func() {
			defer rg.Done()
			buf := make([]byte, 777)
			for {
				n, err := r.Read(buf)
				mu.Lock()
				for _, b := range buf[:n] {
					counts[b-'a']++
				}
				mu.Unlock()
				if err == io.EOF {
					return
				}
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	w.Close()
	rg.Wait()
	for i := range writers {
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		want := 0
		for range perWriter {
			want += 1 + rng.IntN(3000)
		}
		if counts[i] != want {
			t.Errorf("writer %d: read %d bytes, want %d", i, counts[i], want)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 400; i++ {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("condition not reached in 2s")
}

func ExampleNewPipe() {
	ctx := context.Background()
	r, w := NewPipe(ctx)
	go func() {
		fmt.Fprint(w, "hello through a pipe")
		w.Close()
	}()
	b, err := io.ReadAll(r)
	fmt.Println(string(b), err)
	// Output: hello through a pipe <nil>
}

func TestPipeReadWriteContext(t *testing.T) {
	r, w := NewPipe(context.Background())
	defer r.Close()
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := r.ReadContext(ctx, make([]byte, 8)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadContext on an empty pipe: %v", err)
	}
	big := make([]byte, PipeCapacity+10)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	n, err := w.WriteContext(ctx2, big)
	if !errors.Is(err, context.DeadlineExceeded) || n != PipeCapacity {
		t.Fatalf("WriteContext on a full pipe: n=%d err=%v", n, err)
	}
	// The pipe itself is still usable with its own context.
	buf := make([]byte, 4)
	if n, err := r.Read(buf); n != 4 || err != nil {
		t.Fatalf("Read after: %d %v", n, err)
	}
}
