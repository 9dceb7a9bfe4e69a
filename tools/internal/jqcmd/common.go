package jqcmd

import (
	"bufio"
	"io"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
	"github.com/wasmbox/wasmbox/tools/internal/textio"
)

// The helpers jq.go shares with the other text commands, under the names
// they have in package textutils (where jq.go lived), so that the command's
// source reads the same in either package.

const version = textio.Version

func strerror(err error) string { return textio.Strerror(err) }

func openInput(e *cmd.Env, name string) (io.Reader, func(), error) {
	return textio.OpenInput(e, name)
}

func readAllInput(e *cmd.Env, name string) ([]byte, error) { return textio.ReadAllInput(e, name) }

func inputs(operands []string) []string { return textio.Inputs(operands) }

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

// lineReader reads newline-terminated records (see textio.LineReader).
type lineReader struct{ r *textio.LineReader }

func newLineReader(r io.Reader, delim byte) *lineReader {
	return &lineReader{r: textio.NewLineReader(r, delim)}
}

func (l *lineReader) next() ([]byte, error) { return l.r.Next() }
