package native

import (
	"io"
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
func gitRepoCheck(jailReal, dirReal string) (found bool, facts gitConfigFacts, err error) {
	for d := dirReal; ; d = filepath.Dir(d) {
		dotgit := filepath.Join(d, ".git")
		if fi, err := os.Lstat(dotgit); err == nil {
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				return true, facts, denied("%s is a symlink", rel(jailReal, dotgit))
			case fi.IsDir():
				return true, facts, scanGitDir(jailReal, dotgit, &facts)
			case fi.Mode().IsRegular():
				gd, err := readGitFile(dotgit)
				if err != nil {
					return true, facts, denied("%s: %v", rel(jailReal, dotgit), err)
				}
				if !filepath.IsAbs(gd) {
					gd = filepath.Join(d, gd)
				}
				real, err := filepath.EvalSymlinks(gd)
				if err != nil {
					return true, facts, denied("%s points to a missing git directory", rel(jailReal, dotgit))
				}
				if !within(jailReal, real) {
					return true, facts, denied("%s points outside the jail", rel(jailReal, dotgit))
				}
				return true, facts, scanGitDir(jailReal, real, &facts)
			}
		}
		if d == jailReal || !within(jailReal, d) {
			return false, facts, nil
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
func scanGitDir(jailReal, gitDir string, facts *gitConfigFacts) error {
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
			if err := scanConfigs(jailReal, real, facts); err != nil {
				return err
			}
			if err := checkAlternates(jailReal, real); err != nil {
				return err
			}
		}
	}
	if err := checkAlternates(jailReal, gitDir); err != nil {
		return err
	}
	return scanConfigs(jailReal, gitDir, facts)
}

const maxScanEntries = 20000

func scanConfigs(jailReal, gitDir string, facts *gitConfigFacts) error {
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
		if key, err := dangerousConfig(p, facts); err != nil || key != "" {
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

// gitConfigFacts is what the lane learned from a repository's config
// files: the keys they set (lowercased section and name) and the URLs of
// its remotes.
type gitConfigFacts struct {
	keys    map[string]bool
	remotes map[string][]string // remote name -> url and pushurl values
}

// sets reports whether a config file of the repository sets key
// ("user.name").
func (f gitConfigFacts) sets(key string) bool { return f.keys[key] }

func (f *gitConfigFacts) add(e configEntry) {
	if f.keys == nil {
		f.keys, f.remotes = map[string]bool{}, map[string][]string{}
	}
	f.keys[e.Section+"."+e.Name] = true
	if e.Section == "remote" && (e.Name == "url" || e.Name == "pushurl") {
		f.remotes[e.Sub] = append(f.remotes[e.Sub], e.Value)
	}
}

// checkAlternates refuses objects/info/alternates entries that are
// absolute or lead outside the jail: they would let git read the objects
// of another repository.
func checkAlternates(jailReal, gitDir string) error {
	objects := filepath.Join(gitDir, "objects")
	b, err := os.ReadFile(filepath.Join(objects, "info", "alternates"))
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if filepath.IsAbs(line) || strings.HasPrefix(line, "\"") {
			return denied("%s/objects/info/alternates names %q (only relative alternates inside the jail are allowed)", rel(jailReal, gitDir), line)
		}
		real, err := filepath.EvalSymlinks(filepath.Join(objects, line))
		if err != nil || !within(jailReal, real) {
			return denied("%s/objects/info/alternates leads outside the jail (%q)", rel(jailReal, gitDir), line)
		}
	}
	return nil
}

// dangerousConfig parses the git config file at path (see
// parseGitConfig) and returns the first key the native lane refuses, or
// "". A file git could not parse is an error: the command is refused.
func dangerousConfig(path string, facts *gitConfigFacts) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return "", err
	}
	entries, err := parseGitConfig(b)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if refusedKey(e) {
			return e.Key(), nil
		}
		if facts != nil {
			facts.add(e)
		}
	}
	return "", nil
}

// refusedKey decides on one config variable. The OS jail is the boundary;
// this is the second layer: keys that make git run a program, read a file
// named by the config, or reach another repository are refused.
func refusedKey(e configEntry) bool {
	name := e.Name
	switch e.Section {
	case "include", "includeif":
		return true // pulls config from anywhere
	case "filter":
		return true // clean/smudge/process run programs on add/status
	case "diff":
		return name == "external" || name == "textconv" || name == "command" || name == "orderfile"
	case "merge":
		return name == "driver"
	case "trailer":
		return name == "cmd" || name == "command" // run on commit --trailer
	case "core":
		// fsmonitor, hooksPath, pager, editor, sshCommand and askPass are
		// overridden on the command line (see GitRule) and so allowed.
		switch name {
		case "worktree", "gitproxy", "alternaterefscommand", "excludesfile", "attributesfile":
			return true
		}
	case "commit":
		return name == "template" // a file read into the message
	case "mailmap", "blame":
		return name == "file" || name == "blob" || name == "ignorerevsfile"
	case "credential":
		return name == "helper"
	case "remote":
		return name == "uploadpack" || name == "receivepack" || name == "proxy" || name == "vcs"
	case "submodule":
		return name == "update"
	case "man", "web", "browser", "difftool", "mergetool", "gpg", "uploadpack", "uploadarchive",
		"sequence", "hook", "interactive", "sendemail", "alias", "pager", "instaweb", "gui", "guitool":
		return true
	}
	return false
}
