package fileutils

import (
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// TestNoPanics runs every command with odd and hostile arguments: each run
// must end with a status (usually an error message), never a panic.
func TestNoPanics(t *testing.T) {
	t.Setenv("WASMBOX_STATFS", "1048576 1024 100 3") // keep df from walking the host's /
	dir := t.TempDir()
	mustWrite(t, dir+"/f", "line1\nline2\n", 0o644, time.Time{})
	mustWrite(t, dir+"/d/g", "x", 0o644, time.Time{})
	mustWrite(t, dir+"/p.diff", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-line1\n+LINE\n line2\n@@ garbage\n", 0o644, time.Time{})
	odd := [][]string{
		{}, {"-"}, {"--"}, {""}, {"-", "-"}, {"f", "f"}, {"d", "d"}, {"nope"}, {"f", "nope", "d"},
		{"-x"}, {"--bogus"}, {"--help"}, {"--version"}, {"-n", "-1"}, {"-c", "0"}, {"-s", "-5", "f"},
		{"-l", "99999999999999999999", "f"}, {"-n", "x", "f"}, {"-t", "", "f"}, {"-d", "", "f"},
		{"-C", "nope", "f"}, {"-p", "-1"}, {"-U", "-3", "f", "f"}, {"-w0", "f"}, {"-c0", "f"},
		{"-g", "0", "f"}, {"-b", "0", "f"}, {"-a", "0", "f"}, {"-N", "-1", "f"}, {"-j", "99", "f"},
		{"-r", "d", "d/sub"}, {"-L", "0"}, {"-I", "["}, {"-name"}, {"(", ")"}, {"-perm", "-"},
		{"-printf", "%", "f"}, {"-printf", "%T", "f"}, {"-newerXY", "f"}, {"-size", "+"},
		{"-i", "p.diff"}, {"-p9", "-i", "p.diff"}, {"-R", "-i", "p.diff"}, {"-xf", "f"}, {"-tvf", "f"},
		{"-l", "f"}, {"-t", "f"}, {"f", "-o", "f"}, {"-n", "l/0", "f"}, {"-n", "r/x", "f"}, {"-n", "3/2", "f"},
		{"--format=%", "f"}, {"-c", "%Z%W%w%", "f"}, {"--printf=\\x\\0\\777", "f"}, {"-s", "%0", "f"},
		{"--time-style=+%", "-l", "f"}, {"--sort=", "f"}, {"-m", "888", "x"}, {"-m", "u+q", "x"},
		{"-d", "@x", "f"}, {"-t", "9999999999999", "f"}, {"-e", "-f", "-m", ""}, {"--relative-to=", "f"},
	}
	for _, name := range fileCommands {
		fn, ok := cmd.Lookup(name)
		if !ok {
			t.Fatalf("%s not registered", name)
		}
		for _, args := range odd {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s %s: panic: %v", name, strings.Join(args, " "), r)
					}
				}()
				_, _, st := run(t, dir, "stdin data\n", append([]string{name}, args...)...)
				if st < 0 || st > 255 {
					t.Errorf("%s %v: status %d", name, args, st)
				}
				_ = fn
			}()
		}
	}
}
