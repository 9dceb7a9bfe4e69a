package textutils

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("head", headMain)
	cmd.Register("tail", tailMain)
}

const headHelp = `Print the first 10 lines of each FILE to standard output.
With more than one FILE, precede each with a header giving the file name.
With no FILE, or when FILE is -, read standard input.

  -c, --bytes=[-]NUM       print the first NUM bytes of each file;
                             with the leading '-', print all but the last
                             NUM bytes of each file
  -n, --lines=[-]NUM       print the first NUM lines instead of the first 10;
                             with the leading '-', print all but the last
                             NUM lines of each file
  -q, --quiet, --silent    never print headers giving file names
  -v, --verbose            always print headers giving file names
  -z, --zero-terminated    line delimiter is NUL, not newline
`

var headOpts = []optDef{
	{'c', "bytes", reqArg},
	{'n', "lines", reqArg},
	{'q', "quiet", noArg},
	{0, "silent", noArg},
	{'v', "verbose", noArg},
	{'z', "zero-terminated", noArg},
}

var obsoleteHead = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-([0-9]+)([bkmcl]?)([qvz]*)$`) })

// headTailCount is a parsed -n/-c argument.
type headTailCount struct {
	n       int64
	bytes   bool // -c rather than -n
	allBut  bool // head: leading '-'
	fromTop bool // tail: leading '+'
}

func headMain(e *cmd.Env) int {
	t := newTool(e)
	args := e.Args
	if len(args) > 1 {
		if m := obsoleteHead().FindStringSubmatch(args[1]); m != nil {
			conv := []string{args[0]}
			switch m[2] {
			case "c":
				conv = append(conv, "-c", m[1])
			case "b", "k", "m":
				conv = append(conv, "-c", m[1]+m[2])
			default:
				conv = append(conv, "-n", m[1])
			}
			for _, f := range m[3] {
				conv = append(conv, "-"+string(f))
			}
			e = &cmd.Env{Args: append(conv, args[2:]...), Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr}
			t.e = e
		}
	}
	opts, files, st, ok := t.parse(headOpts, "head [OPTION]... [FILE]...", headHelp, 1)
	if !ok {
		return st
	}
	return headTailFiles(t, opts, files, func(c *headTailCount, v string) string {
		if strings.HasPrefix(v, "-") {
			c.allBut = true
			return v[1:]
		}
		return strings.TrimPrefix(v, "+")
	}, headCopy)
}

func isDirErr(err error) bool { return errors.Is(err, syscall.EISDIR) }

func headCopy(t *tool, r io.Reader, c headTailCount, delim byte) error {
	switch {
	case c.bytes && !c.allBut:
		_, err := io.Copy(t.out, io.LimitReader(r, c.n))
		return err
	case c.bytes:
		// All but the last n bytes: hold back n bytes.
		data, err := io.ReadAll(r)
		if int64(len(data)) > c.n {
			t.out.Write(data[:int64(len(data))-c.n])
		}
		return err
	case !c.allBut:
		lr := newLineReader(r, delim)
		for i := int64(0); i < c.n; i++ {
			line, err := lr.next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			t.out.Write(line)
		}
		return nil
	default:
		// All but the last n lines: a ring of n lines delays the output.
		lr := newLineReader(r, delim)
		var ring [][]byte
		pos := 0
		for {
			line, err := lr.next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			line = append([]byte(nil), line...)
			if c.n == 0 {
				t.out.Write(line)
				continue
			}
			if int64(len(ring)) < c.n {
				ring = append(ring, line)
				continue
			}
			t.out.Write(ring[pos])
			ring[pos] = line
			pos = (pos + 1) % len(ring)
		}
	}
}

const tailHelp = `Print the last 10 lines of each FILE to standard output.
With more than one FILE, precede each with a header giving the file name.
With no FILE, or when FILE is -, read standard input.

  -c, --bytes=[+]NUM       output the last NUM bytes; or use -c +NUM to
                             output starting with byte NUM of each file
  -f, --follow             accepted; in the sandbox there is nothing to
                             follow, so the file is printed once
  -n, --lines=[+]NUM       output the last NUM lines, instead of the last 10;
                             or use -n +NUM to skip NUM-1 lines at the start
  -q, --quiet, --silent    never output headers giving file names
  -v, --verbose            always output headers giving file names
  -z, --zero-terminated    line delimiter is NUL, not newline
`

var tailOpts = []optDef{
	{'c', "bytes", reqArg},
	{'n', "lines", reqArg},
	{'f', "follow", optArg},
	{'F', "", noArg},
	{'s', "sleep-interval", reqArg},
	{0, "pid", reqArg},
	{0, "retry", noArg},
	{'q', "quiet", noArg},
	{0, "silent", noArg},
	{'v', "verbose", noArg},
	{'z', "zero-terminated", noArg},
}

var obsoleteTail = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([+-])([0-9]+)([bcl]?)(f?)$`) })

