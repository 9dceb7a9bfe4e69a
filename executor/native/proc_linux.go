package native

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// procAttr puts the command in its own process group, and has the kernel
// kill it (bwrap, or the command when unjailed) if wasmbox dies first.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitExited returns once the process pid (a child) has exited, without
// reaping it: waitid with WNOWAIT. Its pid, the group id, stays reserved
// until cmd.Wait.
func waitExited(pid int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	return nil
}
