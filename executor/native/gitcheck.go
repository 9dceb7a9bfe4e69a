package native

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// gitRepoCheck finds the repositories git could use from dirReal (walking up
// to jailReal, as git's discovery does under GIT_CEILING_DIRECTORIES) and
// refuses the run when a ".git" file or a "commondir" points outside the
// jail, or when a config file in a git directory sets a key that makes git
// run a program or read files outside the repository. found reports
// whether a repository was found.
func gitRepoCheck(jailReal, dirReal string) (found bool, err error) {
	for d := dirReal; ; d = filepath.Dir(d) {
		dotgit := filepath.Join(d, ".git")
		if fi, err := os.Lstat(dotgit); err == nil {
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				return true, denied("%s is a symlink", rel(jailReal, dotgit))
			case fi.IsDir():
				return true, scanGitDir(jailReal, dotgit)
			case fi.Mode().IsRegular():
				gd, err := readGitFile(dotgit)
				if err != nil {
					return true, denied("%s: %v", rel(jailReal, dotgit), err)
				}
				if !filepath.IsAbs(gd) {
					gd = filepath.Join(d, gd)
				}
				real, err := filepath.EvalSymlinks(gd)
				if err != nil {
					return true, denied("%s points to a missing git directory", rel(jailReal, dotgit))
				}
				if !within(jailReal, real) {
					return true, denied("%s points outside the jail", rel(jailReal, dotgit))
				}
				return true, scanGitDir(jailReal, real)
			}
		}
		if d == jailReal || !within(jailReal, d) {
			return false, nil
		}
	}
}

func rel(root, p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

func readGitFile(path string) (string, error) {
	b, err := readSmall(path)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	gd, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", fs.ErrInvalid
	}
	return strings.TrimSpace(gd), nil
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, _ := f.Read(b)
	return b[:n], nil
}

// scanGitDir checks every config file of a git directory (including
// modules/*/config of submodules and worktrees/*/config.worktree) and its
// commondir.
func scanGitDir(jailReal, gitDir string) error {
	if cd, err := readSmall(filepath.Join(gitDir, "commondir")); err == nil {
		p := strings.TrimSpace(string(cd))
		if !filepath.IsAbs(p) {
			p = filepath.Join(gitDir, p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil || !within(jailReal, real) {
			return denied("commondir of %s points outside the jail", rel(jailReal, gitDir))
		}
		if real != gitDir {
			if err := scanConfigs(jailReal, real); err != nil {
				return err
			}
		}
	}
	return scanConfigs(jailReal, gitDir)
}

const maxScanEntries = 20000

func scanConfigs(jailReal, gitDir string) error {
	n := 0
	var found error
	err := filepath.WalkDir(gitDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable parts: git cannot read them either
		}
		if n++; n > maxScanEntries {
			found = denied("git directory %s is too large to check", rel(jailReal, gitDir))
			return fs.SkipAll
		}
		if d.IsDir() {
			switch d.Name() {
			case "objects", "refs", "logs", "lfs", "hooks":
				return fs.SkipDir
			}
			return nil
		}
		if name := d.Name(); name != "config" && name != "config.worktree" {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			found = denied("%s is a symlink", rel(jailReal, p))
			return fs.SkipAll
		}
		if key, err := dangerousConfig(p); err != nil || key != "" {
			if err != nil {
				found = denied("cannot check %s: %v", rel(jailReal, p), err)
			} else {
				found = denied("%s sets %s, which can run programs or reach outside the repository", rel(jailReal, p), key)
			}
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return denied("checking %s: %v", rel(jailReal, gitDir), err)
	}
	return found
}

// dangerousConfig returns the first key of the git config file at path that
// the native lane refuses, or "".
func dangerousConfig(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	section := ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		for strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				break
			}
			section = normSection(line[1:end])
			line = strings.TrimSpace(line[end+1:])
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		name := line
		if i := strings.IndexAny(name, "= \t"); i >= 0 {
			name = name[:i]
		}
		key := section + "." + strings.ToLower(name)
		if refusedKey(key) {
			return key, nil
		}
	}
	return "", sc.Err()
}

// normSection turns `core`, `Filter "x"` and `filter.x` into "core",
// "filter.x".
func normSection(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		sub := strings.Trim(strings.TrimSpace(s[i:]), `"`)
		return strings.ToLower(s[:i]) + "." + sub
	}
	return strings.ToLower(s)
}

// refusedKey decides on one config key (section lowercase, subsection as
// written, name lowercase).
func refusedKey(key string) bool {
	parts := strings.Split(key, ".")
	sec, name := strings.ToLower(parts[0]), parts[len(parts)-1]
	switch sec {
	case "include", "includeif":
		return true // pulls config from anywhere
	case "filter":
		return true // clean/smudge/process run programs on add/status
	case "diff":
		return name == "external" || name == "textconv" || name == "command"
	case "merge":
		return name == "driver"
	case "core":
		// fsmonitor, hooksPath, pager, editor, sshCommand and askPass are
		// overridden on the command line (see GitRule) and so allowed.
		switch name {
		case "worktree", "gitproxy", "alternaterefscommand":
			return true
		}
	case "credential":
		return name == "helper"
	case "remote":
		return name == "uploadpack" || name == "receivepack" || name == "proxy"
	case "submodule":
		return name == "update"
	case "man", "web", "browser", "difftool", "mergetool", "gpg", "uploadpack", "sequence":
		return true
	case "pager":
		return true // pager.<cmd> would run a program on a terminal
	}
	return false
}
