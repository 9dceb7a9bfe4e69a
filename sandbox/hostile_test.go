package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// hostileSecret is an environment variable of the test process and the
// content of a host file: no script may ever print it.
const hostileSecret = "wasmbox-hostile-secret-7f3a"

// hostileLimits keep every case short: small output and memory caps and a
// deadline no case should reach unless it is meant to.
var hostileLimits = Limits{Timeout: 20 * time.Second, OutputBytes: 64 << 10, MemoryPerCommand: 64 << 20}

// TestHostileInputs runs scripts an attacker (or a confused agent) would
// write. Each case must end with a clear result (exit status and class),
// print nothing of the host, leave the host filesystem and environment
// untouched, leave the sandbox usable (a background job and a wasm command
// still run), and leave no goroutine behind once the sandbox is closed.
func TestHostileInputs(t *testing.T) {
	hostDir := t.TempDir()
	secretPath := filepath.Join(hostDir, "secret")
	if err := os.WriteFile(secretPath, []byte(hostileSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WASMBOX_HOSTILE_SECRET", hostileSecret)
	// Host directories mounted into the sandbox, holding symlinks that
	// point out of them (absolute, relative, and one to write through).
	roDir, rwDir := t.TempDir(), t.TempDir()
	for _, dir := range []string{roDir, rwDir} {
		// A plain file proves the mount works.
		if err := os.WriteFile(filepath.Join(dir, "visible"), []byte("mounted\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(dir, secretPath)
		if err != nil {
			t.Fatal(err)
		}
		for name, target := range map[string]string{"abs": secretPath, "rel": rel, "dir": hostDir, "w": filepath.Join(hostDir, "new")} {
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	mounts := []Option{WithMountSpec(roDir + ":/mnt/ro:ro"), WithMountSpec(rwDir + ":/mnt/rw:rw")}
	roBefore, rwBefore := hostListing(t, roDir), hostListing(t, rwDir)
	envBefore := slices.Sorted(slices.Values(os.Environ()))
	hostBefore := hostListing(t, hostDir)
	// The engine and its goroutines exist before the first case counts.
	newSandbox(t)

	deep := strings.Repeat("d/", 300)
	cases := []struct {
		name   string
		script string
		setup  func(t *testing.T, sb *Sandbox)
		check  func(t *testing.T, res Result)
		opts   []Option
	}{
		{"1 MB script", "echo " + strings.Repeat("x", 1<<20), nil, func(t *testing.T, res Result) {
			wantStatus(t, res, 2, ClassLimitExceeded)
			wantContains(t, res.Stderr, "larger than the 65536-byte limit")
		}, nil},
		{"NUL byte in the script", "echo a\x00b", nil, func(t *testing.T, res Result) {
			wantStatus(t, res, 2, ClassNone)
			wantContains(t, res.Stderr, "NUL byte")
		}, nil},
		// A script is bytes, as for bash: they come out as they went in.
		{"invalid UTF-8 in the script", "echo \xff\xfe", nil, func(t *testing.T, res Result) {
			wantStatus(t, res, 0, ClassNone)
			if res.Stdout != "\xff\xfe\n" {
				t.Errorf("stdout %q", res.Stdout)
			}
		}, nil},
		{"invalid UTF-8 in data", `printf '\377\376\000x' | wc -c`, nil, func(t *testing.T, res Result) {
			wantStatus(t, res, 0, ClassNone)
			wantEqual(t, res.Stdout, "4\n")
		}, nil},
		{"16-level nested $( )", "echo " + strings.Repeat("$(echo ", 16) + "deep" + strings.Repeat(")", 16), nil, func(t *testing.T, res Result) {
			wantStatus(t, res, 0, ClassNone)
			wantEqual(t, res.Stdout, "deep\n")
		}, nil},
		// Each level of $( ) is a live bash process, as in bash, and every
		// one counts its memory (~9 MiB) in the shell's: 500 of them meet
		// the shell memory limit, which ends the run with its line.
		{"500-level nested $( ) meets the shell memory limit", "echo " + strings.Repeat("$(echo ", 500) + "deep" + strings.Repeat(")", 500), nil, func(t *testing.T, res Result) {
			wantStatus(t, res, 137, ClassLimitExceeded)
			wantContains(t, res.Stderr, "shell memory limit")
		}, nil},
		{"1200-level nested $( ) passes the nesting limit", "echo " + strings.Repeat("$(echo ", 1200) + "deep" + strings.Repeat(")", 1200), nil, func(t *testing.T, res Result) {
			if res.ErrorClass != ClassLimitExceeded || res.ExitCode == 0 {
				t.Errorf("exit %d class %q, want LIMIT_EXCEEDED", res.ExitCode, res.ErrorClass)
			}
		}, nil},
		// A fork bomb either dies on the background-jobs limit or ends
		// because the jobs of a finished subshell end with it; either way
		// the host and the sandbox live (checked after every case).
		{"fork bomb :(){ :|:& };:", ":(){ :|:& };:", nil, func(t *testing.T, res Result) {
			wantClassIn(t, res, ClassNone, ClassLimitExceeded)
		}, nil},
		{"named fork bomb", "bomb(){ bomb | bomb & }; bomb; wait", nil, func(t *testing.T, res Result) {
			wantClassIn(t, res, ClassNone, ClassLimitExceeded)
		}, nil},
		{"slow fork bomb", "bomb(){ echo x >> /tmp/c; bomb | bomb & }; bomb; wait; sleep 1", nil, func(t *testing.T, res Result) {
			wantClassIn(t, res, ClassNone, ClassLimitExceeded)
		}, nil},
		{"output flood: yes", "yes", nil, func(t *testing.T, res Result) {
			wantFlood(t, res)
		}, nil},
		{"output flood: cat /dev/zero", "cat /dev/zero", nil, func(t *testing.T, res Result) {
			wantFlood(t, res)
		}, nil},
		// GNU bash has no variable size limit of its own: the shell's
		// memory limit ends the run (a small one, reached soon on a
		// loaded machine).
		{"memory bomb in the shell", "x=x; while :; do x=$x$x; done", nil, func(t *testing.T, res Result) {
			wantStatus(t, res, 137, ClassLimitExceeded)
			wantContains(t, res.Stderr, "shell memory limit (64 MiB) exceeded")
		}, []Option{WithShellMemory(64 << 20)}},
		{"memory bomb in awk", `awk 'BEGIN{s="x"; while(1) s=s s}'`, nil, func(t *testing.T, res Result) {
			wantStatus(t, res, 137, ClassLimitExceeded)
		}, nil},
		{"wasm guest growing memory", "/tmp/hog", func(t *testing.T, sb *Sandbox) {
			if err := sb.WriteFile("/tmp/hog", runtimetest.Hog(), 0o755); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, res Result) {
			wantStatus(t, res, 137, ClassLimitExceeded)
			wantContains(t, res.Stderr, "memory limit")
		}, nil},
		{"/proc/self/environ", "cat /proc/self/environ", nil, func(t *testing.T, res Result) {
			wantStatus(t, res, 1, ClassNone)
		}, nil},
		{"host environment", `env | grep -c WASMBOX_HOSTILE; echo "${WASMBOX_HOSTILE_SECRET:-unset}"`, nil, func(t *testing.T, res Result) {
			wantEqual(t, res.Stdout, "0\nunset\n")
		}, nil},
		{"host paths", "cat /etc/shadow; ls /root/.ssh; cat ../../../../../../etc/shadow; cat @SECRET@; cat ../../../../../..@SECRET@; cd /; cd ../../..; cat .@SECRET@", nil, func(t *testing.T, res Result) {
			wantStatus(t, res, 1, ClassNone)
		}, nil},
		{"writes to host paths", "echo pwn > @HOSTDIR@/new; mkdir -p @HOSTDIR@/x && echo pwn > @HOSTDIR@/x/y; echo pwn >> @SECRET@; rm -f @SECRET@; cat @SECRET@", nil, func(t *testing.T, res Result) {
			// The VFS may create these paths in memory; the host must not
			// see them (checked after every case).
			wantEqual(t, res.Stdout, "")
		}, nil},
		{"symlink escapes", "cd /tmp; ln -s @SECRET@ l1; cat l1; ln -s ../../../../../.. up; cat up@SECRET@; ln -s @HOSTDIR@ hd; echo pwn > hd/new; cat hd/secret; ln -s /proc/self/environ e; cat e", nil, func(t *testing.T, res Result) {
			wantStatus(t, res, 1, ClassNone)
		}, nil},
		{"host mounts: symlinks pointing out of the mount", "for m in ro rw; do cat /mnt/$m/visible /mnt/$m/abs /mnt/$m/rel /mnt/$m/dir/secret; ls /mnt/$m/dir; echo pwn > /mnt/$m/w; echo pwn > /mnt/$m/dir/new; cat /mnt/$m/../../..@SECRET@; done", nil, func(t *testing.T, res Result) {
			if res.ExitCode == 0 || res.ErrorClass != ClassNone {
				t.Errorf("exit %d class %q, want a failure", res.ExitCode, res.ErrorClass)
			}
			// ls shows the escaping symlink itself, as GNU ls shows a dangling one.
			wantEqual(t, res.Stdout, "mounted\n/mnt/ro/dir\nmounted\n/mnt/rw/dir\n")
		}, mounts},
		{"host mounts: new symlinks pointing out of the mount", "cd /mnt/rw && cat visible; ln -s @SECRET@ s1; cat s1; ln -s ../../../../../../.. s2; cat s2@SECRET@; ln -s @HOSTDIR@ s3; echo pwn > s3/new; rm -f s1 s2 s3", nil, func(t *testing.T, res Result) {
			if res.ErrorClass != ClassNone {
				t.Errorf("class %q", res.ErrorClass)
			}
			wantEqual(t, res.Stdout, "mounted\n")
		}, mounts},
		{"huge argv: 5,000 arguments to a wasm command", "wc -c $(seq 1 5000) 2>/dev/null | tail -1", nil, func(t *testing.T, res Result) {
			wantStatus(t, res, 0, ClassNone)
			wantEqual(t, res.Stdout, "0 total\n")
		}, nil},
		{"huge argv: one 200 KB argument", `a=$(printf '%0200000d' 0); cat "$a" 2>/dev/null; echo $?`, nil, func(t *testing.T, res Result) {
			wantEqual(t, res.Stdout, "1\n")
		}, nil},
		{"huge argv: 100,000 positional parameters", "set -- $(seq 1 100000); echo $#; shift 99999; echo $1", nil, func(t *testing.T, res Result) {
			wantStatus(t, res, 0, ClassNone)
			wantEqual(t, res.Stdout, "100000\n100000\n")
		}, nil},
		{"deep directory nesting (300 levels)", "mkdir -p " + deep + " && cd " + deep + " && pwd | wc -c", nil, func(t *testing.T, res Result) {
			wantStatus(t, res, 0, ClassNone)
			wantEqual(t, res.Stdout, "611\n")
		}, nil},
	}
	// The default engine compiles a tool module on first use (awk here),
	// on a goroutine of its own that CheckGoroutines would count; with a
	// cold cache that compile is slow enough to eat a case's deadline.
	// Compile them all first.
	eng, err := DefaultEngine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Executor().Precompile(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer runtimetest.CheckGoroutines(t)()
			sb, err := New(context.Background(), append([]Option{WithLimits(hostileLimits)}, c.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			if c.setup != nil {
				c.setup(t, sb)
			}
			script := strings.NewReplacer("@HOSTDIR@", hostDir, "@SECRET@", secretPath).Replace(c.script)
			res, err := sb.Run(context.Background(), script)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode < 0 || res.ExitCode > 255 {
				t.Errorf("exit status %d out of range", res.ExitCode)
			}
			c.check(t, res)
			if strings.Contains(res.Stdout+res.Stderr, hostileSecret) {
				t.Errorf("the host secret leaked:\nstdout %.300q\nstderr %.300q", res.Stdout, res.Stderr)
			}
			if t.Failed() {
				t.Logf("exit %d class %q truncated %v\nstdout %.300q\nstderr %.300q", res.ExitCode, res.ErrorClass, res.Truncated, res.Stdout, res.Stderr)
			}
			// The sandbox survives: a background job, a pipe and a wasm
			// command still work.
			after, err := sb.Run(context.Background(), "sleep 0 & wait; echo alive | cat")
			if err != nil || after.Stdout != "alive\n" {
				t.Errorf("sandbox unusable after the case: %v %+v", err, after)
			}
			sb.Close()
			if got := slices.Sorted(slices.Values(os.Environ())); !slices.Equal(got, envBefore) {
				t.Errorf("host environment changed")
			}
			for _, h := range []struct{ dir, before string }{{hostDir, hostBefore}, {roDir, roBefore}, {rwDir, rwBefore}} {
				if got := hostListing(t, h.dir); got != h.before {
					t.Errorf("host directory changed:\n%s\nwant:\n%s", got, h.before)
				}
			}
		})
	}
}

// hostListing describes every file under dir with its size and content.
func hostListing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b.WriteString(path + " " + info.Mode().String())
		if d.Type().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b.WriteString(" " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func wantStatus(t *testing.T, res Result, exit int, class ErrorClass) {
	t.Helper()
	if res.ExitCode != exit || res.ErrorClass != class {
		t.Errorf("exit %d class %q, want %d %q", res.ExitCode, res.ErrorClass, exit, class)
	}
}

func wantClassIn(t *testing.T, res Result, classes ...ErrorClass) {
	t.Helper()
	if !slices.Contains(classes, res.ErrorClass) {
		t.Errorf("class %q (exit %d), want one of %q", res.ErrorClass, res.ExitCode, classes)
	}
}

func wantContains(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%.300q does not contain %q", s, sub)
	}
}

func wantEqual(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("got %.300q, want %q", got, want)
	}
}

// wantFlood checks an output flood: cut at the output limit, the writer
// stopped with a write error rather than running to the deadline.
func wantFlood(t *testing.T, res Result) {
	t.Helper()
	if !res.Truncated || int64(len(res.Stdout)) != hostileLimits.OutputBytes {
		t.Errorf("truncated %v, %d bytes of stdout, want exactly %d", res.Truncated, len(res.Stdout), hostileLimits.OutputBytes)
	}
	// The writer, the script's last command, died on a closed pipe: the
	// script's status is its 141, as in bash.
	if res.ErrorClass != ClassNone || res.ExitCode != 141 {
		t.Errorf("exit %d class %q, want 141", res.ExitCode, res.ErrorClass)
	}
}
