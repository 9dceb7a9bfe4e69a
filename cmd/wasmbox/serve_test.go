package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/audit"
	wbruntime "github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// TestServe runs `wasmbox serve` for real: loopback TCP, real sandboxes,
// the audit log, and a graceful stop on SIGTERM.
func TestServe(t *testing.T) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	cache := filepath.Join(base, "wasmbox-test", "compile")
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")

	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- doMain([]string{"--cachedir", cache, "serve", "--listen", "127.0.0.1:0", "--audit-log", logPath, "--workers", "1", "--allow-net", "127.0.0.1:9"},
			strings.NewReader(""), pw, &stderr)
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v (exit %v) %s", err, <-done, stderr.String())
	}
	go io.Copy(io.Discard, br)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "wasmbox: serving on ")
	if !ok {
		t.Fatalf("ready line %q", line)
	}

	post := func(path, body string) (int, []byte) {
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, body := post("/v1/sessions", "")
	var sess struct{ ID string }
	if json.Unmarshal(body, &sess); code != 201 || sess.ID == "" {
		t.Fatalf("create: %d %s", code, body)
	}
	req, _ := http.NewRequest("PUT", url+"/v1/sessions/"+sess.ID+"/files?path=/home/user/in.txt", strings.NewReader("from the client\n"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 204 {
		t.Fatalf("put: %v %v", err, resp)
	}
	code, body = post("/v1/sessions/"+sess.ID+"/run", `{"script":"cat /home/user/in.txt; echo done > /home/user/out.txt; exit 3","timeout_ms":300000}`)
	var res map[string]any
	if json.Unmarshal(body, &res); code != 200 || res["stdout"] != "from the client\n" || res["exit_code"] != 3.0 || res["error_class"] != "" {
		t.Fatalf("run: %d %s", code, body)
	}
	resp, err := http.Get(url + "/v1/sessions/" + sess.ID + "/files?path=/home/user/out.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != "done\n" {
		t.Fatalf("get: %d %q", resp.StatusCode, got)
	}
	code, body = post("/v1/sessions/"+sess.ID+"/run", `{"script":"while true; do :; done","timeout_ms":200}`)
	if json.Unmarshal(body, &res); code != 200 || res["error_class"] != "TIMEOUT" || res["exit_code"] != 124.0 {
		t.Fatalf("timeout run: %d %s", code, body)
	}
	// The session's network: --allow-net of serve; the requests are in
	// the result's "network". The first curl compiles net.wasm inside
	// the run's deadline: the timeout is generous for a loaded machine.
	code, body = post("/v1/sessions/"+sess.ID+"/run", `{"script":"curl -sS https://example.com/; echo rc=$?","timeout_ms":300000}`)
	var netRes struct {
		Stdout, Stderr string
		Network        []struct {
			Host   string
			Denied bool
		}
	}
	if json.Unmarshal(body, &netRes); code != 200 || netRes.Stdout != "rc=6\n" || netRes.Stderr != "wasmbox: network: example.com is not in the allowlist\n" ||
		len(netRes.Network) != 1 || netRes.Network[0].Host != "example.com" || !netRes.Network[0].Denied {
		t.Fatalf("network run: %d %s", code, body)
	}
	resp, err = http.Get(url + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", err, resp)
	}
	resp.Body.Close()

	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head, err := audit.VerifyFrom(f, audit.Head{})
	if err != nil || head.Seq != 5 { // session created, three runs, one refused connect
		t.Fatalf("audit log: %v, %d entries", err, head.Seq)
	}
}

// TestServeBombIsolated: a memory bomb in one session of `wasmbox serve`
// ends in that session (LIMIT_EXCEEDED or TIMEOUT) while another session
// keeps answering, during the bomb and right after it; the process stays
// far from the bomb's appetite. (With the interpreter in the host process,
// one such run took every session down with the server.)
func TestServeBombIsolated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a memory bomb")
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	cache := filepath.Join(base, "wasmbox-test", "compile")
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- doMain([]string{"--cachedir", cache, "serve", "--listen", "127.0.0.1:0", "--workers", "2"},
			strings.NewReader(""), pw, &stderr)
		pw.Close()
	}()
	defer func() {
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	br := bufio.NewReader(pr)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v %s", err, stderr.String())
	}
	go io.Copy(io.Discard, br)
	url := strings.TrimPrefix(strings.TrimSpace(line), "wasmbox: serving on ")
	post := func(path, body string) (int, map[string]any) {
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	newSession := func() string {
		code, m := post("/v1/sessions", "")
		id, _ := m["id"].(string)
		if code != 201 || id == "" {
			t.Fatalf("create: %d %v", code, m)
		}
		return id
	}
	victim, bystander := newSession(), newSession()
	if code, m := post("/v1/sessions/"+bystander+"/run", `{"script":"X=kept; echo ready"}`); code != 200 || m["stdout"] != "ready\n" {
		t.Fatalf("bystander: %d %v", code, m)
	}
	rss0 := procRSS(t)
	bomb := make(chan map[string]any, 1)
	go func() {
		_, m := post("/v1/sessions/"+victim+"/run",
			`{"script":"y=$(head -c 1000000 /dev/zero | tr \"\\0\" a); z=${y//?/$y}","timeout_ms":3000}`)
		bomb <- m
	}()
	var peak int64
	answered := 0
	for {
		start := time.Now()
		code, m := post("/v1/sessions/"+bystander+"/run", `{"script":"echo $X"}`)
		if code != 200 || m["stdout"] != "kept\n" {
			t.Fatalf("bystander during the bomb: %d %v", code, m)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("the bystander waited %v", d)
		}
		answered++
		peak = max(peak, procRSS(t)-rss0)
		select {
		case m := <-bomb:
			if c := m["error_class"]; c != "LIMIT_EXCEEDED" && c != "TIMEOUT" {
				t.Errorf("the bomb ended with %v", m)
			}
			// Right after it, both sessions answer.
			for _, id := range []string{bystander, victim} {
				if code, m := post("/v1/sessions/"+id+"/run", `{"script":"echo alive"}`); code != 200 || m["stdout"] != "alive\n" {
					t.Errorf("after the bomb, %s: %d %v", id, code, m)
				}
			}
			t.Logf("the bystander answered %d times during the bomb; the process grew by at most %d MiB", answered, peak>>20)
			if peak > 512<<20 {
				t.Errorf("the process grew by %d MiB", peak>>20)
			}
			return
		default:
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func procRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	var size, rss int64
	fmt.Sscan(string(b), &size, &rss)
	return rss * int64(os.Getpagesize())
}

// TestServeCompileHoldsNoWorker: in `wasmbox serve` with one worker, a
// run whose script executes a module that takes seconds to compile (at
// the caps, allowed) gives the worker back at its own timeout, and the
// compile stops with it: another session's run gets the worker and
// answers, and running the module again needs a compile again (it times
// out again rather than exiting 0). Before, the run held the worker until
// the compile ended (9-12 s for a 2 s timeout), and the compile finished
// for nobody.
func TestServeCompileHoldsNoWorker(t *testing.T) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	cache := filepath.Join(base, "wasmbox-test", "compile")
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- doMain([]string{"--cachedir", cache, "serve", "--listen", "127.0.0.1:0", "--workers", "1"},
			strings.NewReader(""), pw, &stderr)
		pw.Close()
	}()
	defer func() {
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("serve did not stop")
		}
		// Close waited for the compiles in flight.
		if n := wbruntime.CompilesInFlight(); n != 0 {
			t.Errorf("%d compiles in flight after serve stopped", n)
		}
	}()
	br := bufio.NewReader(pr)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v %s", err, stderr.String())
	}
	go io.Copy(io.Discard, br)
	url := strings.TrimPrefix(strings.TrimSpace(line), "wasmbox: serving on ")
	call := func(method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	newSession := func() string {
		code, m := call("POST", "/v1/sessions", "")
		id, _ := m["id"].(string)
		if code != 201 || id == "" {
			t.Fatalf("create: %d %v", code, m)
		}
		return id
	}
	heavy, other := newSession(), newSession()
	// Warm: the shell of both sessions is compiled.
	for _, id := range []string{heavy, other} {
		if code, m := call("POST", "/v1/sessions/"+id+"/run", `{"script":"echo warm"}`); code != 200 || m["stdout"] != "warm\n" {
			t.Fatalf("warm-up: %d %v", code, m)
		}
	}
	// 190 loops each changing up to 1000 locals: under every cap,
	// seconds of compile. Its bytes are new to the disk cache each time.
	mod := runtimetest.NestedLoops(190, 1000-int(time.Now().UnixNano()%100), true)
	if code, _ := call("PUT", "/v1/sessions/"+heavy+"/files?path=/home/user/x.wasm", string(mod)); code != 204 {
		t.Fatalf("put: %d", code)
	}
	if code, m := call("POST", "/v1/sessions/"+heavy+"/run", `{"script":"chmod +x /home/user/x.wasm && echo ready"}`); code != 200 || m["stdout"] != "ready\n" {
		t.Fatalf("chmod: %d %v", code, m)
	}
	const runX = `{"script":"/home/user/x.wasm; echo exit $?","timeout_ms":300}`
	type result struct {
		code int
		m    map[string]any
		d    time.Duration
	}
	first := make(chan result, 1)
	start := time.Now()
	go func() {
		code, m := call("POST", "/v1/sessions/"+heavy+"/run", runX)
		first <- result{code, m, time.Since(start)}
	}()
	// The other session waits for the one worker, then gets it.
	time.Sleep(50 * time.Millisecond) // let the heavy run take the worker first
	code, m := call("POST", "/v1/sessions/"+other+"/run", `{"script":"echo ok"}`)
	otherAt := time.Since(start)
	if code != 200 || m["stdout"] != "ok\n" {
		t.Fatalf("the other session: %d %v", code, m)
	}
	r := <-first
	if r.code != 200 || r.m["error_class"] != "TIMEOUT" {
		t.Fatalf("the heavy run: %d %v", r.code, r.m)
	}
	t.Logf("heavy run answered after %v, the other session after %v; compiles in flight now: %d",
		r.d, otherAt, wbruntime.CompilesInFlight())
	// The compile stopped with its run: the module is compiled again
	// (and times out again) rather than found compiled.
	code, m = call("POST", "/v1/sessions/"+heavy+"/run", runX)
	if code != 200 || m["error_class"] != "TIMEOUT" {
		t.Fatalf("running the module again: %d %v (the abandoned compile went on to its end)", code, m)
	}
}
