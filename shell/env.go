package shell

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/wasmbox/wasmbox/internal/sh/expand"
	"github.com/wasmbox/wasmbox/internal/sh/syntax"
)

// baseEnv is the bottom of the interpreter's variable scopes: Config.Env
// plus the sandbox defaults. Scripts never write to it (their assignments
// go to the interpreter's overlays); it also answers the lookups that the
// interpreter would otherwise send to the host.
type baseEnv struct {
	s     *Shell
	vars  map[string]expand.Variable
	names []string

	// bootstrap is true while interp.Runner.Reset runs: it is the only time
	// the interpreter reads TMPDIR, and it must see the unreachable one.
	bootstrap atomic.Bool
}

var _ expand.Environ = (*baseEnv)(nil)

func newBaseEnv(s *Shell, env []string) (*baseEnv, error) {
	b := &baseEnv{s: s, vars: make(map[string]expand.Variable)}
	for _, kv := range env {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !syntax.ValidName(name) {
			return nil, fmt.Errorf("shell: Config.Env: invalid entry %q", kv)
		}
		b.vars[name] = expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: val}
	}
	def := func(name, val string) {
		if _, ok := b.vars[name]; !ok {
			b.vars[name] = expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: val}
		}
	}
	def("HOME", "/home/user")
	def("PATH", "/usr/local/bin:/usr/bin:/bin")
	for name, val := range map[string]string{"BASH": "/bin/bash", "BASH_VERSION": "5.2.0(1)-release"} {
		if _, ok := b.vars[name]; !ok {
			b.vars[name] = expand.Variable{Set: true, Kind: expand.String, Str: val}
		}
	}
	for name, val := range map[string]uint32{"UID": s.uid, "EUID": s.uid, "GID": s.gid} {
		b.vars[name] = expand.Variable{Set: true, ReadOnly: true, Kind: expand.String, Str: strconv.FormatUint(uint64(val), 10)}
	}
	for name := range b.vars {
		b.names = append(b.names, name)
	}
	slices.Sort(b.names)
	return b, nil
}

func (b *baseEnv) Get(name string) expand.Variable {
	switch name {
	case "TMPDIR":
		if b.bootstrap.Load() {
			return expand.Variable{Set: true, Kind: expand.String, Str: b.s.tempDir}
		}
	}
	if user, ok := strings.CutPrefix(name, "HOME "); ok {
		// "~user": the expand package asks "HOME user" and falls back to
		// the host's user database if it gets nothing. Answer from the
		// VFS /etc/passwd, and for an unknown user answer "~user" itself,
		// which leaves the word unexpanded as bash does.
		if home, ok := b.s.passwdHome(user); ok {
			return expand.Variable{Set: true, Kind: expand.String, Str: home}
		}
		return expand.Variable{Set: true, Kind: expand.String, Str: "~" + user}
	}
	return b.vars[name]
}

func (b *baseEnv) Each(f func(name string, vr expand.Variable) bool) {
	for _, name := range b.names {
		if !f(name, b.vars[name]) {
			return
		}
	}
}

// passwdHome looks user up in the VFS /etc/passwd.
func (s *Shell) passwdHome(user string) (string, bool) {
	f, err := s.cfg.FS.Open("/etc/passwd")
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) >= 6 && fields[0] == user {
			return fields[5], true
		}
	}
	return "", false
}
