package fileutils

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("ln", lnMain)
	cmd.Register("readlink", readlinkMain)
	cmd.Register("realpath", realpathMain)
}

var lnUsage = usage{
	synopsis: "[OPTION]... [-T] TARGET LINK_NAME\n  or:  ln [OPTION]... TARGET\n  or:  ln [OPTION]... TARGET... DIRECTORY\n  or:  ln [OPTION]... -t DIRECTORY TARGET...",
	text: `Create links to TARGET. Hard links by default, symbolic links with --symbolic.

  -f, --force                 remove existing destination files
  -n, --no-dereference        treat LINK_NAME as a normal file if it is a symbolic link to a directory
  -r, --relative              with -s, create links relative to link location
  -s, --symbolic              make symbolic links instead of hard links
  -t, --target-directory=DIRECTORY  specify the DIRECTORY in which to create the links
  -T, --no-target-directory   treat LINK_NAME as a normal file always
  -v, --verbose               print name of each linked file
`,
	bad: 1,
}

func lnMain(e *cmd.Env) int {
	opts, operands, st, done := getopt(e, "b ,backup? d F ,directory f,force i,interactive L,logical n,no-dereference P,physical r,relative s,symbolic S: t,target-directory: T,no-target-directory v,verbose", lnUsage)
	if done {
		return st
	}
	force, noDeref, rel, sym, verbose := has(opts, "force"), has(opts, "no-dereference"), has(opts, "relative"), has(opts, "symbolic"), has(opts, "verbose")
	noTarget := has(opts, "no-target-directory")
	targetDir, _ := last(opts, "target-directory")
	var srcs, links []string
	switch {
	case targetDir != "":
		fi, err := os.Stat(targetDir)
		if err != nil || !fi.IsDir() {
			if err == nil {
				err = syscall.ENOTDIR
			}
			e.Errorf("target directory %s: %s", quote(targetDir), strerror(err))
			return 1
		}
		for _, s := range operands {
			srcs = append(srcs, s)
			links = append(links, joinPath(targetDir, filepath.Base(strings.TrimRight(s, "/"))))
		}
	case len(operands) == 0:
		return usageErr(e, lnUsage, "missing file operand")
	case len(operands) == 1 && !noTarget:
		srcs = operands
		links = []string{filepath.Base(strings.TrimRight(operands[0], "/"))}
	case len(operands) == 1:
		return usageErr(e, lnUsage, "missing destination file operand after %s", quote(operands[0]))
	default:
		dest := operands[len(operands)-1]
		isDir := false
		if !noTarget {
			var fi fs.FileInfo
			var err error
			if noDeref {
				fi, err = os.Lstat(dest)
			} else {
				fi, err = os.Stat(dest)
			}
			isDir = err == nil && fi.IsDir()
		}
		if len(operands) == 2 && !isDir {
			srcs, links = operands[:1], operands[1:]
			break
		}
		if noTarget {
			return usageErr(e, lnUsage, "extra operand %s", quote(operands[2]))
		}
		if !isDir {
			e.Errorf("target %s: Not a directory", quote(dest))
			return 1
		}
		for _, s := range operands[:len(operands)-1] {
			srcs = append(srcs, s)
			links = append(links, joinPath(dest, filepath.Base(strings.TrimRight(s, "/"))))
		}
	}
	status := 0
	for i, src := range srcs {
		link := links[i]
		target := src
		if !sym {
			fi, err := os.Stat(src)
			if err != nil {
				e.Errorf("failed to access %s: %s", quote(src), strerror(err))
				status = 1
				continue
			}
			if fi.IsDir() {
				e.Errorf("%s: hard link not allowed for directory", quoteIf(src))
				status = 1
				continue
			}
		} else if rel {
			target = relativeLink(src, link)
		}
		kind := "symbolic link"
		if !sym {
			kind = "hard link"
		}
		if lfi, err := os.Lstat(link); err == nil {
			if sfi, err := os.Stat(src); err == nil && !sym && sameFile(sfi, lfi) {
				e.Errorf("%s and %s are the same file", quote(src), quote(link))
				status = 1
				continue
			}
			if !force {
				lnFail(e, kind, link, src, sym, syscall.EEXIST)
				status = 1
				continue
			}
			if lfi.IsDir() {
				e.Errorf("%s: cannot overwrite directory", quote(link))
				status = 1
				continue
			}
			os.Remove(link)
		}
		var err error
		if sym {
			err = os.Symlink(target, link)
		} else {
			err = os.Link(src, link)
		}
		if err != nil {
			lnFail(e, kind, link, src, sym, err)
			status = 1
			continue
		}
		if verbose {
			arrow := "=>"
			if sym {
				arrow = "->"
			}
			fmt.Fprintf(e.Stdout, "%s %s %s\n", quote(link), arrow, quote(target))
		}
	}
	return status
}

