package wasm

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	wbruntime "github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi/preview1"
	"github.com/wasmbox/wasmbox/wasi/wasitest"
)

// This file is the host the golden tests and benchmarks of this package
// run the tool modules on: the project's runtime (compiled once, started
// from the modules' snapshots, wasmbox's own WASI) over a vfs namespace
// like a sandbox's: the guest's "/" is an in-memory filesystem whose files
// belong to the sandbox user 1000:1000, filled from a host directory
// before the command and written back to it after, and /bin and /usr/bin
// hold an entry per command. Commands started through wasmbox.spawn run
// in the same namespace, with the caller's stdio.

var (
	buildFlag  = flag.Bool("build", false, "build the tool modules from tools/ for this run instead of using the committed modules")
	moduleFlag = flag.String("module", "", "use these wasm files (with the committed command index) instead of the committed modules, e.g. to benchmark an unmerged build: FILE (for coreutils) or MODULE=FILE, comma-separated")
	noSnapFlag = flag.Bool("nosnapshot", false, "initialize every instance instead of starting it from the module's snapshot")
)

// testHost is a runtime with the tool modules compiled once.
type testHost struct {
	rt       *wbruntime.Runtime
	mods     map[string]*wbruntime.Module // by module name
	moduleOf map[string]string            // command name -> module name
	bin      vfs.FS                       // an empty executable file per command, mounted at /bin and /usr/bin
}

var (
	hostOnce sync.Once
	host     *testHost
	hostErr  error
)

// getHost returns the shared test host, compiling the module on first use.
func getHost(tb testing.TB) *testHost {
	tb.Helper()
	hostOnce.Do(func() { host, hostErr = newTestHost() })
	if hostErr != nil {
		tb.Fatalf("test host: %v", hostErr)
	}
	return host
}

