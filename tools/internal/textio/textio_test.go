package textio

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func TestStrerror(t *testing.T) {
	dir := t.TempDir()
	_, errNoent := os.Open(filepath.Join(dir, "missing"))
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errNoent, "No such file or directory"},
		{syscall.EISDIR, "Is a directory"},
		{syscall.EXDEV, "Invalid cross-device link"},
		{errors.New("something else"), "something else"},
	} {
		if got := Strerror(tc.err); got != tc.want {
			t.Errorf("Strerror(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestInputs(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(f, []byte("file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &cmd.Env{Args: []string{"x"}, Stdin: strings.NewReader("stdin\n")}
	if got := Inputs(nil); len(got) != 1 || got[0] != "-" {
		t.Errorf("Inputs(nil) = %q", got)
	}
	if b, err := ReadAllInput(e, "-"); err != nil || string(b) != "stdin\n" {
		t.Errorf("ReadAllInput(-) = %q, %v", b, err)
	}
	if b, err := ReadAllInput(e, f); err != nil || string(b) != "file\n" {
		t.Errorf("ReadAllInput(file) = %q, %v", b, err)
	}
	if _, err := ReadAllInput(e, dir); !errors.Is(err, syscall.EISDIR) || Strerror(err) != "Is a directory" {
		t.Errorf("ReadAllInput(dir) error %v", err)
	}
	if _, _, err := OpenInput(e, filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenInput(missing) error %v", err)
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	l := NewLineReader(strings.NewReader("a\n"+long+"\nlast"), '\n')
	var got []string
	for {
		rec, err := l.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(rec))
	}
	if len(got) != 3 || got[0] != "a\n" || got[1] != long+"\n" || got[2] != "last" {
		t.Errorf("records: %d, first %q, last %q", len(got), got[0], got[len(got)-1])
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func TestFlush(t *testing.T) {
	var errb bytes.Buffer
	e := &cmd.Env{Args: []string{"jq"}, Stderr: &errb}
	out := bufio.NewWriter(failWriter{syscall.ENOSPC})
	out.WriteString("x")
	if st := Flush(e, out, 0); st != 1 || errb.String() != "jq: write error: No space left on device\n" {
		t.Errorf("Flush(ENOSPC) = %d, stderr %q", st, errb.String())
	}
	errb.Reset()
	out = bufio.NewWriter(failWriter{syscall.EPIPE})
	out.WriteString("x")
	if st := Flush(e, out, 4); st != 4 || errb.Len() != 0 {
		t.Errorf("Flush(EPIPE) = %d, stderr %q", st, errb.String())
	}
}

func TestCountByte(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 300; n++ {
		p := make([]byte, n)
		for i := range p {
			// Bytes near the pattern and with the high bit set catch
			// carries between lanes.
			p[i] = []byte{'\n', '\n' ^ 0x80, 0x0b, 0x09, 0xff, 0x00, 'a', 0x8a}[r.IntN(8)]
		}
		for _, c := range []byte{'\n', 0, 0xff, 0x8a} {
			for off := 0; off < 8 && off <= n; off++ {
				if got, want := CountByte(p[off:], c), bytes.Count(p[off:], []byte{c}); got != want {
					t.Fatalf("CountByte(%q, %q) = %d, want %d", p[off:], c, got, want)
				}
			}
		}
	}
}

// TestReadAllInputSized reads files of sizes around its read size whole.
func TestReadAllInputSized(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{1, 4095, 1 << 20, 1<<20 + 1, 3<<20 + 5} {
		data := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		name := filepath.Join(dir, "f")
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadAllInput(&cmd.Env{}, name)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("size %d: read %d bytes, err %v", n, len(got), err)
		}
	}
}
