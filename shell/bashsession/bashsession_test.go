package bashsession_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/shell/bashsession"
	"github.com/wasmbox/wasmbox/shell/session"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasm"
)

type env struct {
	rt   *runtime.Runtime
	ex   *executor.Executor
	bash *runtime.Module
}

func newEnv(t testing.TB) *env {
	t.Helper()
	if _, ok := wasm.Bash(); !ok {
		t.Skip("bash.wasm is not built in")
	}
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
	if err := ex.PrecompileModules(ctx, wasm.BashModule, wasm.CoreutilsModule); err != nil {
		t.Fatal(err)
	}
	m, err := ex.Module(ctx, wasm.BashModule)
	if err != nil {
		t.Fatal(err)
	}
	return &env{rt: rt, ex: ex, bash: m}
}

var testEnv = []string{"HOME=/home/user", "PATH=/bin:/usr/bin", "USER=user"}

func (e *env) config(t testing.TB) bashsession.Config {
	t.Helper()
	fsys, err := vfs.NewDefault()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ex.Install(fsys, "/bin"); err != nil {
		t.Fatal(err)
	}
	return bashsession.Config{
		Runtime: e.rt, Module: e.bash, FS: fsys,
		Spawner: e.ex.Spawner(executor.Job{FS: fsys, Env: testEnv, Dir: "/home/user"}),
		Env:     testEnv, Dir: "/home/user",
	}
}

