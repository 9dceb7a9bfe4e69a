package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmbox/wasmbox/internal/testcache"
)

// The test binary doubles as a real MCP server over stdio: with
// WASMBOX_TEST_MCP_SERVER=serve it serves testMCPServer on its standard
// streams, with =hang it never answers (a server stuck at start).
func TestMain(m *testing.M) {
	switch os.Getenv("WASMBOX_TEST_MCP_SERVER") {
	case "serve":
		if f := os.Getenv("WASMBOX_TEST_MCP_PIDFILE"); f != "" {
			os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644)
		}
		if err := testMCPServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "hang":
		select {}
	}
	// WASMBOX_TEST_SHELL=bash runs every test on GNU bash's session
	// (sandboxes made without WithShell get it).
	if sh := os.Getenv("WASMBOX_TEST_SHELL"); sh != "" {
		defaultShell = sh
	}
	// The user cache directory (the default engine's compile cache) is
	// the tests' own (package testcache).
	testcache.Main(m)
}

// testMCPServer is a Go MCP server with the tools the bridge tests call.
func testMCPServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "wasmbox-test", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes the text back\nsecond line"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers"}, func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(in.A + in.B)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("it failed on purpose")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never returns"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	type envIn struct {
		Name string `json:"name"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Reads an environment variable of the server"}, func(ctx context.Context, req *mcp.CallToolRequest, in envIn) (*mcp.CallToolResult, any, error) {
		v, ok := os.LookupEnv(in.Name)
		if !ok {
			v = "<unset>"
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: v}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "secret", Description: "Not on the allowlist"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the secret"}}}, nil, nil
	})
	return s
}

// testStdioServer is the config entry that runs testMCPServer as a
// subprocess.
func testStdioServer(t *testing.T, tools []string, extraEnv map[string]string) MCPServer {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"WASMBOX_TEST_MCP_SERVER": "serve"}
	for k, v := range extraEnv {
		env[k] = v
	}
	return MCPServer{Command: exe, Args: []string{"-test.run=^$"}, Env: env, Tools: tools}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
