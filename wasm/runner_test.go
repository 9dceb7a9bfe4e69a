package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// This file is a small stand-alone host for the tool modules, used by the
// golden tests and benchmarks of this package until the project's runtime,
// executor and vfs take over: wazero with the compiler, a compilation
// cache on disk, WASI, a host directory as the guest's "/", each command
// run by the module the index names for it, and the wasmbox.spawn host
// function implemented by instantiating a module again.

var (
	buildFlag  = flag.Bool("build", false, "build the tool modules from tools/ for this run instead of using the committed modules")
	moduleFlag = flag.String("module", "", "use these wasm files (with the committed command index) instead of the committed modules, e.g. to benchmark an unmerged build: FILE (for coreutils) or MODULE=FILE, comma-separated")
)

// testHost is a runtime with the tool modules compiled once.
type testHost struct {
	rt       wazero.Runtime
	mods     map[string]wazero.CompiledModule // by module name
	moduleOf map[string]string                // command name -> module name
	binDir   string                           // holds an empty executable file per command, mounted at /bin and /usr/bin
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
	cfg := wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true)
	if dir, err := os.UserCacheDir(); err == nil {
		if cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(dir, "wasmbox", "wazero")); err == nil {
			cfg = cfg.WithCompilationCache(cache)
		}
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return nil, err
	}
	h := &testHost{rt: rt}
	_, err := rt.NewHostModuleBuilder("wasmbox").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(h.spawn), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}).
		Export("spawn").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(h.metaStat), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}).
		Export("stat").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(h.metaChmod), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}).
		Export("chmod").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(h.metaChown), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}).
		Export("chown").
		Instantiate(ctx)
	if err != nil {
		return nil, err
	}
	bins, cmds := map[string][]byte{}, Commands()
	for _, m := range Modules() {
		bins[m], _ = Module(m)
	}
	switch {
	case *buildFlag:
		if bins, cmds, err = buildFromSource(); err != nil {
			return nil, err
		}
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
	h.mods = map[string]wazero.CompiledModule{}
	for name, bin := range bins {
		if h.mods[name], err = rt.CompileModule(ctx, bin); err != nil {
			return nil, fmt.Errorf("module %s: %w", name, err)
		}
	}
	if h.binDir, err = os.MkdirTemp("", "wasmbox-bin-"); err != nil {
		return nil, err
	}
	h.moduleOf = map[string]string{}
	for _, c := range cmds {
		if h.mods[c.Module] == nil {
			return nil, fmt.Errorf("command %s: no module %q", c.Name, c.Module)
		}
		h.moduleOf[c.Name] = c.Module
		if err := os.WriteFile(filepath.Join(h.binDir, c.Name), nil, 0o755); err != nil {
			return nil, err
		}
	}
	return h, nil
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
	for _, m := range Modules() {
		wasmOut, nativeOut := filepath.Join(dir, m+".wasm"), filepath.Join(dir, m)
		build := exec.Command("go", "build", "-o", wasmOut, "../tools/"+m)
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
	return bins, parseIndex(string(index)), nil
}

// module returns the compiled module that runs argv0 (by its base name);
// a name missing from the index runs coreutils, which reports "command
// not found" with status 127.
func (h *testHost) module(argv0 string) wazero.CompiledModule {
	if m, ok := h.moduleOf[path.Base(argv0)]; ok {
		return h.mods[m]
	}
	return h.mods[CoreutilsModule]
}

// guest is what one running command was started with; spawn reads the
// caller's from the context to start a child like it.
type guest struct {
	argv           []string
	env            []string
	cwd            string
	root           string // host directory mounted at the guest's "/"
	stdin          io.Reader
	stdout, stderr io.Writer
}

type guestKey struct{}

// run instantiates the module for g and returns its exit status.
func (h *testHost) run(ctx context.Context, g *guest) (int, error) {
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs(g.argv...).
		WithStdin(g.stdin).WithStdout(g.stdout).WithStderr(g.stderr).
		WithSysWalltime().WithSysNanotime().
		WithNanosleep(func(ns int64) { // a sleeping guest still dies with its context
			t := time.NewTimer(time.Duration(ns))
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}).
		WithRandSource(rand.Reader).
		WithFSConfig(wazero.NewFSConfig().
			WithDirMount(g.root, "/").
			WithReadOnlyDirMount(h.binDir, "/bin").
			WithReadOnlyDirMount(h.binDir, "/usr/bin"))
	for _, kv := range g.env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "PWD" {
			continue
		}
		cfg = cfg.WithEnv(k, v)
	}
	cfg = cfg.WithEnv("PWD", g.cwd)
	var argv0 string
	if len(g.argv) > 0 {
		argv0 = g.argv[0]
	}
	m, err := h.rt.InstantiateModule(context.WithValue(ctx, guestKey{}, g), h.module(argv0), cfg)
	if m != nil {
		m.Close(ctx)
	}
	var exit *sys.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return int(exit.ExitCode()), nil
	}
	return 0, err
}

