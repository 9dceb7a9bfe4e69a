package fileutils

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// run executes a registered command in-process in dir and returns its
// stdout, stderr and exit status.
func run(t *testing.T, dir, stdin string, args ...string) (string, string, int) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	fn, ok := cmd.Lookup(args[0])
	if !ok {
		t.Fatalf("no command %s", args[0])
	}
	var out, errb bytes.Buffer
	st := fn(&cmd.Env{Args: args, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return out.String(), errb.String(), st
}

func mustWrite(t *testing.T, path, data string, mode os.FileMode, mtime time.Time) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, mode)
	if !mtime.IsZero() {
		os.Chtimes(path, mtime, mtime)
	}
}

// lsFixture builds the directory the ls -l expectations below were taken
// from with GNU ls 9.1 (TZ=UTC LC_ALL=C).
func lsFixture(t *testing.T) string {
	time.Local = time.UTC
	dir := t.TempDir()
	old := lsOld()
	mustWrite(t, dir+"/small", "hello\n", 0o644, old)
	mustWrite(t, dir+"/mid", strings.Repeat("\x00", 1536), 0o755, old)
	mustWrite(t, dir+"/big", strings.Repeat("\x00", 2000000), 0o600, time.Now().Add(-20*24*time.Hour).Truncate(24*time.Hour).Add(10*time.Hour))
	os.Symlink("small", dir+"/link")
	return dir
}

// lsOld is a time more than six months ago, so ls shows its year.
func lsOld() time.Time {
	y := time.Now().Year() - 2
	return time.Date(y, 1, 2, 3, 4, 5, 0, time.UTC)
}

func TestLsLong(t *testing.T) {
	dir := lsFixture(t)
	recent := time.Now().Add(-20 * 24 * time.Hour).Truncate(24 * time.Hour).Add(10 * time.Hour)
	recentStr := recent.Format("Jan _2 15:04")
	old := lsOld()
	oldStr := old.Format("Jan _2  2006")
	oldISO := old.Format("2006-01-02 15:04")
	oldYM := old.Format("2006/01")
	lfi, err := os.Lstat(dir + "/link")
	if err != nil {
		t.Fatal(err)
	}
	linkTime := lfi.ModTime()
	linkStr := linkTime.Format("Jan _2 15:04")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"ls", "-lgG", "big", "link", "mid", "small"}, "" +
			"-rw------- 1 2000000 " + recentStr + " big\n" +
			"lrwxrwxrwx 1       5 " + linkStr + " link -> small\n" +
			"-rwxr-xr-x 1    1536 " + oldStr + " mid\n" +
			"-rw-r--r-- 1       6 " + oldStr + " small\n"},
		{[]string{"ls", "-lgGh", "big", "link", "mid", "small"}, "" +
			"-rw------- 1 2.0M " + recentStr + " big\n" +
			"lrwxrwxrwx 1    5 " + linkStr + " link -> small\n" +
			"-rwxr-xr-x 1 1.5K " + oldStr + " mid\n" +
			"-rw-r--r-- 1    6 " + oldStr + " small\n"},
		{[]string{"ls", "-lgGF", "--time-style=long-iso", "mid", "small", "link"}, "" +
			"lrwxrwxrwx 1    5 " + linkTime.Format("2006-01-02 15:04") + " link -> small\n" +
			"-rwxr-xr-x 1 1536 " + oldISO + " mid*\n" +
			"-rw-r--r-- 1    6 " + oldISO + " small\n"},
		{[]string{"ls", "-gGS", "--time-style=+%Y/%m", "big", "mid", "small", "link"}, "" +
			"-rw------- 1 2000000 " + recent.Format("2006/01") + " big\n" +
			"-rwxr-xr-x 1    1536 " + oldYM + " mid\n" +
			"-rw-r--r-- 1       6 " + oldYM + " small\n" +
			"lrwxrwxrwx 1       5 " + linkTime.Format("2006/01") + " link -> small\n"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			out, errs, st := run(t, dir, "", tc.args...)
			if out != tc.want || errs != "" || st != 0 {
				t.Errorf("got %q %q %d\nwant %q", out, errs, st, tc.want)
			}
		})
	}
	// The full-time listing of the directory sorted oldest first: ties on
	// time are broken by name, and -r reverses both.
	out, _, _ := run(t, dir, "", "ls", "-lgGtr", "--full-time")
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "total ") || len(lines) != 6 {
		t.Fatalf("bad listing %q", out)
	}
	want := []string{
		"-rw-r--r-- 1       6 " + old.Format("2006-01-02 15:04:05.000000000 -0700") + " small",
		"-rwxr-xr-x 1    1536 " + old.Format("2006-01-02 15:04:05.000000000 -0700") + " mid",
	}
	for i, w := range want {
		if lines[i+1] != w {
			t.Errorf("line %d: got %q want %q", i+1, lines[i+1], w)
		}
	}
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 1023: "1023", 1024: "1.0K", 1025: "1.1K", 1536: "1.5K", 10239: "10K",
		10240: "10K", 10241: "11K", 98136: "96K", 1048575: "1.0M", 1048576: "1.0M",
		2000000: "2.0M", 5 << 30: "5.0G",
	} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSymlinks(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir+"/d/f", "data\n", 0o644, time.Time{})
	os.Symlink("d/f", dir+"/lf")
	os.Symlink("d", dir+"/ld")
	os.Symlink("loop2", dir+"/loop1")
	os.Symlink("loop1", dir+"/loop2")
	real, _ := filepath.EvalSymlinks(dir)
	tests := []struct {
		args     []string
		out, err string
		status   int
	}{
		{[]string{"readlink", "lf", "ld"}, "d/f\nd\n", "", 0},
		{[]string{"readlink", "-f", "lf", "ld/f", "ld/nope"}, real + "/d/f\n" + real + "/d/f\n" + real + "/d/nope\n", "", 0},
		{[]string{"readlink", "-e", "ld/nope"}, "", "", 1},
		{[]string{"realpath", "loop1"}, "", "realpath: loop1: Too many levels of symbolic links\n", 1},
		{[]string{"realpath", "-s", "ld/../lf"}, real + "/lf\n", "", 0},
		{[]string{"cat", "lf"}, "data\n", "", 0},
		{[]string{"ls", "-F", "ld", "lf"}, "ld@\nlf@\n", "", 0},
		{[]string{"ls", "ld"}, "f\n", "", 0},
		{[]string{"ls", "-d", "ld"}, "ld\n", "", 0},
	}
	for _, tc := range tests {
		out, errs, st := run(t, dir, "", tc.args...)
		if out != tc.out || errs != tc.err || st != tc.status {
			t.Errorf("%v: got %q %q %d, want %q %q %d", tc.args, out, errs, st, tc.out, tc.err, tc.status)
		}
	}
	// cp -r copies links as links; cp without -r follows them.
	if _, errs, st := run(t, dir, "", "cp", "-r", "ld", "lf", "d"); st != 0 {
		t.Fatalf("cp -r: %s", errs)
	}
	if target, err := os.Readlink(dir + "/d/ld"); err != nil || target != "d" {
		t.Errorf("cp -r did not copy the symlink: %q %v", target, err)
	}
	run(t, dir, "", "cp", "lf", "copy")
	if fi, err := os.Lstat(dir + "/copy"); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("cp did not dereference: %v %v", fi, err)
	}
	// rm -r on a symlink to a directory removes the link, not the target.
	if _, errs, st := run(t, dir, "", "rm", "-r", "ld"); st != 0 {
		t.Fatal(errs)
	}
	if _, err := os.Stat(dir + "/d/f"); err != nil {
		t.Errorf("rm -r followed the symlink: %v", err)
	}
}

