// Package embedded runs NATS servers with JetStream inside the process, on
// loopback: a single node, or a cluster of several joined by routes. The
// cluster tests and `wasmbox bench --only cluster` use it; it is the real
// nats-server (github.com/nats-io/nats-server/v2), not a stand-in.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
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
	// JetStream in a cluster needs its routes configured: the cluster
	// ports are chosen first (free loopback ports) and every server
	// routes to all of them.
	var ports []int
	var routes []string
	if n > 1 {
		for range n {
			p, err := freePort()
			if err != nil {
				return nil, err
			}
			ports = append(ports, p)
			routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
		}
	}
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
			opts.Cluster = server.ClusterOpts{Name: "wasmbox", Host: "127.0.0.1", Port: ports[i]}
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
			return nil, errors.New("embedded: a NATS server did not start")
		}
		c.servers = append(c.servers, s)
	}
	if err := c.waitJetStream(ctx); err != nil {
		c.Shutdown()
		return nil, err
	}
	return c, nil
}

// waitJetStream waits until every server sees the others and JetStream
// can create a stream with the cluster's replicas.
func (c *Cluster) waitJetStream(ctx context.Context) error {
	n := len(c.servers)
	for {
		ok := true
		for _, s := range c.servers {
			if n > 1 && (s.NumRoutes() < n-1 || !s.JetStreamIsCurrent()) {
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

// freePort returns a TCP port free on 127.0.0.1 now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
