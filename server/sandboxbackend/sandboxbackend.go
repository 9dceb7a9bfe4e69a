// Package sandboxbackend is the [server.Backend] of `wasmbox serve`: one
// sandbox per session, movable between the nodes of a cluster through the
// sandbox's snapshots.
package sandboxbackend

import (
	"context"
	"io"
	"time"

	"github.com/wasmbox/wasmbox/sandbox"
	"github.com/wasmbox/wasmbox/server"
)

// Backend makes a sandbox with Opts per session. The server runs every
// Run through its pool, so the sandboxes are created without one.
type Backend struct{ Opts []sandbox.Option }

var _ server.Backend = Backend{}

// NewSession implements server.Backend.
func (b Backend) NewSession(ctx context.Context) (server.Session, error) {
	s, err := sandbox.New(ctx, b.Opts...)
	if err != nil {
		return nil, err
	}
	return Session{s}, nil
}

// Session is a sandbox as a server.SnapshotSession.
type Session struct{ S *sandbox.Sandbox }

var _ server.PartsSession = Session{}

// Run implements server.Session.
func (s Session) Run(ctx context.Context, script string, timeout time.Duration) (server.RunResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := s.S.Run(ctx, script)
	if err != nil {
		return server.RunResult{}, err
	}
	return server.RunResult{
		Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode,
		ErrorClass: string(res.ErrorClass), Truncated: res.Truncated, Duration: res.Duration,
		Network: res.Network,
	}, nil
}

// ReadFile implements server.Session.
func (s Session) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return s.S.ReadFile(path)
}

// WriteFile implements server.Session.
func (s Session) WriteFile(ctx context.Context, path string, data []byte) error {
	return s.S.WriteFile(path, data, 0o644)
}

// Close implements server.Session.
func (s Session) Close() error { return s.S.Close() }

// Snapshot implements server.SnapshotSession: the sandbox's snapshot
// format (versioned, checksummed).
func (s Session) Snapshot(w io.Writer) error { return s.S.Snapshot(w) }

// SnapshotParts implements server.PartsSession: the sandbox's
// incremental snapshot.
func (s Session) SnapshotParts() ([]server.SnapshotPart, error) {
	parts, err := s.S.SnapshotParts()
	if err != nil {
		return nil, err
	}
	out := make([]server.SnapshotPart, len(parts))
	for i, p := range parts {
		out[i] = server.SnapshotPart(p)
	}
	return out, nil
}

// Restore implements server.SnapshotSession.
func (s Session) Restore(r io.Reader) error { return s.S.Restore(r) }
