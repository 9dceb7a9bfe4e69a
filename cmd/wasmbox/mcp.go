package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/wasmbox/wasmbox/internal/budget"
	wbruntime "github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/sandbox"
	"github.com/wasmbox/wasmbox/server"
)

func init() { subcommands = append(subcommands, newMCPCmd) }

// mcpProtocolVersions are the protocol versions `wasmbox mcp` speaks:
// those with sessions (initialize and Mcp-Session-Id), because a sandbox
// is state kept across calls. A client of the sessionless 2026-07-28
// protocol falls back to them (its server/discover is refused).
var mcpProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// maxReadFile bounds what the read_file tool returns.
const maxReadFile = 16 << 20

func newMCPCmd(a *app) *cobra.Command {
	var (
		f              sandboxFlags
		listen         string
		tokenFile      string
		sessionTTL     time.Duration
		sessionTimeout time.Duration
		maxSessions    int
		memoryBudget   string
	)
	cmd := &cobra.Command{
		Use:   "mcp [flags]",
		Short: "Serve the sandbox over the Model Context Protocol (stdio, or streamable HTTP)",
		Long: `Serve the sandbox as an MCP server: over standard input and output by
default, or over streamable HTTP at http://ADDR/mcp with --listen ADDR.
Every MCP session gets a sandbox of its own, made with the flags below (the
flags of wasmbox run), kept across its calls and closed with the session.

Tools:
  run         {script | script_b64, timeout_ms?, stdin?}  run a bash script
              (script_b64: its bytes in base64, for a script that is not
              UTF-8); structured output
              {stdout, stderr, exit_code, error_class, truncated, duration_ms,
              tool_calls?} plus one text block. With a progress token, output is
              streamed as progress notifications (_meta.stream: stdout|stderr).
  write_file  {path, content, mode?, encoding?}  write a file (parents created);
              content is text, or base64 with "encoding": "base64"; mode is octal
              ("0755"), default 0644.
  read_file   {path}  read a file: text, or base64 for binary (encoding says which).
  list_files  {path}  list a directory: name, type, size and mode per entry.

A bad argument is a tool error (isError) with one line; a script that fails
is not an error: its exit_code says so. timeout_ms is capped by --timeout.

With --listen, requests must name a loopback Host and come from no foreign
browser Origin. A bearer token (Authorization: Bearer T) is read from
--token-file or WASMBOX_TOKEN; it is then required on every request, and it
is mandatory to listen on a non-loopback address. As with serve, at most
--max-sessions sessions are open (a new one gets 429 too_many_sessions
with Retry-After), a session idle for --session-ttl is closed, and one that
does not fit in the process's --memory-budget gets 503 memory_budget with
Retry-After.`,
		Example: `  wasmbox mcp --mount .:/work:ro --workdir /work
  wasmbox mcp --listen 127.0.0.1:8765 --timeout 10s
  WASMBOX_TOKEN=$(cat secret) wasmbox mcp --listen 0.0.0.0:8765`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := f.options(a)
			if err != nil {
				return err
			}
			if f.unjailed {
				warnUnjailed(a.stderr)
			}
			var token string
			if listen != "" {
				if token, err = serveToken(tokenFile); err != nil {
					return err
				}
			} else if tokenFile != "" {
				return errors.New("--token-file needs --listen")
			}
			if maxSessions < 1 {
				return fmt.Errorf("--max-sessions must be positive, got %d", maxSessions)
			}
			if cmd.Flags().Changed("session-timeout") && !cmd.Flags().Changed("session-ttl") {
				sessionTTL = sessionTimeout
			}
			if sessionTTL < 0 {
				return fmt.Errorf("--session-ttl must not be negative, got %v", sessionTTL)
			}
			if memoryBudget != "" {
				n, err := wbruntime.ParseBytes(memoryBudget)
				if err != nil {
					return fmt.Errorf("--memory-budget: %w", err)
				}
				a.memoryBudget = n
			}
			protected := a.protected(append(f.protectedFiles(),
				sandbox.ProtectedPath{Path: tokenFile, What: "the token file (--token-file)"})...)
			if err := a.checkMounts(f.mounts, protected); err != nil {
				return a.fail(fmt.Errorf("sandbox: %w", err))
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			eng, err := a.engine(ctx)
			if err != nil {
				return a.fail(err)
			}
			defer eng.Close(context.WithoutCancel(ctx))
			if listen != "" {
				setMemoryLimit(eng)
			}
			opts = append(opts, sandbox.WithEngine(eng), sandbox.WithProtectedPaths(protected...))
			// Check the options once, so that a bad --mount fails at start.
			probe, err := sandbox.New(ctx, opts...)
			if err != nil {
				return a.fail(err)
			}
			cost := probe.ReservedMemory()
			probe.Close()

			front := newMCPFront(opts)
			front.cost = cost
			defer front.closeAll()
			if listen == "" {
				t := &mcp.IOTransport{Reader: io.NopCloser(a.stdin), Writer: nopWriteCloser{a.stdout}}
				err := front.srv.Run(ctx, t)
				if err != nil && ctx.Err() == nil && !errors.Is(err, mcp.ErrConnectionClosed) && !errors.Is(err, io.EOF) {
					return a.fail(err)
				}
				return nil
			}
			return a.serveMCP(ctx, front, listen, token, sessionTTL, maxSessions, eng)
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", "", "serve streamable HTTP on ADDR (HOST:PORT) at /mcp instead of stdio")
	fl.StringVar(&tokenFile, "token-file", "", "with --listen: require the bearer token in this file (default: $WASMBOX_TOKEN, if set)")
	fl.DurationVar(&sessionTTL, "session-ttl", server.DefaultSessionTTL, "with --listen: close a session (and its sandbox) idle this long (0: never)")
	fl.DurationVar(&sessionTimeout, "session-timeout", server.DefaultSessionTTL, "old name of --session-ttl")
	_ = fl.MarkHidden("session-timeout")
	fl.IntVar(&maxSessions, "max-sessions", 256, "with --listen: open sessions at most")
	fl.StringVar(&memoryBudget, "memory-budget", "", "memory budget of the process: sessions and runs reserve their memory in it, refused past it (default: 3/4 of the machine's memory or cgroup limit)")
	return cmd
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func (a *app) serveMCP(ctx context.Context, front *mcpFront, addr, token string, idle time.Duration, maxSessions int, eng *sandbox.Engine) error {
	l, err := server.Listen(addr, token != "")
	if err != nil {
		if errors.Is(err, server.ErrNotLoopback) {
			return a.fail(fmt.Errorf("%w: a non-loopback --listen needs a token (--token-file or WASMBOX_TOKEN)", err))
		}
		return a.fail(err)
	}
	defer l.Close()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return front.srv },
		&mcp.StreamableHTTPOptions{SessionTimeout: idle, DisableLocalhostProtection: !isLoopbackListener(l)})
	mux := http.NewServeMux()
	mux.Handle("/mcp", &sessionCap{next: h, max: maxSessions, live: front.sessions, budget: eng.Runtime().Budget(), cost: front.cost})
	var handler http.Handler = mux
	if isLoopbackListener(l) {
		handler = server.LoopbackOnly(handler)
	}
	if token != "" {
		handler = server.RequireToken(token, handler)
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(l) }()
	fmt.Fprintf(a.stderr, "wasmbox: serving MCP on http://%s/mcp\n", l.Addr())
	select {
	case err := <-served:
		return a.fail(err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	front.closeAll() // ends the runs in progress, so that their requests end
	hs.Shutdown(sctx)
	return nil
}

// sessionCap bounds the sessions of `wasmbox mcp --listen`: a request that
// would open one (a POST without Mcp-Session-Id) past max gets 429
// too_many_sessions, and one the process's memory budget has no room for
// (its sandbox's reservation, cost) 503 memory_budget, both with
// Retry-After, before the MCP handler sees it. A session being opened
// counts from its request's start until its response names it (the SDK
// has made it live, so live counts it from then on) or, if none is made,
// until the request ends: concurrent ones cannot pass max, and none counts
// twice. (Counting it until the request ended let a client whose session
// was answered, while the handler was still finishing, be refused the
// next one: CI's TestMCPSessionCap.)
type sessionCap struct {
	next    http.Handler
	max     int
	live    func() int
	budget  *wbruntime.Budget
	cost    uint64
	mu      sync.Mutex
	opening int
}

func (c *sessionCap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		c.next.ServeHTTP(w, r)
		return
	}
	c.mu.Lock()
	n := c.live() + c.opening
	if n >= c.max {
		c.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		writeMCPError(w, http.StatusTooManyRequests, "too_many_sessions", fmt.Sprintf("at most %d sessions", c.max))
		return
	}
	if avail := c.budget.Available(); avail < c.cost {
		c.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		writeMCPError(w, http.StatusServiceUnavailable, "memory_budget",
			fmt.Sprintf("cannot open a session: the process memory budget (%s) has %s left, a session needs %s; retry later",
				budget.Format(c.budget.Limit()), budget.Format(avail), budget.Format(c.cost)))
		return
	}
	c.opening++
	c.mu.Unlock()
	ow := &openingWriter{ResponseWriter: w, cap: c}
	defer ow.opened()
	c.next.ServeHTTP(ow, r)
}

// openingWriter ends its request's count in sessionCap.opening once: when
// the response's header goes out (with Mcp-Session-Id the session is live
// by then; without, none was made), or when the request ends.
type openingWriter struct {
	http.ResponseWriter
	cap  *sessionCap
	done atomic.Bool // the SDK may write an event stream from another goroutine
}

func (w *openingWriter) opened() {
	if !w.done.CompareAndSwap(false, true) {
		return
	}
	w.cap.mu.Lock()
	w.cap.opening--
	w.cap.mu.Unlock()
}

func (w *openingWriter) WriteHeader(code int) {
	w.opened()
	w.ResponseWriter.WriteHeader(code)
}

func (w *openingWriter) Write(b []byte) (int, error) {
	w.opened()
	return w.ResponseWriter.Write(b)
}

// Flush and Unwrap keep the SDK's event streams working through the
// wrapper (it flushes each event; http.ResponseController unwraps).
func (w *openingWriter) Flush() {
	w.opened()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *openingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writeMCPError writes the error body of serve's API.
func writeMCPError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg, "code": code})
}

