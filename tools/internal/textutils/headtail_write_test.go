package textutils

import (
	"bytes"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// fullWriter fails every write with ENOSPC; like an *os.File it is an
// io.ReaderFrom, so a buffered copy writes through it directly.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

func (fullWriter) ReadFrom(r io.Reader) (int64, error) {
	var b [512]byte
	n, err := r.Read(b[:])
	if n > 0 {
		return 0, syscall.ENOSPC
	}
	return 0, err
}

// A failed write is reported as a write error, not as a read error of the
// input (GNU: "head: error writing 'standard output': ...").
func TestHeadTailWriteError(t *testing.T) {
	for _, args := range [][]string{{"head", "-c", "100000"}, {"tail", "-c", "+1"}} {
		fn, _ := cmd.Lookup(args[0])
		var stderr bytes.Buffer
		fn(&cmd.Env{Args: args, Stdin: strings.NewReader(strings.Repeat("x", 200000)), Stdout: fullWriter{}, Stderr: &stderr})
		if strings.Contains(stderr.String(), "error reading") || !strings.Contains(stderr.String(), "No space left on device") {
			t.Errorf("%v: stderr %q", args, stderr.String())
		}
	}
}