func lnFail(e *cmd.Env, kind, link, src string, sym bool, err error) {
	if sym || isErrno(err, syscall.EEXIST) {
		e.Errorf("failed to create %s %s: %s", kind, quote(link), strerror(err))
		return
	}
	e.Errorf("failed to create %s %s => %s: %s", kind, quote(link), quote(src), strerror(err))
}

// relativeLink returns target expressed relative to the directory that will
// hold link, both canonicalized as ln -r does.
func relativeLink(target, link string) string {
	t, err := canonicalize(target, canonMissing, true)
	if err != nil {
		return target
	}
	l, err := canonicalize(filepath.Dir(link), canonMissing, true)
	if err != nil {
		return target
	}
	r, err := filepath.Rel(l, t)
	if err != nil {
		return target
	}
	return r
}

// Canonicalization modes, as in readlink -f/-e/-m.
const (
	canonAllButLast = iota // every component but the last must exist (-f)
	canonExisting          // every component must exist (-e)
	canonMissing           // no component needs to exist (-m)
)

var errLoop = syscall.ELOOP

// canonicalize returns the absolute, symlink-free form of name.
// With physical false, symlinks are not resolved (realpath -s).
func canonicalize(name string, mode int, physical bool) (string, error) {
	if name == "" {
		return "", syscall.ENOENT
	}
	if !strings.HasPrefix(name, "/") {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		name = wd + "/" + name
	}
	rest := strings.Split(name, "/")
	resolved := ""
	links := 0
	for len(rest) > 0 {
		comp := rest[0]
		rest = rest[1:]
		switch comp {
		case "", ".":
			continue
		case "..":
			if i := strings.LastIndex(resolved, "/"); i >= 0 {
				resolved = resolved[:i]
			}
			continue
		}
		next := resolved + "/" + comp
		last := !hasComponent(rest)
		fi, err := os.Lstat(next)
		if err != nil {
			if mode == canonMissing || (mode == canonAllButLast && last && os.IsNotExist(err)) {
				resolved = next
				continue
			}
			return "", err
		}
		if physical && fi.Mode()&fs.ModeSymlink != 0 {
			links++
			if links > 40 {
				return "", errLoop
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", err
			}
			if strings.HasPrefix(target, "/") {
				resolved = ""
			}
			rest = append(strings.Split(target, "/"), rest...)
			continue
		}
		if !fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 && hasComponent(rest) && mode != canonMissing {
			return "", syscall.ENOTDIR
		}
		resolved = next
	}
	if resolved == "" {
		resolved = "/"
	}
	return resolved, nil
}

func hasComponent(rest []string) bool {
	for _, r := range rest {
		if r != "" && r != "." {
			return true
		}
	}
	return false
}

var readlinkUsage = usage{
	synopsis: "[OPTION]... FILE...",
	text: `Print value of a symbolic link or canonical file name

  -f, --canonicalize            canonicalize by following every symlink in every component
                                recursively; all but the last component must exist
  -e, --canonicalize-existing   canonicalize ...; all components must exist
  -m, --canonicalize-missing    canonicalize ...; without requirements on components existence
  -n, --no-newline              do not output the trailing delimiter
  -q, --quiet, -s, --silent     suppress most error messages (on by default)
  -v, --verbose                 report error messages
  -z, --zero                    end each output line with NUL, not newline
`,
	bad: 1,
}

