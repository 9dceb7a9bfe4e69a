package sandbox

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the sandbox's spans.
const tracerName = "github.com/wasmbox/wasmbox/sandbox"

// WithTracerProvider sets where the sandbox's OpenTelemetry spans go
// (default: the global provider of otel.GetTracerProvider, a no-op unless
// the program installs one). Every Run is a span "sandbox.run" (a child of
// the span in the Run's context, if any; attributes exit_code and
// error_class), and every MCP tool call from inside the sandbox a span
// "mcp.call" under it (attributes server, tool, ok).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracerProvider = tp }
}

func (s *Sandbox) tracer() trace.Tracer {
	tp := s.cfg.tracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(tracerName)
}

// startRun starts the span of a run and the collection of its tool calls;
// end finishes the span and fills res.ToolCalls.
func (s *Sandbox) startRun(ctx context.Context) (context.Context, func(res *Result)) {
	ctx, span := s.tracer().Start(ctx, "sandbox.run")
	log := &toolCallLog{}
	ctx = context.WithValue(ctx, toolCallLogKey{}, log)
	ctx, netRecords := s.startNetwork(ctx)
	return ctx, func(res *Result) {
		res.ToolCalls = log.list()
		res.Network = netRecords()
		span.SetAttributes(attribute.Int("exit_code", res.ExitCode), attribute.String("error_class", string(res.ErrorClass)))
		span.End()
	}
}