func (e *env) session(t testing.TB) *bashsession.Session {
	t.Helper()
	s, err := bashsession.New(context.Background(), e.config(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func run(t testing.TB, s *bashsession.Session, script string) (string, string, session.Result) {
	t.Helper()
	return runFor(t, s, script, 60*time.Second)
}

func runFor(t testing.TB, s *bashsession.Session, script string, d time.Duration) (string, string, session.Result) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	res, err := s.Run(ctx, script, nil, &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), res
}

func TestStatePersists(t *testing.T) {
	e := newEnv(t)
	s := e.session(t)
	steps := []struct{ script, want string }{
		{`x=1; f() { echo "f:$1:$x"; }; cd /tmp; alias ll='echo aliased'; shopt -s expand_aliases; set -o pipefail`, ""},
		{`echo "x=$x"; f a; pwd; ll; echo "$BASH_VERSION" | cut -d. -f1; shopt -o pipefail | tr -s ' \t' ' '`, "x=1\nf:a:1\n/tmp\naliased\n5\npipefail on\n"},
		{`declare -A m=([k]=v); arr=(1 2 3)`, ""},
		{`echo "${m[k]} ${#arr[@]}"`, "v 3\n"},
	}
	for i, st := range steps {
		out, errs, res := run(t, s, st.script)
		if out != st.want || res.Code != 0 || res.Err != nil {
			t.Fatalf("step %d %q: out %q stderr %q res %+v; want %q", i, st.script, out, errs, res, st.want)
		}
	}
	if d := s.Dir(); d != "/tmp" {
		t.Errorf("Dir() = %q, want /tmp", d)
	}
}

func TestKilledRunRestoresState(t *testing.T) {
	e := newEnv(t)
	s := e.session(t)
	run(t, s, `x=1; f() { echo one; }`)
	// The deadline is a watchdog for the busy loop, not a measure.
	_, _, res := runFor(t, s, `x=2; f() { echo two; }; cd /tmp; while :; do :; done`, 300*time.Millisecond)
	if res.Code != 124 || res.Err == nil {
		t.Fatalf("killed run: %+v, want 124 and a deadline error", res)
	}
	out, errs, res := run(t, s, `echo "x=$x"; f; pwd`)
	if out != "x=1\none\n/home/user\n" || res.Code != 0 {
		t.Fatalf("after the kill: out %q stderr %q %+v", out, errs, res)
	}
	// A killed run that had forked children (a pipeline, a subshell).
	_, _, res = runFor(t, s, `x=3; (while :; do :; done) | cat`, 300*time.Millisecond)
	if res.Code != 124 {
		t.Fatalf("killed pipeline: %+v", res)
	}
	if out, _, _ := run(t, s, `echo "x=$x"`); out != "x=1\n" {
		t.Fatalf("after the killed pipeline: %q", out)
	}
}

func TestExitSyntaxErrorAndErrexit(t *testing.T) {
	e := newEnv(t)
	s := e.session(t)
	out, _, res := run(t, s, `y=5; exit 3; echo not`)
	if out != "" || res.Code != 3 || !res.Exited {
		t.Fatalf("exit 3: out %q %+v", out, res)
	}
	// The shell lives on after exit, with its state.
	if out, _, res := run(t, s, `echo "y=$y"`); out != "y=5\n" || res.Exited || res.Code != 0 {
		t.Fatalf("after exit: %q %+v", out, res)
	}
	// bash parses and runs command by command: the first line runs
	// before the syntax error further on stops the script.
	out, errs, res := run(t, s, "echo first\nif then fi\necho never")
	if out != "first\n" || res.Code != 2 || !strings.Contains(errs, "syntax error") {
		t.Fatalf("syntax error: out %q stderr %q %+v", out, errs, res)
	}
	out, _, res = run(t, s, `f() { local l=1; exit 4; }; f`)
	if res.Code != 4 || !res.Exited {
		t.Fatalf("exit in a function: %q %+v", out, res)
	}
	// exit in a function leaves no function scope behind.
	if out, _, _ := run(t, s, `echo "[${l-unset}] ${FUNCNAME[0]-top}"`); out != "[unset] top\n" {
		t.Fatalf("after exit in a function: %q", out)
	}
	out, _, res = run(t, s, `set -e; false; echo not`)
	if out != "" || res.Code != 1 || !res.Exited {
		t.Fatalf("set -e: %q %+v", out, res)
	}
	if out, _, res := run(t, s, `set +e; false; echo "on: $?"`); out != "on: 1\n" || res.Code != 0 {
		t.Fatalf("after set -e: %q %+v", out, res)
	}
}

func TestForkDiverges(t *testing.T) {
	e := newEnv(t)
	s := e.session(t)
	run(t, s, `x=parent; f() { echo "f $x"; }; cd /tmp`)
	cfg := e.config(t)
	c, err := s.ForkBudget(context.Background(), cfg.FS, cfg.Spawner, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if out, _, _ := run(t, c, `f; pwd; x=child`); out != "f parent\n/tmp\n" {
		t.Fatalf("fork: %q", out)
	}
	if out, _, _ := run(t, s, `f; x=parent2`); out != "f parent\n" {
		t.Fatalf("parent after the fork's change: %q", out)
	}
	if out, _, _ := run(t, c, `f`); out != "f child\n" {
		t.Fatalf("fork after the parent's change: %q", out)
	}
}

func TestImageRoundTripAndSetEnv(t *testing.T) {
	e := newEnv(t)
	s := e.session(t)
	run(t, s, `v=kept; g() { echo "g $v"; }; mkdir -p /tmp/d; cd /tmp/d`)
	if err := s.SetEnv(context.Background(), "FROM_HOST", "h v"); err != nil {
		t.Fatal(err)
	}
	run(t, s, `readonly RO=1`)
	if err := s.SetEnv(context.Background(), "RO", "2"); err == nil {
		t.Fatal("SetEnv of a read-only variable: no error")
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Dir != "/tmp/d" || !contains(info.Env, "FROM_HOST=h v") {
		t.Fatalf("info: %+v", info)
	}
	img, dir, err := s.Image()
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.config(t)
	if err := cfg.FS.MkdirAll("/tmp/d", 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Dir = dir
	r, err := bashsession.NewFromImage(context.Background(), cfg, img)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if out, errs, _ := run(t, r, `g; pwd; echo "$FROM_HOST"; env | grep FROM_HOST`); out != "g kept\n/tmp/d\nh v\nFROM_HOST=h v\n" {
		t.Fatalf("restored: %q %q", out, errs)
	}
	// An image the host cannot load is refused with a clear error.
	mem := img.Bytes()
	bad := runtime.NewMemoryImage(mem[:len(mem)-100], img.StackPointer())
	if _, err := bashsession.NewFromImage(context.Background(), cfg, bad); err == nil || !strings.Contains(err.Error(), "64 KiB pages") {
		t.Fatalf("truncated image: %v", err)
	}
	bad = runtime.NewMemoryImage(mem, uint64(len(mem))+16)
	if _, err := bashsession.NewFromImage(context.Background(), cfg, bad); err == nil || !strings.Contains(err.Error(), "stack pointer") {
		t.Fatalf("bad stack pointer: %v", err)
	}
	small := cfg
	small.MemoryLimit = img.Size() - 65536
	if _, err := bashsession.NewFromImage(context.Background(), small, img); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("image over the limit: %v", err)
	}
	// Memory of zeros: not an idle session.
	bad = runtime.NewMemoryImage(make([]byte, len(mem)), img.StackPointer())
	if _, err := bashsession.NewFromImage(context.Background(), cfg, bad); err == nil {
		t.Fatal("an image of zeros loaded")
	} else {
		t.Logf("image of zeros: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestDescriptorThreeIsTheScripts: the script's `exec 3>file` takes
// descriptor 3 for itself, as on Linux, and paths still resolve: in the
// live session, after a killed run (a new instance from the image), in a
// fork and in an image loaded elsewhere. Before the session moved WASI's
// root preopen out of the way (and the host put it back at the same
// descriptor in a new instance), `exec 3>f` cut off every path ("cat:
// command not found"), and after a kill every path failed.
func TestDescriptorThreeIsTheScripts(t *testing.T) {
	e := newEnv(t)
	s := e.session(t)
	steps := []struct{ script, want string }{
		{`exec 3>/tmp/three; echo via3 >&3; exec 3>&-; cat /tmp/three`, "via3\n"},
		{`exec 3</tmp/three; read -r l <&3; echo "read $l"; ls /tmp`, "read via3\nthree\n"},
	}
	for i, st := range steps {
		if out, errs, res := run(t, s, st.script); out != st.want || res.Code != 0 {
			t.Fatalf("step %d: out %q stderr %q %+v; want %q", i, out, errs, res, st.want)
		}
	}
	// A killed run: the next one starts from the image, paths resolve,
	// and descriptor 3 (which the live instance held) is closed.
	if _, _, res := runFor(t, s, `while :; do :; done`, 300*time.Millisecond); res.Code != 124 {
		t.Fatalf("killed run: %+v", res)
	}
	out, errs, res := run(t, s, `cat /tmp/three; echo x >&3 || echo "3 closed"; exec 3>/tmp/again; echo y >&3; cat /tmp/again`)
	if out != "via3\n3 closed\ny\n" || res.Code != 0 {
		t.Fatalf("after the kill: out %q stderr %q %+v", out, errs, res)
	}
	cfg := e.config(t)
	if err := cfg.FS.MkdirAll("/tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := s.ForkBudget(context.Background(), cfg.FS, cfg.Spawner, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if out, errs, _ := run(t, c, `exec 3>/tmp/forked; echo f >&3; cat /tmp/forked; ls /`); !strings.HasPrefix(out, "f\n") || !strings.Contains(out, "tmp\n") {
		t.Fatalf("fork: out %q stderr %q", out, errs)
	}
}
