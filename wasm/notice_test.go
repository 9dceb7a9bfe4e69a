package wasm

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoticeNamesEveryModule checks that the repository's NOTICE names every
// module this package ships (go:embed), and that every license file and
// build folder it points to exists: a module added without its license
// entry fails here.
func TestNoticeNamesEveryModule(t *testing.T) {
	b, err := os.ReadFile("../NOTICE")
	if err != nil {
		t.Fatalf("read NOTICE: %v", err)
	}
	notice := string(b)
	var shipped []string
	for _, pat := range []string{"*.wasm", "*/*.wasm", "*/*.zip"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		shipped = append(shipped, m...)
	}
	if len(shipped) < 5 {
		t.Fatalf("found only %d modules under wasm/: %v", len(shipped), shipped)
	}
	for _, f := range shipped {
		if !strings.Contains(notice, filepath.Base(f)) {
			t.Errorf("NOTICE does not name %s (add its source, build and license)", f)
		}
	}
	for _, ref := range regexp.MustCompile(`\b(LICENSES/[A-Za-z0-9.\-]+|build/[a-z]+|third_party/wazero/LICENSE|internal/sh/LICENSE)\b`).FindAllString(notice, -1) {
		if _, err := os.Stat(filepath.Join("..", ref)); err != nil {
			t.Errorf("NOTICE names %s, which does not exist", ref)
		}
	}
	ents, err := os.ReadDir("../LICENSES/debian")
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) == 0 {
		t.Fatal("LICENSES/debian is empty")
	}
}
