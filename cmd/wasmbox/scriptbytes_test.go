package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// byteScripts hold bytes that are not UTF-8 (raw 0xff/0xfe, Latin-1 text)
// in every place a script has text: a word, quotes, a variable, a
// here-document, a function, a pipeline stage, a case pattern. Each prints
// its bytes in hex, so that what is compared is printable.
var byteScripts = []string{
	"echo \xff\xfe x | wc -c",
	"echo \xff\xfe x | od -An -tx1",
	"printf '%s\\n' 'caf\xe9' \"na\xefve\" | od -An -tx1",
	"x=\xff\xfe; echo ${#x} \"$x\" | od -An -tx1",
	"cat <<EOF | od -An -tx1\n\xe9t\xe9 \xff\nEOF",
	"f() { echo \"\xff\" a\xfeb; }; f | od -An -tx1",
	"case \xe9 in \xe9) echo match;; *) echo no;; esac",
}

// bashOutput is what GNU bash prints for script, the reference.
func bashOutput(t *testing.T, script string) string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to compare with")
	}
	cmd := exec.Command(bash, "-c", script)
	cmd.Env = []string{"LC_ALL=C", "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash %q: %v", script, err)
	}
	return string(out)
}

// TestScriptBytes: a script is bytes, end to end. Through -c, a file,
// stdin, shell, serve (script_b64) and MCP (script_b64), its output is
// bash's. Before, the parser refused such a script ("invalid UTF-8
// encoding") and the reprinted pipeline stages lost their 0xff bytes.
func TestScriptBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	want := make([]string, len(byteScripts))
	for i, s := range byteScripts {
		want[i] = bashOutput(t, s)
	}
	check := func(t *testing.T, i int, got, stderr string) {
		t.Helper()
		if got != want[i] {
			t.Errorf("script %q:\n got %q (stderr %q)\nwant %q (bash)", byteScripts[i], got, stderr, want[i])
		}
	}
	dir := t.TempDir()
	t.Run("-c", func(t *testing.T) {
		for i, s := range byteScripts {
			out, errs, _ := runMain(t, "", "run", "-c", s)
			check(t, i, out, errs)
		}
	})
	t.Run("file", func(t *testing.T) {
		for i, s := range byteScripts {
			f := filepath.Join(dir, "s.sh")
			if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errs, _ := runMain(t, "", "run", f)
			check(t, i, out, errs)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		for i, s := range byteScripts {
			out, errs, _ := runMain(t, s, "run")
			check(t, i, out, errs)
		}
	})
	t.Run("json", func(t *testing.T) {
		// The output is UTF-8 here (od prints hex): the JSON is exact.
		for i, s := range byteScripts {
			out, errs, _ := runMain(t, "", "run", "--json", "-c", s)
			var res struct{ Stdout string }
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%q: %v", out, err)
			}
			check(t, i, res.Stdout, errs)
		}
	})
	t.Run("shell", func(t *testing.T) {
		for i, s := range byteScripts {
			out, errs, _ := runMain(t, s+"\n", "shell")
			check(t, i, out, errs)
		}
	})
	t.Run("serve", func(t *testing.T) {
		url := startServe(t)
		code, body := httpPost(t, url+"/v1/sessions", "")
		var sess struct{ ID string }
		if json.Unmarshal(body, &sess); code != 201 || sess.ID == "" {
			t.Fatalf("session: %d %s", code, body)
		}
		for i, s := range byteScripts {
			req, _ := json.Marshal(map[string]any{"script_b64": base64.StdEncoding.EncodeToString([]byte(s))})
			code, body := httpPost(t, url+"/v1/sessions/"+sess.ID+"/run", string(req))
			var res struct{ Stdout, Stderr string }
			if err := json.Unmarshal(body, &res); err != nil || code != 200 {
				t.Fatalf("run: %d %s", code, body)
			}
			check(t, i, res.Stdout, res.Stderr)
		}
		for _, c := range []struct{ body, want string }{
			{`{"script":"true","script_b64":"dHJ1ZQ=="}`, `give \"script\" or \"script_b64\", not both`},
			{`{"script_b64":"%%"}`, `\"script_b64\" is not standard base64`},
			{`{}`, `missing \"script\" (or \"script_b64\")`},
		} {
			code, body := httpPost(t, url+"/v1/sessions/"+sess.ID+"/run", c.body)
			if code != 400 || !strings.Contains(string(body), c.want) {
				t.Errorf("%s: %d %s, want 400 %s", c.body, code, body, c.want)
			}
		}
	})
	t.Run("mcp", func(t *testing.T) {
		srvIn, clientOut := io.Pipe()
		clientIn, srvOut := io.Pipe()
		done := make(chan int, 1)
		go func() {
			done <- doMain([]string{"--cachedir", testCacheDir(), "mcp", "--timeout", "20s"}, srvIn, srvOut, io.Discard)
			srvOut.Close()
		}()
		cs, err := newTestClient(&progressLog{}).Connect(context.Background(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range byteScripts {
			out := runScript(t, cs, map[string]any{"script_b64": base64.StdEncoding.EncodeToString([]byte(s))})
			check(t, i, out.Stdout, out.Stderr)
		}
		for _, c := range []struct {
			args map[string]any
			want string
		}{
			{map[string]any{"script": "true", "script_b64": "dHJ1ZQ=="}, "run: give script or script_b64, not both"},
			{map[string]any{"script_b64": "%%"}, "run: script_b64 is not standard base64"},
		} {
			res := call(t, cs, "run", c.args)
			if got := text(res); !res.IsError || !strings.HasPrefix(got, c.want) {
				t.Errorf("%v: isError=%v %q, want %q", c.args, res.IsError, got, c.want)
			}
		}
		cs.Close()
		select {
		case <-done:
		case <-time.After(60 * time.Second): // a watchdog
			t.Fatal("wasmbox mcp did not end with its input")
		}
	})
}

// startServe runs `wasmbox serve` on a loopback port until the test ends
// and returns its URL.
func startServe(t *testing.T) string {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	a := &app{stdin: strings.NewReader(""), stdout: pw, stderr: io.Discard}
	go func() {
		done <- a.main(ctx, []string{"--cachedir", testCacheDir(), "serve", "--listen", "127.0.0.1:0", "--workers", "1"})
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second): // a watchdog
			t.Error("serve did not stop")
		}
	})
	br := bufio.NewReader(pr)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v", err)
	}
	go io.Copy(io.Discard, br)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "wasmbox: serving on ")
	if !ok {
		t.Fatalf("ready line %q", line)
	}
	return url
}

func httpPost(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
