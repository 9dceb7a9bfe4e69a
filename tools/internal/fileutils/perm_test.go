package fileutils

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// modeOf is the POSIX mode bits of a file (07777).
func modeOf(t *testing.T, p string) uint32 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return unixMode(fi.Mode())
}

// TestChmodModes checks the mode arithmetic of chmod, its -v/-c reports
// and the umask "surprise" diagnostic against GNU chmod 9.1 (umask 022).
func TestChmodModes(t *testing.T) {
	oldMask := syscall.Umask(0o022)
	defer syscall.Umask(oldMask)
	tests := []struct {
		name       string
		start      uint32
		dir        bool
		args       []string
		want       uint32
		out, errs  string
		status     int
		skipNonDir bool
	}{
		{name: "octal", start: 0o644, args: []string{"-v", "755"}, want: 0o755,
			out: "mode of 'f' changed from 0644 (rw-r--r--) to 0755 (rwxr-xr-x)\n"},
		{name: "retained", start: 0o644, args: []string{"-v", "644"}, want: 0o644,
			out: "mode of 'f' retained as 0644 (rw-r--r--)\n"},
		{name: "changes only", start: 0o644, args: []string{"-c", "a+r"}, want: 0o644},
		{name: "dash w", start: 0o644, args: []string{"-w"}, want: 0o444},
		{name: "umask surprise", start: 0o666, args: []string{"-v", "-w"}, want: 0o466,
			out:    "mode of 'f' changed from 0666 (rw-rw-rw-) to 0466 (r--rw-rw-)\n",
			errs:   "chmod: f: new permissions are r--rw-rw-, not r--r--r--\n",
			status: 1},
		{name: "plus w no surprise", start: 0o466, args: []string{"-v", "+w"}, want: 0o666,
			out: "mode of 'f' changed from 0466 (r--rw-rw-) to 0666 (rw-rw-rw-)\n"},
		{name: "copy who", start: 0o640, args: []string{"o=u"}, want: 0o646},
		{name: "capital X file", start: 0o644, args: []string{"a+X"}, want: 0o644},
		{name: "capital X exec", start: 0o744, args: []string{"a+X"}, want: 0o755},
		{name: "capital X dir", start: 0o700, dir: true, args: []string{"go+X"}, want: 0o711},
		{name: "setuid", start: 0o755, args: []string{"u+s"}, want: 0o4755},
		{name: "setgid kept on dir", start: 0o2755, dir: true, args: []string{"750"}, want: 0o2750},
		{name: "setgid cleared by 5 digits", start: 0o2755, dir: true, args: []string{"00750"}, want: 0o750},
		{name: "setgid cleared on file", start: 0o2755, args: []string{"750"}, want: 0o750},
		{name: "sticky", start: 0o777, dir: true, args: []string{"+t"}, want: 0o1777},
		{name: "invalid", start: 0o644, args: []string{"u+q"}, want: 0o644,
			errs: "chmod: invalid mode: 'u+q'\nTry 'chmod --help' for more information.\n", status: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			if tc.dir {
				if err := os.Mkdir(p, 0o700); err != nil {
					t.Fatal(err)
				}
			} else {
				mustWrite(t, p, "x", 0o600, time.Time{})
			}
			if err := os.Chmod(p, fileMode(tc.start)); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"chmod"}, tc.args...)
			out, errs, st := run(t, dir, "", append(args, "f")...)
			if st != tc.status || out != tc.out || errs != tc.errs {
				t.Errorf("chmod %v: status %d out %q err %q; want %d %q %q", tc.args, st, out, errs, tc.status, tc.out, tc.errs)
			}
			if got := modeOf(t, p); got != tc.want {
				t.Errorf("mode %04o, want %04o", got, tc.want)
			}
		})
	}
}

// TestChmodRecursiveSkipsLinks: chmod -R changes the tree but not through
// symbolic links met on the way, and follows a command-line link.
func TestChmodRecursiveSkipsLinks(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir+"/d/a", "a", 0o644, time.Time{})
	mustWrite(t, dir+"/outside", "o", 0o644, time.Time{})
	if err := os.Symlink("../outside", dir+"/d/l"); err != nil {
		t.Fatal(err)
	}
	out, errs, st := run(t, dir, "", "chmod", "-R", "-v", "go-r", "d")
	if st != 0 || errs != "" {
		t.Fatalf("status %d, stderr %q", st, errs)
	}
	want := "mode of 'd' changed from 0755 (rwxr-xr-x) to 0711 (rwx--x--x)\n" +
		"mode of 'd/a' changed from 0644 (rw-r--r--) to 0600 (rw-------)\n" +
		"neither symbolic link 'd/l' nor referent has been changed\n"
	if out != want {
		t.Errorf("stdout\n%s\nwant\n%s", out, want)
	}
	if got := modeOf(t, dir+"/outside"); got != 0o644 {
		t.Errorf("link target changed to %04o", got)
	}
	if _, errs, st := run(t, dir, "", "chmod", "600", "d/l"); st != 0 || errs != "" {
		t.Fatalf("command-line link: status %d, %q", st, errs)
	}
	if got := modeOf(t, dir+"/outside"); got != 0o600 {
		t.Errorf("command-line link not followed: %04o", got)
	}
	os.Symlink("nope", dir+"/dangling")
	if _, errs, st := run(t, dir, "", "chmod", "600", "dangling"); st != 1 || errs != "chmod: cannot operate on dangling symlink 'dangling'\n" {
		t.Errorf("dangling: status %d, %q", st, errs)
	}
}