func TestDf(t *testing.T) {
	t.Setenv("WASMBOX_STATFS", "268435456 20480 10000 12")
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"df"}, "" +
			"Filesystem     1K-blocks  Used Available Use% Mounted on\n" +
			"wasmbox           262144    20    262124   1% /\n"},
		{[]string{"df", "-h", "."}, "" +
			"Filesystem      Size  Used Avail Use% Mounted on\n" +
			"wasmbox         256M   20K  256M   1% /\n"},
		{[]string{"df", "-i"}, "" +
			"Filesystem     Inodes IUsed IFree IUse% Mounted on\n" +
			"wasmbox         10000    12  9988    1% /\n"},
		{[]string{"df", "-T"}, "" +
			"Filesystem     Type    1K-blocks  Used Available Use% Mounted on\n" +
			"wasmbox        wasmbox    262144    20    262124   1% /\n"},
	}
	for _, tc := range tests {
		out, errs, st := run(t, dir, "", tc.args...)
		if out != tc.want || errs != "" || st != 0 {
			t.Errorf("%v: got %q %q %d\nwant %q", tc.args, out, errs, st, tc.want)
		}
	}
	if _, errs, st := run(t, dir, "", "df", "nope"); st != 1 || errs != "df: nope: No such file or directory\n" {
		t.Errorf("df nope: %q %d", errs, st)
	}
}

func TestDiffHeaderDates(t *testing.T) {
	dir := t.TempDir()
	when := time.Date(2024, 3, 4, 5, 6, 7, 123456789, time.UTC)
	mustWrite(t, dir+"/a", "x\n", 0o644, when)
	mustWrite(t, dir+"/b", "y\n", 0o644, when.Add(time.Second))
	time.Local = time.UTC
	out, _, st := run(t, dir, "", "diff", "-u", "a", "b")
	want := "--- a\t2024-03-04 05:06:07.123456789 +0000\n+++ b\t2024-03-04 05:06:08.123456789 +0000\n@@ -1 +1 @@\n-x\n+y\n"
	if out != want || st != 1 {
		t.Errorf("got %q (%d), want %q", out, st, want)
	}
	out, _, _ = run(t, dir, "", "diff", "-c", "a", "b")
	want = "*** a\t2024-03-04 05:06:07.123456789 +0000\n--- b\t2024-03-04 05:06:08.123456789 +0000\n***************\n*** 1 ****\n! x\n--- 1 ----\n! y\n"
	if out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

// TestFindPerm checks -perm natively: WASI preview 1 reports no permission
// bits (every file looks 0600, every directory 0700), so the golden cases
// cannot exercise it inside the sandbox.
func TestFindPerm(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir+"/rw", "x", 0o644, time.Time{})
	mustWrite(t, dir+"/rx", "x", 0o755, time.Time{})
	mustWrite(t, dir+"/private", "x", 0o600, time.Time{})
	for _, tc := range []struct{ args, want string }{
		{"-perm 644", "./rw\n"},
		{"-perm -444", "./rw\n./rx\n"},
		{"-perm /111", "./rx\n"},
		{"-perm u=rw,go=r", "./rw\n"},
		{"! -perm -o=r", "./private\n"},
	} {
		args := append([]string{"find", ".", "-type", "f"}, strings.Fields(tc.args)...)
		out, errs, st := run(t, dir, "", args...)
		if out != tc.want || errs != "" || st != 0 {
			t.Errorf("find %s: got %q %q %d, want %q", tc.args, out, errs, st, tc.want)
		}
	}
}
