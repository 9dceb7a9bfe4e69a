package session_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/shell/session"
	"github.com/wasmbox/wasmbox/shell/wire"
	"github.com/wasmbox/wasmbox/vfs"
)

func minflt() int {
	b, _ := os.ReadFile("/proc/self/stat")
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n, _ := strconv.Atoi(f[7])
	return n
}

func TestStartTiming(t *testing.T) {
	e := newEnv(t)
	fsys, _ := vfs.NewDefault()
	e.ex.Install(fsys, "/bin")
	envv := []string{"HOME=/home/user", "PATH=/bin:/usr/bin", "USER=user"}
	cfg := session.Config{Runtime: e.rt, Module: e.sh, FS: fsys,
		Spawner: e.ex.Spawner(executor.Job{FS: fsys, Env: envv, Dir: "/home/user"}),
		Init:    wire.Init{Env: envv, Dir: "/home/user", UID: 1000, GID: 1000, PID: 2, PPID: 1}}
	for i := 0; i < 8; i++ {
		f0 := minflt()
		start := time.Now()
		s, err := session.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		d1 := time.Since(start)
		f1 := minflt()
		run(t, s, `f() { echo $1; }; A=1`)
		f2 := minflt()
		start = time.Now()
		s2 := time.Now()
		run(t, s, `:`)
		d3 := time.Since(s2)
		f3 := minflt()
		t.Logf("new %v (%d faults) first run (%d faults) second run %v (%d faults)", d1, f1-f0, f2-f1, d3, f3-f2)
		time.Sleep(20 * time.Millisecond)
		s.Close()
	}
}