// TestPermits is the access(2) decision used by find -readable/-writable/
// -executable.
func TestPermits(t *testing.T) {
	tests := []struct {
		m, fuid, fgid, uid, gid uint32
		dir                     bool
		want                    uint32
		ok                      bool
	}{
		{0o644, 1000, 1000, 1000, 1000, false, 2, true},
		{0o644, 0, 0, 1000, 1000, false, 2, false}, // root's /etc/passwd
		{0o644, 0, 0, 1000, 1000, false, 4, true},
		{0o640, 0, 1000, 1000, 1000, false, 4, true},     // group
		{0o604, 0, 1000, 1000, 1000, false, 4, false},    // group bits win over other
		{0o077, 1000, 1000, 1000, 1000, false, 4, false}, // owner bits only
		{0o1777, 0, 0, 1000, 1000, true, 3, true},        // /tmp
		{0o600, 1000, 1000, 0, 0, false, 6, true},        // root reads/writes anything
		{0o644, 1000, 1000, 0, 0, false, 1, false},       // but executes only with an x bit
		{0o700, 1000, 1000, 0, 0, true, 1, true},
	}
	for _, tc := range tests {
		if got := permits(tc.m, tc.fuid, tc.fgid, tc.uid, tc.gid, tc.dir, tc.want); got != tc.ok {
			t.Errorf("permits(%04o, %d:%d by %d:%d, %d) = %v, want %v", tc.m, tc.fuid, tc.fgid, tc.uid, tc.gid, tc.want, got, tc.ok)
		}
	}
}

// TestChownRules: the rules of an unprivileged user, whatever the host
// filesystem would allow.
func TestChownRules(t *testing.T) {
	c := &chownState{self: 1000, groups: map[uint32]bool{1000: true, 27: true}}
	tests := []struct {
		newUID, newGID, fileUID, fileGID int
		ok                               bool
	}{
		{1000, -1, 1000, 1000, true}, // to self: a no-op
		{0, -1, 1000, 1000, false},   // giving away
		{-1, 27, 1000, 1000, true},   // to one of the user's groups
		{-1, 0, 1000, 1000, false},   // to another group
		{-1, 1000, 0, 0, false},      // not the owner
		{1000, 1000, 0, 1000, false}, // taking a file
		{-1, -1, 1000, 1000, true},   // nothing asked
		{-1, 1000, 1000, 0, true},    // into the primary group
		{1000, 27, 1000, 1000, true}, // both
		{2000, 1000, 1000, 1000, false},
	}
	for _, tc := range tests {
		c.uid, c.gid = tc.newUID, tc.newGID
		if got := c.permitted(tc.fileUID, tc.fileGID); got != tc.ok {
			t.Errorf("chown %d:%d of a file of %d:%d: permitted %v, want %v", tc.newUID, tc.newGID, tc.fileUID, tc.fileGID, got, tc.ok)
		}
	}
	root := &chownState{self: 0, uid: 5, gid: 5}
	if !root.permitted(1000, 1000) {
		t.Error("root may give files away")
	}
}

// TestInstallModes: install sets 0755 by default, -m otherwise, replaces
// read-only destinations, and -d/-D create directories.
func TestInstallModes(t *testing.T) {
	oldMask := syscall.Umask(0o022)
	defer syscall.Umask(oldMask)
	dir := t.TempDir()
	mustWrite(t, dir+"/a", "new\n", 0o600, time.Time{})
	mustWrite(t, dir+"/ro", "old\n", 0o444, time.Time{})
	if _, errs, st := run(t, dir, "", "install", "a", "b"); st != 0 || errs != "" {
		t.Fatalf("install a b: %d %q", st, errs)
	}
	if got := modeOf(t, dir+"/b"); got != 0o755 {
		t.Errorf("default mode %04o", got)
	}
	if _, errs, st := run(t, dir, "", "install", "-m", "u=rw,go=r", "a", "ro"); st != 0 || errs != "" {
		t.Fatalf("install over read-only: %d %q", st, errs)
	}
	if got := modeOf(t, dir+"/ro"); got != 0o644 {
		t.Errorf("-m mode %04o", got)
	}
	if b, _ := os.ReadFile(dir + "/ro"); string(b) != "new\n" {
		t.Errorf("content %q", b)
	}
	if _, errs, st := run(t, dir, "", "install", "-d", "-m", "700", "x/y"); st != 0 || errs != "" {
		t.Fatalf("install -d: %d %q", st, errs)
	}
	if got, parent := modeOf(t, dir+"/x/y"), modeOf(t, dir+"/x"); got != 0o700 || parent != 0o755 {
		t.Errorf("install -d modes %04o (parent %04o)", got, parent)
	}
	if _, errs, st := run(t, dir, "", "install", "-D", "-m", "640", "a", "p/q/r"); st != 0 || errs != "" {
		t.Fatalf("install -D: %d %q", st, errs)
	}
	if got := modeOf(t, dir+"/p/q/r"); got != 0o640 {
		t.Errorf("install -D mode %04o", got)
	}
}

