package sandbox

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/wasmbox/wasmbox/audit"
	"github.com/wasmbox/wasmbox/netpolicy"
	"github.com/wasmbox/wasmbox/runtime"
)

// WithNetwork lets the sandbox's commands (curl, wget, and any guest of
// runtime.NetABI) reach the network as p allows: the hosts of its
// allowlist, DNS resolved and TLS done by the host, the brokered secret
// headers added by the host and never seen inside (see package
// netpolicy). Without it the sandbox has no network: every host is "not
// in the allowlist". Every request is an audit entry (kind "net"), a span
// "net.request" under the run's, and an entry of Result.Network.
func WithNetwork(p *netpolicy.Policy) Option {
	return func(c *config) { c.network = p }
}

// WithNetworkAudit sends the network entries (kind "net") to l instead of
// the WithAudit log: for a front end that logs the runs itself (serve).
func WithNetworkAudit(l *audit.Logger) Option {
	return func(c *config) { c.netAudit = l }
}

// startNetwork gives the run its broker; records returns what it did.
func (s *Sandbox) startNetwork(ctx context.Context) (context.Context, func() []netpolicy.Record) {
	b := netpolicy.NewBroker(s.cfg.network, func(ctx context.Context, r netpolicy.Record) { s.netRecord(ctx, r) })
	return runtime.WithNetwork(ctx, b), b.Records
}

// netRecord is the span and audit entry of one request (or refused
// connect).
func (s *Sandbox) netRecord(ctx context.Context, r netpolicy.Record) {
	end := r.Start.Add(r.Duration)
	if r.Start.IsZero() {
		r.Start, end = time.Now(), time.Now()
	}
	attrs := []attribute.KeyValue{attribute.String("http.request.method", r.Method), attribute.String("server.address", r.Host),
		attribute.Int("server.port", r.Port), attribute.String("url.path", r.Path),
		attribute.Int("http.response.status_code", r.Status), attribute.Int64("http.response.body.size", r.Bytes),
		attribute.Bool("denied", r.Denied)}
	_, span := s.tracer().Start(ctx, "net.request", trace.WithTimestamp(r.Start), trace.WithAttributes(attrs...))
	if r.Error != "" {
		span.SetStatus(codes.Error, r.Error)
	}
	span.End(trace.WithTimestamp(end))
	l := s.cfg.audit
	if s.cfg.netAudit != nil {
		l = s.cfg.netAudit
	}
	if l != nil {
		ev := audit.Event{Kind: "net", JobID: uuid.NewString(), Session: s.cfg.session, Start: r.Start, End: end,
			Attrs: []slog.Attr{slog.String("method", r.Method), slog.String("host", r.Host), slog.Int("port", r.Port),
				slog.String("path", r.Path), slog.Int("status", r.Status), slog.Int64("bytes", r.Bytes)}}
		if r.Error != "" {
			ev.Attrs = append(ev.Attrs, slog.String("error", r.Error))
		}
		if r.Denied {
			ev.Allowed, ev.Reason, ev.Exit = audit.Allowed(false), r.Error, 1
		}
		if p := s.cfg.network; p != nil {
			for _, sec := range p.Secrets {
				ev.Secrets = append(ev.Secrets, sec.Value)
				ev.Secrets = append(ev.Secrets, sec.Redact...)
			}
		}
		l.Log(context.WithoutCancel(ctx), ev)
	}
}
