package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"

	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// SpawnModuleName is the name of the host module with the spawn call.
const SpawnModuleName = "wasmbox"

// SpawnABI documents the host call through which a guest runs another
// command. WASI cannot create processes, so tools such as xargs, find
// -exec, env CMD, timeout, nohup and nice ask the host:
//
//	(import "wasmbox" "spawn"
//	  (func $spawn (param $req_ptr i32) (param $req_len i32) (param $status_ptr i32) (result i32)))
//
// The request at req_ptr (req_len bytes) is UTF-8 JSON:
//
//	{"argv": ["cmd", "arg", ...],  // required, argv[0] non-empty
//	 "env": ["K=V", ...],          // null or absent: inherit the caller's environment
//	 "dir": "/abs/cwd",            // "" or absent: the caller's working directory
//	 "stdin": "inherit" | "null",  // absent: inherit
//	 "timeout_ms": 0,              // > 0: the child is killed after it, status 124
//	 "inherit_fds": true,          // the child inherits descriptors 4 and up (below)
//	 "cloexec": [10, 255]}         // ... except these (close-on-exec)
//
// The child runs with the caller's current descriptors 0, 1 and 2 (stdin
// unless "null"). With "inherit_fds" (exec of a build/posix program such
// as GNU bash) it also inherits, at the same numbers, every other open
// descriptor of the caller from 4 up that is not listed in "cloexec": the
// same stream or open file, as after exec(2) (a shell's process
// substitution `diff <(a) <(b)` hands the command /dev/fd/63). Descriptor 3
// is the child's root preopen; directories are not inherited; at most
// MaxInheritedFDs are. The child has the same filesystem, a context derived from the caller's (so the
// caller's deadline and cancel reach it), the same allow hook, limits and
// nesting depth counter. The call blocks until the child ends.
//
// The result is a WASI errno:
//
//	0  (ESUCCESS) the child ran; its exit status is written at status_ptr as a little-endian u32
//	44 (ENOENT)   command not found (nothing written)
//	2  (EACCES)   denied by policy, or spawning is not enabled for this run
//	28 (EINVAL)   malformed request (bad JSON, empty argv, relative dir, request over 1 MiB, ...)
//	21 (EFAULT)   req or status pointer out of the guest's memory
//	6  (EAGAIN)   nesting too deep (status 126 written)
//
// A child that cannot start for another reason (e.g. a file that is not a
// WebAssembly module) ran and failed: errno 0, status 126, a message on the
// caller's stderr. A child killed by its own timeout_ms has status 124; when
// the caller's context ends, the child ends with it (124 or 125) and the
// caller is closed right after.
const SpawnABI = "wasmbox.spawn(req_ptr, req_len, status_ptr) -> errno"

// WASI errno values returned by spawn.
const (
	ErrnoSuccess uint32 = 0
	ErrnoAcces   uint32 = 2
	ErrnoAgain   uint32 = 6
	ErrnoFault   uint32 = 21
	ErrnoInval   uint32 = 28
	ErrnoNoent   uint32 = 44
)

// MaxSpawnRequest is the largest request spawn accepts, in bytes.
const MaxSpawnRequest = 1 << 20

// SpawnRequest is a decoded, validated spawn request.
type SpawnRequest struct {
	Argv []string
	// Arg0, when set, is the name the program is asked to see as its
	// argv[0] ("arg0" in the request): a shell execs the path it found
	// (Argv[0] /bin/sed) for the name it was given (sed). The executor
	// uses it only when its base name is Argv[0]'s (executor.Job.Arg0).
	Arg0 string
	// Env is the child's environment; InheritEnv means "use the caller's".
	Env        []string
	InheritEnv bool
	// Dir is an absolute guest path, or "" for the caller's directory.
	Dir       string
	StdinNull bool
	// InheritFDs: the child inherits the caller's open descriptors from 4
	// up, except those in Cloexec (see SpawnABI).
	InheritFDs bool
	Cloexec    []uint32
	// Timeout > 0 kills the child after it (status 124).
	Timeout time.Duration
	// Stdio, when set, is the child's standard streams (the process ABI
	// gives every child its own: see ProcessABI); nil means the caller's
	// (spawn). A nil stream in it means none (empty input, discarded
	// output).
	Stdio *Stdio
}

// Errors a Spawner returns to select the errno of the spawn call.
var (
	ErrSpawnNotFound = errors.New("command not found")
	ErrSpawnDenied   = errors.New("denied by policy")
	ErrSpawnDepth    = errors.New("spawn nesting too deep")
)