// mcpFront is the MCP server of `wasmbox mcp`: its tools run on the
// sandbox of the calling session, made on the session's first call.
type mcpFront struct {
	srv  *mcp.Server
	opts []sandbox.Option
	cost uint64 // what a session's sandbox reserves of the process budget

	mu     sync.Mutex
	boxes  map[*mcp.ServerSession]*sessionBox
	closed bool
}

type sessionBox struct {
	once sync.Once
	sb   *sandbox.Sandbox
	err  error
}

func newMCPFront(opts []sandbox.Option) *mcpFront {
	m := &mcpFront{opts: opts, boxes: map[*mcp.ServerSession]*sessionBox{}}
	m.srv = mcp.NewServer(&mcp.Implementation{Name: "wasmbox", Title: "wasmbox sandbox", Version: "1"}, &mcp.ServerOptions{
		Instructions: "A bash sandbox (WebAssembly, in-memory filesystem): run scripts with the run tool; files and shell state persist across calls of this session.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},

		SupportedProtocolVersions: mcpProtocolVersions,
	})
	m.srv.AddTool(&mcp.Tool{Name: "run", Description: "Run a bash script in the session's sandbox (coreutils, grep, sed, awk, jq, ...). Files and shell state (cwd, variables, functions) persist across calls. A failing script is not an error: see exit_code.",
		InputSchema: json.RawMessage(runInputSchema), OutputSchema: json.RawMessage(runOutputSchema)}, m.runTool)
	m.srv.AddTool(&mcp.Tool{Name: "write_file", Description: "Write a file in the sandbox (parent directories are created). content is text, or base64 with encoding \"base64\".",
		InputSchema: json.RawMessage(writeInputSchema)}, m.writeFileTool)
	m.srv.AddTool(&mcp.Tool{Name: "read_file", Description: "Read a file of the sandbox: text, or base64 for binary content.",
		InputSchema: json.RawMessage(pathInputSchema)}, m.readFileTool)
	m.srv.AddTool(&mcp.Tool{Name: "list_files", Description: "List a directory of the sandbox: name, type, size and mode of each entry.",
		InputSchema: json.RawMessage(pathInputSchema)}, m.listFilesTool)
	return m
}

