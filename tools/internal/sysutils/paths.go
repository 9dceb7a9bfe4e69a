package sysutils

import (
	"crypto/rand"
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
	cmd.Register("which", whichMain)
	cmd.Register("mktemp", mktempMain)
}

// isExecutable reports whether path names a regular file with an execute
// bit set. cmd.Stat asks the sandbox for the mode: WASI has none.
func isExecutable(path string) bool {
	st, err := cmd.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// whichMain is debianutils which: print the path of each command found on
// $PATH (in the sandbox's filesystem); -a prints every match, -s nothing.
func whichMain(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(cmd.Option{Short: 'a'}), false)
	if err != nil {
		if ue, ok := err.(*cmd.UsageError); ok {
			if _, c, ok := strings.Cut(ue.Msg, "-- '"); ok {
				fmt.Fprintf(e.Stderr, "Illegal option -%s\n", strings.TrimSuffix(c, "'"))
			}
		}
		fmt.Fprintln(e.Stdout, "Usage: which [-a] args")
		return 2
	}
	if helpOrVersion(e, opts, "[-a] COMMAND...\nPrint the full path of each COMMAND found on PATH.\n  -a  print all matching pathnames of each argument\n") {
		return 0
	}
	all, silent := len(opts) > 0, false
	if len(ops) == 0 {
		return 1
	}
	w, flush := output(e)
	status := 0
	dirs := strings.Split(os.Getenv("PATH"), ":")
	for _, name := range ops {
		found := false
		if strings.Contains(name, "/") {
			if isExecutable(name) {
				found = true
				if !silent {
					w.WriteString(name + "\n")
				}
			}
		} else {
			for _, d := range dirs {
				if d == "" {
					d = "."
				}
				p := d + "/" + name
				if isExecutable(p) {
					found = true
					if !silent {
						w.WriteString(p + "\n")
					}
					if !all {
						break
					}
				}
			}
		}
		if !found {
			status = 1
		}
	}
	if flush() != 0 {
		return 2
	}
	return status
}

const tempChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func mktempMain(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(
		cmd.Option{Short: 'd', Long: "directory"}, cmd.Option{Short: 'u', Long: "dry-run"},
		cmd.Option{Short: 'q', Long: "quiet"}, cmd.Option{Short: 'p', Arg: cmd.RequiredArg},
		cmd.Option{Long: "tmpdir", Arg: cmd.OptionalArg},
		cmd.Option{Short: 't'}, cmd.Option{Long: "suffix", Arg: cmd.RequiredArg}), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "[OPTION]... [TEMPLATE]\nCreate a temporary file or directory, safely, and print its name.\nTEMPLATE must contain at least 3 consecutive 'X's in last component.\nIf TEMPLATE is not specified, use tmp.XXXXXXXXXX, and --tmpdir is implied.\n  -d, --directory     create a directory, not a file\n  -u, --dry-run       do not create anything; merely print a name (unsafe)\n  -q, --quiet         suppress diagnostics about file/dir-creation failure\n      --suffix=SUFF   append SUFF to TEMPLATE\n  -p DIR, --tmpdir[=DIR]  interpret TEMPLATE relative to DIR ($TMPDIR, else /tmp)\n  -t                  interpret TEMPLATE as a single file name component,\n                        relative to a directory: $TMPDIR, if set; else the\n                        directory specified via -p; else /tmp\n") {
		return 0
	}
	dirMode, dry, quiet, useTmp, tFlag := false, false, false, false, false
	dir, suffix := "", ""
	hasSuffix := false
	for _, o := range opts {
		switch o.Name {
		case "directory":
			dirMode = true
		case "dry-run":
			dry = true
		case "quiet":
			quiet = true
		case "tmpdir", "p":
			useTmp = true
			dir = o.Value
		case "t":
			tFlag = true
		case "suffix":
			suffix, hasSuffix = o.Value, true
		}
	}
	fail := func(format string, args ...any) int {
		if !quiet {
			e.Errorf(format, args...)
		}
		return 1
	}
	if len(ops) > 1 {
		return e.Usage(1, fmt.Errorf("too many templates"))
	}
	template := "tmp.XXXXXXXXXX"
	if len(ops) == 1 {
		template = ops[0]
	} else {
		useTmp = true
	}
	if !hasSuffix {
		// A template's suffix is what follows its last X.
		if i := strings.LastIndexByte(template, 'X'); i >= 0 {
			suffix = template[i+1:]
			template = template[:i+1]
		}
	} else if !strings.HasSuffix(template, "X") {
		return fail("with --suffix, template '%s' must end in X", template)
	}
	if strings.Contains(suffix, "/") {
		return fail("invalid suffix '%s', contains directory separator", suffix)
	}
	if tFlag || useTmp {
		if tFlag && strings.Contains(template, "/") {
			return fail("invalid template, '%s'; with --tmpdir, it may not be absolute", template+suffix)
		}
		if useTmp && filepath.IsAbs(template) {
			return fail("invalid template, '%s'; with --tmpdir, it may not be absolute", template+suffix)
		}
		base := os.Getenv("TMPDIR")
		if !tFlag && dir != "" || base == "" {
			base = dir
		}
		if base == "" {
			base = "/tmp"
		}
		template = strings.TrimSuffix(base, "/") + "/" + template
	}
	n := len(template) - len(strings.TrimRight(template, "X"))
	if n < 3 {
		return fail("too few X's in template '%s'", template+suffix)
	}
	prefix := template[:len(template)-n]
	var last error
	for try := 0; try < 100; try++ {
		buf := make([]byte, n)
		rand.Read(buf)
		for i := range buf {
			buf[i] = tempChars[int(buf[i])%len(tempChars)]
		}
		name := prefix + string(buf) + suffix
		var err error
		switch {
		case dry:
			if _, err = os.Lstat(name); err == nil {
				err = fs.ErrExist
			} else if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		case dirMode:
			// WASI ignores the mode of mkdir and open: the private
			// 0700/0600 of a temporary file is set through the host.
			if err = os.Mkdir(name, 0o700); err == nil {
				err = privateMode(name, 0o700)
			}
		default:
			var f *os.File
			if f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
				err = f.Close()
				if err == nil {
					err = privateMode(name, 0o600)
				}
			}
		}
		if err == nil {
			fmt.Fprintln(e.Stdout, name)
			return 0
		}
		if !errors.Is(err, fs.ErrExist) {
			last = err
			break
		}
		last = err
	}
	kind := "file"
	if dirMode {
		kind = "directory"
	}
	return fail("failed to create %s via template '%s': %s", kind, template+suffix, errText(last))
}

// privateMode gives a new temporary file its private mode; a host without
// the metadata calls (ENOSYS) leaves the mode as WASI created it.
func privateMode(name string, mode fs.FileMode) error {
	if err := cmd.Chmod(name, mode); err != nil && !errors.Is(err, syscall.ENOSYS) {
		return err
	}
	return nil
}
