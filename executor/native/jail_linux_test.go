package native

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// jailedRunner returns a Runner in the OS jail, or skips (fails with
// WASMBOX_REQUIRE_JAIL) where the jail is unavailable.
func jailedRunner(t *testing.T) *Runner {
	t.Helper()
	if _, err := findJail(); err != nil {
		if os.Getenv("WASMBOX_REQUIRE_JAIL") != "" {
			t.Fatalf("WASMBOX_REQUIRE_JAIL is set: %v", err)
		}
		t.Skipf("no OS jail here: %v", err)
	}
	p := testPolicy()
	p.Binaries["python3"] = Rule{}
	r, err := New(Config{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Jailed() {
		t.Fatal("runner is not jailed")
	}
	return r
}

func shIn(t *testing.T, r *Runner, jail, script string) Result {
	t.Helper()
	res, err := r.Run(context.Background(), Request{Argv: []string{"sh", "-c", script}, Jail: jail, Guest: "/home/user/repo"})
	if err != nil {
		t.Fatalf("sh -c %q: %v", script, err)
	}
	return res
}

// TestJailProperties checks what a command in the jail is and sees.
func TestJailProperties(t *testing.T) {
	r := jailedRunner(t)
	root := realTempDir(t)
	jail := filepath.Join(root, "repo")
	os.Mkdir(jail, 0o755)
	canary := filepath.Join(root, "canary")
	os.WriteFile(canary, []byte("host secret\n"), 0o600)

	for _, tc := range []struct{ name, script, want string }{
		{"uid and gid", "id -u; id -g", "1000\n1000\n"},
		{"no capability, no_new_privs", "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status | tr -s '\\t' ' '",
			"CapPrm: 0000000000000000\nCapEff: 0000000000000000\nCapBnd: 0000000000000000\nNoNewPrivs: 1\n"},
		{"no /etc, no shadow", "test -e /etc/shadow || echo no shadow; test -e /etc || echo no etc", "no shadow\nno etc\n"},
		{"only the system and the mount", "ls / | grep -vxE 'bin|sbin|lib|lib32|lib64|libx32|usr|dev|proc|tmp' | tr '\\n' ' '", "home "},
		{"the mount at its guest path", "pwd; touch made-inside && echo ok", "/home/user/repo\nok\n"},
		{"host paths outside the mount", "cat " + canary + " 2>/dev/null || echo unreadable; ls " + root + " 2>/dev/null || echo invisible", "unreadable\ninvisible\n"},
		{"a pid namespace", "ps -e -o pid= 2>/dev/null | wc -l | tr -d ' '; ls /proc | grep -c '^[0-9]'", ""},
		{"only loopback", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", "lo\n"},
		{"rlimits", "grep -E '^Max (cpu time|file size|processes|open files|address space)' /proc/self/limits | tr -s ' ' | cut -d' ' -f1-5",
			"Max cpu time 60 60\nMax file size 1073741824 1073741824\nMax processes 256 256 processes\nMax open files 1024 1024\nMax address space 4294967296 4294967296\n"},
		{"hostname", "cat /proc/sys/kernel/hostname", "sandbox\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := shIn(t, r, jail, tc.script)
			if tc.name == "a pid namespace" {
				// sh, and ps or ls and their pipeline peers: a handful,
				// never the host's hundreds.
				for _, f := range strings.Fields(string(res.Stdout)) {
					if len(f) > 1 {
						t.Fatalf("the jail sees many processes: %q", res.Stdout)
					}
				}
				return
			}
			if got := string(res.Stdout); got != tc.want || res.ExitCode != 0 {
				t.Fatalf("got %q (exit %d, stderr %q), want %q", got, res.ExitCode, res.Stderr, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(jail, "made-inside")); err != nil {
		t.Fatalf("a file made in the jail is not in the mount: %v", err)
	}
}

// TestJailNoNetwork: a listener on the host's loopback is unreachable.
func TestJailNoNetwork(t *testing.T) {
	r := jailedRunner(t)
	if r.Binary("python3") == "" {
		t.Skip("python3 not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("reached\n"))
			c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	script := `import socket,sys
s=socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", ` + itoa(port) + `)); print(s.recv(10).decode().strip())
except OSError as e:
    print("refused")
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2); print("internet")
except OSError:
    print("no route")
`
	jail := realTempDir(t)
	res, err := r.Run(context.Background(), Request{Argv: []string{"python3", "-c", script}, Jail: jail})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Stdout); got != "refused\nno route\n" {
		t.Fatalf("network from the jail: %q %s", got, res.Stderr)
	}
	// Unjailed, the same script reaches the listener: the test can fail.
	u := newRunner(t, Config{Unjailed: true, Policy: r.cfg.Policy})
	res, err = u.Run(context.Background(), Request{Argv: []string{"python3", "-c", script}, Jail: jail})
	if err != nil || !strings.HasPrefix(string(res.Stdout), "reached\n") {
		t.Fatalf("unjailed control run: %v %q %s", err, res.Stdout, res.Stderr)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestJailReadOnlyBind: in a read-only mount the command can write
// nothing, whatever it is.
func TestJailReadOnlyBind(t *testing.T) {
	r := jailedRunner(t)
	jail := realTempDir(t)
	os.WriteFile(filepath.Join(jail, "f"), []byte("orig\n"), 0o644)
	res, err := r.Run(context.Background(), Request{Argv: []string{"sh", "-c", "echo x > f; echo y > g; rm f; cat f"}, Jail: jail, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "orig\n" || !strings.Contains(string(res.Stderr), "Read-only file system") {
		t.Fatalf("read-only bind: %q %q", res.Stdout, res.Stderr)
	}
	if _, err := os.Stat(filepath.Join(jail, "g")); err == nil {
		t.Fatal("a file was created through a read-only mount")
	}
}

// TestNoJailRefuses: without bubblewrap the lane refuses to start, with
// an error that says so, unless Unjailed.
func TestNoJailRefuses(t *testing.T) {
	if os.Getenv("WASMBOX_NATIVE_NOJAIL_CHILD") == "1" {
		_, err := New(Config{})
		if err == nil {
			os.Exit(3)
		}
		os.Stderr.WriteString(err.Error())
		if _, err := New(Config{Unjailed: true}); err != nil {
			os.Exit(4)
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoJailRefuses$")
	cmd.Env = append(os.Environ(), "WASMBOX_NATIVE_NOJAIL_CHILD=1", "PATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v %s", err, out)
	}
	if !strings.Contains(string(out), "bubblewrap (bwrap) is not installed") || !strings.Contains(string(out), "--native-unjailed") {
		t.Fatalf("error %q", out)
	}
}