const runInputSchema = `{"type":"object","properties":{
"script":{"type":"string","description":"bash script (give script or script_b64)"},
"script_b64":{"type":"string","description":"bash script as bytes in standard base64, for a script that is not UTF-8 (a JSON string cannot carry such bytes)"},
"timeout_ms":{"type":"integer","minimum":1,"description":"time limit in milliseconds (capped by the server's --timeout)"},
"stdin":{"type":"string","description":"standard input of the script"}},
"additionalProperties":false}`

const runOutputSchema = `{"type":"object","properties":{
"stdout":{"type":"string"},"stderr":{"type":"string"},"exit_code":{"type":"integer"},
"error_class":{"type":"string"},"truncated":{"type":"boolean"},"duration_ms":{"type":"integer"},
"tool_calls":{"type":"array","items":{"type":"object"}}},
"required":["stdout","stderr","exit_code","error_class","truncated","duration_ms"]}`

const writeInputSchema = `{"type":"object","properties":{
"path":{"type":"string"},"content":{"type":"string"},
"mode":{"type":"string","description":"octal permissions, e.g. \"0755\" (default 0644)"},
"encoding":{"type":"string","enum":["utf-8","base64"],"description":"of content (default utf-8)"}},
"required":["path","content"],"additionalProperties":false}`

