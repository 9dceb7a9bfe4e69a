// Package wasitest holds what the tests of the WASI implementations share
// to run the WebAssembly wasi-testsuite (prebuilt data in
// ../shared/wasi-testsuite; see its README): where the suite is, the
// expectations of a case, and loading a case's root into a vfs.FS.
package wasitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

// Dir returns the suite directory: $WASI_TESTSUITE_DIR, else
// shared/wasi-testsuite beside the repository, reached from a package
// that is depth folders below the repository root.
func Dir(depth int) string {
	if d := os.Getenv("WASI_TESTSUITE_DIR"); d != "" {
		return d
	}
	parts := make([]string, 0, depth+3)
	for i := 0; i <= depth; i++ {
		parts = append(parts, "..")
	}
	return filepath.Join(append(parts, "shared", "wasi-testsuite")...)
}

// Case is the expectations of one test (NAME.json beside NAME.wasm);
// missing fields take the suite's defaults.
type Case struct {
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`
	Root     string            `json:"root"`
	ExitCode uint32            `json:"exit_code"`
	Stdout   *string           `json:"stdout"`
}

// Check compares a finished run with the case: runErr is the error of a
// run that did not end with an exit status (nil when it did), code the
// exit status. The error says what differs, with the end of stderr.
func (c Case) Check(runErr error, code uint32, stdout, stderr string) error {
	if runErr != nil {
		msg, _, _ := strings.Cut(runErr.Error(), "\n") // drop the wasm stack trace
		return fmt.Errorf("run: %s (stderr %q)", msg, tail(stderr))
	}
	if code != c.ExitCode {
		return fmt.Errorf("exit code %d, want %d (stderr %q)", code, c.ExitCode, tail(stderr))
	}
	if c.Stdout != nil && stdout != *c.Stdout {
		return fmt.Errorf("stdout %q, want %q", stdout, *c.Stdout)
	}
	return nil
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		s = "..." + s[len(s)-300:]
	}
	return s
}

// LoadCase reads the expectations of the test wasmPath (none: defaults).
func LoadCase(wasmPath string) (Case, error) {
	var c Case
	js, err := os.ReadFile(strings.TrimSuffix(wasmPath, ".wasm") + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	return c, json.Unmarshal(js, &c)
}

// CopyTree copies the host directory src into fsys at "/", skipping
// *.cleanup leftovers and adding owner write permission (the shared suite
// data is read-only on the host; the tests write into their root).
func CopyTree(fsys vfs.FS, src string) error {
	return copyTree(fsys, src, false)
}

// CopyTreeExact copies the host directory src into fsys at "/" with the
// host's permission bits, whatever the umask of fsys.
func CopyTreeExact(fsys vfs.FS, src string) error {
	return copyTree(fsys, src, true)
}

func copyTree(fsys vfs.FS, src string, exact bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		dst := "/" + filepath.ToSlash(rel)
		if !exact && strings.HasSuffix(d.Name(), ".cleanup") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		perm := info.Mode().Perm()
		switch {
		case d.IsDir():
			if !exact {
				return fsys.Mkdir(dst, perm|0o700)
			}
			if err := fsys.Mkdir(dst, perm); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return fsys.SymlinkIfPossible(target, dst)
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if !exact {
				perm |= 0o600
			}
			f, err := fsys.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
			if err != nil {
				return err
			}
			if _, err := f.Write(data); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil || !exact {
				return err
			}
		}
		return fsys.Chmod(dst, perm) // past the umask
	})
}

// Cases returns the suite's modules (assemblyscript, c and rust, sorted)
// of the suite at Dir(depth); it skips t when the suite is absent and
// fails it when the suite holds no case.
func Cases(t testing.TB, depth int) []string {
	t.Helper()
	dir := Dir(depth)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("wasi-testsuite not found at %s (set WASI_TESTSUITE_DIR): %v", dir, err)
	}
	var cases []string
	for _, lang := range []string{"assemblyscript", "c", "rust"} {
		ms, _ := filepath.Glob(filepath.Join(dir, lang, "*.wasm"))
		cases = append(cases, ms...)
	}
	sort.Strings(cases)
	if len(cases) == 0 {
		t.Fatalf("no test cases under %s", dir)
	}
	return cases
}

// Tally runs every case with run, logs "label: passed/total" and the
// failures, and fails t below floor.
func Tally(t testing.TB, label string, cases []string, floor int, run func(wasmPath string) error) {
	t.Helper()
	passed := 0
	var failures []string
	for _, wasmPath := range cases {
		name := filepath.Base(filepath.Dir(wasmPath)) + "/" + strings.TrimSuffix(filepath.Base(wasmPath), ".wasm")
		if err := run(wasmPath); err != nil {
			failures = append(failures, fmt.Sprintf("  %s: %v", name, err))
			continue
		}
		passed++
	}
	t.Logf("%s: %d/%d passed", label, passed, len(cases))
	for _, f := range failures {
		t.Log(f)
	}
	if passed < floor {
		t.Errorf("%s: %d passed, floor is %d", label, passed, floor)
	}
}
