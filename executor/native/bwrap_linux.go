package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The OS jail.
//
// Every native command runs inside bubblewrap (bwrap, Debian's
// "bubblewrap" package), in new user, mount, pid, network, IPC and UTS
// namespaces (and a new cgroup namespace where the kernel allows):
//
//   - inside it the command's uid and gid are 1000, it has no capability
//     (all dropped, no_new_privs set, a new session: no terminal), and
//     the user namespace gives it none in the host's;
//   - its root is a fresh tmpfs holding read-only binds of /usr (and the
//     /bin, /lib, /sbin links or directories of the system), a private
//     /tmp, its own /proc and a minimal /dev: no /etc, no /home, no /root,
//     no host /proc (so no other process's environ), nothing of the host
//     but the system's programs;
//   - the mount's host directory is bound at the guest's path of the mount,
//     read-write only when the sandbox's mount is read-write (a read-only
//     mount is a read-only bind: the command cannot write anything);
//   - the network namespace is empty (a loopback only);
//   - rlimits bound CPU time, address space, processes, file size and open
//     files (prlimit, from util-linux, between bwrap and the command);
//   - bwrap dies with its parent; a deadline kills bwrap's process group,
//     and the end of the namespace's first process ends every other.
//
// The uid outside is the one that owns the mount's host directory when
// wasmbox runs as root and it is not root, and wasmbox's own otherwise: the
// files the command creates belong to whoever owns the directory. When
// that is root, the command is "root" to the host's permission checks on
// the mounted files only, with no capability: it cannot override a
// permission, and it can see nothing but the mount and the read-only
// system directories.
//
// Why bubblewrap and not clone flags with a re-exec helper: the mount
// setup (new root, binds, pivot_root) has to run in the child between its
// clone and the exec of git, which Go cannot do without re-executing the
// program that embeds wasmbox under a special argv; bubblewrap is a small,
// widely reviewed setuid-free program made for exactly this, and Debian
// ships it. Where it is missing or the kernel refuses the namespaces, the
// lane refuses to start unless the embedder opts out (Config.Unjailed).

// jailTool is what the jail runs with.
type jailTool struct {
	bwrap   string   // path of bwrap
	prlimit string   // path of prlimit
	system  []string // bwrap arguments that bring the system directories
}

var (
	jailOnce sync.Once
	jailT    *jailTool
	jailErr  error
)

// findJail locates bubblewrap and prlimit and proves the namespaces work
// here (a kernel or a container may refuse them), once per process.
func findJail() (*jailTool, error) {
	jailOnce.Do(func() { jailT, jailErr = probeJail() })
	return jailT, jailErr
}

func probeJail() (*jailTool, error) {
	t := &jailTool{}
	var err error
	if t.bwrap, err = exec.LookPath("bwrap"); err != nil {
		return nil, fmt.Errorf("%w: bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)", ErrNoJail)
	}
	if t.prlimit, err = exec.LookPath("prlimit"); err != nil {
		return nil, fmt.Errorf("%w: prlimit (util-linux) is not installed", ErrNoJail)
	}
	// The system's programs: /usr, and the top-level directories or links
	// a merged-/usr system (or an older one) has.
	t.system = []string{"--ro-bind", "/usr", "/usr"}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err == nil {
				t.system = append(t.system, "--symlink", target, d)
			}
		case fi.IsDir():
			t.system = append(t.system, "--ro-bind", d, d)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	argv := append(t.baseArgs(), "--", "/bin/sh", "-c", "exit 0")
	if out, err := exec.CommandContext(ctx, t.bwrap, argv...).CombinedOutput(); err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%w: bubblewrap cannot create namespaces here: %s", ErrNoJail, msg)
	}
	return t, nil
}

// baseArgs are bwrap's arguments but the mount of the jail and the
// command: namespaces, identity, the system and the private directories.
func (t *jailTool) baseArgs() []string {
	args := []string{
		"--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
		"--uid", "1000", "--gid", "1000",
		"--hostname", "sandbox",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--clearenv",
	}
	args = append(args, t.system...)
	return append(args,
		"--proc", "/proc",
		"--dev", "/dev",
		"--tmpfs", "/tmp",
		"--dir", "/tmp/home",
	)
}

// argv returns the full command line that runs bin with args in the jail:
// jailReal bound at guest (read-only unless rw), working directory dir
// (a real path inside jailReal), environment env.
func (t *jailTool) argv(bin string, args []string, jailReal, guest, dirReal string, rw bool, env []string, lim JailLimits) ([]string, error) {
	if guest == "" {
		guest = "/work"
	}
	guest = filepath.Clean(guest)
	rel, err := filepath.Rel(jailReal, dirReal)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, jailDenied("working directory %q outside the jail", dirReal)
	}
	a := t.baseArgs()
	bind := "--ro-bind"
	if rw {
		bind = "--bind"
	}
	a = append(a, bind, jailReal, guest, "--chdir", filepath.Join(guest, rel), "--info-fd", "3")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	a = append(a, "--", t.prlimit,
		"--cpu="+strconv.Itoa(lim.CPUSeconds),
		"--as="+strconv.FormatInt(lim.AddressSpace, 10),
		"--nproc="+strconv.Itoa(lim.Processes),
		"--fsize="+strconv.FormatInt(lim.FileSize, 10),
		"--nofile="+strconv.Itoa(lim.OpenFiles),
		"--", bin)
	return append(a, args...), nil
}