const pathInputSchema = `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`

// sandboxFor returns the sandbox of the request's session.
func (m *mcpFront) sandboxFor(ctx context.Context, ss *mcp.ServerSession) (*sandbox.Sandbox, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("the server is shutting down")
	}
	b, ok := m.boxes[ss]
	if !ok {
		b = &sessionBox{}
		m.boxes[ss] = b
	}
	m.mu.Unlock()
	b.once.Do(func() {
		b.sb, b.err = sandbox.New(context.WithoutCancel(ctx), m.opts...)
		if b.err == nil && ss != nil {
			go func() {
				ss.Wait()
				m.mu.Lock()
				delete(m.boxes, ss)
				m.mu.Unlock()
				b.sb.Close()
			}()
		}
	})
	return b.sb, b.err
}

// sessions is how many MCP sessions are open.
func (m *mcpFront) sessions() int {
	n := 0
	for range m.srv.Sessions() {
		n++
	}
	return n
}

func (m *mcpFront) closeAll() {
	m.mu.Lock()
	m.closed = true
	boxes := m.boxes
	m.boxes = map[*mcp.ServerSession]*sessionBox{}
	m.mu.Unlock()
	for _, b := range boxes {
		b.once.Do(func() {})
		if b.sb != nil {
			b.sb.Close()
		}
	}
}

// toolError is a tool result with isError and one line of text.
func toolError(format string, args ...any) *mcp.CallToolResult {
	msg := fmt.Sprintf(format, args...)
	msg, _, _ = strings.Cut(msg, "\n")
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// decodeArgs decodes a tool's arguments strictly, describing what is wrong
// in one line.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te) && te.Field != "":
		return fmt.Errorf("%s must be %s, not %s", te.Field, jsonTypeName(te.Type.Kind().String()), te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("unknown argument %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	case errors.As(err, &te):
		return fmt.Errorf("the arguments must be an object")
	}
	return fmt.Errorf("bad arguments: %v", err)
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "int", "int64", "int32", "uint32", "uint64":
		return "an integer"
	case "bool":
		return "a boolean"
	}
	return "a " + kind
}

type runArgs struct {
	Script    *string `json:"script"`
	ScriptB64 *string `json:"script_b64"`
	TimeoutMS *int64  `json:"timeout_ms"`
	Stdin     *string `json:"stdin"`
}

