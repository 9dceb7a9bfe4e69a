package morecmds

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func runCmd(t *testing.T, stdin []byte, args ...string) ([]byte, string, int) {
	t.Helper()
	fn, ok := cmd.Lookup(args[0])
	if !ok {
		t.Fatalf("no command %s", args[0])
	}
	var out, errb bytes.Buffer
	st := fn(&cmd.Env{Args: args, Stdin: bytes.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return out.Bytes(), errb.String(), st
}

// TestCompressRoundTrip compresses with our xz and bzip2 (whose bytes
// differ from the reference tools', so golden cases cannot pin them) and
// checks that our decompressor, and the host's tool where it exists,
// give the input back.
func TestCompressRoundTrip(t *testing.T) {
	data := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog\n", 2000) + "\x00\xff end")
	for _, tc := range []struct{ comp, decomp, host string }{{"xz", "xzcat", "xz"}, {"bzip2", "bzcat", "bzip2"}} {
		t.Run(tc.comp, func(t *testing.T) {
			z, stderr, st := runCmd(t, data, tc.comp, "-c")
			if st != 0 || stderr != "" {
				t.Fatalf("%s -c: status %d, %s", tc.comp, st, stderr)
			}
			if len(z) >= len(data)/4 {
				t.Errorf("%s: %d bytes compressed to %d", tc.comp, len(data), len(z))
			}
			back, stderr, st := runCmd(t, z, tc.decomp)
			if st != 0 || !bytes.Equal(back, data) {
				t.Fatalf("%s: status %d, %s, round trip differs", tc.decomp, st, stderr)
			}
			if path, err := exec.LookPath(tc.host); err == nil {
				x := exec.Command(path, "-dc")
				x.Stdin = bytes.NewReader(z)
				got, err := x.Output()
				if err != nil || !bytes.Equal(got, data) {
					t.Errorf("host %s -dc of our output: %v", tc.host, err)
				}
			}
		})
	}
}

// TestCompressFile compresses a file in place: the input is replaced by
// NAME.xz (NAME.bz2) unless -k, and decompressing gives it back.
func TestCompressFile(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct{ comp, suffix string }{{"xz", ".xz"}, {"bzip2", ".bz2"}} {
		if err := os.WriteFile("f", []byte("hello\n"), 0o640); err != nil {
			t.Fatal(err)
		}
		if _, stderr, st := runCmd(t, nil, tc.comp, "f"); st != 0 {
			t.Fatalf("%s f: %d %s", tc.comp, st, stderr)
		}
		if _, err := os.Stat("f"); !os.IsNotExist(err) {
			t.Errorf("%s f: input still there (%v)", tc.comp, err)
		}
		if fi, err := os.Stat("f" + tc.suffix); err != nil || fi.Mode().Perm() != 0o640 {
			t.Fatalf("%s f: output %v", tc.comp, err)
		}
		if _, stderr, st := runCmd(t, nil, tc.comp, "-d", "f"+tc.suffix); st != 0 {
			t.Fatalf("%s -d: %d %s", tc.comp, st, stderr)
		}
		if b, err := os.ReadFile(filepath.Join(".", "f")); err != nil || string(b) != "hello\n" {
			t.Errorf("%s -d: %q %v", tc.comp, b, err)
		}
		os.Remove("f")
	}
}