// TestCpModes: a new copy gets the source's mode less the umask (no
// set-id bits); -p keeps them all; an existing destination keeps its own.
func TestCpModes(t *testing.T) {
	oldMask := syscall.Umask(0o022)
	defer syscall.Umask(oldMask)
	dir := t.TempDir()
	mustWrite(t, dir+"/s", "x", 0o755, time.Time{})
	os.Chmod(dir+"/s", fileMode(0o4775))
	mustWrite(t, dir+"/old", "y", 0o600, time.Time{})
	for _, c := range [][]string{{"cp", "s", "plain"}, {"cp", "-p", "s", "kept"}, {"cp", "s", "old"},
		{"cp", "--preserve=mode", "s", "pmode"}, {"cp", "-a", "--no-preserve=mode", "s", "nomode"}} {
		if _, errs, st := run(t, dir, "", c...); st != 0 || errs != "" {
			t.Fatalf("%v: %d %q", c, st, errs)
		}
	}
	for name, want := range map[string]uint32{"plain": 0o755, "kept": 0o4775, "old": 0o600, "pmode": 0o4775, "nomode": 0o755} {
		if got := modeOf(t, dir+"/"+name); got != want {
			t.Errorf("%s: mode %04o, want %04o", name, got, want)
		}
	}
}

// TestChownTraversal: -R -P changes links themselves and never follows
// them; -L follows every link to a directory, each directory once, so a
// loop terminates.
func TestChownTraversal(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir+"/d/a", "a", 0o644, time.Time{})
	mustWrite(t, dir+"/other/b", "b", 0o644, time.Time{})
	os.Symlink("..", dir+"/d/up")
	os.Symlink("../other", dir+"/d/o")
	self := fmt.Sprint(os.Getuid())
	out, errs, st := run(t, dir, "", "chown", "-R", "-v", self, "d")
	if st != 0 || errs != "" {
		t.Fatalf("-R: %d %q", st, errs)
	}
	if strings.Contains(out, "other/b") || strings.Count(out, "\n") != 4 {
		t.Errorf("-R -P walked through a link:\n%s", out)
	}
	out, errs, st = run(t, dir, "", "chown", "-R", "-L", "-v", self, "d")
	if st != 0 || errs != "" {
		t.Fatalf("-R -L: %d %q", st, errs)
	}
	if !strings.Contains(out, "'d/o/b'") || strings.Contains(out, "d/up/d/up") {
		t.Errorf("-R -L output:\n%s", out)
	}
}

// TestTarModes: tar records the real modes and restores them on
// extraction, the umask applied unless -p, directories' modes set after
// their members.
func TestTarModes(t *testing.T) {
	oldMask := syscall.Umask(0o022)
	defer syscall.Umask(oldMask)
	dir := t.TempDir()
	mustWrite(t, dir+"/src/ro/f", "f", 0o644, time.Time{})
	mustWrite(t, dir+"/src/x", "x", 0o777, time.Time{})
	os.Chmod(dir+"/src/x", fileMode(0o4777))
	os.Chmod(dir+"/src/ro", 0o555)
	defer os.Chmod(dir+"/src/ro", 0o755)
	if _, errs, st := run(t, dir+"/src", "", "tar", "-cf", "../a.tar", "ro", "x"); st != 0 || errs != "" {
		t.Fatalf("tar -c: %d %q", st, errs)
	}
	for _, c := range []struct {
		sub   string
		args  []string
		ro, x uint32
	}{
		{"plain", nil, 0o555, 0o755},
		{"same", []string{"-p"}, 0o555, 0o4777},
	} {
		out := dir + "/" + c.sub
		os.Mkdir(out, 0o755)
		args := append([]string{"tar", "-xf", "../a.tar"}, c.args...)
		if _, errs, st := run(t, out, "", args...); st != 0 || errs != "" {
			t.Fatalf("%v: %d %q", args, st, errs)
		}
		if got := modeOf(t, out+"/ro"); got != c.ro {
			t.Errorf("%s: ro %04o, want %04o", c.sub, got, c.ro)
		}
		if got := modeOf(t, out+"/x"); got != c.x {
			t.Errorf("%s: x %04o, want %04o", c.sub, got, c.x)
		}
		if _, err := os.Stat(out + "/ro/f"); err != nil {
			t.Errorf("%s: member of the read-only directory: %v", c.sub, err)
		}
		os.Chmod(out+"/ro", 0o755)
	}
}