func tailMain(e *cmd.Env) int {
	t := newTool(e)
	args := e.Args
	if len(args) == 2 || (len(args) == 3 && !(len(args[2]) > 1 && args[2][0] == '-')) {
		if m := obsoleteTail().FindStringSubmatch(args[1]); m != nil {
			conv := []string{args[0]}
			flag := "-n"
			n := m[2]
			switch m[3] {
			case "c":
				flag = "-c"
			case "b":
				flag = "-c"
				n += "b"
			}
			if m[1] == "+" {
				n = "+" + n
			}
			conv = append(conv, flag, n)
			if m[4] != "" {
				conv = append(conv, "-f")
			}
			e = &cmd.Env{Args: append(conv, args[2:]...), Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr}
			t.e = e
		}
	}
	opts, files, st, ok := t.parse(tailOpts, "tail [OPTION]... [FILE]...", tailHelp, 1)
	if !ok {
		return st
	}
	return headTailFiles(t, opts, files, func(c *headTailCount, v string) string {
		if strings.HasPrefix(v, "+") {
			c.fromTop = true
			return v[1:]
		}
		return strings.TrimPrefix(v, "-")
	}, tailCopy)
}

// headTailFiles does what head and tail share once their options are
// parsed: the count (-n/-c, whose sign sign interprets), headers (-q -v),
// -z, and the loop over the files with GNU's headers and messages, copying
// each with copyFn.
func headTailFiles(t *tool, opts []opt, files []string, sign func(c *headTailCount, v string) string,
	copyFn func(t *tool, r io.Reader, c headTailCount, delim byte) error) int {
	e := t.e
	cnt := headTailCount{n: 10}
	headers := 0 // 0 auto, 1 always, -1 never
	delim := byte('\n')
	for _, o := range opts {
		switch o.name {
		case "bytes", "lines":
			c := headTailCount{bytes: o.name == "bytes"}
			v := sign(&c, o.val)
			n, good := parseSize(v)
			if !good {
				what := "lines"
				if c.bytes {
					what = "bytes"
				}
				if sizeOverflow(v) {
					e.Errorf("invalid number of %s: %s: Value too large for defined data type", what, quote(o.val))
					return 1
				}
				e.Errorf("invalid number of %s: %s", what, quote(o.val))
				return 1
			}
			c.n = n
			cnt = c
		case "quiet", "silent":
			headers = -1
		case "verbose":
			headers = 1
		case "zero-terminated":
			delim = 0
		}
	}
	files = inputs(files)
	show := headers == 1 || (headers == 0 && len(files) > 1)
	status := 0
	first := true
	for _, name := range files {
		r, closeFn, err := openInput(e, name)
		disp := name
		if name == "-" {
			disp = "standard input"
		}
		if err != nil && !isDirErr(err) {
			t.out.Flush()
			e.Errorf("cannot open %s for reading: %s", quote(name), strerror(err))
			status = 1
			continue
		}
		if show {
			if !first {
				t.out.WriteByte('\n')
			}
			fmt.Fprintf(t.out, "==> %s <==\n", disp)
		}
		first = false
		if err != nil {
			t.out.Flush()
			e.Errorf("error reading %s: %s", quote(name), strerror(err))
			status = 1
			continue
		}
		tr := &readTracker{r: r}
		if err := copyFn(t, tr, cnt, delim); err != nil {
			t.out.Flush()
			reportCopyError(e, tr, name, err)
			status = 1
		}
		closeFn()
	}
	return t.flush(status)
}

func tailCopy(t *tool, r io.Reader, c headTailCount, delim byte) error {
	switch {
	case c.bytes && c.fromTop:
		if c.n > 1 {
			if _, err := io.CopyN(io.Discard, r, c.n-1); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
		_, err := io.Copy(t.out, r)
		return err
	case c.bytes:
		// Keep only a window of the last n bytes while reading.
		var buf []byte
		chunk := make([]byte, 64<<10)
		for {
			k, err := r.Read(chunk)
			buf = append(buf, chunk[:k]...)
			if int64(len(buf)) > 2*c.n+(64<<10) {
				buf = append(buf[:0], buf[int64(len(buf))-c.n:]...)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
		if int64(len(buf)) > c.n {
			buf = buf[int64(len(buf))-c.n:]
		}
		t.out.Write(buf)
		return nil
	case c.fromTop:
		lr := newLineReader(r, delim)
		for i := int64(1); ; i++ {
			line, err := lr.next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if i >= c.n {
				t.out.Write(line)
			}
		}
	default:
		if c.n == 0 {
			_, err := io.Copy(io.Discard, r)
			return err
		}
		lr := newLineReader(r, delim)
		var ring [][]byte
		pos := 0
		for {
			line, err := lr.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if int64(len(ring)) < c.n {
				ring = append(ring, bytes.Clone(line))
				continue
			}
			ring[pos] = append(ring[pos][:0], line...)
			pos = (pos + 1) % len(ring)
		}
		for i := 0; i < len(ring); i++ {
			t.out.Write(ring[(pos+i)%len(ring)])
		}
		return nil
	}
}

// readTracker remembers the error of its reader, so that a failed copy can
// say whether reading or writing failed (io.Copy returns either).
type readTracker struct {
	r   io.Reader
	err error
}

func (t *readTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		t.err = err
	}
	return n, err
}

// reportCopyError prints GNU's message for a failed copy of name: "error
// reading 'f'" or "error writing 'standard output'".
func reportCopyError(e *cmd.Env, tr *readTracker, name string, err error) {
	if tr.err != nil && errors.Is(err, tr.err) {
		e.Errorf("error reading %s: %s", quote(name), strerror(err))
		return
	}
	e.Errorf("error writing 'standard output': %s", strerror(err))
}
