package fileutils

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("cp", cpMain)
	cmd.Register("mv", mvMain)
}

var cpUsage = usage{
	synopsis: "[OPTION]... SOURCE... DEST\n  or:  cp [OPTION]... -t DIRECTORY SOURCE...",
	text: `Copy SOURCE to DEST, or multiple SOURCE(s) to DIRECTORY.

  -a, --archive                same as -dR --preserve=all
  -d                           same as --no-dereference --preserve=links
  -f, --force                  if an existing destination file cannot be opened, remove it and try again
  -i, --interactive            prompt before overwrite
  -l, --link                   hard link files instead of copying
  -L, --dereference            always follow symbolic links in SOURCE
  -n, --no-clobber             do not overwrite an existing file
  -P, --no-dereference         never follow symbolic links in SOURCE
  -p                           same as --preserve=mode,ownership,timestamps
  -R, -r, --recursive          copy directories recursively
  -s, --symbolic-link          make symbolic links instead of copying
  -t, --target-directory=DIRECTORY  copy all SOURCE arguments into DIRECTORY
  -T, --no-target-directory    treat DEST as a normal file
  -u, --update                 copy only when the SOURCE file is newer than the destination
  -v, --verbose                explain what is being done
`,
	bad: 1,
}

// copier holds the options shared by cp and by mv's cross-device fallback.
type copier struct {
	e                                  *cmd.Env
	recursive, deref, derefArgs        bool
	force, noClobber, ia               bool
	verbose, symlink, hardlink, update bool
	// --preserve=mode,ownership,timestamps (-p, -a: all three)
	pMode, pOwner, pTimes bool
	in                    *bufio.Reader
	status                int
	buf                   []byte
}

func (c *copier) ask(format string, a ...any) bool {
	fmt.Fprintf(c.e.Stderr, "%s: "+format+"? ", append([]any{c.e.Name()}, a...)...)
	if c.in == nil {
		c.in = bufio.NewReader(c.e.Stdin)
	}
	line, _ := c.in.ReadString('\n')
	line = strings.TrimSpace(line)
	return strings.HasPrefix(line, "y") || strings.HasPrefix(line, "Y")
}

func (c *copier) errorf(format string, a ...any) {
	c.e.Errorf(format, a...)
	c.status = 1
}

// targets resolves the SOURCE... DEST operands of cp, mv and ln into pairs.
// It returns false after printing the error when the operands are unusable.
func targets(e *cmd.Env, u usage, operands []string, targetDir string, noTarget bool) (srcs, dsts []string, ok bool) {
	if targetDir != "" {
		fi, err := metaStat(targetDir)
		if err != nil {
			e.Errorf("target directory %s: %s", quote(targetDir), strerror(err))
			return nil, nil, false
		}
		if !fi.IsDir() {
			e.Errorf("target directory %s: Not a directory", quote(targetDir))
			return nil, nil, false
		}
		if len(operands) == 0 {
			usageErr(e, u, "missing file operand")
			return nil, nil, false
		}
		for _, s := range operands {
			srcs = append(srcs, s)
			dsts = append(dsts, joinPath(targetDir, filepath.Base(strings.TrimRight(s, "/"))))
		}
		return srcs, dsts, true
	}
	switch len(operands) {
	case 0:
		usageErr(e, u, "missing file operand")
		return nil, nil, false
	case 1:
		usageErr(e, u, "missing destination file operand after %s", quote(operands[0]))
		return nil, nil, false
	}
	dest := operands[len(operands)-1]
	if noTarget {
		if len(operands) > 2 {
			usageErr(e, u, "extra operand %s", quote(operands[2]))
			return nil, nil, false
		}
		return operands[:1], operands[1:], true
	}
	fi, err := metaStat(dest)
	isDir := err == nil && fi.IsDir()
	if len(operands) == 2 && !isDir {
		return operands[:1], operands[1:], true
	}
	if !isDir {
		if err == nil {
			err = syscall.ENOTDIR
		}
		e.Errorf("target %s: %s", quote(dest), strerror(err))
		return nil, nil, false
	}
	for _, s := range operands[:len(operands)-1] {
		srcs = append(srcs, s)
		dsts = append(dsts, joinPath(dest, filepath.Base(strings.TrimRight(s, "/"))))
	}
	return srcs, dsts, true
}