func readlinkMain(e *cmd.Env) int {
	opts, files, st, done := getopt(e, "f,canonicalize e,canonicalize-existing m,canonicalize-missing n,no-newline q,quiet s,silent v,verbose z,zero", readlinkUsage)
	if done {
		return st
	}
	mode := -1
	verbose := false
	for _, o := range opts {
		switch o.name {
		case "canonicalize":
			mode = canonAllButLast
		case "canonicalize-existing":
			mode = canonExisting
		case "canonicalize-missing":
			mode = canonMissing
		case "verbose":
			verbose = true
		case "quiet", "silent":
			verbose = false
		}
	}
	if len(files) == 0 {
		return usageErr(e, readlinkUsage, "missing operand")
	}
	delim := "\n"
	if has(opts, "zero") {
		delim = "\x00"
	}
	if has(opts, "no-newline") && len(files) == 1 {
		delim = ""
	} else if has(opts, "no-newline") {
		e.Errorf("ignoring --no-newline with multiple arguments")
	}
	out := newOut(e)
	defer out.Flush()
	status := 0
	for _, f := range files {
		var s string
		var err error
		if mode >= 0 {
			s, err = canonicalize(f, mode, true)
		} else {
			s, err = os.Readlink(f)
		}
		if err != nil {
			if verbose {
				if mode < 0 {
					var pe *fs.PathError
					if errors.As(err, &pe) && isErrno(err, syscall.EINVAL) {
						err = syscall.EINVAL
					}
				}
				e.Errorf("%s: %s", quoteIf(f), strerror(err))
			}
			status = 1
			continue
		}
		out.WriteString(s + delim)
	}
	return status
}

var realpathUsage = usage{
	synopsis: "[OPTION]... FILE...",
	text: `Print the resolved absolute file name;
all but the last component must exist

  -e, --canonicalize-existing  all components of the path must exist
  -m, --canonicalize-missing   no path components need exist or be a directory
  -L, --logical                resolve '..' components before symlinks
  -P, --physical               resolve symlinks as encountered (default)
  -q, --quiet                  suppress most error messages
      --relative-to=DIR        print the resolved path relative to DIR
      --relative-base=DIR      print absolute paths unless paths below DIR
  -s, --strip, --no-symlinks   don't expand symlinks
  -z, --zero                   end each output line with NUL, not newline
`,
	bad: 1,
}

func realpathMain(e *cmd.Env) int {
	opts, files, st, done := getopt(e, "e,canonicalize-existing m,canonicalize-missing L,logical P,physical q,quiet ,relative-to: ,relative-base: s,strip ,no-symlinks z,zero", realpathUsage)
	if done {
		return st
	}
	mode := canonAllButLast
	physical := true
	for _, o := range opts {
		switch o.name {
		case "canonicalize-existing":
			mode = canonExisting
		case "canonicalize-missing":
			mode = canonMissing
		case "strip", "no-symlinks":
			physical = false
		case "physical":
			physical = true
		}
	}
	quiet := has(opts, "quiet")
	if len(files) == 0 {
		return usageErr(e, realpathUsage, "missing operand")
	}
	var relTo, relBase string
	if v, ok := last(opts, "relative-to"); ok {
		r, err := canonicalize(v, mode, physical)
		if err != nil {
			e.Errorf("%s: %s", quoteIf(v), strerror(err))
			return 1
		}
		relTo = r
	}
	if v, ok := last(opts, "relative-base"); ok {
		r, err := canonicalize(v, mode, physical)
		if err != nil {
			e.Errorf("%s: %s", quoteIf(v), strerror(err))
			return 1
		}
		relBase = r
		if relTo == "" {
			relTo = r
		}
	}
	delim := "\n"
	if has(opts, "zero") {
		delim = "\x00"
	}
	out := newOut(e)
	defer out.Flush()
	status := 0
	for _, f := range files {
		s, err := canonicalize(f, mode, physical)
		if err != nil {
			if !quiet {
				out.Flush()
				e.Errorf("%s: %s", quoteIf(f), strerror(err))
			}
			status = 1
			continue
		}
		if relTo != "" && (relBase == "" || underDir(s, relBase) && underDir(relTo, relBase)) {
			if r, err := filepath.Rel(relTo, s); err == nil {
				s = r
			}
		}
		out.WriteString(s + delim)
	}
	return status
}

func underDir(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
