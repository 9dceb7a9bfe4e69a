package main

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRunHostStdinReleased: a script reading the caller's standard input
// (a pipe whose writer never closes it, like `sleep 20 | wasmbox run`) ends
// at its deadline with 124 instead of waiting for the input's end.
func TestRunHostStdinReleased(t *testing.T) {
	for _, script := range []string{"cat", "read x", "cat | wc -l"} {
		t.Run(script, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close() // only once the run has returned
			defer r.Close()
			type result struct {
				code           int
				stdout, stderr string
			}
			done := make(chan result, 1)
			go func() {
				var out, errb bytes.Buffer
				code := doMain([]string{"run", "--timeout", "300ms", "-c", script}, r, &out, &errb)
				done <- result{code, out.String(), errb.String()}
			}()
			select {
			case res := <-done:
				if res.code != 124 {
					t.Fatalf("exit %d (stdout %q, stderr %q), want 124", res.code, res.stdout, res.stderr)
				}
			case <-time.After(60 * time.Second): // a watchdog, not a timing assertion
				t.Fatal("the run did not end while its input stayed open")
			}
		})
	}
}

// TestRunTruncatedOutput: a stream that reaches its cap is a closed pipe
// for its writer (status 141 for that command), the run's status is the
// script's as bash gives it (141 when its last command died on the cap, as
// with a reader that left: `wasmbox run -c yes | head -c 1M` in bash),
// truncated is set, the cut falls on a line boundary and the
// truncation notice is a line of its own.
func TestRunTruncatedOutput(t *testing.T) {
	type jsonResult struct {
		Stdout    string `json:"stdout"`
		Stderr    string `json:"stderr"`
		ExitCode  int    `json:"exit_code"`
		Truncated bool   `json:"truncated"`
	}
	runJSON := func(t *testing.T, script string) jsonResult {
		t.Helper()
		stdout, stderr, code := runMain(t, "", "run", "--json", "-c", script)
		var res jsonResult
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("exit %d, stderr %q: %v", code, stderr, err)
		}
		if code != res.ExitCode {
			t.Errorf("exit %d, exit_code %d", code, res.ExitCode)
		}
		return res
	}
	t.Run("yes|head", func(t *testing.T) {
		res := runJSON(t, "yes | head -c 100000000")
		if res.ExitCode != 141 || !res.Truncated || res.Stderr != "" {
			t.Fatalf("exit_code %d truncated %v stderr %q, want 141 true \"\"", res.ExitCode, res.Truncated, res.Stderr)
		}
		if len(res.Stdout) == 0 || strings.Trim(res.Stdout, "y\n") != "" || !strings.HasSuffix(res.Stdout, "y\n") {
			t.Fatalf("stdout: %d bytes ending %q", len(res.Stdout), res.Stdout[max(0, len(res.Stdout)-10):])
		}
	})
	t.Run("yes", func(t *testing.T) {
		// The last command died on the cap: its status is the script's.
		res := runJSON(t, "yes")
		if res.ExitCode != 141 || !res.Truncated || res.Stderr != "" {
			t.Fatalf("exit_code %d truncated %v stderr %q, want 141 true \"\"", res.ExitCode, res.Truncated, res.Stderr)
		}
		stdout, stderr, code := runMain(t, "", "run", "-c", "yes")
		if code != 141 || len(stdout) != 1<<20 || stderr != "wasmbox: output truncated at the limit\n" {
			t.Fatalf("exit %d, %d bytes of stdout, stderr %q; want 141, the cap, the notice", code, len(stdout), stderr)
		}
	})
	t.Run("status after the cut", func(t *testing.T) {
		// A command after the cut decides the status, as in bash.
		for script, want := range map[string]int{"yes; echo $? >&2": 0, "yes; exit 5": 5, "yes; false": 1} {
			res := runJSON(t, script)
			if res.ExitCode != want || !res.Truncated {
				t.Errorf("%s: exit_code %d truncated %v stderr %q, want %d", script, res.ExitCode, res.Truncated, res.Stderr, want)
			}
		}
	})
	t.Run("status of the writer", func(t *testing.T) {
		res := runJSON(t, "yes | head -c 100000000; echo status=$? >&2; exit 3")
		if res.ExitCode != 3 || !res.Truncated || res.Stderr != "status=141\n" {
			t.Fatalf("exit_code %d truncated %v stderr %q, want 3 true \"status=141\\n\"", res.ExitCode, res.Truncated, res.Stderr)
		}
	})
	t.Run("line boundary", func(t *testing.T) {
		res := runJSON(t, "seq 1 1000000")
		if res.ExitCode != 141 || !res.Truncated {
			t.Fatalf("exit_code %d truncated %v", res.ExitCode, res.Truncated)
		}
		lines := strings.Split(res.Stdout, "\n")
		if last := lines[len(lines)-1]; last != "" {
			t.Fatalf("cut inside a line: ends with %q", last)
		}
		n := len(lines) - 1
		if n < 1000 || lines[n-1] != strings.TrimSpace(strings.Repeat(" ", 0)+itoa(n)) {
			t.Fatalf("%d lines, last %q", n, lines[n-1])
		}
	})
	t.Run("notice on its own line", func(t *testing.T) {
		// One line longer than the cap: no line boundary to cut at.
		var out, errb bytes.Buffer
		code := doMain([]string{"run", "-c", "head -c 3000000 /dev/zero | tr '\\0' x"}, strings.NewReader(""), &out, &errb)
		if code != 141 {
			t.Fatalf("exit %d, stderr %q", code, errb.String())
		}
		if errb.String() != "\nwasmbox: output truncated at the limit\n" {
			t.Fatalf("stderr %q", errb.String())
		}
		if out.Len() != 1<<20 {
			t.Fatalf("stdout %d bytes, want the cap", out.Len())
		}
	})
}

