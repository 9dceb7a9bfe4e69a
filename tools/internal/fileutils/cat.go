package fileutils

import (
	"bufio"
	"io"
	"strconv"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("cat", catMain) }

var catUsage = usage{
	synopsis: "[OPTION]... [FILE]...",
	text: `Concatenate FILE(s) to standard output.
With no FILE, or when FILE is -, read standard input.

  -A, --show-all           equivalent to -vET
  -b, --number-nonblank    number nonempty output lines, overrides -n
  -e                       equivalent to -vE
  -E, --show-ends          display $ at end of each line
  -n, --number             number all output lines
  -s, --squeeze-blank      suppress repeated empty output lines
  -t                       equivalent to -vT
  -T, --show-tabs          display TAB characters as ^I
  -u                       (ignored)
  -v, --show-nonprinting   use ^ and M- notation, except for LFD and TAB
`,
	bad: 1,
}

// catState carries line numbering and blank squeezing across files, as GNU
// cat does.
type catState struct {
	number, nonblank, squeeze, ends, tabs, nonprint bool
	line                                            int
	blanks                                          int  // consecutive empty lines seen
	atStart                                         bool // at the start of a line
}

func catMain(e *cmd.Env) int {
	opts, files, st, done := getopt(e, "A,show-all b,number-nonblank e E,show-ends n,number s,squeeze-blank t T,show-tabs u v,show-nonprinting", catUsage)
	if done {
		return st
	}
	c := &catState{atStart: true}
	for _, o := range opts {
		switch o.name {
		case "show-all":
			c.nonprint, c.ends, c.tabs = true, true, true
		case "number-nonblank":
			c.nonblank = true
		case "e":
			c.nonprint, c.ends = true, true
		case "show-ends":
			c.ends = true
		case "number":
			c.number = true
		case "squeeze-blank":
			c.squeeze = true
		case "t":
			c.nonprint, c.tabs = true, true
		case "show-tabs":
			c.tabs = true
		case "show-nonprinting":
			c.nonprint = true
		}
	}
	if c.nonblank {
		c.number = false
	}
	plain := !(c.number || c.nonblank || c.squeeze || c.ends || c.tabs || c.nonprint)
	if len(files) == 0 {
		files = []string{"-"}
	}
	out := newOut(e)
	status := 0
	for _, name := range files {
		r, closeFn, err := openIn(e, name)
		if err != nil {
			e.Errorf("%s: %s", quoteIf(name), strerror(err))
			status = 1
			continue
		}
		var werr error
		if plain {
			// As GNU cat: every block read is written at once, so that
			// a cat reading a pipe passes on what arrives as it arrives.
			if werr = out.Flush(); werr == nil {
				err, werr = copyStream(e.Stdout, r)
			}
		} else {
			err = c.copy(out, r)
		}
		closeFn()
		if werr != nil {
			e.Errorf("write error: %s", strerror(werr))
			return 1
		}
		if err != nil {
			out.Flush()
			e.Errorf("%s: %s", quoteIf(name), strerror(err))
			status = 1
		}
	}
	if err := out.Flush(); err != nil {
		e.Errorf("write error: %s", strerror(err))
		return 1
	}
	return status
}

func (c *catState) copy(out *bufio.Writer, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var num [24]byte
	for {
		// Before a read that may block, write what is pending (GNU cat
		// does the same when its input has nothing buffered).
		if br.Buffered() == 0 {
			if err := out.Flush(); err != nil {
				return err
			}
		}
		line, err := br.ReadSlice('\n')
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return err
		}
		if len(line) > 0 {
			complete := line[len(line)-1] == '\n'
			body := line
			if complete {
				body = line[:len(line)-1]
			}
			if c.atStart {
				empty := len(body) == 0 && complete
				if empty {
					c.blanks++
					if c.squeeze && c.blanks > 1 {
						continue
					}
				} else {
					c.blanks = 0
				}
				if c.number || (c.nonblank && !empty) {
					c.line++
					b := strconv.AppendInt(num[:0], int64(c.line), 10)
					for i := len(b); i < 6; i++ {
						out.WriteByte(' ')
					}
					out.Write(b)
					out.WriteByte('\t')
				}
			}
			c.writeBody(out, body)
			if complete {
				if c.ends {
					out.WriteByte('$')
				}
				out.WriteByte('\n')
			}
			c.atStart = complete
		}
		if err == io.EOF {
			return nil
		}
	}
}

func (c *catState) writeBody(out *bufio.Writer, b []byte) {
	if !c.nonprint && !c.tabs {
		out.Write(b)
		return
	}
	for _, ch := range b {
		switch {
		case ch == '\t':
			if c.tabs {
				out.WriteString("^I")
			} else {
				out.WriteByte(ch)
			}
		case !c.nonprint:
			out.WriteByte(ch)
		default:
			if ch >= 128 {
				out.WriteString("M-")
				ch -= 128
			}
			switch {
			case ch < 32:
				out.WriteByte('^')
				out.WriteByte(ch + 64)
			case ch == 127:
				out.WriteString("^?")
			default:
				out.WriteByte(ch)
			}
		}
	}
}
