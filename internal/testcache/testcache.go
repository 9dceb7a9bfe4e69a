// Package testcache keeps the tests of this module out of the user's cache
// directory. The tests compile the tool modules (hundreds of MB of machine
// code), build test guests and start engines, all under
// os.UserCacheDir(); a package's TestMain calls Main (or Setup) so that
// for its tests the user cache directory is a directory of their own:
//
//	func TestMain(m *testing.M) { testcache.Main(m) }
//
// By default that is a temporary directory, removed when the tests end:
// the package's tests compile each module once and share it. With
// WASMBOX_TEST_CACHE_DIR set (CI sets it for a whole `go test ./...`),
// every package uses that directory and leaves it in place, so that the
// packages compile each module once between them.
//
// The go command's own caches keep their places: GOCACHE, GOMODCACHE,
// GOPATH and GOENV are pinned to the values they had before, so a test
// that runs `go build` still uses the warm build cache.
package testcache

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"testing"
)

// SharedEnv names a directory that the tests of every package use as
// their cache directory, and leave in place.
const SharedEnv = "WASMBOX_TEST_CACHE_DIR"

// activeEnv is set in the environment of the tests (and so of every
// process they start: fuzz workers, the test binary run as the CLI or an
// engine) to the directory in use; such a process uses it as it is.
const activeEnv = "WASMBOX_TEST_CACHE_ACTIVE"

// Main runs the tests with Setup's cache directory and exits with their
// status.
func Main(m *testing.M) {
	done := Setup()
	code := m.Run()
	done()
	os.Exit(code)
}

// Setup points the user cache directory of this process (and of the
// processes it starts) at a directory of the tests' own, and returns the
// function that removes it (a no-op for a shared or inherited one). It
// exits the process if no such directory can be made: tests must not
// fall back to the user's cache.
func Setup() (cleanup func()) {
	if d := os.Getenv(activeEnv); d != "" && filepath.IsAbs(d) {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return func() {}
		}
	}
	pinGoEnv()
	dir, owned := os.Getenv(SharedEnv), false
	if dir != "" {
		if !filepath.IsAbs(dir) {
			fatal(fmt.Errorf("%s=%s: not an absolute path", SharedEnv, dir))
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			fatal(err)
		}
	} else {
		var err error
		if dir, err = os.MkdirTemp("", "wasmbox-test-cache-"); err != nil {
			fatal(err)
		}
		owned = true
	}
	set := func(k, v string) {
		if err := os.Setenv(k, v); err != nil {
			fatal(err)
		}
	}
	set(activeEnv, dir)
	// os.UserCacheDir: $XDG_CACHE_HOME on Linux and the BSDs,
	// $HOME/Library/Caches on macOS.
	set("XDG_CACHE_HOME", dir)
	if goruntime.GOOS == "darwin" || goruntime.GOOS == "ios" {
		home := filepath.Join(dir, "home")
		if err := os.MkdirAll(filepath.Join(home, "Library", "Caches"), 0o700); err != nil {
			fatal(err)
		}
		set("HOME", home)
	}
	if got, err := os.UserCacheDir(); err != nil || !within(got, dir) {
		fatal(fmt.Errorf("the user cache directory is %q (%v), not under %s", got, err, dir))
	}
	if !owned {
		return func() {}
	}
	return func() { removeAll(dir) }
}

// pinGoEnv sets GOCACHE, GOMODCACHE, GOPATH and GOENV to the values the go
// command has now, before the cache directory and HOME change under it.
func pinGoEnv() {
	vars := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV"}
	goBin := filepath.Join(goruntime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	out, err := exec.Command(goBin, append([]string{"env", "-json"}, vars...)...).Output()
	vals := map[string]string{}
	if err == nil {
		err = json.Unmarshal(out, &vals)
	}
	if err != nil {
		// No go command (a test binary run by hand): the defaults it
		// would have used.
		if base, err := os.UserCacheDir(); err == nil {
			vals["GOCACHE"] = filepath.Join(base, "go-build")
		}
	}
	for _, k := range vars {
		if os.Getenv(k) == "" && vals[k] != "" {
			os.Setenv(k, vals[k])
		}
	}
}

func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && filepath.IsLocal(rel)
}

// removeAll removes dir, making read-only directories writable first
// (the go command's module cache is read-only).
func removeAll(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(os.Stderr, "testcache: %v\n", err)
	}
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "testcache: %v\n", err)
	os.Exit(2)
}