func cpMain(e *cmd.Env) int {
	opts, operands, st, done := getopt(e, "a,archive b d f,force i,interactive H l,link L,dereference n,no-clobber P,no-dereference p ,preserve? ,no-preserve: R,recursive r s,symbolic-link S: t,target-directory: T,no-target-directory u,update? v,verbose x,one-file-system ,parents ,remove-destination ,sparse: ,reflink? ,attributes-only ,strip-trailing-slashes ,backup?", cpUsage)
	if done {
		return st
	}
	c := &copier{e: e}
	noDeref, deref := false, false
	for _, o := range opts {
		switch o.name {
		case "archive":
			c.recursive, noDeref = true, true
			c.pMode, c.pOwner, c.pTimes = true, true, true
		case "d":
			noDeref = true
		case "force", "remove-destination":
			c.force = true
		case "interactive":
			c.ia, c.noClobber = true, false
		case "H":
			c.derefArgs = true
		case "link":
			c.hardlink = true
		case "dereference":
			deref, noDeref = true, false
		case "no-clobber":
			c.noClobber, c.ia = true, false
		case "no-dereference":
			noDeref, deref = true, false
		case "p":
			c.pMode, c.pOwner, c.pTimes = true, true, true
		case "preserve", "no-preserve":
			val := o.val
			if o.name == "preserve" && !o.has {
				val = "mode,ownership,timestamps"
			}
			on := o.name == "preserve"
			for _, a := range strings.Split(val, ",") {
				switch a {
				case "mode":
					c.pMode = on
				case "ownership":
					c.pOwner = on
				case "timestamps":
					c.pTimes = on
				case "all":
					c.pMode, c.pOwner, c.pTimes = on, on, on
				case "links", "context", "xattr":
					// Hard links are not tracked across the copy;
					// the sandbox has no SELinux contexts or xattrs.
				default:
					return badArg(e, a, "--"+o.name, "mode", "timestamps", "ownership", "links", "context", "xattr", "all")
				}
			}
		case "recursive", "r":
			c.recursive = true
		case "symbolic-link":
			c.symlink = true
		case "update":
			c.update = o.val != "all" && o.val != "none"
			if o.val == "none" {
				c.noClobber = true
			}
		case "verbose":
			c.verbose = true
		}
	}
	switch {
	case deref:
		c.deref, c.derefArgs = true, true
	case noDeref:
		c.deref = false
	case c.recursive && !c.symlink:
		c.deref = false
	default:
		c.deref, c.derefArgs = true, true
	}
	targetDir, _ := last(opts, "target-directory")
	srcs, dsts, ok := targets(e, cpUsage, operands, targetDir, has(opts, "no-target-directory"))
	if !ok {
		return 1
	}
	for i, s := range srcs {
		c.copy(s, dsts[i], true)
	}
	return c.status
}

