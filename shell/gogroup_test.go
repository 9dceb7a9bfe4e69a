package shell

import (
	"sync"
	"testing"
	"time"
)

// A goGroup may gain members while someone waits for it to drain (run
// with -race).
func TestGoGroupAddWhileWaiting(t *testing.T) {
	var g goGroup
	select {
	case <-g.Idle():
	default:
		t.Fatal("an empty group is not idle")
	}
	release := make(chan struct{})
	g.Go(func() { <-release })
	idle := g.Idle()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.Go(func() { <-release })
		}()
	}
	wg.Wait()
	select {
	case <-idle:
		t.Fatal("idle while members run")
	case <-time.After(10 * time.Millisecond):
	}
	close(release)
	select {
	case <-idle:
	case <-time.After(5 * time.Second):
		t.Fatal("never idle")
	}
}