// wrap implements osJail: cmd runs bwrap, which runs prlimit, which runs
// bin, and bwrap reports the jail's init on fd 3 to the returned jailInfo.
func (t *jailTool) wrap(cmd *exec.Cmd, bin string, args []string, jailReal, guest, dirReal string, rw bool, env []string, lim JailLimits, hold bool) (jailRun, error) {
	argv, err := t.argv(bin, args, jailReal, guest, dirReal, rw, env, lim)
	if err != nil {
		return nil, err
	}
	if hold {
		// bwrap's child sets up the namespaces (the loopback up), then
		// waits for a byte on fd 4 before it runs the command.
		i := slices.Index(argv, "--info-fd")
		argv = slices.Insert(argv, i, "--block-fd", "4")
	}
	cred, err := jailCredential(jailReal)
	if err != nil {
		return nil, err
	}
	info, err := newJailInfo()
	if err != nil {
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{info.w}
	if hold {
		if info.blockR, info.blockW, err = os.Pipe(); err != nil {
			info.close()
			return nil, fmt.Errorf("native: %w", err)
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, info.blockR)
	}
	cmd.SysProcAttr.Credential = cred
	cmd.Path, cmd.Args, cmd.Dir = t.bwrap, append([]string{"bwrap"}, argv...), "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	return info, nil
}

// jailCredential is the host identity bwrap runs as: nil (wasmbox's own)
// unless wasmbox is root and the jail directory belongs to another user,
// whose uid and gid it then takes, with no supplementary group.
func jailCredential(jailReal string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(jailReal, &st); err != nil {
		return nil, fmt.Errorf("native: jail root: %w", err)
	}
	if st.Uid == 0 {
		return nil, nil
	}
	return &syscall.Credential{Uid: st.Uid, Gid: st.Gid, Groups: []uint32{}}, nil
}

// jailInfo reads bwrap's --info-fd report: the host pid of the jail's init,
// whose descendants are the command's processes.
type jailInfo struct {
	r, w *os.File
	pid  atomic.Int64
	done chan struct{}
	// blockR and blockW hold the command (bwrap --block-fd) until
	// release; nil without hold.
	blockR, blockW *os.File
}

func newJailInfo() (*jailInfo, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("native: %w", err)
	}
	return &jailInfo{r: r, w: w, done: make(chan struct{})}, nil
}

// started closes the parent's copy of the write end and reads the report
// in the background (it ends at bwrap's exit at the latest).
func (j *jailInfo) started() {
	j.w.Close()
	if j.blockR != nil {
		j.blockR.Close()
	}
	go func() {
		defer close(j.done)
		var v struct {
			ChildPid int64 `json:"child-pid"`
		}
		if json.NewDecoder(io.LimitReader(j.r, 1<<16)).Decode(&v) == nil && v.ChildPid > 1 {
			j.pid.Store(v.ChildPid)
		}
	}()
}

func (j *jailInfo) close() {
	j.w.Close()
	j.r.Close()
	if j.blockW != nil {
		j.blockR.Close()
		j.blockW.Close()
	}
}

// initPid waits for bwrap's report of the jail's init.
func (j *jailInfo) initPid(ctx context.Context) (int, error) {
	select {
	case <-j.done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if p := j.pid.Load(); p > 1 {
		return int(p), nil
	}
	return 0, errors.New("native: bubblewrap did not report the jail's first process")
}

// release lets the held command start (one byte on bwrap's --block-fd).
// A command that must not start is killed instead: closing the pipe
// without a byte would let it run.
func (j *jailInfo) release() {
	if j.blockW != nil {
		j.blockW.Write([]byte{1})
	}
}

// terminate sends SIGTERM to every process of the jail but its init (so
// that git removes its lock files), and reports whether it knew them.
func (j *jailInfo) terminate() bool {
	init := int(j.pid.Load())
	if init <= 1 {
		return false
	}
	seen := map[int]bool{init: true}
	queue := []int{init}
	for len(queue) > 0 && len(seen) < 4096 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range childPids(p) {
			if !seen[c] {
				seen[c] = true
				queue = append(queue, c)
				unix.Kill(c, unix.SIGTERM)
			}
		}
	}
	return true
}

// childPids lists the children of every thread of pid.
func childPids(pid int) []int {
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	var out []int
	for _, t := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}
