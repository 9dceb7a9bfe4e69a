package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/wasi/wasitest"
)

// cliTestsuiteFloor is how many of the 72 wasi-testsuite cases must pass
// through the CLI (`wasmbox exec --mount DIR:/:rw`), as they do with the
// in-memory harness of wasi/preview1. Never lower it to make a run pass.
const cliTestsuiteFloor = 72

// TestExecWASITestsuite runs every case of the WebAssembly wasi-testsuite
// the way a user would run it with `wazero run`: through `wasmbox exec`,
// the case's arguments after "--", its environment as --env flags and a
// fresh host copy of its root mounted read-write at "/" (and nothing more
// for a case without a root: the same command line as wazero run's).
func TestExecWASITestsuite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	cases := wasitest.Cases(t, 2)
	_, cache := fixtures(t)
	wasitest.Tally(t, "wasmbox exec wasi-testsuite", cases, cliTestsuiteFloor, func(wasmPath string) error {
		return runCLISuiteCase(t, cache, wasmPath)
	})
}

func runCLISuiteCase(t *testing.T, cache, wasmPath string) error {
	tc, err := wasitest.LoadCase(wasmPath)
	if err != nil {
		return fmt.Errorf("bad json: %w", err)
	}
	args := []string{"--cachedir", cache, "exec"}
	if tc.Root != "" {
		root := t.TempDir()
		if err := copyHostTree(filepath.Join(filepath.Dir(wasmPath), tc.Root), root); err != nil {
			return fmt.Errorf("load root: %w", err)
		}
		args = append(args, "--mount", root+":/:rw")
	}
	// No flag for a case without a root: like the suite's runners,
	// exec preopens nothing then (c/sock_shutdown-invalid_fd wants
	// descriptor 3 closed).
	keys := make([]string, 0, len(tc.Env))
	for k := range tc.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--env", k+"="+tc.Env[k])
	}
	// The guest sees argv[0] as given: the suite's runners pass the
	// file's name.
	args = append(args, wasmPath, "--")
	args = append(args, tc.Args...)
	var stdout, stderr bytes.Buffer
	code := doMain(args, strings.NewReader(""), &stdout, &stderr)
	return tc.Check(nil, uint32(code), stdout.String(), stderr.String())
}

// copyHostTree copies the host directory src into dst, skipping *.cleanup
// leftovers and adding owner write permission (the shared suite data may
// be read-only; the cases write into their root).
func copyHostTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		if strings.HasSuffix(d.Name(), ".cleanup") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, info.Mode().Perm()|0o600)
		}
	})
}
