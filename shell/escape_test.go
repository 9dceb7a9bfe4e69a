package shell

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/vfs"
)

// Each test here closes one way the interpreter reaches the host, and
// fails if the host is touched.

// hostDirEmpty fails the test if dir (a host directory) has entries.
func hostDirEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("host directory %s was written: %v", dir, names)
	}
}

func TestEscapeTempDirRedirect(t *testing.T) {
	hostTmp := t.TempDir()
	ts := newTestShell(t, func(c *Config) { c.Env = append(c.Env, "TMPDIR="+hostTmp) })
	// The interpreter opens "$TMPDIR/sh-interp-*" with os.OpenFile, past
	// the open handler. None of these may create a host file.
	script := `echo pwned > "$TMPDIR/sh-interp-1"; echo pwned > /tmp/sh-interp-2; echo $TMPDIR`
	out, _, _, err := ts.run(t, script)
	if err != nil {
		t.Fatal(err)
	}
	if out != hostTmp+"\n" {
		t.Errorf("TMPDIR seen by the script = %q, want the configured %q", out, hostTmp)
	}
	hostDirEmpty(t, hostTmp)
	if _, err := os.Stat("/tmp/sh-interp-2"); err == nil {
		t.Fatal("host /tmp/sh-interp-2 was created")
	}
	if _, err := ts.fs.Stat("/tmp/sh-interp-2"); err != nil {
		t.Errorf("the redirect should have written the VFS file: %v", err)
	}
}

func TestEscapeProcessSubstitution(t *testing.T) {
	hostTmp := t.TempDir()
	ts := newTestShell(t, func(c *Config) { c.Env = append(c.Env, "TMPDIR="+hostTmp) })
	out, errOut, code, err := ts.run(t, `mkdir -p "$TMPDIR" 2>/dev/null; cat <(echo one) <(echo two); wc < <(seq 3)`)
	if err != nil || code != 0 {
		t.Fatalf("code %d err %v stderr %q", code, err, errOut)
	}
	if out != "one\ntwo\n3\n" {
		t.Errorf("stdout %q", out)
	}
	hostDirEmpty(t, hostTmp)
	// The temporary VFS files are gone after the Run.
	entries, _ := ts.fs.Open("/tmp")
	names, _ := entries.Readdirnames(-1)
	entries.Close()
	for _, n := range names {
		if strings.HasPrefix(n, ".wasmbox-procsubst") {
			t.Errorf("process substitution file %s left in the VFS", n)
		}
	}
}

func TestEscapeHeredocNoTempFiles(t *testing.T) {
	hostTmp := t.TempDir()
	ts := newTestShell(t, func(c *Config) { c.Env = append(c.Env, "TMPDIR="+hostTmp) })
	out, _, _, _ := ts.run(t, "cat <<EOF\n$(echo nested)\nEOF\ncat <<< word")
	if out != "nested\nword\n" {
		t.Errorf("stdout %q", out)
	}
	hostDirEmpty(t, hostTmp)
}

func TestEscapeAccessUsesVFS(t *testing.T) {
	hostFile := filepath.Join(t.TempDir(), "hostonly")
	if err := os.WriteFile(hostFile, []byte("x"), 0o777); err != nil {
		t.Fatal(err)
	}
	ts := newTestShell(t, nil)
	ts.writeFile(t, "/tmp/locked", "secret")
	if err := ts.fs.Chmod("/tmp/locked", 0); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`[ -e %[1]q ] && echo host-e; [ -r %[1]q ] && echo host-r; [ -x %[1]q ] && echo host-x
[ -r /tmp/locked ] || echo locked-not-readable; [ -r /etc/passwd ] && echo passwd-readable; [ -w /etc/passwd ] || echo passwd-not-writable`, hostFile)
	out, _, _, _ := ts.run(t, script)
	if out != "locked-not-readable\npasswd-readable\npasswd-not-writable\n" {
		t.Errorf("stdout %q", out)
	}
}