func (m *mcpFront) runTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in runArgs
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		return toolError("run: %v", err), nil
	}
	if in.Script != nil && in.ScriptB64 != nil {
		return toolError("run: give script or script_b64, not both"), nil
	}
	if in.ScriptB64 != nil {
		b, err := base64.StdEncoding.DecodeString(*in.ScriptB64)
		if err != nil {
			return toolError("run: script_b64 is not standard base64: %v", err), nil
		}
		script := string(b)
		in.Script = &script
	}
	if in.Script == nil {
		return toolError("run: script is required (or script_b64)"), nil
	}
	if in.TimeoutMS != nil && *in.TimeoutMS <= 0 {
		return toolError("run: timeout_ms must be positive, got %d", *in.TimeoutMS), nil
	}
	sb, err := m.sandboxFor(ctx, req.Session)
	if err != nil {
		return toolError("run: %v", err), nil
	}
	if in.TimeoutMS != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*in.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	var stdin io.Reader
	if in.Stdin != nil {
		stdin = strings.NewReader(*in.Stdin)
	}
	var stdout, stderr cappedWriter
	stdout.limit, stderr.limit = outputCap, outputCap
	var wout, werr io.Writer = &stdout, &stderr
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
		p := &progressSender{ctx: ctx, ss: req.Session, token: tok}
		wout, werr = io.MultiWriter(&stdout, p.stream("stdout")), io.MultiWriter(&stderr, p.stream("stderr"))
	}
	res, err := sb.Stream(ctx, *in.Script, stdin, wout, werr)
	if err != nil {
		return toolError("run: %v", err), nil
	}
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	res.Truncated = res.Truncated || stdout.truncated || stderr.truncated
	out := res.JSON()
	return &mcp.CallToolResult{StructuredContent: out, Content: []mcp.Content{&mcp.TextContent{Text: runText(out)}}}, nil
}

// runText is the text block of a run for models.
func runText(r sandbox.ResultJSON) string {
	var b strings.Builder
	b.WriteString(r.Stdout)
	if r.Stdout != "" && !strings.HasSuffix(r.Stdout, "\n") {
		b.WriteByte('\n')
	}
	if r.Stderr != "" {
		b.WriteString("[stderr]\n")
		b.WriteString(r.Stderr)
		if !strings.HasSuffix(r.Stderr, "\n") {
			b.WriteByte('\n')
		}
	}
	fmt.Fprintf(&b, "[exit %d", r.ExitCode)
	if r.ErrorClass != "" {
		b.WriteString(" " + r.ErrorClass)
	}
	if r.Truncated {
		b.WriteString(", output truncated")
	}
	b.WriteString("]")
	return b.String()
}

// progressSender streams a run's output as progress notifications: each
// write is one notification whose message is the text written, progress
// the bytes so far, and _meta.stream the stream.
type progressSender struct {
	ctx   context.Context
	ss    *mcp.ServerSession
	token any
	mu    sync.Mutex
	n     float64
}

type progressStream struct {
	p    *progressSender
	name string
}

func (p *progressSender) stream(name string) io.Writer { return progressStream{p, name} }

func (w progressStream) Write(b []byte) (int, error) {
	p := w.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += float64(len(b))
	// A client that went away does not stop the run.
	p.ss.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{
		ProgressToken: p.token, Progress: p.n, Message: strings.ToValidUTF8(string(b), "\uFFFD"),
		Meta: mcp.Meta{"stream": w.name},
	})
	return len(b), nil
}

type writeArgs struct {
	Path     *string `json:"path"`
	Content  *string `json:"content"`
	Mode     *string `json:"mode"`
	Encoding string  `json:"encoding"`
}

