package native

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// listenInNetns listens on addr (TCP) in the network namespace of the
// process pid, which must be a child of parent (bwrap: the pid cannot
// have been reused by another process). A locked thread enters the
// namespace, creates the socket and returns to the host's namespace; the
// socket stays in the namespace it was made in. A thread that cannot
// return is never used again: its goroutine ends locked, and Go retires
// the thread.
func listenInNetns(pid, parent int, addr string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		ln, restored, err := listenLocked(pid, parent, addr)
		if restored {
			runtime.UnlockOSThread()
		}
		ch <- result{ln, err}
	}()
	r := <-ch
	return r.ln, r.err
}

func listenLocked(pid, parent int, addr string) (ln net.Listener, restored bool, err error) {
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, true, fmt.Errorf("native: network relay: %w", err)
	}
	defer unix.Close(self)
	target, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, true, fmt.Errorf("native: network relay: the jail's network namespace: %w", err)
	}
	defer unix.Close(target)
	// Checked after the open: the namespace is the one of bwrap's child.
	if pp, err := parentPid(pid); err != nil || pp != parent {
		return nil, true, errors.New("native: network relay: the jail's first process is gone")
	}
	var a, b unix.Stat_t
	if unix.Fstat(self, &a) != nil || unix.Fstat(target, &b) != nil || (a.Dev == b.Dev && a.Ino == b.Ino) {
		return nil, true, errors.New("native: network relay: the jail has no network namespace of its own")
	}
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		return nil, true, fmt.Errorf("native: network relay: entering the jail's network namespace takes CAP_SYS_ADMIN (run wasmbox as root for git over the network): %w", err)
	}
	ln, lerr := net.Listen("tcp4", addr)
	if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, false, fmt.Errorf("native: network relay: returning to the host's network namespace: %w", err)
	}
	if lerr != nil {
		return nil, true, fmt.Errorf("native: network relay: listening in the jail: %w", lerr)
	}
	return ln, true, nil
}

// parentPid reads the parent of pid from /proc.
func parentPid(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("bad stat")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, errors.New("bad stat")
	}
	return strconv.Atoi(string(f[1]))
}
