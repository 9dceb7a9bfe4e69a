package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPABI documents the host call behind the sandbox's mcp command. It is
// the process ABI (runtime.ProcessABI, or runtime.SpawnABI for a blocking
// spawn): a guest spawns argv ["mcp", ...] (or "/usr/bin/mcp") with its
// standard streams, and the sandbox's command runner, instead of starting
// a WebAssembly program, serves the command on the host: it parses argv
// as described above, reads the arguments from the child's standard input
// for "-", writes the result to its standard output and the error to its
// standard error, and reports the exit status (0, 1, 2, 126) through the
// process handle like any child's. Each call is bounded by the context of
// the run that spawned it: the run's deadline or a cancel ends the MCP
// request in flight (the server is sent notifications/cancelled) and the
// command reports the run's timeout or cancellation. The command exists
// only in a sandbox with MCP servers or tools configured.
const MCPABI = "wasmbox.proc_spawn argv[0]=mcp"

// MCPServer is one entry of the "mcpServers" configuration: a stdio
// server (Command, Args, Env) or an HTTP one (URL, Headers), with an
// optional allowlist of its tools.
type MCPServer struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	// Type is optional, as some clients write it: "stdio" (with
	// Command) or "http" / "streamable-http" (with URL).
	Type    string            `json:"type,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Tools allowlists the tools of the server: nil allows every tool,
	// an empty list none.
	Tools []string `json:"tools,omitempty"`
}

// MCPConfig is the "mcpServers" JSON document of MCP clients.
type MCPConfig struct {
	Servers map[string]MCPServer `json:"mcpServers"`
}

// HostToolServer is the server name of the tools of WithTool.
const HostToolServer = "host"

var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ParseMCPConfig reads an "mcpServers" document and checks it.
func ParseMCPConfig(data []byte) (MCPConfig, error) {
	var raw struct {
		Servers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return MCPConfig{}, fmt.Errorf("mcp config: %w", err)
	}
	if raw.Servers == nil {
		return MCPConfig{}, errors.New(`mcp config: no "mcpServers" object`)
	}
	cfg := MCPConfig{Servers: map[string]MCPServer{}}
	for name, b := range raw.Servers {
		var s MCPServer
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return MCPConfig{}, fmt.Errorf("mcp config: server %q: %w", name, err)
		}
		// "tools": [] is an empty allowlist, not an absent one.
		var probe map[string]json.RawMessage
		if json.Unmarshal(b, &probe) == nil {
			if t, ok := probe["tools"]; ok && string(t) != "null" && s.Tools == nil {
				s.Tools = []string{}
			}
		}
		if err := s.check(name); err != nil {
			return MCPConfig{}, fmt.Errorf("mcp config: %w", err)
		}
		cfg.Servers[name] = s
	}
	return cfg, nil
}

// LoadMCPConfig reads and checks the "mcpServers" file path.
func LoadMCPConfig(path string) (MCPConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return MCPConfig{}, fmt.Errorf("mcp config: %w", err)
	}
	return ParseMCPConfig(b)
}

func (s MCPServer) check(name string) error {
	if !serverNameRE.MatchString(name) {
		return fmt.Errorf("bad server name %q (letters, digits, _ . -)", name)
	}
	switch {
	case s.Command != "" && s.URL != "":
		return fmt.Errorf("server %q: give command or url, not both", name)
	case s.Command == "" && s.URL == "":
		return fmt.Errorf("server %q: needs a command or a url", name)
	case s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
		return fmt.Errorf("server %q: url %q is not http(s)", name, s.URL)
	case s.URL == "" && len(s.Headers) > 0:
		return fmt.Errorf("server %q: headers need a url", name)
	}
	switch s.Type {
	case "":
	case "stdio":
		if s.Command == "" {
			return fmt.Errorf("server %q: type stdio needs a command", name)
		}
	case "http", "streamable-http", "streamableHttp":
		if s.URL == "" {
			return fmt.Errorf("server %q: type %s needs a url", name, s.Type)
		}
	default:
		return fmt.Errorf("server %q: unsupported type %q (stdio or http)", name, s.Type)
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("server %q: bad environment variable name %q", name, k)
		}
	}
	return nil
}

// WithMCPServers makes the MCP servers (keyed by name) available to the
// sandbox's mcp command: the bridge through which code inside the sandbox
// calls the host's MCP tools. Calls accumulate; a name given twice keeps
// the last entry.
//
// # Configuration
//
// WithMCPServers (and `--mcp-config FILE` of the CLI, through
// ParseMCPConfig) takes the "mcpServers" object MCP clients use:
//
//	{"mcpServers": {
//	  "files":  {"command": "npx", "args": ["-y", "some-server"], "env": {"K": "V"},
//	             "tools": ["read", "list"]},
//	  "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ..."}}
//	}}
//
// "tools" is an allowlist of the server's tools; when it is absent every
// tool of the server is allowed. A server starts (a stdio server is
// spawned, an HTTP server is connected to) the first time a script uses
// it, and stops when the sandbox closes. A stdio server's environment is
// a safe default taken from the host (PATH, HOME, LANG, LC_ALL, TERM, USER,
// LOGNAME, SHELL, TMPDIR, when set) plus its "env", never the host's whole
// environment. WithTool adds Go functions as the tools of the server
// "host".
//
// # The mcp command
//
// Inside the sandbox:
//
//	mcp list                            one line per allowed tool: "SERVER TOOL  description"
//	mcp call [--json] SERVER TOOL [JSON|-]
//
// call sends the JSON object (default {}; - reads it from standard input)
// as the tool's arguments and prints the text of the result's text blocks,
// one per line (--json: the whole CallToolResult as one JSON line). Exit
// status: 0 ok, 1 the tool returned isError (its text goes to standard
// error) or the server failed, 126 denied (an unknown server, or a tool
// that is not allowlisted), 2 usage.
//
// mcp is not a WebAssembly tool but a command the host serves, routed by
// the sandbox's command runner like a native command (see MCPABI): the
// MCP client, its connections and its credentials stay on the host, no
// guest code handles them, and because the guest reaches it through the
// ordinary process ABI it works wherever a command does: pipes, $( ),
// xargs, find -exec, and any guest program that spawns commands.
//
// WithAllow does not apply to mcp: a sandbox has it only when MCP servers
// or tools are configured, and the servers' tools allowlists are its
// policy.
//
// # Tracing
//
// Every call is recorded on the host, never parsed from guest output: in
// Result.ToolCalls ("tool_calls" of the JSON form), as an audit entry
// (kind "mcp", with WithAudit) and as an OpenTelemetry span "mcp.call"
// (attributes server, tool, ok; its parent is the run's span "sandbox.run",
// see WithTracerProvider). A refused call is recorded too, with ok false.
func WithMCPServers(servers map[string]MCPServer) Option {
	return func(c *config) {
		for name, s := range servers {
			if name == HostToolServer {
				c.errs = append(c.errs, fmt.Errorf("mcp: the server name %q is reserved for WithTool", name))
				return
			}
			if err := s.check(name); err != nil {
				c.errs = append(c.errs, fmt.Errorf("mcp: %w", err))
				return
			}
			if c.mcpServers == nil {
				c.mcpServers = map[string]MCPServer{}
			}
			c.mcpServers[name] = s
		}
	}
}

// ToolFunc is a Go-native tool: it gets the call's arguments (a JSON
// object) and returns a result, or an error that the caller sees as a
// tool error (isError). A string result is one text block; a
// *mcp.CallToolResult is used as is; anything else is marshaled to JSON,
// as a text block and as the structured content.
type ToolFunc func(ctx context.Context, args json.RawMessage) (any, error)

type hostTool struct {
	name, description string
	schema            any
	fn                ToolFunc
}

// WithTool adds a Go function as the tool name of the server "host"
// (mcp call host NAME). inputSchema is its JSON schema (a
// json.RawMessage, a map, or a *jsonschema.Schema); nil means any object.
// fn runs on the host with the context of the run that called it (its
// deadline, cancel and span).
func WithTool(name, description string, inputSchema any, fn ToolFunc) Option {
	return func(c *config) {
		if name == "" || fn == nil {
			c.errs = append(c.errs, errors.New("mcp: WithTool needs a name and a function"))
			return
		}
		if inputSchema == nil {
			inputSchema = json.RawMessage(`{"type":"object"}`)
		}
		c.hostTools = append(c.hostTools, hostTool{name: name, description: description, schema: inputSchema, fn: fn})
	}
}

// ToolCall records one call of an MCP tool from inside the sandbox.
type ToolCall struct {
	Server     string `json:"server"`
	Tool       string `json:"tool"`
	OK         bool   `json:"ok"`
	DurationMS int64  `json:"duration_ms"`
	// Error says why the call failed: the tool's error text (isError),
	// the server's or transport's error, or why it was refused.
	Error string `json:"error,omitempty"`
}

// toolCallLog collects the tool calls of one Run.
type toolCallLog struct {
	mu    sync.Mutex
	calls []ToolCall
}

type toolCallLogKey struct{}

func (l *toolCallLog) add(c ToolCall) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.calls = append(l.calls, c)
	l.mu.Unlock()
}

func (l *toolCallLog) list() []ToolCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ToolCall(nil), l.calls...)
}

// bridge holds a sandbox's MCP client sessions, started on first use.
type bridge struct {
	s      *Sandbox
	mu     sync.Mutex
	conns  map[string]*mcpConn
	closed bool
}

type mcpConn struct {
	name  string
	spec  MCPServer
	allow map[string]bool // nil: all

	mu   sync.Mutex // held while connecting
	sess *mcp.ClientSession
	// hostTools are WithTool's tools (server "host"), called directly
	// with the run's context; sess stays nil.
	hostTools []hostTool
}

// newBridge returns nil for a sandbox without MCP servers or tools.
func newBridge(s *Sandbox) *bridge {
	cfg := s.cfg
	if len(cfg.mcpServers) == 0 && len(cfg.hostTools) == 0 {
		return nil
	}
	b := &bridge{s: s, conns: map[string]*mcpConn{}}
	for name, spec := range cfg.mcpServers {
		c := &mcpConn{name: name, spec: spec}
		if spec.Tools != nil {
			c.allow = map[string]bool{}
			for _, t := range spec.Tools {
				c.allow[t] = true
			}
		}
		b.conns[name] = c
	}
	if len(cfg.hostTools) > 0 {
		b.conns[HostToolServer] = &mcpConn{name: HostToolServer, hostTools: cfg.hostTools}
	}
	return b
}

func (b *bridge) names() []string {
	names := make([]string, 0, len(b.conns))
	for n := range b.conns {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// close stops every server that was started.
func (b *bridge) close() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	var errs []error
	for _, c := range b.conns {
		c.mu.Lock()
		if c.sess != nil {
			if err := c.sess.Close(); err != nil && !isBenignClose(err) {
				errs = append(errs, fmt.Errorf("mcp server %s: %w", c.name, err))
			}
			c.sess = nil
		}
		c.mu.Unlock()
	}
	return errors.Join(errs...)
}

// isBenignClose: a stdio server killed on close reports its signal.
func isBenignClose(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// terminateAfter is how long a stdio server may take to exit once its
// input is closed, before SIGTERM (and as long again before SIGKILL).
const terminateAfter = 300 * time.Millisecond

// session returns the connected client session of c, starting the server
// on first use. ctx bounds the start and the handshake only.
func (b *bridge) session(ctx context.Context, c *mcpConn) (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if c.sess != nil {
		return c.sess, nil
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "wasmbox", Version: "1"}, nil)
	var t mcp.Transport
	switch {
	case c.spec.URL != "":
		hc := &http.Client{Transport: headerTransport{headers: c.spec.Headers, next: http.DefaultTransport}}
		t = &mcp.StreamableClientTransport{Endpoint: c.spec.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	default:
		cmd := exec.Command(c.spec.Command, c.spec.Args...)
		cmd.Env = serverEnv(c.spec.Env)
		cmd.Stderr = io.Discard
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}
	}
	sess, err := client.Connect(ctx, t, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("starting server: %w", err)
	}
	c.sess = sess
	return sess, nil
}

// callHostTool calls a tool of WithTool on the calling goroutine, with the
// run's context.
func callHostTool(ctx context.Context, tools []hostTool, name string, args json.RawMessage) (res *mcp.CallToolResult, err error) {
	for _, ht := range tools {
		if ht.name == name {
			defer func() {
				// A panicking tool fails its call, not the host.
				if p := recover(); p != nil {
					res, err = hostToolResult(nil, fmt.Errorf("tool %s panicked: %v", name, p)), nil
				}
			}()
			return hostToolResult(ht.fn(ctx, args)), nil
		}
	}
	return nil, fmt.Errorf("unknown tool %q", name)
}

// hostToolResult makes the CallToolResult of a ToolFunc's return values.
func hostToolResult(v any, err error) *mcp.CallToolResult {
	{
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		switch v := v.(type) {
		case *mcp.CallToolResult:
			if v != nil {
				return v
			}
			return &mcp.CallToolResult{Content: []mcp.Content{}}
		case string:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: v}}}
		case nil:
			return &mcp.CallToolResult{Content: []mcp.Content{}}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "marshaling the result: " + err.Error()}}}
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
		if len(b) > 0 && b[0] == '{' {
			res.StructuredContent = json.RawMessage(b)
		}
		return res
	}
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.next.RoundTrip(r)
}

// safeServerEnv are the host variables a stdio server inherits.
var safeServerEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "LOGNAME", "SHELL", "TMPDIR"}

func serverEnv(extra map[string]string) []string {
	env := map[string]string{}
	for _, k := range safeServerEnv {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for k, v := range extra {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
