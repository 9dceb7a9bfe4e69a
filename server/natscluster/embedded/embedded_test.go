package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestClusterMeshOutlivesFirstServer: every server routes to every other
// (server i dials the ones started before it), so the cluster does not
// hang on the first server: with it killed, the other two still see each
// other and JetStream still places and serves an R2 stream.
func TestClusterMeshOutlivesFirstServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // watchdog
	defer cancel()
	c, err := Start(ctx, t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	for i := range 3 {
		if got := peers(c.Server(i)); len(got) != 2 || got[c.Server(i).Name()] {
			t.Fatalf("server %d routes to %v, want the other two", i, got)
		}
	}
	c.Kill(0)
	for {
		if peers(c.Server(1))["nats-2"] && peers(c.Server(2))["nats-1"] {
			nc, err := nats.Connect(c.URLs())
			if err != nil {
				t.Fatal(err)
			}
			js, _ := nc.JetStream()
			actx, acancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = js.AddStream(&nats.StreamConfig{Name: "mesh", Subjects: []string{"mesh.>"}, Replicas: 2}, nats.Context(actx))
			if err == nil {
				_, err = js.Publish("mesh.x", []byte("hi"), nats.Context(actx))
			}
			acancel()
			nc.Close()
			if err == nil {
				return
			}
			t.Logf("not yet: %v", err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("servers 1 and 2 did not keep a working cluster without server 0: routes %v %v",
				peers(c.Server(1)), peers(c.Server(2)))
		case <-time.After(200 * time.Millisecond):
		}
	}
}