func (m *mcpFront) writeFileTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in writeArgs
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		return toolError("write_file: %v", err), nil
	}
	if in.Path == nil || *in.Path == "" {
		return toolError("write_file: path is required"), nil
	}
	if in.Content == nil {
		return toolError("write_file: content is required"), nil
	}
	data := []byte(*in.Content)
	switch strings.ToLower(in.Encoding) {
	case "", "utf-8", "utf8", "text":
	case "base64":
		b, err := base64.StdEncoding.DecodeString(*in.Content)
		if err != nil {
			return toolError("write_file: content is not valid base64: %v", err), nil
		}
		data = b
	default:
		return toolError("write_file: encoding must be \"utf-8\" or \"base64\", not %q", in.Encoding), nil
	}
	mode := fs.FileMode(0o644)
	if in.Mode != nil {
		n, err := strconv.ParseUint(*in.Mode, 8, 32)
		if err != nil || n > 0o7777 {
			return toolError("write_file: mode must be octal permissions like \"0644\", not %q", *in.Mode), nil
		}
		mode = fs.FileMode(n)
	}
	sb, err := m.sandboxFor(ctx, req.Session)
	if err != nil {
		return toolError("write_file: %v", err), nil
	}
	p := *in.Path
	if !path.IsAbs(p) {
		p = path.Join(sb.Dir(), p)
	}
	if err := sb.MkdirAll(path.Dir(p), 0o755); err != nil {
		return toolError("write_file: %v", err), nil
	}
	if err := sb.WriteFile(p, data, mode); err != nil {
		return toolError("write_file: %v", err), nil
	}
	if in.Mode != nil {
		// WriteFile's mode applies to a new file only.
		if err := chmod(sb, p, mode); err != nil {
			return toolError("write_file: %v", err), nil
		}
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("wrote %d bytes to %s", len(data), p)}},
		StructuredContent: map[string]any{"path": p, "size": len(data)},
	}, nil
}

func chmod(sb *sandbox.Sandbox, p string, mode fs.FileMode) error {
	type chmodder interface {
		Chmod(string, fs.FileMode) error
	}
	if c, ok := sb.FS().(chmodder); ok {
		return c.Chmod(p, mode)
	}
	return nil
}

type pathArgs struct {
	Path *string `json:"path"`
}

func (m *mcpFront) readFileTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in pathArgs
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		return toolError("read_file: %v", err), nil
	}
	if in.Path == nil || *in.Path == "" {
		return toolError("read_file: path is required"), nil
	}
	sb, err := m.sandboxFor(ctx, req.Session)
	if err != nil {
		return toolError("read_file: %v", err), nil
	}
	if fi, err := sb.Stat(*in.Path); err == nil && fi.Mode().IsRegular() && fi.Size() > maxReadFile {
		return toolError("read_file: %s is %d bytes, over the %d-byte limit of read_file", *in.Path, fi.Size(), maxReadFile), nil
	}
	data, err := sb.ReadFile(*in.Path)
	if err != nil {
		return toolError("read_file: %v", err), nil
	}
	out := map[string]any{"path": *in.Path, "size": len(data)}
	var text string
	if utf8.Valid(data) {
		out["encoding"], out["content"] = "utf-8", string(data)
		text = string(data)
	} else {
		enc := base64.StdEncoding.EncodeToString(data)
		out["encoding"], out["content"] = "base64", enc
		text = enc
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: out}, nil
}

type fileEntry struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Size int64  `json:"size"`
	Mode string `json:"mode"`
}

func (m *mcpFront) listFilesTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in pathArgs
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		return toolError("list_files: %v", err), nil
	}
	if in.Path == nil || *in.Path == "" {
		return toolError("list_files: path is required"), nil
	}
	sb, err := m.sandboxFor(ctx, req.Session)
	if err != nil {
		return toolError("list_files: %v", err), nil
	}
	des, err := sb.ReadDir(*in.Path)
	if err != nil {
		return toolError("list_files: %v", err), nil
	}
	entries := make([]fileEntry, 0, len(des))
	var b strings.Builder
	for _, de := range des {
		fi, err := de.Info()
		if err != nil {
			continue
		}
		e := fileEntry{Name: de.Name(), Type: fileType(fi.Mode()), Size: fi.Size(), Mode: fmt.Sprintf("%04o", fi.Mode().Perm())}
		entries = append(entries, e)
		fmt.Fprintf(&b, "%s %s %d %s\n", e.Mode, e.Type, e.Size, e.Name)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: b.String()}},
		StructuredContent: map[string]any{"path": *in.Path, "entries": entries},
	}, nil
}

func fileType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsRegular():
		return "file"
	}
	return "other"
}
