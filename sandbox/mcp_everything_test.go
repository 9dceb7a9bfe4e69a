package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// everythingServer returns the config entry of the reference server
// @modelcontextprotocol/server-everything (installed by .ci/run, see
// testdata/mcp-everything/README), or skips the test without it unless
// WASMBOX_REQUIRE_MCP_EVERYTHING is set.
func everythingServer(t *testing.T, tools []string) MCPServer {
	t.Helper()
	entry, err := filepath.Abs("../testdata/mcp-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	node, nerr := exec.LookPath("node")
	if _, err := os.Stat(entry); err != nil || nerr != nil {
		if os.Getenv("WASMBOX_REQUIRE_MCP_EVERYTHING") != "" {
			t.Fatalf("server-everything required but missing (node: %v, package: %v)", nerr, err)
		}
		t.Skip("no @modelcontextprotocol/server-everything (npm ci --prefix testdata/mcp-everything)")
	}
	return MCPServer{Command: node, Args: []string{entry, "stdio"}, Tools: tools}
}

// TestMCPBridgeEverything calls the reference MCP server from scripts,
// end to end: the tools in pipes, a tool off the allowlist, the traces,
// and a call that outlives the run's deadline.
func TestMCPBridgeEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node")
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	sb := newSandbox(t, WithTimeout(20*time.Second), WithTracerProvider(tp), WithMCPServers(map[string]MCPServer{
		"everything": everythingServer(t, []string{"echo", "get-sum", "trigger-long-running-operation"}),
	}))

	res := run(t, sb, `mcp call everything echo '{"message":"hello from wasm"}' | tr a-z A-Z
s=$(mcp call everything get-sum '{"a":2,"b":40}'); echo "$s" | tr -d .
mcp list | cut -d' ' -f1,2
mcp call everything get-env '{}'; echo "get-env: $?"`)
	want := "ECHO: HELLO FROM WASM\nThe sum of 2 and 40 is 42\neverything echo\neverything get-sum\neverything trigger-long-running-operation\nget-env: 126\n"
	if res.Stdout != want || res.ExitCode != 0 {
		t.Fatalf("stdout %q (exit %d, stderr %q), want %q", res.Stdout, res.ExitCode, res.Stderr, want)
	}
	var got []string
	for _, c := range res.ToolCalls {
		got = append(got, c.Server+"/"+c.Tool+"/"+map[bool]string{true: "ok", false: "failed"}[c.OK])
	}
	if strings.Join(got, " ") != "everything/echo/ok everything/get-sum/ok everything/get-env/failed" {
		t.Fatalf("ToolCalls %+v", res.ToolCalls)
	}
	var runID string
	spans := exp.GetSpans()
	for _, s := range spans {
		if s.Name == "sandbox.run" {
			runID = s.SpanContext.SpanID().String()
		}
	}
	n := 0
	for _, s := range spans {
		if s.Name == "mcp.call" && s.Parent.SpanID().String() == runID {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d mcp.call spans under the run, want 3", n)
	}

	// A call that would take a minute ends with the run's deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, err := sb.Run(ctx, `mcp call everything trigger-long-running-operation '{"duration":60,"steps":2}'; echo after`)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 124 || res.ErrorClass != ClassTimeout || strings.Contains(res.Stdout, "after") {
		t.Fatalf("long call: %+v", res)
	}
	if len(res.ToolCalls) != 1 || res.ToolCalls[0].OK {
		t.Fatalf("long call: ToolCalls %+v", res.ToolCalls)
	}
	// The server is still usable.
	if res := run(t, sb, `mcp call everything echo '{"message":"again"}'`); res.Stdout != "Echo: again\n" {
		t.Fatalf("after the killed call: %+v", res)
	}
}