func newTestHost() (*testHost, error) {
	ctx := context.Background()
	rt, err := wbruntime.New(ctx, wbruntime.Config{NoSnapshots: *noSnapFlag})
	if err != nil {
		return nil, err
	}
	h := &testHost{rt: rt}
	bins, cmds := map[string][]byte{}, Commands()
	for _, m := range Modules() {
		bins[m], _ = Module(m)
	}
	cmds = addSQLite3(bins, cmds)
	switch {
	case *buildFlag:
		if bins, cmds, err = buildFromSource(); err != nil {
			return nil, err
		}
		cmds = addSQLite3(bins, cmds)
	case *moduleFlag != "":
		for _, spec := range strings.Split(*moduleFlag, ",") {
			name, file, ok := strings.Cut(spec, "=")
			if !ok {
				name, file = CoreutilsModule, spec
			}
			if _, known := bins[name]; !known {
				return nil, fmt.Errorf("-module %s: no module %q", spec, name)
			}
			if bins[name], err = os.ReadFile(file); err != nil {
				return nil, err
			}
		}
	}
	h.mods = map[string]*wbruntime.Module{}
	for name, bin := range bins {
		if h.mods[name], err = rt.Compile(ctx, name, bin); err != nil {
			return nil, fmt.Errorf("module %s: %w", name, err)
		}
		rt.Pin(h.mods[name])
	}
	bin := vfs.NewMemFS()
	h.moduleOf = map[string]string{}
	for _, c := range cmds {
		if h.mods[c.Module] == nil {
			return nil, fmt.Errorf("command %s: no module %q", c.Name, c.Module)
		}
		h.moduleOf[c.Name] = c.Module
		f, err := bin.OpenFile("/"+c.Name, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	h.bin = vfs.ReadOnlyView(bin)
	return h, nil
}

// addSQLite3 adds SQLite's shell when it is built in (make python): a
// plain WASI command, not in the index, whose golden cases run like the
// tools' (-module sqlite3=FILE replaces it).
func addSQLite3(bins map[string][]byte, cmds []Command) []Command {
	sq, ok := SQLite3()
	if !ok {
		return cmds
	}
	bins[SQLite3Module] = sq
	for _, name := range SQLite3Commands() {
		cmds = append(cmds, Command{Name: name, Module: SQLite3Module})
	}
	return cmds
}

// buildFromSource builds the tool modules and the index from ../tools (for
// -build) the way `make wasm` does, without the data-segment merge, which
// changes only speed.
func buildFromSource() (map[string][]byte, []Command, error) {
	dir, err := os.MkdirTemp("", "wasmbox-build-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	bins := map[string][]byte{}
	var index []byte
	for _, m := range GoModules() {
		wasmOut, nativeOut := filepath.Join(dir, m+".wasm"), filepath.Join(dir, m)
		build := exec.Command("go", "build", "-buildmode=c-shared", "-ldflags=-checklinkname=0", "-o", wasmOut, "../tools/"+m)
		build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := build.CombinedOutput(); err != nil {
			return nil, nil, fmt.Errorf("go build %s (wasip1): %v\n%s", m, err, out)
		}
		if out, err := exec.Command("go", "build", "-tags", "wasmbox_index", "-o", nativeOut, "../tools/"+m).CombinedOutput(); err != nil {
			return nil, nil, fmt.Errorf("go build %s (native index): %v\n%s", m, err, out)
		}
		out, err := exec.Command(nativeOut).Output()
		if err != nil {
			return nil, nil, fmt.Errorf("%s index: %v", m, err)
		}
		index = append(index, out...)
		if bins[m], err = os.ReadFile(wasmOut); err != nil {
			return nil, nil, err
		}
	}
	// The C tools are not built from tools/ (make ctools): the committed
	// modules, and their index lines in place of the Go tools' (as make
	// wasm merges them).
	cmds := parseIndex(string(ctoolsIndex))
	for _, m := range CModules() {
		bins[m], _ = Module(m)
	}
	for _, c := range parseIndex(string(index)) {
		if !slices.ContainsFunc(cmds, func(x Command) bool { return x.Name == c.Name }) {
			cmds = append(cmds, c)
		}
	}
	return bins, cmds, nil
}

// module returns the compiled module that runs argv0 (by its base name);
// a name missing from the index runs coreutils, which reports "command
// not found" with status 127.
func (h *testHost) module(argv0 string) *wbruntime.Module {
	if m, ok := h.moduleOf[path.Base(argv0)]; ok {
		return h.mods[m]
	}
	return h.mods[CoreutilsModule]
}

// guest is what one running command was started with; spawned children
// start like their parent, in the same namespace.
type guest struct {
	argv           []string
	env            []string
	cwd            string
	root           string // host directory copied into the guest's "/"
	stdin          io.Reader
	stdout, stderr io.Writer
	fs             vfs.FS // the namespace; nil: made from root, and written back to it after the run
}

// namespace returns a sandbox-like namespace holding a copy of the host
// directory root.
func (h *testHost) namespace(root string) (*vfs.VFS, error) {
	mem := vfs.NewMemFS(vfs.WithOwner(1000, 1000))
	if err := wasitest.CopyTreeExact(mem, root); err != nil {
		return nil, err
	}
	ns := vfs.New(mem)
	for _, dir := range []string{"/bin", "/usr/bin"} {
		if err := mem.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := ns.Mount(dir, h.bin); err != nil {
			return nil, err
		}
	}
	return ns, nil
}

// run runs g to its end and returns its exit status.
func (h *testHost) run(ctx context.Context, g *guest) (int, error) {
	if g.fs == nil {
		ns, err := h.namespace(g.root)
		if err != nil {
			return 0, err
		}
		child := *g
		child.fs = ns
		status, err := h.run(ctx, &child)
		if err == nil {
			err = copyOut(ns, g.root)
		}
		return status, err
	}
	env := []string{"PWD=" + g.cwd}
	for _, kv := range g.env {
		if !strings.HasPrefix(kv, "PWD=") {
			env = append(env, kv)
		}
	}
	st, err := preview1.NewState(preview1.Config{
		FS: g.fs, Args: g.argv, Env: env,
		Stdin: g.stdin, Stdout: g.stdout, Stderr: g.stderr,
		AbsoluteSymlinks: true,
	})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	var argv0 string
	if len(g.argv) > 0 {
		argv0 = g.argv[0]
	}
	spawner := wbruntime.SpawnFunc(func(ctx context.Context, req wbruntime.SpawnRequest) (uint32, error) {
		return h.spawn(ctx, g, req)
	})
	err = h.rt.Run(ctx, h.module(argv0), wazero.NewModuleConfig(), wbruntime.RunOptions{WASI: st, FS: g.fs, Spawner: spawner})
	var exit *sys.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return int(exit.ExitCode()), nil
	}
	return 0, err
}

// spawn runs a child of parent (wasmbox.spawn).
func (h *testHost) spawn(ctx context.Context, parent *guest, req wbruntime.SpawnRequest) (uint32, error) {
	if _, ok := h.moduleOf[path.Base(req.Argv[0])]; !ok {
		return 0, wbruntime.ErrSpawnNotFound
	}
	child := *parent
	child.argv = req.Argv
	if !req.InheritEnv {
		child.env = req.Env
	}
	if req.Dir != "" {
		child.cwd = req.Dir
	}
	if req.StdinNull {
		child.stdin = bytes.NewReader(nil)
	}
	cctx := ctx
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	status, err := h.run(cctx, &child)
	switch {
	case req.Timeout > 0 && cctx.Err() != nil && ctx.Err() == nil:
		return 124, nil
	case err != nil:
		return 126, nil
	}
	return uint32(status), nil
}

// copyOut makes the host directory dst hold what the guest's "/" holds
// (except /bin and /usr/bin), for the tests that read what a command
// wrote.
func copyOut(ns *vfs.VFS, dst string) error {
	old, err := os.ReadDir(dst)
	if err != nil {
		return err
	}
	for _, e := range old {
		if err := os.RemoveAll(filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return fs.WalkDir(vfs.IOFS(ns), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		if p == "bin" || p == "usr/bin" {
			return fs.SkipDir
		}
		host := filepath.Join(dst, filepath.FromSlash(p))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(host, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := ns.ReadlinkIfPossible("/" + p)
			if err != nil {
				return err
			}
			return os.Symlink(target, host)
		case d.Type().IsRegular():
			data, err := fs.ReadFile(vfs.IOFS(ns), p)
			if err != nil {
				return err
			}
			return os.WriteFile(host, data, info.Mode().Perm()|0o600)
		}
		return nil // devices, fifos: not written back
	})
}

// goldenEnv is the environment every golden case runs with (goldengen
// gives the GNU tools the same).
var goldenEnv = []string{"LC_ALL=C", "TZ=UTC", "HOME=/home/user", "USER=user", "PATH=/bin:/usr/bin"}

// newRoot creates a host directory to mount as the guest's "/", with
// /tmp/golden and /home/user in it, and returns it and its /tmp/golden.
func newRoot(tb testing.TB) (root, caseDir string) {
	tb.Helper()
	root = tb.TempDir()
	caseDir = filepath.Join(root, "tmp", "golden")
	for _, d := range []string{caseDir, filepath.Join(root, "home", "user")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	return root, caseDir
}
