package engine

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Identity is what the kernel lets a process read and do: its uids, gids
// and groups, capabilities, no_new_privs and seccomp mode, security
// label, root directory and namespaces. Two processes of equal Identity
// see and may touch the same files, so one may work for the other.
type Identity struct {
	fields []string // "Name value", in a fixed order
}

// identityStatus are the lines of /proc/PID/status an Identity holds.
var identityStatus = []string{"Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"}

// identityNS are the namespaces an Identity holds (those the running
// kernel has: /proc/PID/ns/NAME may be missing).
var identityNS = []string{"mnt", "user", "pid", "net", "ipc", "uts", "cgroup", "time"}

// Equal reports whether id and o are the same identity; if not, diff
// names the first field that differs.
func (id Identity) Equal(o Identity) (ok bool, diff string) {
	if len(id.fields) != len(o.fields) {
		return false, "the fields read"
	}
	for i := range id.fields {
		if id.fields[i] != o.fields[i] {
			name, _, _ := strings.Cut(id.fields[i], " ")
			return false, name
		}
	}
	return true, ""
}

// SelfIdentity is this process's identity.
func SelfIdentity() (Identity, error) { return readIdentity("self") }

// readIdentity reads the identity of the process whose /proc directory is
// /proc/proc.
func readIdentity(proc string) (Identity, error) {
	dir := "/proc/" + proc
	b, err := os.ReadFile(dir + "/status")
	if err != nil {
		return Identity{}, err
	}
	status := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			status[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	var id Identity
	for _, k := range identityStatus {
		v, ok := status[k]
		if !ok && k != "CapAmb" && k != "NoNewPrivs" && k != "Seccomp" { // older kernels lack these
			return Identity{}, fmt.Errorf("%s/status has no %s", dir, k)
		}
		id.fields = append(id.fields, k+" "+v)
	}
	for _, ns := range identityNS {
		l, err := os.Readlink(dir + "/ns/" + ns)
		switch {
		case errors.Is(err, os.ErrNotExist):
			l = "-"
		case err != nil:
			return Identity{}, err
		}
		id.fields = append(id.fields, "ns/"+ns+" "+l)
	}
	var st unix.Stat_t
	if err := unix.Stat(dir+"/root", &st); err != nil {
		return Identity{}, err
	}
	id.fields = append(id.fields, fmt.Sprintf("root %d:%d", st.Dev, st.Ino))
	label, err := os.ReadFile(dir + "/attr/current")
	if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.EINVAL) {
		return Identity{}, err
	}
	id.fields = append(id.fields, "label "+strings.TrimRight(string(label), "\x00\n"))
	return id, nil
}

// PeerCred is the credentials the kernel recorded for the other end of a
// Unix socket when it connected (or listened).
func PeerCred(conn *net.UnixConn) (*unix.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, cerr
}

// peerPidfd is a pidfd of the process at the other end of conn: the one
// the kernel recorded (SO_PEERPIDFD, Linux 6.5), else one opened for the
// recorded pid (pidfd_open, Linux 5.3), which the caller checks is still
// that process.
func peerPidfd(conn *net.UnixConn, pid int32) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var gerr error
	if err := raw.Control(func(s uintptr) {
		fd, gerr = unix.GetsockoptInt(int(s), unix.SOL_SOCKET, unix.SO_PEERPIDFD)
	}); err != nil {
		return -1, err
	}
	if gerr == nil {
		return fd, nil
	}
	return unix.PidfdOpen(int(pid), 0)
}

// procStart is the start time of /proc/PID (field 22 of its stat), which
// tells a reused pid from the process that had it.
func procStart(pid int32) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
	if err != nil {
		return "", err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", errors.New("bad /proc/PID/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", errors.New("bad /proc/PID/stat")
	}
	return f[19], nil
}

// PeerIdentity is the identity of the process at the other end of conn,
// read from /proc while a pidfd (or its start time, where the kernel has
// no pidfds) proves the pid is still that process's: a peer that exits
// cannot lend its pid to another process for the reading.
func PeerIdentity(conn *net.UnixConn) (*unix.Ucred, Identity, error) {
	cred, err := PeerCred(conn)
	if err != nil {
		return nil, Identity{}, err
	}
	if cred.Pid <= 0 {
		return cred, Identity{}, errors.New("engine: the peer has no pid in this pid namespace")
	}
	pidfd, perr := peerPidfd(conn, cred.Pid)
	start0, err := procStart(cred.Pid)
	if err != nil {
		if perr == nil {
			unix.Close(pidfd)
		}
		return cred, Identity{}, err
	}
	id, err := readIdentity(strconv.Itoa(int(cred.Pid)))
	if err != nil {
		if perr == nil {
			unix.Close(pidfd)
		}
		return cred, Identity{}, err
	}
	if perr == nil {
		err = unix.PidfdSendSignal(pidfd, 0, nil, 0)
		unix.Close(pidfd)
		if err != nil {
			return cred, Identity{}, fmt.Errorf("engine: the peer (pid %d) is gone: %v", cred.Pid, err)
		}
	}
	if start1, err := procStart(cred.Pid); err != nil || start1 != start0 {
		return cred, Identity{}, fmt.Errorf("engine: the peer (pid %d) is gone", cred.Pid)
	}
	return cred, id, nil
}

// CheckPeer returns nil if the process at the other end of conn has
// self's identity, else a one-line error saying what differs.
func CheckPeer(conn *net.UnixConn, self Identity) error {
	cred, id, err := PeerIdentity(conn)
	if err != nil {
		return fmt.Errorf("engine: cannot read the peer's identity: %v", err)
	}
	if int(cred.Uid) != os.Geteuid() {
		return fmt.Errorf("engine: the peer runs as uid %d, not %d", cred.Uid, os.Geteuid())
	}
	if ok, diff := self.Equal(id); !ok {
		return fmt.Errorf("engine: the peer (pid %d) differs in %s", cred.Pid, diff)
	}
	return nil
}
