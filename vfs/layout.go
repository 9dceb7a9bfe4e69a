package vfs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"syscall"
)

// The sandbox user of the default layout.
const (
	UserName  = "user"
	UserUID   = 1000
	UserGID   = 1000
	UserHome  = "/home/user"
	UserShell = "/bin/sh"
)

const passwd = `root:x:0:0:root:/root:/bin/sh
user:x:1000:1000:sandbox user:/home/user:/bin/sh
`

const group = `root:x:0:
user:x:1000:
`

// NewDefault returns the standard sandbox namespace: a VFS over a MemFS
// holding
//
//	/bin, /usr/bin          commands (see InstallCommand)
//	/home/user              HOME and working directory, owned by uid 1000
//	/tmp                    mode 1777
//	/etc/passwd, /etc/group the sandbox user (user, 1000:1000) and root
//	/dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom
//	/dev/stdin, /dev/stdout, /dev/stderr, /dev/fd (symlinks into /proc/self/fd)
//	/root
//
// with quotas of DefaultQuotaBytes and DefaultQuotaFiles unless WithQuota
// says otherwise, new files owned by the sandbox user and a umask of 022.
// WithRandom seeds /dev/random and /dev/urandom; WithClock sets the clock.
//
// Everything but /home/user belongs to root, with a real system's modes
// (0755, /root 0700, /tmp 1777, /etc/passwd 0644, /dev nodes 0666): a
// view for the sandbox user (AsUser) may write in /home/user and /tmp
// (and the /dev nodes), and cannot enter /root. Nothing of the host is visible: host directories are
// added with Mount and HostDir.
func NewDefault(opts ...Option) (*VFS, error) {
	base := []Option{WithQuota(Quota{Bytes: DefaultQuotaBytes, Files: DefaultQuotaFiles}), WithOwner(UserUID, UserGID), WithUmask(0o022)}
	m := NewMemFS(append(base, opts...)...)
	if err := buildLayout(m, m.cfg.random); err != nil {
		return nil, fmt.Errorf("vfs: default layout: %w", err)
	}
	return New(m), nil
}

func buildLayout(m *MemFS, random io.Reader) error {
	dirs := []struct {
		p    string
		mode os.FileMode
		uid  int
	}{
		{"/bin", 0o755, 0},
		{"/usr", 0o755, 0},
		{"/usr/bin", 0o755, 0},
		{"/etc", 0o755, 0},
		{"/dev", 0o755, 0},
		{"/home", 0o755, 0},
		{UserHome, 0o755, UserUID},
		{"/root", 0o700, 0},
		{"/tmp", 0o777 | os.ModeSticky, 0},
	}
	if err := m.Chown("/", 0, 0); err != nil {
		return err
	}
	for _, d := range dirs {
		if err := m.Mkdir(d.p, d.mode); err != nil {
			return err
		}
		if err := m.Chmod(d.p, d.mode); err != nil {
			return err
		}
		if err := m.Chown(d.p, d.uid, d.uid); err != nil {
			return err
		}
	}
	for _, f := range []struct{ p, data string }{{"/etc/passwd", passwd}, {"/etc/group", group}} {
		if err := writeFile(m, f.p, []byte(f.data), 0o644); err != nil {
			return err
		}
		if err := m.Chown(f.p, 0, 0); err != nil {
			return err
		}
	}
	rnd := DevRandom(random)
	for _, d := range []struct {
		name string
		dev  Device
	}{{"null", DevNull}, {"zero", DevZero}, {"full", DevFull}, {"random", rnd}, {"urandom", rnd}} {
		if err := m.Mknod("/dev/"+d.name, 0o666, d.dev); err != nil {
			return err
		}
		if err := m.Chmod("/dev/"+d.name, 0o666); err != nil {
			return err
		}
		if err := m.Chown("/dev/"+d.name, 0, 0); err != nil {
			return err
		}
	}
	// The names of the descriptors of the calling process, as on Linux:
	// the WASI layer opens /proc/self/fd/N as a new descriptor of what
	// the caller's descriptor N refers to (see preview1's path_open).
	for _, l := range []struct{ name, target string }{
		{"/dev/fd", "/proc/self/fd"}, {"/dev/stdin", "/proc/self/fd/0"},
		{"/dev/stdout", "/proc/self/fd/1"}, {"/dev/stderr", "/proc/self/fd/2"},
	} {
		if err := m.SymlinkIfPossible(l.target, l.name); err != nil {
			return err
		}
		n, err := m.node("lchown", l.name, false, plain)
		if err != nil {
			return err
		}
		m.chown(n, 0, 0, nil)
	}
	return nil
}

func writeFile(fsys FS, name string, data []byte, perm os.FileMode) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// commandMagic starts the content of a command entry (see InstallCommand).
const commandMagic = "#!wasmbox "

// InstallCommand adds the command name as an executable entry (mode 0755)
// in /bin and /usr/bin of fsys, so that `ls /bin`, `command -v name` and
// `test -x /bin/name` see it. The entry's content is a one-line marker
// that CommandName reads back; the executor decides what runs. An
// existing entry is replaced. name must be a plain file name.
func InstallCommand(fsys FS, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || len(name) > MaxNameLen {
		return pathErr("install", name, syscall.EINVAL)
	}
	for _, dir := range []string{"/bin", "/usr/bin"} {
		if err := WriteExecutable(fsys, path.Join(dir, name), []byte(commandMagic+name+"\n")); err != nil {
			return err
		}
	}
	return nil
}

// WriteExecutable creates (or replaces) name with content data and mode
// 0755. Missing parent directories are created.
func WriteExecutable(fsys FS, name string, data []byte) error {
	if err := fsys.MkdirAll(path.Dir(cleanAbs(name)), 0o755); err != nil {
		return err
	}
	if err := writeFile(fsys, name, data, 0o755); err != nil {
		return err
	}
	return fsys.Chmod(name, 0o755)
}

// CommandName reports the command an entry made by InstallCommand stands
// for (following symlinks), and false when name is not such an entry.
func CommandName(fsys FS, name string) (string, bool) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", false
	}
	defer f.Close()
	buf := make([]byte, len(commandMagic)+MaxNameLen+1)
	n, _ := io.ReadFull(f, buf)
	buf = buf[:n]
	if !bytes.HasPrefix(buf, []byte(commandMagic)) {
		return "", false
	}
	rest := buf[len(commandMagic):]
	i := bytes.IndexByte(rest, '\n')
	if i <= 0 {
		return "", false
	}
	return string(rest[:i]), true
}
