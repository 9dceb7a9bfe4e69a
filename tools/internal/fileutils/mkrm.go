package fileutils

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("mkdir", mkdirMain)
	cmd.Register("rmdir", rmdirMain)
	cmd.Register("rm", rmMain)
}

var mkdirUsage = usage{
	synopsis: "[OPTION]... DIRECTORY...",
	text: `Create the DIRECTORY(ies), if they do not already exist.

  -m, --mode=MODE   set file mode (as in chmod), not a=rwx - umask
  -p, --parents     no error if existing, make parent directories as needed
  -v, --verbose     print a message for each created directory
`,
	bad: 1,
}

func mkdirMain(e *cmd.Env) int {
	opts, dirs, st, done := getopt(e, "m,mode: p,parents v,verbose", mkdirUsage)
	if done {
		return st
	}
	parents, verbose := has(opts, "parents"), has(opts, "verbose")
	perm := uint32(0o777 &^ umask)
	modeArg, setMode := last(opts, "mode")
	if setMode {
		m, err := parseMode(modeArg, 0o777, true, 0o022)
		if err != nil {
			e.Errorf("invalid mode %s", quote(modeArg))
			return 1
		}
		perm = m
	}
	if len(dirs) == 0 {
		return usageErr(e, mkdirUsage, "missing operand")
	}
	status := 0
	for _, d := range dirs {
		if parents {
			if err := mkdirParents(e, d, perm, verbose); err != nil {
				status = 1
			}
			continue
		}
		if err := os.Mkdir(d, fs.FileMode(perm&0o777)); err != nil {
			e.Errorf("cannot create directory %s: %s", quote(d), strerror(err))
			status = 1
			continue
		}
		if setMode {
			chmodBits(d, perm)
		}
		if verbose {
			fmt.Fprintf(e.Stdout, "mkdir: created directory %s\n", quote(d))
		}
	}
	return status
}

func mkdirParents(e *cmd.Env, d string, perm uint32, verbose bool) error {
	// Walk the components from the top, creating what is missing.
	var prefix string
	if strings.HasPrefix(d, "/") {
		prefix = "/"
	}
	parts := strings.Split(d, "/")
	for i, p := range parts {
		if p == "" {
			continue
		}
		if prefix == "" || prefix == "/" {
			prefix += p
		} else {
			prefix += "/" + p
		}
		if p == "." || p == ".." {
			continue
		}
		fi, err := os.Stat(prefix)
		if err == nil && fi.IsDir() {
			continue
		}
		mode := fs.FileMode(0o755)
		isLast := strings.Join(parts[i+1:], "") == ""
		if isLast {
			mode = fs.FileMode(perm & 0o777)
		}
		if err := os.Mkdir(prefix, mode); err != nil {
			if fi2, err2 := os.Stat(prefix); err2 == nil && fi2.IsDir() {
				continue
			}
			if os.IsExist(err) && !isLast {
				// A non-directory is in the way of a parent.
				e.Errorf("cannot create directory %s: %s", quote(prefix), "Not a directory")
			} else {
				e.Errorf("cannot create directory %s: %s", quote(d), strerror(err))
			}
			return err
		}
		if isLast && perm != 0o777&^umask {
			// WASI ignores the mode of mkdir: set it through the host.
			chmodBits(prefix, perm)
		}
		if verbose {
			fmt.Fprintf(e.Stdout, "mkdir: created directory %s\n", quote(prefix))
		}
	}
	return nil
}

var rmdirUsage = usage{
	synopsis: "[OPTION]... DIRECTORY...",
	text: `Remove the DIRECTORY(ies), if they are empty.

      --ignore-fail-on-non-empty  ignore each failure to remove a non-empty directory
  -p, --parents   remove DIRECTORY and its ancestors
  -v, --verbose   output a diagnostic for every directory processed
`,
	bad: 1,
}

func rmdirMain(e *cmd.Env) int {
	opts, dirs, st, done := getopt(e, ",ignore-fail-on-non-empty p,parents v,verbose", rmdirUsage)
	if done {
		return st
	}
	ignore, parents, verbose := has(opts, "ignore-fail-on-non-empty"), has(opts, "parents"), has(opts, "verbose")
	if len(dirs) == 0 {
		return usageErr(e, rmdirUsage, "missing operand")
	}
	status := 0
	remove := func(d string, parent bool) bool {
		if verbose {
			fmt.Fprintf(e.Stdout, "rmdir: removing directory, %s\n", quote(d))
		}
		err := syscall.Rmdir(d)
		if err == nil {
			return true
		}
		if ignore && (isErrno(err, syscall.ENOTEMPTY) || isErrno(err, syscall.EEXIST)) {
			return false
		}
		if isErrno(err, syscall.EEXIST) {
			err = syscall.ENOTEMPTY
		}
		if fi, serr := os.Lstat(d); serr == nil && !fi.IsDir() {
			err = syscall.ENOTDIR
		}
		if parent {
			e.Errorf("failed to remove directory %s: %s", quote(d), strerror(err))
		} else {
			e.Errorf("failed to remove %s: %s", quote(d), strerror(err))
		}
		status = 1
		return false
	}
	for _, d := range dirs {
		if !remove(d, false) || !parents {
			continue
		}
		for p := strings.TrimRight(d, "/"); ; {
			i := strings.LastIndex(p, "/")
			if i <= 0 {
				break
			}
			p = strings.TrimRight(p[:i], "/")
			if p == "" || !remove(p, true) {
				break
			}
		}
	}
	return status
}