var durationMS = regexp.MustCompile(`"duration_ms":[0-9]+`)

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestRunContracts pins small CLI contracts of issue 14.
func TestRunContracts(t *testing.T) {
	big := strings.Repeat("echo x\n", 11000) // past the 64 KiB script limit
	cases := []struct {
		name   string
		args   []string
		stdin  string
		stdout string
		stderr string
		code   int
	}{
		{name: "empty command", args: []string{"run", "-c", `""`}, stderr: "bash: line 1: : command not found\n", code: 127},
		{name: "empty command status", args: []string{"run", "-c", `"" 2>/dev/null; echo $?`}, stdout: "127\n"},
		{name: "script too large", args: []string{"run", "-c", big}, code: 2,
			stderr: "wasmbox: script is 77000 bytes, larger than the 65536-byte limit\n"},
		{name: "script too large on stdin", args: []string{"run"}, stdin: big, code: 2,
			stderr: "wasmbox: script is 77000 bytes, larger than the 65536-byte limit\n"},
		{name: "out of memory", args: []string{"run", "--memory", "16MiB", "-c", "seq 1 2000000 | awk '{a[$0]=$0} END {print NR}'; echo status=$?"},
			stdout: "status=137\n", stderr: "wasmbox: awk: memory limit (16 MiB) exceeded\n"},
		{name: "timeout", args: []string{"run", "--timeout", "1s", "-c", "echo start; sleep 3"}, code: 124,
			stdout: "start\n", stderr: "wasmbox: timed out after 1s\n"},
		{name: "timeout ends the script", args: []string{"run", "--timeout", "300ms", "-c", "sleep 3; echo after"}, code: 124,
			stderr: "wasmbox: timed out after 300ms\n"},
		{name: "timeout json", args: []string{"run", "--json", "--timeout", "300ms", "-c", "echo start; sleep 3"},
			stdout: `{"stdout":"start\n","stderr":"wasmbox: timed out after 300ms\n","exit_code":124,"error_class":"TIMEOUT","truncated":false,"duration_ms":D}` + "\n", code: 124},
		{name: "timeout in a shell line", args: []string{"shell", "--timeout", "300ms"}, stdin: "x=1\nsleep 3\necho x=$x\n", code: 0,
			stdout: "x=1\n", stderr: "wasmbox: timed out after 300ms\n"},
		{name: "bench unknown group", args: []string{"bench", "--only", "nonexistent"}, code: 2,
			stderr: "wasmbox: --only \"nonexistent\": no measurement group matches (groups: kill, command, script, throughput, memory, sandbox, startup, compute, tools, python, bash, net, responsiveness, cluster)\n"},
		{name: "serve non-loopback", args: []string{"serve", "--listen", "0.0.0.0:0"}, code: 2,
			stderr: "wasmbox: --listen 0.0.0.0:0 is not a loopback address: it needs --allow-non-loopback and a bearer token (--token-file FILE or WASMBOX_TOKEN)\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, c.stdin, c.args...)
			stdout = durationMS.ReplaceAllString(stdout, `"duration_ms":D`)
			if stdout != c.stdout || code != c.code || stderr != c.stderr {
				t.Fatalf("got stdout %q stderr %q exit %d\nwant stdout %q stderr %q exit %d", stdout, stderr, code, c.stdout, c.stderr, c.code)
			}
		})
	}
}

// TestRunMountBelongsToUser: a private directory (mode 0700, as mktemp -d
// makes it) mounted rw is the sandbox user's: cd, create, unlink and
// chmod work in it, and chmod never sets setuid on the host.
func TestRunMountBelongsToUser(t *testing.T) {
	host := t.TempDir()
	if err := os.Chmod(host, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(host+"/f", []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `cd /work && stat -c '%u:%g %a %n' . f && echo new > g && rm g && chmod 600 f && chmod u+s f; stat -c '%a %n' f`
	stdout, stderr, code := runMain(t, "", "run", "--mount", host+":/work:rw", "-c", script)
	if want := "1000:1000 700 .\n1000:1000 644 f\n600 f\n"; stdout != want || code != 0 {
		t.Fatalf("stdout %q stderr %q exit %d, want %q", stdout, stderr, code, want)
	}
	fi, err := os.Stat(host + "/f")
	if err != nil || fi.Mode() != 0o600 {
		t.Fatalf("host mode %v %v, want -rw-------", fi.Mode(), err)
	}
}
