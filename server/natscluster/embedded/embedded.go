// Package embedded runs NATS servers with JetStream inside the process, on
// loopback: a single node, or a cluster of several joined by routes. The
// cluster tests and `wasmbox bench --only cluster` use it; it is the real
// nats-server (github.com/nats-io/nats-server/v2), not a stand-in.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Cluster is a set of NATS servers started by [Start].
type Cluster struct {
	dir     string
	mu      sync.Mutex
	servers []*server.Server
}

// Start starts n NATS servers with JetStream on 127.0.0.1 (random ports),
// each storing under its own subdirectory of dir, joined in one cluster
// named "wasmbox" when n > 1, and waits until JetStream answers (a leader
// is elected) or ctx ends.
func Start(ctx context.Context, dir string, n int) (*Cluster, error) {
	if n < 1 {
		return nil, errors.New("embedded: need at least one server")
	}
	c := &Cluster{dir: dir}
	// Every port is chosen by the kernel as the server binds it (a port
	// chosen ahead and bound later could be taken in between, by any
	// connection on the machine: the server then never becomes ready).
	// So the cluster's routes go one way: server i routes to the servers
	// started before it, whose route ports are known by then, and the
	// routes are a full mesh once the last one is up.
	var routes []string
	for i := range n {
		opts := &server.Options{
			ServerName: fmt.Sprintf("nats-%d", i),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			JetStream:  true,
			StoreDir:   filepath.Join(dir, fmt.Sprintf("nats-%d", i)),
			NoLog:      true,
			NoSigs:     true,
		}
		if n > 1 {
			opts.Cluster = server.ClusterOpts{Name: "wasmbox", Host: "127.0.0.1", Port: server.RANDOM_PORT}
			opts.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		}
		if err := os.MkdirAll(opts.StoreDir, 0o700); err != nil {
			c.Shutdown()
			return nil, err
		}
		s, err := server.NewServer(opts)
		if err != nil {
			c.Shutdown()
			return nil, fmt.Errorf("embedded: %w", err)
		}
		s.Start()
		if !s.ReadyForConnections(30 * time.Second) {
			s.Shutdown()
			c.Shutdown()
			return nil, fmt.Errorf("embedded: NATS server %d did not start listening in 30s", i)
		}
		c.mu.Lock()
		c.servers = append(c.servers, s)
		c.mu.Unlock()
		if n > 1 {
			a := s.ClusterAddr()
			if a == nil {
				c.Shutdown()
				return nil, fmt.Errorf("embedded: NATS server %d has no route listener", i)
			}
			routes = append(routes, fmt.Sprintf("nats://%s", a))
		}
	}
	if err := c.waitJetStream(ctx); err != nil {
		c.Shutdown()
		return nil, err
	}
	return c, nil
}

// peers are the names of the servers s has a route to. (A pair of
// servers has several routes, a pool, so s.NumRoutes counts more.)
func peers(s *server.Server) map[string]bool {
	rz, err := s.Routez(nil)
	if err != nil {
		return nil
	}
	m := map[string]bool{}
	for _, r := range rz.Routes {
		if r.RemoteName != "" {
			m[r.RemoteName] = true
		}
	}
	return m
}

// waitJetStream waits until every server sees the others and JetStream
// can create a stream with the cluster's replicas.
func (c *Cluster) waitJetStream(ctx context.Context) error {
	n := len(c.servers)
	for {
		ok := true
		for _, s := range c.servers {
			if n > 1 && (len(peers(s)) < n-1 || !s.JetStreamIsCurrent()) {
				ok = false
			}
		}
		if ok {
			nc, err := nats.Connect(c.URLs())
			if err == nil {
				js, _ := nc.JetStream()
				_, err = js.AccountInfo(nats.MaxWait(2 * time.Second))
				nc.Close()
				if err == nil {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("embedded: JetStream not ready: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// URLs are the client URLs of the running servers, comma-separated.
func (c *Cluster) URLs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var u []string
	for _, s := range c.servers {
		if s != nil && s.Running() {
			u = append(u, s.ClientURL())
		}
	}
	return strings.Join(u, ",")
}

// Server returns server i.
func (c *Cluster) Server(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[i]
}

// Kill stops server i at once (its clients and routes are cut; its store
// stays on disk).
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	s := c.servers[i]
	c.mu.Unlock()
	s.Shutdown()
	s.WaitForShutdown()
}

// Shutdown stops every server.
func (c *Cluster) Shutdown() {
	c.mu.Lock()
	servers := c.servers
	c.mu.Unlock()
	for _, s := range servers {
		if s != nil {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
}