// copy copies src to dst; top is true for a command-line operand.
func (c *copier) copy(src, dst string, top bool) {
	stat := metaLstat
	if c.deref || (top && c.derefArgs) {
		stat = metaStat
	}
	fi, err := stat(src)
	if err != nil {
		c.errorf("cannot stat %s: %s", quote(src), strerror(err))
		return
	}
	dfi, derr := metaLstat(dst)
	dexists := derr == nil
	if dexists {
		if sfi, err := metaStat(src); err == nil {
			if dfi2, err := metaStat(dst); err == nil && sameFile(sfi, dfi2) && fi.Mode()&fs.ModeSymlink == 0 {
				c.errorf("%s and %s are the same file", quote(src), quote(dst))
				return
			}
		}
	}
	switch {
	case fi.IsDir():
		if !c.recursive {
			c.errorf("-r not specified; omitting directory %s", quote(src))
			return
		}
		if within(src, dst) {
			c.errorf("cannot copy a directory, %s, into itself, %s", quote(src), quote(dst))
			return
		}
		if dexists && !dfi.IsDir() {
			if dfi.Mode()&fs.ModeSymlink != 0 {
				if t, err := metaStat(dst); err == nil && t.IsDir() {
					goto copyEntries
				}
			}
			c.errorf("cannot overwrite non-directory %s with directory %s", quote(dst), quote(src))
			return
		}
		if !dexists {
			if err := os.Mkdir(dst, fi.Mode().Perm()|0o700); err != nil {
				c.errorf("cannot create directory %s: %s", quote(dst), strerror(err))
				return
			}
			if c.verbose {
				fmt.Fprintf(c.e.Stdout, "%s -> %s\n", quote(src), quote(dst))
			}
		}
	copyEntries:
		ents, err := os.ReadDir(src)
		if err != nil {
			c.errorf("cannot access %s: %s", quote(src), strerror(err))
			return
		}
		for _, ent := range ents {
			c.copy(joinPath(src, ent.Name()), joinPath(dst, ent.Name()), false)
		}
		if !dexists {
			c.applyMeta(dst, fi, true)
		}
		return
	}
	if dexists && dfi.IsDir() {
		c.errorf("cannot overwrite directory %s with non-directory", quote(dst))
		return
	}
	if dexists {
		if c.noClobber {
			return
		}
		if c.ia && !c.ask("overwrite %s", quote(dst)) {
			return
		}
		if c.update && !dfi.ModTime().Before(fi.ModTime()) {
			return
		}
	}
	switch {
	case c.symlink:
		if dexists {
			if !c.force {
				c.errorf("cannot create symbolic link %s to %s: File exists", quote(dst), quote(src))
				return
			}
			os.Remove(dst)
		}
		if err := os.Symlink(src, dst); err != nil {
			c.errorf("cannot create symbolic link %s to %s: %s", quote(dst), quote(src), strerror(err))
			return
		}
	case c.hardlink:
		if dexists {
			os.Remove(dst)
		}
		if err := os.Link(src, dst); err != nil {
			c.errorf("cannot create hard link %s to %s: %s", quote(dst), quote(src), strerror(err))
			return
		}
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			c.errorf("cannot read symbolic link %s: %s", quote(src), strerror(err))
			return
		}
		if dexists {
			os.Remove(dst)
		}
		if err := os.Symlink(target, dst); err != nil {
			c.errorf("cannot create symbolic link %s: %s", quote(dst), strerror(err))
			return
		}
	case fi.Mode().IsRegular():
		if !c.copyFile(src, dst, fi, dexists) {
			return
		}
	default:
		c.errorf("cannot copy special file %s", quote(src))
		return
	}
	if c.verbose {
		fmt.Fprintf(c.e.Stdout, "%s -> %s\n", quote(src), quote(dst))
	}
}

func (c *copier) copyFile(src, dst string, fi fs.FileInfo, exists bool) bool {
	in, err := os.Open(src)
	if err != nil {
		c.errorf("cannot open %s for reading: %s", quote(src), strerror(err))
		return false
	}
	defer in.Close()
	perm := fi.Mode().Perm()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil && exists && c.force {
		os.Remove(dst)
		out, err = os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	}
	if err != nil {
		c.errorf("cannot create regular file %s: %s", quote(dst), strerror(err))
		return false
	}
	if c.buf == nil {
		c.buf = make([]byte, 64<<10)
	}
	_, err = io.CopyBuffer(struct{ io.Writer }{out}, struct{ io.Reader }{in}, c.buf)
	cerr := out.Close()
	if err == nil {
		err = cerr
	}
	if err != nil {
		c.errorf("error copying %s to %s: %s", quote(src), quote(dst), strerror(err))
		return false
	}
	c.applyMeta(dst, fi, !exists)
	return true
}

// applyMeta gives a copy the metadata of its source (fi) that the
// --preserve list asks for. Without mode, a new file gets the source's
// permissions less the umask and an existing one keeps its own, as GNU cp
// does; ownership is kept only as far as an unprivileged user may.
func (c *copier) applyMeta(dst string, fi fs.FileInfo, isNew bool) {
	switch {
	case c.pMode:
		preserveMeta(dst, fi, c.pOwner)
	case isNew:
		if c.pOwner {
			preserveOwner(dst, fi)
		}
		chmodBits(dst, unixMode(fi.Mode())&0o777&^umask)
	case c.pOwner:
		preserveOwner(dst, fi)
	}
	if c.pTimes {
		sx := sysStat(fi)
		os.Chtimes(dst, sx.atime, sx.mtime)
	}
}

