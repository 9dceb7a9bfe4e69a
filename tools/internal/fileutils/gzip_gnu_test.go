package fileutils

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestGzipHeaderAsGNU: what gzip writes around the compressed data is GNU
// gzip's, byte for byte: the header (flags, mtime, the XFL of the level,
// OS 3 for Unix: it was 0xff), the file name, and the trailer (CRC-32,
// size). The deflate data between them is Go's, not zlib's.
func TestGzipHeaderAsGNU(t *testing.T) {
	gnu, err := exec.LookPath("gzip")
	if err != nil {
		t.Skip("no GNU gzip on the host")
	}
	dir := t.TempDir()
	when := time.Date(2024, 2, 3, 4, 5, 6, 0, time.UTC)
	mustWrite(t, filepath.Join(dir, "a.txt"), "hello gzip\nhello gzip\n", 0o644, when)
	for _, args := range [][]string{
		{"-9", "-c", "a.txt"},
		{"-1", "-c", "a.txt"},
		{"-c", "a.txt"},
		{"-9", "-n", "-c", "a.txt"},
		{"-9", "-c"}, // stdin, a pipe: no name, no time
	} {
		stdin := ""
		if args[len(args)-1] == "-c" {
			stdin = "from stdin\n"
		}
		got, errs, st := run(t, dir, stdin, append([]string{"gzip"}, args...)...)
		c := exec.Command(gnu, args...)
		c.Dir = dir
		c.Stdin = bytes.NewReader([]byte(stdin))
		want, err := c.Output()
		if err != nil || st != 0 {
			t.Fatalf("gzip %v: exit %d %q; GNU: %v", args, st, errs, err)
		}
		head := func(b []byte) []byte {
			if len(b) < 18 {
				return b
			}
			n := 10
			if b[3]&0x08 != 0 { // FNAME
				n += bytes.IndexByte(b[10:], 0) + 1
			}
			return b[:n]
		}
		g, w := []byte(got), want
		if !bytes.Equal(head(g), head(w)) || !bytes.Equal(g[len(g)-8:], w[len(w)-8:]) {
			t.Errorf("gzip %v:\n got header % x trailer % x\nwant header % x trailer % x (GNU)", args, head(g), g[len(g)-8:], head(w), w[len(w)-8:])
		}
	}
}
