//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package native

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// procAttr puts the command in its own process group. There is no
// parent-death signal on macOS and the BSDs (Linux's Pdeathsig): a command
// whose wasmbox is killed outright (SIGKILL, a crash) runs on, unbounded by
// its deadline, until it ends by itself.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitExited returns once the process pid (a child) has exited, without
// reaping it, so that its pid, the group id, stays reserved until
// cmd.Wait: a kqueue EVFILT_PROC/NOTE_EXIT event. These systems have no
// waitid with WNOWAIT in golang.org/x/sys/unix. A kqueue that cannot be
// had is an error (the caller then kills the group at once).
func waitExited(pid int) error {
	kq, err := unix.Kqueue()
	if err != nil {
		return fmt.Errorf("kqueue: %w", err)
	}
	defer unix.Close(kq)
	var change unix.Kevent_t
	unix.SetKevent(&change, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	change.Fflags = unix.NOTE_EXIT
	events := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, []unix.Kevent_t{change}, events, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ESRCH):
			// Already a zombie (macOS does not attach to one): exited.
			return nil
		case err != nil:
			return fmt.Errorf("kevent: %w", err)
		case n < 1:
			continue
		}
		ev := events[0]
		if ev.Flags&unix.EV_ERROR != 0 {
			if syscall.Errno(ev.Data) == unix.ESRCH {
				return nil
			}
			return fmt.Errorf("kevent: %w", syscall.Errno(ev.Data))
		}
		if ev.Fflags&unix.NOTE_EXIT != 0 {
			return nil
		}
	}
}