func TestEscapePwdPhysical(t *testing.T) {
	ts := newTestShell(t, nil)
	if err := ts.fs.MkdirAll("/data/real/deep", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ts.fs.SymlinkIfPossible("/data/real", "/data/link"); err != nil {
		t.Fatal(err)
	}
	if err := ts.fs.SymlinkIfPossible("real/deep", "/data/rel"); err != nil {
		t.Fatal(err)
	}
	// /data/link exists only in the VFS: the interpreter's pwd -P would
	// resolve it on the host and fail.
	out, errOut, code, err := ts.run(t, `cd /data/link; pwd; pwd -P; cd /data/rel; pwd -P`)
	if err != nil || code != 0 {
		t.Fatalf("code %d err %v stderr %q", code, err, errOut)
	}
	if out != "/data/link\n/data/real\n/data/real/deep\n" {
		t.Errorf("stdout %q", out)
	}
}

// plainExecutor has no Resolver and knows no command.
type plainExecutor struct{ calls []string }

func (p *plainExecutor) Exec(ctx context.Context, c Command) (int, error) {
	p.calls = append(p.calls, c.Argv[0])
	return 127, ErrNotFound
}

func TestEscapeLookupsUseVFSPath(t *testing.T) {
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "hostscript"), []byte("echo FROM-HOST\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pe := &plainExecutor{}
	ts := newTestShell(t, func(c *Config) {
		c.Executor = pe
		c.Env = []string{"PATH=" + hostDir + ":/bin:/usr/bin"}
	})
	// Commands that exist on the host (ls, sh in /bin) and in hostDir must
	// be invisible; a VFS script on PATH must be found.
	if err := ts.fs.MkdirAll(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ts.writeFile(t, "/bin/vfstool", "echo vfs tool\n")
	ts.fs.Chmod("/bin/vfstool", 0o755)
	ts.writeFile(t, "/bin/lib.sh", "LIBVAR=fromvfs\n")
	script := `command -v ls; echo "ls:$?"; type -P ls hostscript; echo "type:$?"
source hostscript; echo "source:$?"; source lib.sh; echo "lib:$LIBVAR"
command -v vfstool; vfstool; ls; echo "exec:$?"; /bin/ls; echo "abs:$?"`
	out, errOut, _, err := ts.run(t, script)
	if err != nil {
		t.Fatal(err)
	}
	want := "ls:1\ntype:1\nsource:1\nlib:fromvfs\n/bin/vfstool\nvfs tool\nexec:127\nabs:127\n"
	if out != want {
		t.Errorf("stdout %q\nwant   %q\nstderr %q", out, want, errOut)
	}
	if strings.Contains(out+errOut, "FROM-HOST") {
		t.Fatal("a host file was run")
	}
	if len(pe.calls) != 1 || pe.calls[0] != "ls" {
		t.Errorf("executor calls %v, want [ls] (/bin/ls does not exist in the VFS)", pe.calls)
	}
}

func TestEscapeTildeUsesVFSPasswd(t *testing.T) {
	ts := newTestShell(t, nil)
	f, err := ts.fs.OpenFile("/etc/passwd", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("alice:x:1001:1001::/custom/alice:/bin/sh\n"))
	f.Close()
	// daemon and bin exist in almost every host's /etc/passwd.
	out, _, _, _ := ts.run(t, `echo ~alice ~root ~daemon ~bin/x`)
	if out != "/custom/alice /root ~daemon ~bin/x\n" {
		t.Errorf("stdout %q", out)
	}
}

func TestEscapeHostEnvironment(t *testing.T) {
	t.Setenv("WASMBOX_HOST_SECRET", "s3cret")
	t.Setenv("HOME", "/host/home")
	ts := newTestShell(t, func(c *Config) { c.Env = []string{"PATH=/usr/bin"} })
	out, _, _, _ := ts.run(t, `echo "${WASMBOX_HOST_SECRET-unset} $HOME $UID $EUID $GID $$ $PPID"; env`)
	if strings.Contains(out, "s3cret") || strings.Contains(out, "/host/home") {
		t.Fatalf("host environment leaked: %q", out)
	}
	// PWD is exported as bash exports it (env -i bash -c env prints it).
	want := fmt.Sprintf("unset /home/user 1000 1000 1000 2 1\nHOME=/home/user\nPATH=/usr/bin\nPWD=/home/user\n")
	if out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	if strings.Contains(out, fmt.Sprint(os.Getpid())) {
		t.Errorf("host pid leaked: %q", out)
	}
}

func TestEscapeNoHostExec(t *testing.T) {
	// No executor: nothing runs, not even what exists on the host.
	fs, err := vfs.NewDefault()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	sh, err := New(Config{FS: fs, Stderr: &stderr, Env: []string{"PATH=/bin:/usr/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "touched")
	code, err := sh.Run(context.Background(), fmt.Sprintf(`touch %q; /usr/bin/touch %q; exec touch %q`, marker, marker, marker))
	if err != nil {
		t.Fatal(err)
	}
	if code != 127 {
		t.Errorf("status %d, want 127", code)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a host binary ran")
	}
	if !strings.Contains(stderr.String(), "touch: command not found") {
		t.Errorf("stderr %q", stderr.String())
	}
}

func TestEscapeNewDoesNotUseHostDir(t *testing.T) {
	fs, _ := vfs.NewDefault()
	if _, err := New(Config{FS: fs, Dir: "/nonexistent-in-vfs"}); err == nil {
		t.Error("New accepted a Dir that is not in the VFS")
	}
	wd, _ := os.Getwd()
	sh, err := New(Config{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if sh.Dir() != "/" || sh.Dir() == wd {
		t.Errorf("default Dir %q, want / (never the host cwd %q)", sh.Dir(), wd)
	}
}

func TestEscapeSourceHostFileAbsolute(t *testing.T) {
	hostFile := filepath.Join(t.TempDir(), "evil.sh")
	os.WriteFile(hostFile, []byte("echo HOSTCODE\n"), 0o644)
	ts := newTestShell(t, nil)
	out, errOut, _, _ := ts.run(t, fmt.Sprintf(`source %q; echo "rc=$?"; . %q; bash %q`, hostFile, hostFile, hostFile))
	if strings.Contains(out, "HOSTCODE") {
		t.Fatal("a host file was sourced")
	}
	if !strings.HasPrefix(out, "rc=1") {
		t.Errorf("stdout %q stderr %q", out, errOut)
	}
}

func TestEscapeTimingOfKill(t *testing.T) {
	// The kill boundary: a loop that runs no command ends within ~100 ms
	// of the deadline.
	ts := newTestShell(t, nil)
	for _, script := range []string{
		`while :; do :; done`,
		`for ((;;)); do (( ++i )); done`,
		`x=1; until false; do x=1; done`,
		`f() { f; }; while :; do echo > /dev/null; done`,
		`spin`,
		`yes | spin`,
		`sleep 100 & wait`,
		`read x`,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		r, w, _ := os.Pipe() // a stdin that never delivers data
		ts.SetStdio(r, ts.stdout, ts.stderr)
		code, err := ts.Run(ctx, script)
		elapsed := time.Since(start)
		cancel()
		w.Close()
		r.Close()
		// A watchdog, not a speed limit (the scripts never end by
		// themselves; a loaded machine can take long to schedule the kill).
		if elapsed > 30*time.Second {
			t.Errorf("%q: stopped after %v", script, elapsed)
		}
		t.Logf("%q: stopped after %v", script, elapsed)
		if code != 124 || !errorsIs(err, context.DeadlineExceeded) {
			t.Errorf("%q: code %d err %v, want 124 and DeadlineExceeded", script, code, err)
		}
	}
}