// within reports whether dst is src or lies inside it.
func within(src, dst string) bool {
	a, err1 := filepath.Abs(src)
	b, err2 := filepath.Abs(dst)
	if err1 != nil || err2 != nil {
		return false
	}
	if r, err := filepath.EvalSymlinks(a); err == nil {
		a = r
	}
	if r, err := filepath.EvalSymlinks(filepath.Dir(b)); err == nil {
		b = filepath.Join(r, filepath.Base(b))
	}
	return b == a || strings.HasPrefix(b, a+"/")
}

var mvUsage = usage{
	synopsis: "[OPTION]... SOURCE... DEST\n  or:  mv [OPTION]... -t DIRECTORY SOURCE...",
	text: `Rename SOURCE to DEST, or move SOURCE(s) to DIRECTORY.

  -f, --force                  do not prompt before overwriting
  -i, --interactive            prompt before overwrite
  -n, --no-clobber             do not overwrite an existing file
  -t, --target-directory=DIRECTORY  move all SOURCE arguments into DIRECTORY
  -T, --no-target-directory    treat DEST as a normal file
  -u, --update                 move only when the SOURCE file is newer than the destination file
  -v, --verbose                explain what is being done
`,
	bad: 1,
}

func mvMain(e *cmd.Env) int {
	opts, operands, st, done := getopt(e, "b ,backup? f,force i,interactive n,no-clobber ,strip-trailing-slashes S: t,target-directory: T,no-target-directory u,update? v,verbose Z", mvUsage)
	if done {
		return st
	}
	c := &copier{e: e, recursive: true, pMode: true, pOwner: true, pTimes: true}
	for _, o := range opts {
		switch o.name {
		case "force":
			c.force, c.ia, c.noClobber = true, false, false
		case "interactive":
			c.ia, c.noClobber, c.force = true, false, false
		case "no-clobber":
			c.noClobber, c.ia, c.force = true, false, false
		case "update":
			c.update = true
		case "verbose":
			c.verbose = true
		}
	}
	targetDir, _ := last(opts, "target-directory")
	srcs, dsts, ok := targets(e, mvUsage, operands, targetDir, has(opts, "no-target-directory"))
	if !ok {
		return 1
	}
	for i, s := range srcs {
		c.move(s, dsts[i])
	}
	return c.status
}

func (c *copier) move(src, dst string) {
	fi, err := metaLstat(src)
	if err != nil {
		c.errorf("cannot stat %s: %s", quote(src), strerror(err))
		return
	}
	if dfi, err := metaLstat(dst); err == nil {
		if sameFile(fi, dfi) {
			c.errorf("%s and %s are the same file", quote(src), quote(dst))
			return
		}
		if c.noClobber {
			return
		}
		if c.ia && !c.ask("overwrite %s", quote(dst)) {
			return
		}
		if c.update && !dfi.ModTime().Before(fi.ModTime()) {
			return
		}
		if fi.IsDir() && !dfi.IsDir() {
			c.errorf("cannot overwrite non-directory %s with directory %s", quote(dst), quote(src))
			return
		}
		if !fi.IsDir() && dfi.IsDir() {
			c.errorf("cannot overwrite directory %s with non-directory", quote(dst))
			return
		}
	}
	if fi.IsDir() && within(src, dst) {
		c.errorf("cannot move %s to a subdirectory of itself, %s", quote(src), quote(dst))
		return
	}
	err = os.Rename(src, dst)
	if isErrno(err, syscall.EXDEV) {
		// Another mount: copy everything, then remove the source.
		before := c.status
		c.status = 0
		saveVerbose := c.verbose
		c.verbose = false
		c.copy(src, dst, true)
		c.verbose = saveVerbose
		if c.status == 0 {
			err = os.RemoveAll(src)
		} else {
			err = nil
		}
		if before != 0 {
			c.status = before
		}
	}
	if err != nil {
		if isErrno(err, syscall.ENOTEMPTY) || isErrno(err, syscall.EEXIST) {
			c.errorf("cannot move %s to %s: Directory not empty", quote(src), quote(dst))
			return
		}
		c.errorf("cannot move %s to %s: %s", quote(src), quote(dst), strerror(err))
		return
	}
	if c.verbose {
		fmt.Fprintf(c.e.Stdout, "renamed %s -> %s\n", quote(src), quote(dst))
	}
}
