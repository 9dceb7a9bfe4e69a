package wasm

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe to read while a guest writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStreamsAsInputArrives checks that cat (plain and with a line option)
// writes what it reads from a pipe before the pipe ends, as GNU cat does:
// a sandbox pipeline such as `producer | cat -n` must stream.
func TestStreamsAsInputArrives(t *testing.T) {
	h := getHost(t)
	root, _ := newRoot(t)
	for _, argv := range [][]string{{"cat"}, {"cat", "-n"}} {
		t.Run(strings.Join(argv, " "), func(t *testing.T) {
			pr, pw := io.Pipe()
			var out lockedBuffer
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := h.run(ctx, &guest{argv: argv, env: goldenEnv, cwd: "/", root: root, stdin: pr, stdout: &out, stderr: io.Discard})
				done <- err
			}()
			if _, err := pw.Write([]byte("ping\n")); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(out.String(), "ping") && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if !strings.Contains(out.String(), "ping") {
				t.Errorf("%v printed %q before its input ended", argv, out.String())
			}
			pw.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}
