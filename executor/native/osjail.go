package native

import (
	"context"
	"errors"
	"os/exec"
)

// The OS jail is bubblewrap on Linux (bwrap_linux.go); no other OS has
// one here (nojail_other.go), so New refuses there unless Config.Unjailed
// is set.

// osJail is an OS jail commands can be wrapped in.
type osJail interface {
	// wrap rewrites cmd, a command line that runs bin with args in
	// dirReal (a real path inside jailReal) with environment env, into
	// the one that runs it in the jail: jailReal bound at guest
	// (read-only unless rw), limited by lim. The returned jailRun
	// follows the started process; its close must be called. With hold,
	// the command waits in its namespaces until jailRun.release (see
	// relay.go: the host opens the network relay in the jail's network
	// namespace before git starts).
	wrap(cmd *exec.Cmd, bin string, args []string, jailReal, guest, dirReal string, rw bool, env []string, lim JailLimits, hold bool) (jailRun, error)
}

// jailRun follows one process started in the jail.
type jailRun interface {
	// started is called right after the process started (or failed to).
	started()
	// terminate sends SIGTERM to the command's processes in the jail and
	// reports whether it could; false means the jail must be killed.
	terminate() bool
	// close releases what the run holds.
	close()
	// initPid waits (bounded by ctx) for the host pid of the jail's
	// first process, whose namespaces are the command's.
	initPid(ctx context.Context) (int, error)
	// release lets a command wrapped with hold start.
	release()
}

// JailLimits are the rlimits of a jailed command.
type JailLimits struct {
	CPUSeconds   int   // RLIMIT_CPU
	AddressSpace int64 // RLIMIT_AS, bytes
	Processes    int   // RLIMIT_NPROC
	FileSize     int64 // RLIMIT_FSIZE, bytes
	OpenFiles    int   // RLIMIT_NOFILE
}

// DefaultJailLimits are the rlimits of a jailed command by default.
var DefaultJailLimits = JailLimits{
	CPUSeconds:   60,
	AddressSpace: 4 << 30,
	Processes:    256,
	FileSize:     1 << 30,
	OpenFiles:    1024,
}

// ErrNoJail is wrapped by New's error when the OS jail cannot be used and
// Config.Unjailed is not set: bubblewrap or prlimit is missing, the kernel
// refuses the namespaces, or the OS is not Linux (the jail is Linux-only).
var ErrNoJail = errors.New("native: no OS jail")

// withDefaults fills the zero fields of l from DefaultJailLimits.
func (l JailLimits) withDefaults() JailLimits {
	d := DefaultJailLimits
	if l.CPUSeconds > 0 {
		d.CPUSeconds = l.CPUSeconds
	}
	if l.AddressSpace > 0 {
		d.AddressSpace = l.AddressSpace
	}
	if l.Processes > 0 {
		d.Processes = l.Processes
	}
	if l.FileSize > 0 {
		d.FileSize = l.FileSize
	}
	if l.OpenFiles > 0 {
		d.OpenFiles = l.OpenFiles
	}
	return d
}