var rmUsage = usage{
	synopsis: "[OPTION]... [FILE]...",
	text: `Remove (unlink) the FILE(s).

  -f, --force           ignore nonexistent files and arguments, never prompt
  -i                    prompt before every removal
  -I                    prompt once before removing more than three files
  -r, -R, --recursive   remove directories and their contents recursively
  -d, --dir             remove empty directories
  -v, --verbose         explain what is being done
      --no-preserve-root  do not treat '/' specially
`,
	bad: 1,
}

type rmState struct {
	e                                  *cmd.Env
	force, recursive, dir, verbose, ia bool
	in                                 *bufio.Reader
	status                             int
}

func rmMain(e *cmd.Env) int {
	opts, files, st, done := getopt(e, "f,force i I r,recursive R d,dir v,verbose ,no-preserve-root ,preserve-root ,interactive?", rmUsage)
	if done {
		return st
	}
	r := &rmState{e: e}
	for _, o := range opts {
		switch o.name {
		case "force":
			r.force, r.ia = true, false
		case "i":
			r.ia, r.force = true, false
		case "interactive":
			r.ia = o.val != "never" && o.val != "no" && o.val != "none" && o.val != "once"
		case "recursive", "R":
			r.recursive = true
		case "dir":
			r.dir = true
		case "verbose":
			r.verbose = true
		}
	}
	if len(files) == 0 {
		if r.force {
			return 0
		}
		return usageErr(e, rmUsage, "missing operand")
	}
	noPreserve := has(opts, "no-preserve-root")
	for _, f := range files {
		base := filepath.Base(strings.TrimRight(f, "/"))
		if base == "." || base == ".." {
			e.Errorf("refusing to remove '.' or '..' directory: skipping %s", quote(f))
			r.status = 1
			continue
		}
		if r.recursive && !noPreserve && filepath.Clean(f) == "/" {
			e.Errorf("it is dangerous to operate recursively on '/'")
			e.Errorf("use --no-preserve-root to override this failsafe")
			r.status = 1
			continue
		}
		r.remove(f)
	}
	return r.status
}

func (r *rmState) ask(format string, a ...any) bool {
	fmt.Fprintf(r.e.Stderr, "%s: "+format+"? ", append([]any{r.e.Name()}, a...)...)
	if r.in == nil {
		r.in = bufio.NewReader(r.e.Stdin)
	}
	line, _ := r.in.ReadString('\n')
	line = strings.TrimSpace(line)
	return strings.HasPrefix(line, "y") || strings.HasPrefix(line, "Y")
}

func (r *rmState) fail(name string, err error) {
	r.e.Errorf("cannot remove %s: %s", quote(name), strerror(err))
	r.status = 1
}

// remove deletes one operand; it reports whether name is gone.
func (r *rmState) remove(name string) bool {
	fi, err := os.Lstat(name)
	if err != nil {
		if r.force && os.IsNotExist(err) {
			return true
		}
		r.fail(name, err)
		return false
	}
	if fi.IsDir() {
		if !r.recursive {
			if r.dir {
				if r.ia && !r.ask("remove directory %s", quote(name)) {
					return false
				}
				if err := syscall.Rmdir(name); err != nil {
					if isErrno(err, syscall.EEXIST) {
						err = syscall.ENOTEMPTY
					}
					r.fail(name, err)
					return false
				}
				r.removed("removed directory %s", name)
				return true
			}
			r.fail(name, syscall.EISDIR)
			return false
		}
		if r.ia && !r.ask("descend into directory %s", quote(name)) {
			return false
		}
		ents, err := os.ReadDir(name)
		if err != nil {
			r.fail(name, err)
			return false
		}
		ok := true
		for _, ent := range ents {
			if !r.remove(joinPath(name, ent.Name())) {
				ok = false
			}
		}
		if !ok {
			return false
		}
		if r.ia && !r.ask("remove directory %s", quote(name)) {
			return false
		}
		if err := syscall.Rmdir(name); err != nil {
			r.fail(name, err)
			return false
		}
		r.removed("removed directory %s", name)
		return true
	}
	if r.ia {
		kind := "regular file"
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			kind = "symbolic link"
		case fi.Size() == 0 && fi.Mode().IsRegular():
			kind = "regular empty file"
		}
		if !r.ask("remove %s %s", kind, quote(name)) {
			return false
		}
	}
	if err := syscall.Unlink(name); err != nil {
		r.fail(name, err)
		return false
	}
	r.removed("removed %s", name)
	return true
}

func (r *rmState) removed(format, name string) {
	if r.verbose {
		fmt.Fprintf(r.e.Stdout, format+"\n", quote(name))
	}
}

// joinPath joins a directory and a name the way GNU tools print them:
// "d" + "x" is "d/x", "d/" + "x" is "d/x".
func joinPath(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}
