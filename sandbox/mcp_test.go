package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wasmbox/wasmbox/audit"
)

var bridgeTools = []string{"echo", "add", "fail", "hang", "env"}

func TestMCPBridgeStdioServer(t *testing.T) {
	t.Setenv("WASMBOX_HOST_SECRET", "do-not-leak")
	pidFile := filepath.Join(t.TempDir(), "pid")
	var log bytes.Buffer
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	sb := newSandbox(t,
		WithMCPServers(map[string]MCPServer{"t": testStdioServer(t, bridgeTools, map[string]string{"WASMBOX_TEST_MCP_PIDFILE": pidFile, "GIVEN": "yes"})}),
		WithTool("upper", "Upper-cases text", json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
			func(ctx context.Context, args json.RawMessage) (any, error) {
				var in struct{ Text string }
				if err := json.Unmarshal(args, &in); err != nil {
					return nil, err
				}
				return strings.ToUpper(in.Text), nil
			}),
		WithAudit(audit.New(&log)), WithTracerProvider(tp))

	if _, err := os.Stat(pidFile); err == nil {
		t.Fatal("the server started before its first use")
	}
	cases := []struct{ script, stdout, stderr string }{
		{`mcp call t echo '{"text":"hello world"}' | tr a-z A-Z`, "HELLO WORLD\n", ""},
		{`x=$(mcp call t add '{"a":2,"b":3}'); echo "sum=$x"`, "sum=5\n", ""},
		{`echo '{"text":"from stdin"}' | mcp call t echo -`, "from stdin\n", ""},
		{`mcp call t secret; echo "status $?"`, "status 126\n", "mcp: tool \"secret\" of server \"t\" is not allowed in this sandbox\n"},
		{`mcp call nosuch echo; echo "status $?"`, "status 126\n", "mcp: unknown server \"nosuch\"\n"},
		{`mcp call t fail; echo "status $?"`, "status 1\n", "it failed on purpose\n"},
		{`mcp call t; echo "status $?"`, "status 2\n", mcpUsage},
		{`mcp call t echo '[1]'; echo "status $?"`, "status 2\n", "mcp: the arguments must be a JSON object\n"},
		{`mcp call t env '{"name":"WASMBOX_HOST_SECRET"}'; mcp call t env '{"name":"GIVEN"}'`, "<unset>\nyes\n", ""},
		{`mcp call host upper '{"text":"go tool"}'`, "GO TOOL\n", ""},
		{`echo t | xargs -I{} mcp call {} echo '{"text":"via xargs"}'`, "via xargs\n", ""},
		{`mcp list`, "host upper  Upper-cases text\nt add  Adds two numbers\nt echo  Echoes the text back\nt env  Reads an environment variable of the server\nt fail  Always fails\nt hang  Never returns\n", ""},
	}
	for _, c := range cases {
		res := run(t, sb, c.script)
		if res.Stdout != c.stdout || res.Stderr != c.stderr {
			t.Errorf("%s:\n got stdout %q stderr %q (exit %d)\nwant stdout %q stderr %q", c.script, res.Stdout, res.Stderr, res.ExitCode, c.stdout, c.stderr)
		}
	}

	res := run(t, sb, `mcp call --json t add '{"a":1,"b":1}'`)
	var ctr mcp.CallToolResult
	if err := json.Unmarshal([]byte(res.Stdout), &ctr); err != nil || len(ctr.Content) != 1 || ctr.Content[0].(*mcp.TextContent).Text != "2" {
		t.Fatalf("--json: %q: %v", res.Stdout, err)
	}

	// Tool calls are recorded on the host: in the Result, ...
	res = run(t, sb, `mcp call t echo '{"text":"a"}' >/dev/null; mcp call t secret; mcp call t fail; true`)
	want := []ToolCall{{Server: "t", Tool: "echo", OK: true}, {Server: "t", Tool: "secret", Error: "denied: tool not allowlisted"}, {Server: "t", Tool: "fail", Error: "it failed on purpose"}}
	if len(res.ToolCalls) != len(want) {
		t.Fatalf("ToolCalls %+v", res.ToolCalls)
	}
	for i, w := range want {
		g := res.ToolCalls[i]
		g.DurationMS = 0
		if g != w {
			t.Errorf("ToolCalls[%d] = %+v, want %+v", i, g, w)
		}
	}
	if j := mustJSON(t, res.JSON()); !strings.Contains(j, `"tool_calls":[{"server":"t","tool":"echo","ok":true,"duration_ms":`) {
		t.Errorf("JSON form: %s", j)
	}
	// ... in the audit log ...
	if n := strings.Count(log.String(), `"msg":"mcp"`); n < 3 || !strings.Contains(log.String(), `"tool":"secret","ok":false`) {
		t.Errorf("audit log has %d mcp entries:\n%s", n, log.String())
	}
	if err := audit.Verify(bytes.NewReader(log.Bytes())); err != nil {
		t.Fatal(err)
	}
	// ... and as spans under the run's span.
	spans := exp.GetSpans()
	var runSpan tracetest.SpanStub
	for _, s := range spans {
		if s.Name == "sandbox.run" {
			runSpan = s // the last run
		}
	}
	var calls []string
	for _, s := range spans {
		if s.Name != "mcp.call" || s.Parent.SpanID() != runSpan.SpanContext.SpanID() {
			continue
		}
		attrs := map[string]string{}
		for _, a := range s.Attributes {
			attrs[string(a.Key)] = a.Value.Emit()
		}
		calls = append(calls, attrs["server"]+"/"+attrs["tool"]+"/"+attrs["ok"])
	}
	if got := strings.Join(calls, " "); got != "t/echo/true t/secret/false t/fail/false" {
		t.Errorf("spans under the last run: %q", got)
	}

	// The server stops with the sandbox.
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(b))
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("server %d still there after Close: %v", pid, err)
	}
}

