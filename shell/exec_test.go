package shell

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

// recordingExecutor records the Command of every call (test double).
type recordingExecutor struct {
	mu   sync.Mutex
	cmds []Command
	in   []string
}

func (r *recordingExecutor) Exec(ctx context.Context, c Command) (int, error) {
	in := ""
	if c.Stdin != nil {
		b, _ := io.ReadAll(c.Stdin)
		in = string(b)
	}
	r.mu.Lock()
	r.cmds = append(r.cmds, c)
	r.in = append(r.in, in)
	r.mu.Unlock()
	io.WriteString(c.Stdout, "out:"+strings.Join(c.Argv, ","))
	if c.Argv[0] == "fail" {
		return 7, nil
	}
	return 0, nil
}

func TestExecutorReceivesCommand(t *testing.T) {
	rec := &recordingExecutor{}
	ts := newTestShell(t, func(c *Config) { c.Executor = rec; c.Env = []string{"PATH=/usr/bin", "KEEP=k"} })
	out, errOut, code, err := ts.run(t, `cd /tmp; export A=1; B=2; unset KEEP
tool x "y z" '' < /etc/group; C=3 tool2; fail; echo "status $?"; r=$(tool3); echo "$r"`)
	if err != nil || code != 0 {
		t.Fatalf("code %d err %v stderr %q", code, err, errOut)
	}
	if out != "out:tool,x,y z,out:tool2out:failstatus 7\nout:tool3\n" {
		t.Errorf("stdout %q", out)
	}
	if len(rec.cmds) != 4 {
		t.Fatalf("%d calls", len(rec.cmds))
	}
	c := rec.cmds[0]
	if !slices.Equal(c.Argv, []string{"tool", "x", "y z", ""}) || c.Dir != "/tmp" {
		t.Errorf("argv %q dir %q", c.Argv, c.Dir)
	}
	if !slices.Equal(c.Env, []string{"A=1", "HOME=/home/user", "OLDPWD=/home/user", "PATH=/usr/bin", "PWD=/tmp"}) {
		t.Errorf("env %q (B is not exported, KEEP was unset; PWD and OLDPWD are, as in bash)", c.Env)
	}
	if !strings.HasPrefix(rec.in[0], "root:x:0:") {
		t.Errorf("stdin %q, want /etc/group from the VFS", rec.in[0])
	}
	if !slices.Contains(rec.cmds[1].Env, "C=3") || slices.Contains(rec.cmds[2].Env, "C=3") {
		t.Errorf("inline assignment: %q / %q", rec.cmds[1].Env, rec.cmds[2].Env)
	}
}

// TestFunctionShadowsOverride checks the reflection hasFunc relies on: a
// function named like a builtin the shell overrides wins, as in bash.
func TestFunctionShadowsOverride(t *testing.T) {
	ts := newTestShell(t, nil)
	out, _, _, _ := ts.run(t, `printf() { builtin echo "my printf $*"; }; printf '%d' 1; command printf '%d\n' 2
pwd() { builtin echo mypwd; }; pwd; read() { builtin echo myread; }; read x; f() { pwd; }; f | cat`)
	if out != "my printf %d 1\n2\nmypwd\nmyread\nmypwd\n" {
		t.Errorf("stdout %q", out)
	}
	// And through the interpreter's HandlerContext directly.
	if hasFunc(interpHandlerContextForTest(), "x") {
		t.Error("hasFunc on an empty HandlerContext")
	}
}

func TestExecutableFilesInVFS(t *testing.T) {
	rec := &recordingExecutor{}
	ts := newTestShell(t, func(c *Config) { c.Executor = rec; c.Env = []string{"PATH=/usr/bin:/bin:/home/user/bin"} })
	if err := vfs.InstallCommand(ts.fs, "mytool"); err != nil {
		t.Fatal(err)
	}
	ts.fs.MkdirAll("/home/user/bin", 0o755)
	for p, content := range map[string]string{
		"/home/user/bin/tool.py": "#!/usr/bin/env python3\nprint(1)\n",
		"/home/user/run.awk":     "#!/usr/bin/awk -f\n{print}\n",
		"/home/user/bin/hello":   "#!/bin/bash\necho \"hello $1 from $0\"\n",
		"/home/user/noshebang":   "echo plain script\n",
		"/home/user/notexec":     "echo never\n",
	} {
		ts.writeFile(t, p, content)
		if p != "/home/user/notexec" {
			ts.fs.Chmod(p, 0o755)
		}
	}
	out, errOut, _, err := ts.run(t, `mytool a; /bin/mytool b; tool.py x; ./run.awk f; hello you; ./noshebang; ./notexec; echo "rc=$?"`)
	if err != nil {
		t.Fatal(err)
	}
	want := "out:mytool,aout:/bin/mytool,bout:python3,/home/user/bin/tool.py,xout:/usr/bin/awk,-f,./run.awk,f" +
		"hello you from hello\nplain script\nrc=126\n"
	if out != want {
		t.Errorf("stdout %q\nwant   %q\nstderr %q", out, want, errOut)
	}
	if !strings.Contains(errOut, "./notexec: Permission denied") {
		t.Errorf("stderr %q", errOut)
	}
}

func TestXtraceHidesSanitizerCommands(t *testing.T) {
	ts := newTestShell(t, nil)
	_, errOut, _, _ := ts.run(t, `set -x; for i in 1; do echo $i | cat >/dev/null; done`)
	// The two stages of the pipeline run at once: either may trace first
	// (bash's order varies too).
	if errOut != "+ for i in 1\n+ cat\n+ echo 1\n" && errOut != "+ for i in 1\n+ echo 1\n+ cat\n" {
		t.Errorf("stderr %q", errOut)
	}
	_, errOut, _, _ = ts.run(t, `set +x`)
	if errOut != "+ set +x\n" {
		t.Errorf("stderr %q", errOut)
	}
}