// Spawner runs the child of a spawn call. The executor installs one per
// run with WithSpawner. Spawn returns the child's exit status, or an error
// wrapping ErrSpawnNotFound, ErrSpawnDenied or ErrSpawnDepth; any other
// error is treated as "ran and failed" with status 126.
type Spawner interface {
	Spawn(ctx context.Context, req SpawnRequest) (status uint32, err error)
}

// SpawnFunc adapts a function to Spawner.
type SpawnFunc func(ctx context.Context, req SpawnRequest) (uint32, error)

// Spawn implements Spawner.
func (f SpawnFunc) Spawn(ctx context.Context, req SpawnRequest) (uint32, error) { return f(ctx, req) }

type spawnerKey struct{}

// WithSpawner returns ctx carrying s: the spawn calls of a module
// instantiated with this context go to s. Without a spawner, spawn returns
// EACCES.
func WithSpawner(ctx context.Context, s Spawner) context.Context {
	return context.WithValue(ctx, spawnerKey{}, s)
}

type spawnWire struct {
	Argv      []string  `json:"argv"`
	Arg0      string    `json:"arg0"`
	Env       *[]string `json:"env"`
	Dir       string    `json:"dir"`
	Stdin     string    `json:"stdin"`
	TimeoutMS int64     `json:"timeout_ms"`
	Inherit   bool      `json:"inherit_fds"`
	Cloexec   []uint32  `json:"cloexec"`
}

// MaxInheritedFDs bounds the descriptors a spawned child inherits besides
// its standard streams (SpawnABI's "inherit_fds"); the lowest are lent.
const MaxInheritedFDs = 64

