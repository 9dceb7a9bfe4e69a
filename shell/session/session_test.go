package session_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/shell/session"
	"github.com/wasmbox/wasmbox/shell/wire"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasm"
)

type env struct {
	rt *runtime.Runtime
	ex *executor.Executor
	sh *runtime.Module
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	ex := executor.New(rt)
	if err := ex.RegisterTools(); err != nil {
		t.Fatal(err)
	}
	// The tests' commands come from the coreutils module: compile it now,
	// without a deadline (with a cold cache that takes long on a loaded
	// machine, longer than a script's deadline in run).
	if err := ex.PrecompileModules(ctx, wasm.ShellModule, wasm.CoreutilsModule); err != nil {
		t.Fatal(err)
	}
	m, err := ex.Module(ctx, wasm.ShellModule)
	if err != nil {
		t.Fatal(err)
	}
	return &env{rt: rt, ex: ex, sh: m}
}

func (e *env) session(t testing.TB) (*session.Session, vfs.FS) {
	t.Helper()
	fsys, err := vfs.NewDefault()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ex.Install(fsys, "/bin"); err != nil {
		t.Fatal(err)
	}
	envv := []string{"HOME=/home/user", "PATH=/bin:/usr/bin", "USER=user"}
	s, err := session.New(context.Background(), session.Config{
		Runtime: e.rt, Module: e.sh, FS: fsys,
		Spawner: e.ex.Spawner(executor.Job{FS: fsys, Env: envv, Dir: "/home/user"}),
		Init:    wire.Init{Env: envv, Dir: "/home/user", UID: 1000, GID: 1000, PID: 2, PPID: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, fsys
}

func run(t testing.TB, s *session.Session, script string) (string, string, session.Result) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.Run(ctx, script, nil, &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), res
}

func TestSmoke(t *testing.T) {
	e := newEnv(t)
	s, _ := e.session(t)
	for _, c := range []struct{ script, out string }{
		{`echo hello`, "hello\n"},
		{`x=5; echo $((x*2))`, "10\n"},
		{`echo $x`, "5\n"},
		{`echo hi | cat`, "hi\n"},
		{`seq 3 | tr 1 X`, "X\n2\n3\n"},
		{`f() { while read l; do echo "[$l]"; done; }; seq 2 | f | cat`, "[1]\n[2]\n"},
		{`yes | head -1`, "y\n"},
		{`echo $$ $PPID; y='$'; echo ${!y}`, "2 1\n2\n"},
		{`cd /tmp; pwd`, "/tmp\n"},
		{`pwd`, "/tmp\n"},
	} {
		out, errs, res := run(t, s, c.script)
		if out != c.out || res.Err != nil {
			t.Errorf("%s: got %q (stderr %q, %+v), want %q", c.script, out, errs, res, c.out)
		}
	}
	_ = strings.TrimSpace
}

func TestMore(t *testing.T) {
	e := newEnv(t)
	s, _ := e.session(t)
	for _, c := range []struct{ script, out string }{
		{"cat <<EOF\nhi $HOME\nEOF", "hi /home/user\n"},
		{`seq 100000 > /tmp/big; cat /tmp/big | (read a; echo "a=$a"; wc -l)`, "a=1\n99999\n"},
		{`sleep 0.1 & echo started; wait; echo done`, "started\ndone\n"},
		{`echo x | X=after; echo "[$X]"`, "[]\n"},
		{`v=$(seq 3 | wc -l); echo $v`, "3\n"},
		{`for i in 1 2 3; do echo $i; done | sort -r | head -2`, "3\n2\n"},
		{`printf 'a\nb\n' | while read l; do echo "<$l>"; done`, "<a>\n<b>\n"},
		{`nosuch; echo $?`, "127\n"},
		{`{ echo out; echo err >&2; } 2>&1 | cat`, "out\nerr\n"},
		{`echo abc > /tmp/f; read x < /tmp/f; echo $x; wc -c < /tmp/f`, "abc\n4\n"},
		{`bash -c 'echo in child $0' zero`, "in child zero\n"},
		{`echo a b c | xargs -n1 sh -c 'echo "<$0>"'`, "<a>\n<b>\n<c>\n"},
	} {
		out, errs, res := run(t, s, c.script)
		if out != c.out || res.Err != nil {
			t.Errorf("%s: got %q (stderr %q, %+v), want %q", c.script, out, errs, res, c.out)
		}
	}
}

func TestKillRestores(t *testing.T) {
	e := newEnv(t)
	s, fsys := e.session(t)
	run(t, s, `A=before; cd /tmp`)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	var out bytes.Buffer
	res, err := s.Run(ctx, `A=during; cd /; echo written > /tmp/kept; while :; do :; done`, nil, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed after %v: %+v %q", time.Since(start), res, out.String())
	if res.Code != 124 {
		t.Errorf("code %d", res.Code)
	}
	got, _, _ := run(t, s, `echo "$A $PWD"; cat /tmp/kept`)
	if got != "before /tmp\nwritten\n" {
		t.Errorf("after kill: %q", got)
	}
	_ = fsys
}

func TestMemoryBomb(t *testing.T) {
	e := newEnv(t)
	s, _ := e.session(t)
	run(t, s, `KEEP=yes`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	var out, errb bytes.Buffer
	res, err := s.Run(ctx, `y=$(head -c 1000000 /dev/zero | tr "\0" a); z=${y//?/$y}`, nil, &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after %v: %+v stderr=%q", time.Since(start), res, errb.String())
	got, _, _ := run(t, s, `echo $KEEP`)
	if got != "yes\n" {
		t.Errorf("after bomb: %q", got)
	}
}

func BenchmarkRun(b *testing.B) {
	e := newEnv(b)
	s, _ := e.session(b)
	for _, script := range []string{":", "echo hi", `x=1; for i in 1 2 3; do x=$((x+i)); done; echo $x`} {
		b.Run(script, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				if _, err := s.Run(ctx, script, nil, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestLoopTiming(t *testing.T) {
	e := newEnv(t)
	s, _ := e.session(t)
	script := `i=0; s=0; while [ $i -lt 2000 ]; do s=$((s+i*i)); i=$((i+1)); done; echo $s`
	for i := 0; i < 3; i++ {
		start := time.Now()
		out, _, _ := run(t, s, script)
		t.Logf("wasm %v %q", time.Since(start), out)
	}
}
