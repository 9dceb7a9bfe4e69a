package executor_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

// TestGetcwd: a guest that imports wasmbox.getcwd learns its directory
// from it and gets exactly the job's environment (no $PWD added: `env -i
// printenv` prints nothing); a guest that does not still gets $PWD.
func TestGetcwd(t *testing.T) {
	e := newEnv(t)
	if err := e.ex.Register("cwd", runtimetest.Guest(t, "cwd"), "cwd"); err != nil {
		t.Fatal(err)
	}
	if err := e.ex.Install(e.fs, "/bin"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		job    executor.Job
		stdout string
	}{
		{"empty env", executor.Job{Argv: []string{"/bin/cwd"}, Env: []string{}, Dir: "/home/user"},
			"getcwd=/home/user\n"},
		{"env kept as given", executor.Job{Argv: []string{"/bin/cwd"}, Env: []string{"A=1", "PWD=/elsewhere"}, Dir: "/tmp"},
			"getcwd=/tmp\nenv:A=1\nenv:PWD=/elsewhere\n"},
		{"plain job", executor.Job{Argv: []string{"/bin/cwd"}, Env: []string{"A=1"}, Dir: "/tmp", Plain: true},
			"getcwd: none\nenv:A=1\n"},
		{"guest without getcwd", executor.Job{Argv: []string{"/bin/args"}, Env: []string{}, Dir: "/tmp"},
			"argv[0]=/bin/args\nenv:PWD=/tmp\n"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		c.job.FS, c.job.Stdout = e.fs, &out
		res := e.ex.Run(context.Background(), c.job)
		if res.ExitCode != 0 || out.String() != c.stdout {
			t.Errorf("%s: exit %d stdout %q (err %v), want %q", c.name, res.ExitCode, out.String(), res.Err, c.stdout)
		}
	}
}
