package fileutils

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("install", installMain) }

var installUsage = usage{
	synopsis: "[OPTION]... [-T] SOURCE DEST\n  or:  install [OPTION]... SOURCE... DIRECTORY\n  or:  install [OPTION]... -t DIRECTORY SOURCE...\n  or:  install [OPTION]... -d DIRECTORY...",
	text: `This install program copies files (often just compiled) into destination
locations you choose.  In the first three forms, copy SOURCE to DEST or
multiple SOURCE(s) to the existing DIRECTORY, while setting permission modes
and owner/group.  In the 4th form, create all components of the given
DIRECTORY(ies).

  -C, --compare       compare content of source and destination files, and
                        if no change to content, ownership, and permissions,
                        do not modify the destination at all
  -d, --directory     treat all arguments as directory names; create all
                        components of the specified directories
  -D                  create all leading components of DEST except the last,
                        or all components of --target-directory,
                        then copy SOURCE to DEST
  -g, --group=GROUP   set group ownership, instead of process' current group
  -m, --mode=MODE     set permission mode (as in chmod), instead of rwxr-xr-x
  -o, --owner=OWNER   set ownership (super-user only)
  -p, --preserve-timestamps  apply access/modification times of SOURCE files
                        to corresponding destination files
  -t, --target-directory=DIRECTORY  copy all SOURCE arguments into DIRECTORY
  -T, --no-target-directory  treat DEST as a normal file
  -v, --verbose       print the name of each created file or directory
`,
	bad: 1,
}

// installer is one install run.
type installer struct {
	e                    *cmd.Env
	mode                 uint32
	uid, gid             int
	verbose, keepTimes   bool
	compare, makeParents bool
	names                idNames
	groups               map[uint32]bool
	buf                  []byte
	status               int
}

func installMain(e *cmd.Env) int {
	opts, operands, st, done := getopt(e, "C,compare c d,directory D g,group: m,mode: o,owner: p,preserve-timestamps t,target-directory: T,no-target-directory v,verbose ,strip-program:", installUsage)
	if done {
		return st
	}
	in := &installer{e: e, mode: 0o755, uid: -1, gid: -1}
	dirMode := false
	for _, o := range opts {
		switch o.name {
		case "compare":
			in.compare = true
		case "directory":
			dirMode = true
		case "D":
			in.makeParents = true
		case "verbose":
			in.verbose = true
		case "preserve-timestamps":
			in.keepTimes = true
		case "strip-program":
			return usageErr(e, installUsage, "stripping is not supported in the sandbox")
		}
	}
	if m, ok := last(opts, "mode"); ok {
		bits, err := parseMode(m, 0o755, false, 0)
		if err != nil {
			e.Errorf("invalid mode %s", quote(m))
			return 1
		}
		in.mode = bits
	}
	if o, ok := last(opts, "owner"); ok {
		c := chownState{}
		id, ok := c.resolve(true, o)
		if !ok {
			e.Errorf("invalid user %s", quote(o))
			return 1
		}
		in.uid = id
	}
	if g, ok := last(opts, "group"); ok {
		c := chownState{}
		id, ok := c.resolve(false, g)
		if !ok {
			e.Errorf("invalid group %s", quote(g))
			return 1
		}
		in.gid = id
	}
	in.groups = userGroups(&in.names)
	if dirMode {
		if len(operands) == 0 {
			return usageErr(e, installUsage, "missing file operand")
		}
		for _, d := range operands {
			in.mkdirAll(d, true)
		}
		return in.status
	}
	targetDir, hasTarget := last(opts, "target-directory")
	if hasTarget && in.makeParents {
		if !in.mkdirAll(targetDir, false) {
			return 1
		}
	}
	if !hasTarget && in.makeParents && len(operands) == 2 {
		if dir := path.Dir(operands[1]); dir != "." && dir != "/" {
			if !in.mkdirAll(dir, false) {
				return 1
			}
		}
	}
	srcs, dsts, ok := targets(e, installUsage, operands, targetDir, has(opts, "no-target-directory"))
	if !ok {
		return 1
	}
	for i, s := range srcs {
		in.installFile(s, dsts[i])
	}
	return in.status
}

func (in *installer) errorf(format string, a ...any) {
	in.status = 1
	in.e.Errorf(format, a...)
}

