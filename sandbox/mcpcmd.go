package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/wasmbox/wasmbox/audit"
	"github.com/wasmbox/wasmbox/executor"
)

// Exit statuses of the mcp command.
const (
	mcpExitOK     = 0
	mcpExitError  = 1
	mcpExitUsage  = 2
	mcpExitDenied = executor.ExitDenied // 126
)

// maxMCPArgs bounds the JSON arguments read from standard input.
const maxMCPArgs = 4 << 20

const mcpUsage = `usage: mcp list
       mcp call [--json] SERVER TOOL [JSON|-]
`

// isMCPCommand reports whether argv[0] names the bridge's mcp command.
func (s *Sandbox) isMCPCommand(argv0 string) bool {
	return s.bridge != nil && (argv0 == "mcp" || argv0 == "/usr/bin/mcp")
}

// runMCP serves the mcp command (see MCPABI). The error is the context's
// when the run's deadline or cancel stopped the call.
func (s *Sandbox) runMCP(ctx context.Context, c command) (int, error) {
	stdout, stderr := orDiscard(c.Stdout), orDiscard(c.Stderr)
	args := c.Argv[1:]
	if len(args) == 0 {
		io.WriteString(stderr, mcpUsage)
		return mcpExitUsage, nil
	}
	switch args[0] {
	case "-h", "--help", "help":
		io.WriteString(stdout, mcpUsage)
		return mcpExitOK, nil
	case "list":
		if len(args) != 1 {
			io.WriteString(stderr, mcpUsage)
			return mcpExitUsage, nil
		}
		return s.mcpList(ctx, stdout, stderr)
	case "call":
		return s.mcpCall(ctx, args[1:], c.Stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "mcp: unknown subcommand %q\n", args[0])
	io.WriteString(stderr, mcpUsage)
	return mcpExitUsage, nil
}

func (s *Sandbox) mcpList(ctx context.Context, stdout, stderr io.Writer) (int, error) {
	b := s.bridge
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	code := mcpExitOK
	for _, name := range b.names() {
		c := b.conns[name]
		if c.hostTools != nil {
			for _, ht := range c.hostTools {
				desc, _, _ := strings.Cut(strings.TrimSpace(ht.description), "\n")
				fmt.Fprintf(w, "%s %s  %s\n", name, ht.name, desc)
			}
			continue
		}
		sess, err := b.session(ctx, c)
		if err == nil {
			for t, terr := range sess.Tools(ctx, nil) {
				if terr != nil {
					err = terr
					break
				}
				if c.allow != nil && !c.allow[t.Name] {
					continue
				}
				desc, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
				fmt.Fprintf(w, "%s %s  %s\n", name, t.Name, desc)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				w.Flush()
				return exitFor(classOfCtx(ctx)), ctx.Err()
			}
			w.Flush()
			fmt.Fprintf(stderr, "mcp: %s: %v\n", name, oneLineErr(err))
			code = mcpExitError
		}
	}
	return code, nil
}

func (s *Sandbox) mcpCall(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	asJSON := false
	var pos []string
	for i, a := range args {
		switch {
		case a == "--json":
			asJSON = true
		case a == "--":
			pos = append(pos, args[i+1:]...)
		case strings.HasPrefix(a, "-") && a != "-":
			fmt.Fprintf(stderr, "mcp: unknown option %q\n%s", a, mcpUsage)
			return mcpExitUsage, nil
		default:
			pos = append(pos, a)
			continue
		}
		if a == "--" {
			break
		}
	}
	if len(pos) < 2 || len(pos) > 3 {
		io.WriteString(stderr, mcpUsage)
		return mcpExitUsage, nil
	}
	server, tool := pos[0], pos[1]
	var raw []byte
	switch {
	case len(pos) == 2:
		raw = []byte("{}")
	case pos[2] == "-":
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		b, err := io.ReadAll(io.LimitReader(stdin, maxMCPArgs+1))
		if err != nil {
			fmt.Fprintf(stderr, "mcp: reading the arguments: %v\n", err)
			return mcpExitUsage, nil
		}
		if len(b) > maxMCPArgs {
			fmt.Fprintf(stderr, "mcp: arguments over %d bytes\n", maxMCPArgs)
			return mcpExitUsage, nil
		}
		raw = b
	default:
		raw = []byte(pos[2])
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		fmt.Fprintf(stderr, "mcp: the arguments must be a JSON object\n")
		return mcpExitUsage, nil
	}

	b := s.bridge
	c, ok := b.conns[server]
	if !ok {
		s.recordToolCall(ctx, time.Now(), server, tool, false, "denied: unknown server", true)
		fmt.Fprintf(stderr, "mcp: unknown server %q\n", server)
		return mcpExitDenied, nil
	}
	if c.allow != nil && !c.allow[tool] {
		s.recordToolCall(ctx, time.Now(), server, tool, false, "denied: tool not allowlisted", true)
		fmt.Fprintf(stderr, "mcp: tool %q of server %q is not allowed in this sandbox\n", tool, server)
		return mcpExitDenied, nil
	}

	start := time.Now()
	ctx, span := s.tracer().Start(ctx, "mcp.call", trace.WithAttributes(attribute.String("server", server), attribute.String("tool", tool)))
	res, err := s.callTool(ctx, c, tool, json.RawMessage(raw))
	var errText string
	switch {
	case err != nil:
		errText = oneLineErr(err)
	case res.IsError:
		errText = firstLine(textOf(res))
		if errText == "" {
			errText = "the tool returned an error"
		}
	}
	ok = err == nil && !res.IsError
	span.SetAttributes(attribute.Bool("ok", ok))
	if !ok {
		span.SetStatus(codes.Error, errText)
	}
	span.End()
	s.recordToolCall(ctx, start, server, tool, ok, errText, false)

	if err != nil {
		if ctx.Err() != nil {
			return exitFor(classOfCtx(ctx)), ctx.Err()
		}
		fmt.Fprintf(stderr, "mcp: %s %s: %s\n", server, tool, errText)
		return mcpExitError, nil
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "mcp: %v\n", err)
			return mcpExitError, nil
		}
	} else {
		out := stdout
		if res.IsError {
			out = stderr
		}
		w := bufio.NewWriter(out)
		for _, ct := range res.Content {
			if t, ok := ct.(*mcp.TextContent); ok {
				w.WriteString(t.Text)
				if !strings.HasSuffix(t.Text, "\n") {
					w.WriteByte('\n')
				}
			}
		}
		w.Flush()
	}
	if res.IsError {
		return mcpExitError, nil
	}
	return mcpExitOK, nil
}

