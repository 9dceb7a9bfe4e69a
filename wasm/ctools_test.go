package wasm

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCToolsInputs: wasm/ctools/ctools.inputs, written by the build that
// made the committed modules, names every file of build/ctools it read
// with its hash; they must be the files of this tree. An edited build
// script, compat file or patch without `make ctools` fails here (make
// ctools-check proves the bytes by rebuilding, which takes minutes).
func TestCToolsInputs(t *testing.T) {
	inputs, err := os.ReadFile(filepath.Join("ctools", "ctools.inputs"))
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(inputs))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && strings.HasPrefix(f[1], "build/ctools/") {
			recorded[f[1]] = f[0]
		}
	}
	root := filepath.Join("..", "build", "ctools")
	var files []string
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".md") {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join("..", ""), p)
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		switch want, ok := recorded[f]; {
		case !ok:
			t.Errorf("%s is not among the inputs of wasm/ctools: run make ctools and commit", f)
		case want != hex.EncodeToString(sum[:]):
			t.Errorf("%s changed since wasm/ctools was built: run make ctools and commit", f)
		}
	}
	for f := range recorded {
		if !slices.Contains(files, f) {
			t.Errorf("wasm/ctools was built from %s, which is gone: run make ctools and commit", f)
		}
	}
	// The index lines the modules were built with are the ones embedded.
	for _, c := range parseIndex(string(ctoolsIndex)) {
		if got, ok := Lookup(c.Name); !ok || got != c {
			t.Errorf("commands.txt has %+v for %s, wasm/ctools/commands.txt %+v: run make wasm", got, c.Name, c)
		}
	}
}
