package fileutils

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFindNameOnlySameAsStat checks find's walk without lstat (an
// expression of names, paths and actions only takes the entries' types
// from the directory listing): its output equals that of the same
// expression with a primary that needs lstat and is always true
// (-mtime -100000), on a tree with files, directories, a symbolic link
// to a directory (not followed), a dangling link and an empty directory.
func TestFindNameOnlySameAsStat(t *testing.T) {
	dir := t.TempDir()
	when := time.Date(2023, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, name := range []string{"t/a.txt", "t/b.go", "t/sub/c.txt", "t/sub/deep/d.txt", "t/z/e.txt", "t/.hidden.txt"} {
		mustWrite(t, filepath.Join(dir, name), "x\n", 0o644, when)
	}
	os.MkdirAll(filepath.Join(dir, "t", "empty"), 0o755)
	if err := os.Symlink("sub", filepath.Join(dir, "t", "link")); err != nil {
		t.Fatal(err)
	}
	os.Symlink("missing", filepath.Join(dir, "t", "dangling.txt"))
	for _, expr := range [][]string{
		{},
		{"-name", "*.txt"},
		{"-iname", "*.TXT", "-print"},
		{"-path", "*sub*", "-prune", "-o", "-name", "*.txt", "-print"},
		{"-depth", "-name", "*"},
		{"-mindepth", "2", "-maxdepth", "2"},
		{"(", "-name", "a*", "-o", "-name", "d*", ")", "-print0"},
		{"-regex", ".*/[a-c]\\..*"},
		{"-name", "sub", "-print", "-quit"},
	} {
		fast, ferr, fst := run(t, dir, "", append([]string{"find", "t"}, expr...)...)
		// The stat-needing primary goes first, so that -prune, -quit and
		// the actions still see the same expression after it.
		slow, serr, sst := run(t, dir, "", append([]string{"find", "t", "-mtime", "-100000"}, expr...)...)
		if fast != slow || ferr != serr || fst != sst {
			t.Errorf("find t %s: %q %q %d; with lstat: %q %q %d", strings.Join(expr, " "), fast, ferr, fst, slow, serr, sst)
		}
		if fast == "" {
			t.Errorf("find t %s printed nothing", strings.Join(expr, " "))
		}
	}
}
