package awkcmd

import (
	"bufio"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
	"github.com/wasmbox/wasmbox/tools/internal/textio"
)

// The helpers awk.go shares with the other text commands, under the names
// they have in package textutils (where awk.go lived), so that the
// command's source reads the same in either package.

const version = textio.Version

func strerror(err error) string { return textio.Strerror(err) }

func readAllInput(e *cmd.Env, name string) ([]byte, error) { return textio.ReadAllInput(e, name) }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// tool is the command's environment and buffered standard output.
type tool struct {
	e   *cmd.Env
	out *bufio.Writer
}

func newTool(e *cmd.Env) *tool {
	return &tool{e: e, out: bufio.NewWriterSize(e.Stdout, 64<<10)}
}

// flush writes the buffered output and returns the exit status (see
// textio.Flush).
func (t *tool) flush(status int) int { return textio.Flush(t.e, t.out, status) }