// WASI errno values of the spawn ABI.
const (
	errnoFault = 21
	errnoInval = 28
	errnoNoent = 44
)

// spawn implements wasmbox.spawn (see the package doc).
func (h *testHost) spawn(ctx context.Context, mod api.Module, stack []uint64) {
	reqPtr, reqLen, statusPtr := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	stack[0] = h.spawnErrno(ctx, mod, reqPtr, reqLen, statusPtr)
}

func (h *testHost) spawnErrno(ctx context.Context, mod api.Module, reqPtr, reqLen, statusPtr uint32) uint64 {
	parent, _ := ctx.Value(guestKey{}).(*guest)
	raw, ok := mod.Memory().Read(reqPtr, reqLen)
	if !ok || parent == nil {
		return errnoFault
	}
	var req struct {
		Argv      []string  `json:"argv"`
		Env       *[]string `json:"env"`
		Dir       string    `json:"dir"`
		Stdin     string    `json:"stdin"`
		TimeoutMS int64     `json:"timeout_ms"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || len(req.Argv) == 0 || req.TimeoutMS < 0 ||
		(req.Stdin != "" && req.Stdin != "inherit" && req.Stdin != "null") ||
		(req.Dir != "" && !path.IsAbs(req.Dir)) {
		return errnoInval
	}
	if _, ok := h.moduleOf[path.Base(req.Argv[0])]; !ok {
		return errnoNoent
	}
	if _, ok := mod.Memory().ReadUint32Le(statusPtr); !ok {
		return errnoFault
	}
	child := *parent
	child.argv = req.Argv
	if req.Env != nil {
		child.env = *req.Env
	}
	if req.Dir != "" {
		child.cwd = req.Dir
	}
	if req.Stdin == "null" {
		child.stdin = bytes.NewReader(nil)
	}
	cctx := ctx
	if req.TimeoutMS > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	status, err := h.run(cctx, &child)
	switch {
	case req.TimeoutMS > 0 && cctx.Err() != nil && ctx.Err() == nil:
		status = 124
	case err != nil:
		status = 126
	}
	mod.Memory().WriteUint32Le(statusPtr, uint32(status))
	return 0
}

// The wasmbox.stat/chmod/chown calls (runtime.MetaABI) over the host
// directories the test host mounts: modes come from the host files, every
// file belongs to the sandbox user 1000:1000.

// hostPath maps an absolute guest path onto the host directory that holds it.
func (h *testHost) hostPath(ctx context.Context, mod api.Module, ptr, n uint32) (string, uint64) {
	g, _ := ctx.Value(guestKey{}).(*guest)
	raw, ok := mod.Memory().Read(ptr, n)
	if !ok {
		return "", errnoFault
	}
	p := string(raw)
	if g == nil || !path.IsAbs(p) || n > 4096 {
		return "", errnoInval
	}
	p = path.Clean(p)
	for _, m := range []string{"/bin", "/usr/bin"} {
		if rest, ok := strings.CutPrefix(p, m); ok && (rest == "" || rest[0] == '/') {
			return filepath.Join(h.binDir, rest), 0
		}
	}
	return filepath.Join(g.root, p), 0
}

// hostErrno maps a host error to a WASI errno.
func hostErrno(err error) uint64 {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return errnoNoent
	case errors.Is(err, syscall.ENOTDIR):
		return 54
	case errors.Is(err, syscall.ELOOP):
		return 32
	case errors.Is(err, syscall.EACCES):
		return 2
	case errors.Is(err, syscall.EPERM):
		return 63
	case errors.Is(err, syscall.EROFS):
		return 69
	}
	return 29
}

func (h *testHost) metaStat(ctx context.Context, mod api.Module, stack []uint64) {
	p, errno := h.hostPath(ctx, mod, uint32(stack[0]), uint32(stack[1]))
	if errno != 0 {
		stack[0] = errno
		return
	}
	stat := os.Lstat
	if uint32(stack[2]) != 0 {
		stat = os.Stat
	}
	fi, err := stat(p)
	if err != nil {
		stack[0] = hostErrno(err)
		return
	}
	bits := uint32(fi.Mode().Perm())
	if fi.Mode()&os.ModeSetuid != 0 {
		bits |= 0o4000
	}
	if fi.Mode()&os.ModeSetgid != 0 {
		bits |= 0o2000
	}
	if fi.Mode()&os.ModeSticky != 0 {
		bits |= 0o1000
	}
	nlink := uint32(1)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		nlink = uint32(st.Nlink)
	}
	var out [16]byte
	binary.LittleEndian.PutUint32(out[0:], bits)
	binary.LittleEndian.PutUint32(out[4:], 1000)
	binary.LittleEndian.PutUint32(out[8:], 1000)
	binary.LittleEndian.PutUint32(out[12:], nlink)
	if !mod.Memory().Write(uint32(stack[3]), out[:]) {
		stack[0] = errnoFault
		return
	}
	stack[0] = 0
}

func (h *testHost) metaChmod(ctx context.Context, mod api.Module, stack []uint64) {
	p, errno := h.hostPath(ctx, mod, uint32(stack[0]), uint32(stack[1]))
	if errno != 0 {
		stack[0] = errno
		return
	}
	if strings.HasPrefix(p, h.binDir) {
		stack[0] = 69 // EROFS: /bin and /usr/bin are read-only mounts
		return
	}
	if uint32(stack[3]) == 0 {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			stack[0] = 63 // Linux cannot chmod a symlink itself
			return
		}
	}
	bits := uint32(stack[2])
	mode := os.FileMode(bits & 0o777)
	if bits&0o4000 != 0 {
		mode |= os.ModeSetuid
	}
	if bits&0o2000 != 0 {
		mode |= os.ModeSetgid
	}
	if bits&0o1000 != 0 {
		mode |= os.ModeSticky
	}
	if err := os.Chmod(p, mode); err != nil {
		stack[0] = hostErrno(err)
		return
	}
	stack[0] = 0
}

func (h *testHost) metaChown(ctx context.Context, mod api.Module, stack []uint64) {
	p, errno := h.hostPath(ctx, mod, uint32(stack[0]), uint32(stack[1]))
	if errno != 0 {
		stack[0] = errno
		return
	}
	if _, err := os.Lstat(p); err != nil {
		stack[0] = hostErrno(err)
		return
	}
	// One user lives in the sandbox: giving a file to it is a no-op,
	// giving it to anyone else is not permitted.
	for _, id := range []uint32{uint32(stack[2]), uint32(stack[3])} {
		if id != 0xffffffff && id != 1000 {
			stack[0] = 63
			return
		}
	}
	stack[0] = 0
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