// callTool calls tool on c's server, starting it if needed, within ctx.
func (s *Sandbox) callTool(ctx context.Context, c *mcpConn, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	if c.hostTools != nil {
		return callHostTool(ctx, c.hostTools, tool, args)
	}
	sess, err := s.bridge.session(ctx, c)
	if err != nil {
		return nil, err
	}
	return sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
}

// recordToolCall adds a call to the run's Result.ToolCalls and the audit
// log.
func (s *Sandbox) recordToolCall(ctx context.Context, start time.Time, server, tool string, ok bool, errText string, denied bool) {
	end := time.Now()
	tc := ToolCall{Server: server, Tool: tool, OK: ok, DurationMS: end.Sub(start).Milliseconds(), Error: errText}
	log, _ := ctx.Value(toolCallLogKey{}).(*toolCallLog)
	log.add(tc)
	if denied {
		// A refused call has no span of its own otherwise: make one.
		_, span := s.tracer().Start(ctx, "mcp.call", trace.WithTimestamp(start),
			trace.WithAttributes(attribute.String("server", server), attribute.String("tool", tool), attribute.Bool("ok", false)))
		span.SetStatus(codes.Error, errText)
		span.End(trace.WithTimestamp(end))
	}
	if l := s.cfg.audit; l != nil {
		ev := audit.Event{Kind: "mcp", JobID: uuid.NewString(), Session: s.cfg.session, Start: start, End: end,
			Attrs: []slog.Attr{slog.String("server", server), slog.String("tool", tool), slog.Bool("ok", ok)}}
		if errText != "" {
			ev.Attrs = append(ev.Attrs, slog.String("error", errText))
		}
		if !ok {
			ev.Exit = 1
		}
		if denied {
			ev.Allowed, ev.Reason, ev.Exit = audit.Allowed(false), errText, mcpExitDenied
		}
		l.Log(context.WithoutCancel(ctx), ev)
	}
}

// textOf joins the text blocks of a result.
func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, ct := range res.Content {
		if t, ok := ct.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func oneLineErr(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "deadline exceeded"
	}
	return firstLine(err.Error())
}
