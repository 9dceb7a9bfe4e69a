package native_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/wasmbox/wasmbox/audit"
	"github.com/wasmbox/wasmbox/executor/native"
	"github.com/wasmbox/wasmbox/executor/pool"
)

// Running git through the system lane of the pool, with every policy
// decision and every exec in the hash-chained audit log, and the output
// redacted before it leaves the sandbox.
func Example() {
	ctx := context.Background()
	jail, _ := os.MkdirTemp("", "jail")
	defer os.RemoveAll(jail)
	exec.Command("git", "init", "-q", jail).Run()
	os.WriteFile(filepath.Join(jail, "ghp_abcdefghijklmnopqrstuvwxyz0123456789.txt"), nil, 0o644)

	var log bytes.Buffer
	red := audit.NewRedactor()
	al := audit.New(&log, audit.WithRedactor(red))
	r, err := native.New(native.Config{OnDecision: func(ctx context.Context, d native.Decision) {
		al.Log(ctx, audit.Event{Kind: audit.KindDecision, Argv: d.Argv, Allowed: audit.Allowed(d.Allowed), Reason: d.Reason})
	}})
	if err != nil {
		panic(err)
	}
	p := pool.New(pool.Config{})
	defer p.Shutdown(ctx)

	var res native.Result
	job, err := p.Submit(ctx, pool.Job{Lane: pool.System, Label: "git status", Run: func(ctx context.Context) error {
		var err error
		res, err = r.Run(ctx, native.Request{Argv: []string{"git", "status", "--porcelain"}, Jail: jail})
		return err
	}})
	al.Log(ctx, audit.Event{Kind: audit.KindExec, JobID: job.ID.String(), Lane: job.Lane.String(), Slot: job.Slot,
		Argv: res.Argv, Start: res.Start, End: res.Start.Add(res.Duration), Exit: res.ExitCode, Truncated: res.Truncated})
	fmt.Print(red.Redact(string(res.Stdout)), err, "\n")

	_, err = r.Run(ctx, native.Request{Argv: []string{"git", "-c", "core.pager=sh", "log"}, Jail: jail})
	fmt.Println(errors.Is(err, native.ErrDenied))
	fmt.Println(audit.Verify(&log))
	// Output:
	// ?? [REDACTED].txt
	// <nil>
	// true
	// <nil>
}