// ParseSpawnRequest decodes and validates a spawn request.
func ParseSpawnRequest(b []byte) (SpawnRequest, error) {
	var req SpawnRequest
	if len(b) > MaxSpawnRequest {
		return req, fmt.Errorf("spawn request of %d bytes exceeds %d", len(b), MaxSpawnRequest)
	}
	if !utf8.Valid(b) {
		return req, errors.New("spawn request is not UTF-8")
	}
	var w spawnWire
	if err := json.Unmarshal(b, &w); err != nil {
		return req, fmt.Errorf("spawn request: %w", err)
	}
	if len(w.Argv) == 0 || w.Argv[0] == "" {
		return req, errors.New("spawn request: argv is empty")
	}
	if w.Dir != "" && w.Dir[0] != '/' {
		return req, fmt.Errorf("spawn request: dir %q is not absolute", w.Dir)
	}
	switch w.Stdin {
	case "", "inherit":
	case "null":
		req.StdinNull = true
	default:
		return req, fmt.Errorf("spawn request: stdin %q is not \"inherit\" or \"null\"", w.Stdin)
	}
	if w.TimeoutMS < 0 {
		return req, errors.New("spawn request: negative timeout_ms")
	}
	if len(w.Cloexec) > preview1.MaxInherited {
		return req, errors.New("spawn request: cloexec lists too many descriptors")
	}
	req.InheritFDs, req.Cloexec = w.Inherit, w.Cloexec
	req.Argv = w.Argv
	req.Arg0 = w.Arg0
	if containsNUL(w.Arg0) {
		return req, errors.New("spawn request: NUL byte in arg0")
	}
	req.Dir = w.Dir
	req.Timeout = time.Duration(min(w.TimeoutMS, int64(time.Duration(1<<62)/time.Millisecond))) * time.Millisecond
	if w.Env == nil {
		req.InheritEnv = true
	} else {
		req.Env = *w.Env
		if req.Env == nil {
			req.Env = []string{}
		}
	}
	for _, a := range req.Argv {
		if containsNUL(a) {
			return req, errors.New("spawn request: NUL byte in argv")
		}
	}
	for _, e := range req.Env {
		if containsNUL(e) {
			return req, errors.New("spawn request: NUL byte in env")
		}
	}
	return req, nil
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

func newSpawnModule(r wazero.Runtime) wazero.HostModuleBuilder {
	i32 := api.ValueTypeI32
	return addForkFunctions(addCwdFunction(newNetFunctions(newCallFunctions(newProcessFunctions(addMetaFunctions(r.NewHostModuleBuilder(SpawnModuleName))))))).
		NewFunctionBuilder().
		WithGoModuleFunction(halting(spawnHost), []api.ValueType{i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("req_ptr", "req_len", "status_ptr").
		WithResultNames("errno").
		Export("spawn")
}

// spawnHost implements wasmbox.spawn. It never panics on guest input.
func spawnHost(ctx context.Context, mod api.Module, stack []uint64) {
	reqPtr, reqLen, statusPtr := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	stack[0] = uint64(spawnCall(ctx, mod, reqPtr, reqLen, statusPtr))
}

func spawnCall(ctx context.Context, mod api.Module, reqPtr, reqLen, statusPtr uint32) uint32 {
	mem := mod.Memory()
	if mem == nil {
		return ErrnoFault
	}
	if uint64(statusPtr)+4 > uint64(mem.Size()) {
		return ErrnoFault
	}
	if reqLen > MaxSpawnRequest {
		return ErrnoInval
	}
	raw, ok := mem.Read(reqPtr, reqLen)
	if !ok {
		return ErrnoFault
	}
	// Copy: the child may grow or reuse memory of its own, never ours, but
	// the request must not alias guest memory across the call.
	req, err := ParseSpawnRequest(append([]byte(nil), raw...))
	if err != nil {
		return ErrnoInval
	}
	s, _ := ctx.Value(spawnerKey{}).(Spawner)
	if s == nil {
		return ErrnoAcces
	}
	if st := preview1.StateFrom(ctx); st != nil {
		// The child's streams are what the caller's descriptors 0, 1
		// and 2 refer to now: after a dup2, a pipe or a file (exec in a
		// forked child of a pipeline, see ForkABI).
		stdio, release := lendStdio(st, req.StdinNull)
		defer release()
		if req.InheritFDs {
			var rel func()
			stdio.Inherited, rel = lendInherited(st, req.Cloexec)
			defer rel()
		}
		req.Stdio = stdio
	}
	status, err := s.Spawn(ctx, req)
	if ctx.Err() != nil {
		// The caller's run is being killed (Ctrl-C, a deadline), which
		// ended the child: the caller ends here too, rather than run on
		// (`sleep 9; echo after` must not say after) until the kill
		// reaches it.
		code := sys.ExitCodeContextCanceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			code = sys.ExitCodeDeadlineExceeded
		}
		// As proc_exit does: close the module, then unwind its stack.
		_ = mod.CloseWithExitCode(ctx, code)
		panic(sys.NewExitError(code))
	}
	switch {
	case err == nil:
	case errors.Is(err, ErrSpawnNotFound):
		return ErrnoNoent
	case errors.Is(err, ErrSpawnDenied):
		return ErrnoAcces
	case errors.Is(err, ErrSpawnDepth):
		mem.WriteUint32Le(statusPtr, 126)
		return ErrnoAgain
	default:
		status = 126
	}
	// The memory may have been grown but never shrinks: statusPtr is
	// still in bounds.
	if !mem.WriteUint32Le(statusPtr, status) {
		return ErrnoFault
	}
	return ErrnoSuccess
}

// lendInherited lends a spawn child the caller's open descriptors from 4
// up that are not close-on-exec (SpawnABI's "inherit_fds"), at most
// MaxInheritedFDs; one that cannot be lent (a directory) is skipped.
func lendInherited(st *preview1.State, cloexec []uint32) ([]preview1.Inherited, func()) {
	skip := make(map[uint32]bool, len(cloexec))
	for _, fd := range cloexec {
		skip[fd] = true
	}
	var lent []preview1.Inherited
	var releases []func()
	for _, fd := range st.LendableFDs(4, preview1.MaxInherited) {
		if skip[fd] {
			continue
		}
		if len(lent) == MaxInheritedFDs {
			break
		}
		in, rel, err := st.LendStream(fd)
		if err != nil {
			continue
		}
		lent = append(lent, in)
		releases = append(releases, rel)
	}
	return lent, func() {
		for _, r := range releases {
			r()
		}
	}
}

// lendStdio lends the caller's descriptors 0, 1 and 2 to a spawn child; a
// descriptor that is not open (or stdin with stdinNull) gives none.
func lendStdio(st *preview1.State, stdinNull bool) (*Stdio, func()) {
	stdio := &Stdio{}
	var releases []func()
	if !stdinNull {
		if r, rel, err := st.LendReader(0); err == nil {
			stdio.Stdin = r
			releases = append(releases, rel)
		}
	}
	if w, rel, err := st.LendWriter(1); err == nil {
		stdio.Stdout = w
		releases = append(releases, rel)
	}
	if w, rel, err := st.LendWriter(2); err == nil {
		stdio.Stderr = w
		releases = append(releases, rel)
	}
	return stdio, func() {
		for _, r := range releases {
			r()
		}
	}
}