func TestMCPBridgeCallBoundedByRun(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t, WithTimeout(time.Second), WithMCPServers(map[string]MCPServer{
		"t":     testStdioServer(t, nil, nil),
		"stuck": {Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{"WASMBOX_TEST_MCP_SERVER": "hang"}},
	}))
	for _, script := range []string{`mcp call t hang; echo after`, `mcp call stuck anything; echo after`} {
		res := run(t, sb, script)
		if res.ExitCode != 124 || res.ErrorClass != ClassTimeout || strings.Contains(res.Stdout, "after") {
			t.Errorf("%s: %+v", script, res)
		}
		if len(res.ToolCalls) != 1 || res.ToolCalls[0].OK || res.ToolCalls[0].Error == "" {
			t.Errorf("%s: ToolCalls %+v", script, res.ToolCalls)
		}
	}
	// A server that cannot start fails its calls (1) and its list lines.
	sb2 := newSandbox(t, WithMCPServers(map[string]MCPServer{"missing": {Command: filepath.Join(t.TempDir(), "no-such-server")}}))
	res := run(t, sb2, `mcp call missing x; echo "call $?"; mcp list >/dev/null; echo "list $?"`)
	if res.Stdout != "call 1\nlist 1\n" || !strings.Contains(res.Stderr, "mcp: missing x: starting server:") || !strings.Contains(res.Stderr, "mcp: missing: ") {
		t.Errorf("missing server: %+v", res)
	}
	// The server that answered stays usable.
	if res := run(t, sb, `mcp call t echo '{"text":"still here"}'`); res.Stdout != "still here\n" {
		t.Errorf("after a killed call: %+v", res)
	}
}

func TestMCPBridgeHTTPServer(t *testing.T) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testMCPServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer test-token" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the sandbox's Close
	sb := newSandbox(t, WithMCPServers(map[string]MCPServer{
		"web":    {URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer test-token"}, Tools: []string{"add"}},
		"noauth": {URL: srv.URL},
	}))
	res := run(t, sb, `mcp call web add '{"a":40,"b":2}'; mcp call web echo '{}'; echo "status $?"; mcp call noauth add '{}'; echo "status $?"`)
	if res.Stdout != "42\nstatus 126\nstatus 1\n" {
		t.Fatalf("%+v", res)
	}
}

func TestParseMCPConfig(t *testing.T) {
	cfg, err := ParseMCPConfig([]byte(`{"mcpServers": {"a": {"command": "x", "args": ["1"], "env": {"K": "V"}, "tools": []}, "b": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"H": "v"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Servers["a"]; a.Command != "x" || a.Tools == nil || len(a.Tools) != 0 || a.Env["K"] != "V" {
		t.Errorf("a: %+v", a)
	}
	if b := cfg.Servers["b"]; b.URL == "" || b.Tools != nil || b.Headers["H"] != "v" {
		t.Errorf("b: %+v", b)
	}
	for _, bad := range []string{
		`{}`, `[]`, `{"mcpServers": {"a": {}}}`, `{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}`,
		`{"mcpServers": {"a": {"url": "file:///x"}}}`, `{"mcpServers": {"a b": {"command": "x"}}}`,
		`{"mcpServers": {"a": {"command": "x", "typo": 1}}}`, `{"mcpServers": {"a": {"command": "x", "type": "sse"}}}`,
		`{"mcpServers": {"a": {"command": "x", "type": "http"}}}`,
	} {
		if _, err := ParseMCPConfig([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := New(context.Background(), WithMCPServers(map[string]MCPServer{"host": {Command: "x"}})); err == nil {
		t.Error(`the reserved server name "host" was accepted`)
	}
}

// TestMCPBridgeGoTool: a WithTool function gets the arguments and the
// run's context; its error is a tool error; the command works under
// WithAllow, which does not name it.
func TestMCPBridgeGoTool(t *testing.T) {
	sb := newSandbox(t, WithAllow("tr"), WithTool("greet", "Greets", nil, func(ctx context.Context, args json.RawMessage) (any, error) {
		var in struct{ Name string }
		json.Unmarshal(args, &in)
		if in.Name == "" {
			return nil, errors.New("name is required")
		}
		if _, ok := ctx.Deadline(); !ok {
			return nil, errors.New("no deadline: not the run's context")
		}
		return map[string]string{"greeting": "hi " + in.Name}, nil
	}), WithTool("boom", "Panics", nil, func(context.Context, json.RawMessage) (any, error) { panic("kaboom") }))
	res := run(t, sb, `mcp call host greet '{"Name":"ann"}' | tr a-z A-Z; mcp call host greet; echo "status $?"; cat /etc/passwd; echo "cat $?"; mcp call host boom; echo "boom $?"`)
	if res.Stdout != "{\"GREETING\":\"HI ANN\"}\nstatus 1\ncat 126\nboom 1\n" || !strings.Contains(res.Stderr, "name is required") || !strings.Contains(res.Stderr, "tool boom panicked: kaboom") {
		t.Fatalf("%+v", res)
	}
}