// mkdirAll creates d and its missing parents. With last set (install -d)
// the final directory gets the mode and owner of the options, the parents
// the default 0755; with -D every created directory is 0755.
func (in *installer) mkdirAll(d string, last bool) bool {
	var todo []string
	for p := path.Clean(d); ; p = path.Dir(p) {
		fi, err := metaStat(p)
		if err == nil {
			if !fi.IsDir() {
				in.errorf("cannot create directory %s: File exists", quote(p))
				return false
			}
			break
		}
		todo = append(todo, p)
		if p == "/" || p == "." || path.Dir(p) == p {
			break
		}
	}
	for i := len(todo) - 1; i >= 0; i-- {
		p := todo[i]
		if err := os.Mkdir(p, 0o755); err != nil && !os.IsExist(err) {
			in.errorf("cannot create directory %s: %s", quote(p), strerror(err))
			return false
		}
		if in.verbose {
			fmt.Fprintf(in.e.Stdout, "install: creating directory %s\n", quote(p))
		}
		chmodBits(p, 0o755)
	}
	if last {
		if err := chmodBits(d, in.mode); err != nil {
			in.errorf("cannot change permissions of %s: %s", quote(d), strerror(err))
			return false
		}
		return in.setOwner(d)
	}
	return true
}

// setOwner applies -o and -g under the rules for an unprivileged user.
func (in *installer) setOwner(name string) bool {
	if in.uid < 0 && in.gid < 0 {
		return true
	}
	fi, err := metaStat(name)
	if err != nil {
		in.errorf("cannot change ownership of %s: %s", quote(name), strerror(err))
		return false
	}
	uid, gid := cmd.Owner(fi)
	c := chownState{uid: in.uid, gid: in.gid, groups: in.groups}
	c.self, _ = selfIDs()
	err = nil
	if !c.permitted(uid, gid) {
		err = syscall.EPERM
	} else if (in.uid >= 0 && in.uid != uid) || (in.gid >= 0 && in.gid != gid) {
		err = renameErr(cmd.Chown(absName(name), in.uid, in.gid), name)
	}
	if err != nil {
		in.errorf("cannot change ownership of %s: %s", quote(name), strerror(err))
		return false
	}
	return true
}

// installFile copies src to dst (replacing dst) and sets its mode, owner
// and, with -p, times.
func (in *installer) installFile(src, dst string) {
	fi, err := metaStat(src)
	if err != nil {
		in.errorf("cannot stat %s: %s", quote(src), strerror(err))
		return
	}
	if fi.IsDir() {
		in.errorf("omitting directory %s", quote(src))
		return
	}
	if dfi, err := metaStat(dst); err == nil {
		if sameFile(fi, dfi) {
			in.errorf("%s and %s are the same file", quote(src), quote(dst))
			return
		}
		if in.compare && in.unchanged(src, dst, fi, dfi) {
			return
		}
	}
	r, err := os.Open(src)
	if err != nil {
		in.errorf("cannot open %s for reading: %s", quote(src), strerror(err))
		return
	}
	defer r.Close()
	// install unlinks the destination first: a read-only target is no
	// obstacle, and hard links to it keep the old content.
	if lfi, err := metaLstat(dst); err == nil && !lfi.IsDir() {
		os.Remove(dst)
	}
	w, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		in.errorf("cannot create regular file %s: %s", quote(dst), strerror(err))
		return
	}
	if in.buf == nil {
		in.buf = make([]byte, 64<<10)
	}
	_, err = io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{r}, in.buf)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		in.errorf("error copying %s to %s: %s", quote(src), quote(dst), strerror(err))
		return
	}
	if in.keepTimes {
		sx := sysStat(fi)
		os.Chtimes(dst, sx.atime, sx.mtime)
	}
	if err := chmodBits(dst, in.mode); err != nil {
		in.errorf("cannot change permissions of %s: %s", quote(dst), strerror(err))
		return
	}
	if !in.setOwner(dst) {
		return
	}
	if in.verbose {
		fmt.Fprintf(in.e.Stdout, "%s -> %s\n", quote(src), quote(dst))
	}
}

// unchanged is install -C: the destination already has the content, mode
// and owner it would get.
func (in *installer) unchanged(src, dst string, sfi, dfi fs.FileInfo) bool {
	if !dfi.Mode().IsRegular() || sfi.Size() != dfi.Size() || unixMode(dfi.Mode()) != in.mode {
		return false
	}
	uid, gid := cmd.Owner(dfi)
	if (in.uid >= 0 && in.uid != uid) || (in.gid >= 0 && in.gid != gid) {
		return false
	}
	a, err := os.ReadFile(src)
	if err != nil {
		return false
	}
	b, err := os.ReadFile(dst)
	return err == nil && string(a) == string(b)
}
