package wasi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental"
	"github.com/wasmbox/wasmbox/third_party/wazero/experimental/logging"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/vfs"
)

// runProbe runs the probe guest with args against fsys and returns its
// stdout, failing the test on a non-zero exit.
func runProbe(t *testing.T, fsys vfs.FS, opts Options, args ...string) string {
	t.Helper()
	r, compiled := probe(t)
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	mc := wazero.NewModuleConfig().WithName("").
		WithArgs(append([]string{"probe"}, args...)...).
		WithStdout(&stdout).WithStderr(&stderr)
	mc = Configure(ctx, mc, fsys, opts)
	mod, err := r.InstantiateModule(ctx, compiled, mc)
	if mod != nil {
		mod.Close(ctx)
	}
	var exit *sys.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 0) {
		t.Fatalf("probe %v: %v\nstderr: %s", args, err, stderr.String())
	}
	return stdout.String()
}

func TestConfigureDeterministic(t *testing.T) {
	det := Options{Deterministic: &Deterministic{}}
	fsys := vfs.NewMemFS()

	r1 := runProbe(t, fsys, det, "rand", "16")
	r2 := runProbe(t, fsys, det, "rand", "16")
	if r1 != r2 {
		t.Errorf("deterministic random differs between runs: %q vs %q", r1, r2)
	}
	other := runProbe(t, fsys, Options{Deterministic: &Deterministic{Seed: 2}}, "rand", "16")
	if other == r1 {
		t.Errorf("seed 2 gave the same bytes as seed 1: %q", other)
	}

	if got := runProbe(t, fsys, det, "clock"); got != "2000-01-01T00:00:00Z true\n" {
		t.Errorf("default deterministic clock: %q", got)
	}
	wall := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	if got := runProbe(t, fsys, Options{Deterministic: &Deterministic{Walltime: wall}}, "clock"); got != "2024-05-06T07:08:09Z true\n" {
		t.Errorf("custom deterministic clock: %q", got)
	}

	// A sleep advances the deterministic monotonic clock by what was slept.
	if got := runProbe(t, fsys, det, "pollclock", "20ms"); got != "errno=0 events=1 userdata=7 slept>=true\n" {
		t.Errorf("pollclock: %q", got)
	}
}

func TestConfigureReal(t *testing.T) {
	fsys := vfs.NewMemFS()
	r1 := runProbe(t, fsys, Options{}, "rand", "16")
	r2 := runProbe(t, fsys, Options{}, "rand", "16")
	if r1 == r2 {
		t.Errorf("real random repeated: %q", r1)
	}
	got := runProbe(t, fsys, Options{}, "clock")
	ts, _, _ := strings.Cut(got, " ")
	when, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || time.Since(when) > time.Minute || time.Since(when) < -time.Minute {
		t.Errorf("real clock reads %q", got)
	}
	start := time.Now()
	if got := runProbe(t, fsys, Options{}, "pollclock", "30ms"); got != "errno=0 events=1 userdata=7 slept>=true\n" {
		t.Errorf("pollclock: %q", got)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("30ms sleep took %v", d)
	}
}

// TestConfigureMountsRoot: the guest's "/" is the vfs root.
func TestConfigureMountsRoot(t *testing.T) {
	fsys := vfs.NewMemFS()
	if err := fsys.MkdirAll("/etc/app", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Create("/etc/app/conf")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("1234567"))
	f.Close()
	// wasip1 filestat carries no permission bits: Go's wasip1 port shows
	// every regular file as 0600.
	if got := runProbe(t, fsys, Options{}, "stat", "/etc/app/conf"); got != "conf 7 -rw-------\n" {
		t.Errorf("stat through the guest: %q", got)
	}
}

// TestWazeroSleepIgnoresContext documents why Configure installs its own
// nanosleep: wazero's WithSysNanosleep sleeps through a cancel. If this test
// ever fails, wazero fixed it and the workaround may go.
func TestWazeroSleepIgnoresContext(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps 400ms")
	}
	r, compiled := probe(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := newReadyWriter()
	mc := Configure(ctx, wazero.NewModuleConfig().WithName("").WithArgs("probe", "pollclock", "400ms").WithStderr(stderr), vfs.NewMemFS(), Options{}).
		WithSysNanosleep()
	done := make(chan error, 1)
	go func() {
		mod, err := r.InstantiateModule(ctx, compiled, mc)
		if mod != nil {
			mod.Close(context.Background())
		}
		done <- err
	}()
	<-stderr.ready
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	cancel()
	<-done
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("wazero's own sleep returned %v after cancel: it honours ctx now", d)
	}
}

// TestHostLogging checks that wazero's filesystem host logging (the CLI's
// --hostlogging filesystem) works over the adapter.
func TestHostLogging(t *testing.T) {
	var log bytes.Buffer
	ctx := experimental.WithFunctionListenerFactory(context.Background(),
		logging.NewHostLoggingListenerFactory(&log, logging.LogScopeFilesystem))
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	defer r.Close(ctx)
	instantiateWASI(ctx, r)
	compiled, err := r.CompileModule(ctx, guestWasm(t, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	fsys := vfs.NewMemFS()
	if err := fsys.Mkdir("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	mc := Configure(ctx, wazero.NewModuleConfig().WithName("").WithArgs("probe", "stat", "/d").WithStdout(io.Discard), fsys, Options{})
	mod, err := r.InstantiateModule(ctx, compiled, mc)
	if mod != nil {
		mod.Close(ctx)
	}
	var exit *sys.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 0) {
		t.Fatal(err)
	}
	out := log.String()
	for _, want := range []string{"fd_prestat_get(fd=3)", "path_filestat_get(", "path=d"} {
		if !strings.Contains(out, want) {
			t.Errorf("host log lacks %q:\n%s", want, out)
		}
	}
}
