package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmbox/wasmbox/internal/testcache"
)

func testCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "wasmbox-test", "compile")
}

// progressLog collects the progress notifications a client receives.
type progressLog struct {
	mu   sync.Mutex
	text map[string]string // stream -> text
}

func (p *progressLog) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.text == nil {
		p.text = map[string]string{}
	}
	stream, _ := req.Params.Meta["stream"].(string)
	p.text[stream] += req.Params.Message
}

func (p *progressLog) get(stream string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.text[stream]
}

func newTestClient(p *progressLog) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: p.handler})
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

type runOut struct {
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ExitCode   int    `json:"exit_code"`
	ErrorClass string `json:"error_class"`
	Truncated  bool   `json:"truncated"`
	DurationMS *int64 `json:"duration_ms"`
}

func structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return v
}

func runScript(t *testing.T, cs *mcp.ClientSession, args map[string]any) runOut {
	t.Helper()
	res := call(t, cs, "run", args)
	if res.IsError {
		t.Fatalf("run %v: tool error %q", args, text(res))
	}
	out := structured[runOut](t, res)
	if out.DurationMS == nil {
		t.Fatalf("run %v: no duration_ms in %v", args, res.StructuredContent)
	}
	return out
}

// exerciseMCP checks the tools of `wasmbox mcp` through a client session.
func exerciseMCP(t *testing.T, cs *mcp.ClientSession, progress *progressLog) {
	ctx := context.Background()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if strings.Join(names, " ") != "list_files read_file run write_file" {
		t.Fatalf("tools: %v", names)
	}

	// Files written, then read by a script; binary content through base64.
	if res := call(t, cs, "write_file", map[string]any{"path": "/work/in.txt", "content": "hello mcp\n"}); res.IsError {
		t.Fatalf("write_file: %s", text(res))
	}
	bin := []byte{0, 1, 2, 0xff, 0xfe}
	if res := call(t, cs, "write_file", map[string]any{"path": "/work/bin", "content": base64.StdEncoding.EncodeToString(bin), "encoding": "base64", "mode": "0600"}); res.IsError {
		t.Fatalf("write_file base64: %s", text(res))
	}
	if out := runScript(t, cs, map[string]any{"script": "tr a-z A-Z < /work/in.txt; wc -c < /work/bin; stat -c %a /work/bin"}); out.Stdout != "HELLO MCP\n5\n600\n" || out.ExitCode != 0 {
		t.Fatalf("reading the written files: %+v", out)
	}
	res := call(t, cs, "read_file", map[string]any{"path": "/work/bin"})
	rf := structured[struct{ Content, Encoding string }](t, res)
	if got, _ := base64.StdEncoding.DecodeString(rf.Content); rf.Encoding != "base64" || !bytes.Equal(got, bin) {
		t.Fatalf("read_file of binary: %+v", rf)
	}
	runScript(t, cs, map[string]any{"script": "echo made by a script > /work/out.txt; mkdir /work/sub"})
	if res := call(t, cs, "read_file", map[string]any{"path": "/work/out.txt"}); text(res) != "made by a script\n" {
		t.Fatalf("read_file: %q", text(res))
	}
	lf := structured[struct {
		Entries []struct {
			Name, Type, Mode string
			Size             int64
		}
	}](t, call(t, cs, "list_files", map[string]any{"path": "/work"}))
	var listing []string
	for _, e := range lf.Entries {
		listing = append(listing, e.Name+":"+e.Type+":"+e.Mode)
	}
	if got := strings.Join(listing, " "); got != "bin:file:0600 in.txt:file:0644 out.txt:file:0644 sub:dir:0755" {
		t.Fatalf("list_files: %s", got)
	}

	// State is kept across calls; stdin reaches the script; a failing
	// script is not a tool error.
	runScript(t, cs, map[string]any{"script": "cd /work/sub; X=kept; f() { echo fn; }"})
	if out := runScript(t, cs, map[string]any{"script": "echo $X $PWD; f; cat", "stdin": "in\n"}); out.Stdout != "kept /work/sub\nfn\nin\n" {
		t.Fatalf("state across calls: %+v", out)
	}
	res = call(t, cs, "run", map[string]any{"script": "echo oops >&2; exit 3"})
	if out := structured[runOut](t, res); res.IsError || out.ExitCode != 3 || out.Stderr != "oops\n" || !strings.Contains(text(res), "[exit 3]") {
		t.Fatalf("failing script: %v %+v %q", res.IsError, out, text(res))
	}

	// timeout_ms kills a loop.
	if out := runScript(t, cs, map[string]any{"script": "while :; do :; done", "timeout_ms": 300}); out.ExitCode != 124 || out.ErrorClass != "TIMEOUT" {
		t.Fatalf("timeout_ms: %+v", out)
	}

	// Output streams as progress notifications when a token is sent.
	params := &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"script": "for i in 1 2 3; do echo line$i; done; echo err >&2"}}
	params.SetProgressToken("tok-1")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); progress.get("stdout") != "line1\nline2\nline3\n" || progress.get("stderr") != "err\n"; {
		if time.Now().After(deadline) {
			t.Fatalf("progress: stdout %q stderr %q", progress.get("stdout"), progress.get("stderr"))
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Bad arguments are tool errors of one line.
	for _, c := range []struct {
		tool string
		args any
		want string
	}{
		{"run", map[string]any{}, "run: script is required"},
		{"run", map[string]any{"script": 5}, "run: script must be a string, not number"},
		{"run", map[string]any{"script": "true", "timeout_ms": -1}, "run: timeout_ms must be positive, got -1"},
		{"run", map[string]any{"script": "true", "extra": 1}, `run: unknown argument "extra"`},
		{"write_file", map[string]any{"path": "/x", "content": "%%", "encoding": "base64"}, "write_file: content is not valid base64"},
		{"write_file", map[string]any{"path": "/x", "content": "", "mode": "rwx"}, `write_file: mode must be octal permissions like "0644", not "rwx"`},
		{"write_file", map[string]any{"path": "/x", "content": "", "encoding": "rot13"}, `write_file: encoding must be "utf-8" or "base64", not "rot13"`},
		{"read_file", map[string]any{"path": "/nonexistent"}, "read_file: "},
		{"read_file", map[string]any{}, "read_file: path is required"},
		{"list_files", map[string]any{"path": "/work/in.txt"}, "list_files: "},
	} {
		res := call(t, cs, c.tool, c.args)
		got := text(res)
		if !res.IsError || !strings.HasPrefix(got, c.want) || strings.Contains(got, "\n") {
			t.Errorf("%s %v: isError=%v %q, want one line starting %q", c.tool, c.args, res.IsError, got, c.want)
		}
	}
}

func TestMCPStdio(t *testing.T) {
	srvIn, clientOut := io.Pipe()
	clientIn, srvOut := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- doMain([]string{"--cachedir", testCacheDir(), "mcp", "--timeout", "10s"}, srvIn, srvOut, &stderr)
		srvOut.Close()
	}()
	var progress progressLog
	cs, err := newTestClient(&progress).Connect(context.Background(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	exerciseMCP(t, cs, &progress)
	cs.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("wasmbox mcp exited %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("wasmbox mcp did not end with its input")
	}
}

// startMCPHTTP runs `wasmbox mcp --listen` until the test ends and returns
// its URL.
func startMCPHTTP(t *testing.T, env map[string]string, args ...string) string {
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan struct{})
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: pw}
	root := newRoot(a)
	root.SetArgs(append([]string{"--cachedir", testCacheDir(), "mcp", "--listen", "127.0.0.1:0"}, args...))
	go func() {
		defer close(done)
		if err := root.ExecuteContext(ctx); err != nil {
			pw.CloseWithError(err)
		}
		pw.Close()
	}()
	t.Cleanup(func() { cancel(); <-done })
	br := bufio.NewReader(pr)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v", err)
	}
	go io.Copy(io.Discard, br)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "wasmbox: serving MCP on ")
	if !ok {
		t.Fatalf("ready line %q", line)
	}
	return url
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func TestMCPHTTP(t *testing.T) {
	url := startMCPHTTP(t, map[string]string{"WASMBOX_TOKEN": "tok-secret"}, "--timeout", "10s")
	hc := &http.Client{Transport: bearer{"tok-secret"}}
	var progress progressLog
	cs, err := newTestClient(&progress).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	exerciseMCP(t, cs, &progress)

	// One sandbox per session: a second session does not see the first's files.
	cs2, err := newTestClient(&progressLog{}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	if out := runScript(t, cs2, map[string]any{"script": "ls /work 2>&1; echo ${X:-unset}"}); !strings.Contains(out.Stdout, "No such file") || !strings.HasSuffix(out.Stdout, "unset\n") {
		t.Fatalf("second session sees the first's state: %+v", out)
	}

	// Without the token, with a foreign Host or Origin: refused.
	if _, err := newTestClient(&progressLog{}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil); err == nil {
		t.Fatal("a client without the token connected")
	}
	for _, h := range []struct{ name, value string }{{"Host", "evil.example:80"}, {"Origin", "http://evil.example"}} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer tok-secret")
		if h.name == "Host" {
			req.Host = h.value
		} else {
			req.Header.Set(h.name, h.value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s: status %d", h.name, h.value, resp.StatusCode)
		}
	}
}

func TestMCPListenRules(t *testing.T) {
	t.Setenv("WASMBOX_TOKEN", "")
	os.Unsetenv("WASMBOX_TOKEN") // restored by t.Setenv
	_, stderr, code := runMain(t, "", "--cachedir", testCacheDir(), "mcp", "--listen", "0.0.0.0:0")
	if code != 1 || !strings.Contains(stderr, "needs a token") {
		t.Fatalf("non-loopback without a token: %d %q", code, stderr)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	if _, stderr, code := runMain(t, "", "mcp", "--listen", "127.0.0.1:0", "--token-file", empty); code != 2 || !strings.Contains(stderr, "empty") {
		t.Fatalf("empty token file: %d %q", code, stderr)
	}
}

// With WASMBOX_TEST_AS_WASMBOX=1 the test binary is the wasmbox command,
// so that a test can run `wasmbox mcp` as a real stdio MCP server; with
// WASMBOX_TEST_AS_CLI=1 it is the whole wasmbox process (run going to the
// resident engine, as main does).
func TestMain(m *testing.M) {
	if os.Getenv("WASMBOX_TEST_AS_WASMBOX") == "1" {
		os.Exit(doMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if os.Getenv("WASMBOX_TEST_AS_CLI") == "1" {
		os.Exit(cliMain(os.Args[1:]))
	}
	if testAsOther != nil {
		testAsOther()
	}
	// The user cache directory (compile caches, the engines' caches) is
	// the tests' own (package testcache).
	done := testcache.Setup()
	code := m.Run()
	for _, f := range testCleanups {
		f()
	}
	done()
	os.Exit(code)
}

// testAsOther, when set by a platform's test file, may take the test
// binary over for a role other than tests (and exit).
var testAsOther func()

// testCleanups run after every test of the package.
var testCleanups []func()

// TestMCPBothWays: a script of `wasmbox run` calls the run tool of
// another `wasmbox mcp` through the bridge, and the call shows in
// "tool_calls" of run --json and of the MCP run tool.
func TestMCPBothWays(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"box": map[string]any{
		"command": exe, "args": []string{"--cachedir", testCacheDir(), "mcp"},
		"env": map[string]string{"WASMBOX_TEST_AS_WASMBOX": "1"}, "tools": []string{"run"},
	}}})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runMain(t, "", "--cachedir", testCacheDir(), "run", "--json", "--mcp-config", cfg, "-c",
		`mcp call box run '{"script":"echo nested | tr a-z A-Z"}' | head -1; mcp call box write_file '{}'; echo "status $?"`)
	var res struct {
		Stdout    string
		ToolCalls []struct {
			Server, Tool, Error string
			OK                  bool
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 {
		t.Fatalf("run --json: %d %q %q: %v", code, stdout, stderr, err)
	}
	if res.Stdout != "NESTED\nstatus 126\n" || len(res.ToolCalls) != 2 ||
		res.ToolCalls[0].Server != "box" || res.ToolCalls[0].Tool != "run" || !res.ToolCalls[0].OK ||
		res.ToolCalls[1].Tool != "write_file" || res.ToolCalls[1].OK || res.ToolCalls[1].Error == "" {
		t.Fatalf("run --json: %+v", res)
	}

	// The same through the run tool of `wasmbox mcp --mcp-config`.
	srvIn, clientOut := io.Pipe()
	clientIn, srvOut := io.Pipe()
	done := make(chan int, 1)
	var errb bytes.Buffer
	go func() {
		done <- doMain([]string{"--cachedir", testCacheDir(), "mcp", "--mcp-config", cfg}, srvIn, srvOut, &errb)
		srvOut.Close()
	}()
	cs, err := newTestClient(&progressLog{}).Connect(context.Background(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := call(t, cs, "run", map[string]any{"script": `mcp call box run '{"script":"echo inner"}' | head -1`})
	var r struct {
		Stdout    string
		ToolCalls []struct{ Server, Tool string } `json:"tool_calls"`
	}
	b, _ = json.Marshal(out.StructuredContent)
	if err := json.Unmarshal(b, &r); err != nil || r.Stdout != "inner\n" || len(r.ToolCalls) != 1 || r.ToolCalls[0].Tool != "run" {
		t.Fatalf("run tool: %s: %v", b, err)
	}
	cs.Close()
	if code := <-done; code != 0 {
		t.Fatalf("wasmbox mcp exited %d: %s", code, errb.String())
	}
}
