package morecmds

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("csplit", csplitMain) }

type csplitPattern struct {
	text   string
	line   int            // line-number pattern: split before this line
	re     *regexp.Regexp // /RE/ or %RE%
	skip   bool           // %RE%: the piece is not written
	offset int
	repeat int  // {N}
	star   bool // {*}
}

type csplitter struct {
	e               *cmd.Env
	prefix, suffix  string
	digits          int
	silent, keep    bool
	elide           bool
	suppressMatched bool
	created         []string
	out             *bufio.Writer
}

func (c *csplitter) name(n int) string {
	if c.suffix != "" {
		return c.prefix + fmt.Sprintf(c.suffix, n)
	}
	return fmt.Sprintf("%s%0*d", c.prefix, c.digits, n)
}

// write creates the next piece with lines.
func (c *csplitter) write(lines [][]byte) error {
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	if c.elide && size == 0 {
		return nil
	}
	name := c.name(len(c.created))
	if err := os.WriteFile(name, bytes.Join(lines, nil), 0o666); err != nil {
		return fmt.Errorf("%s: %s", quotef(name), strerror(err))
	}
	c.created = append(c.created, name)
	if !c.silent {
		fmt.Fprintf(c.out, "%d\n", size)
	}
	return nil
}

func (c *csplitter) fail(msg string) int {
	c.out.Flush()
	c.e.Errorf("%s", msg)
	if !c.keep {
		for _, n := range c.created {
			os.Remove(n)
		}
	}
	return 1
}

func csplitMain(e *cmd.Env) int {
	spec := []cmd.Option{{Short: 'b', Long: "suffix-format", Arg: cmd.RequiredArg}, {Short: 'f', Long: "prefix", Arg: cmd.RequiredArg},
		{Short: 'k', Long: "keep-files"}, {Long: "suppress-matched"}, {Short: 'n', Long: "digits", Arg: cmd.RequiredArg},
		{Short: 's', Long: "quiet"}, {Long: "silent"}, {Short: 'z', Long: "elide-empty-files"}}
	// Patterns like -5 are not options: stop option parsing at the file.
	opts, ops, err := cmd.Getopt(e.Args[1:], append(spec, helpOpts...), true)
	if err != nil {
		return e.Usage(1, err)
	}
	c := &csplitter{e: e, prefix: "xx", digits: 2, out: bufio.NewWriter(e.Stdout)}
	for _, o := range opts {
		switch o.Name {
		case "help":
			fmt.Fprintln(e.Stdout, "Usage: csplit [OPTION]... FILE PATTERN...")
			return 0
		case "version":
			fmt.Fprintf(e.Stdout, "csplit %s\n", version)
			return 0
		case "suffix-format":
			c.suffix = o.Value
		case "prefix":
			c.prefix = o.Value
		case "keep-files":
			c.keep = true
		case "suppress-matched":
			c.suppressMatched = true
		case "digits":
			n, err := strconv.Atoi(o.Value)
			if err != nil || n < 0 {
				e.Errorf("invalid number: %s", quote(o.Value))
				return 1
			}
			c.digits = n
		case "quiet", "silent":
			c.silent = true
		case "elide-empty-files":
			c.elide = true
		}
	}
	switch len(ops) {
	case 0:
		return e.Usage(1, fmt.Errorf("missing operand"))
	case 1:
		return e.Usage(1, fmt.Errorf("missing operand after %s", quote(ops[0])))
	}
	var pats []csplitPattern
	for _, a := range ops[1:] {
		switch {
		case strings.HasPrefix(a, "{") && strings.HasSuffix(a, "}"):
			if len(pats) == 0 {
				e.Errorf("%s: no previous pattern", quote(a))
				return 1
			}
			inner := a[1 : len(a)-1]
			p := &pats[len(pats)-1]
			if inner == "*" {
				p.star = true
			} else if n, err := strconv.Atoi(inner); err == nil && n >= 0 {
				p.repeat = n
			} else {
				e.Errorf("%s: invalid repeat count", quote(a))
				return 1
			}
		case strings.HasPrefix(a, "/") || strings.HasPrefix(a, "%"):
			delim := a[:1]
			end := strings.LastIndex(a, delim)
			if end <= 0 {
				e.Errorf("%s: closing delimiter '%s' missing", a, delim)
				return 1
			}
			re, err := compileBRE(a[1:end])
			if err != nil {
				e.Errorf("%s: invalid regular expression: %s", quote(a), err)
				return 1
			}
			p := csplitPattern{text: a, re: re, skip: delim == "%"}
			if rest := a[end+1:]; rest != "" {
				n, err := strconv.Atoi(rest)
				if err != nil {
					e.Errorf("%s: integer expected after delimiter", quote(a))
					return 1
				}
				p.offset = n
			}
			pats = append(pats, p)
		default:
			n, err := strconv.Atoi(a)
			if err != nil || n < 0 || strings.HasPrefix(a, "+") || strings.HasPrefix(a, "-") {
				e.Errorf("%s: invalid pattern", quote(a))
				return 1
			}
			if n == 0 {
				e.Errorf("%s: line number must be greater than zero", quote(a))
				return 1
			}
			if len(pats) > 0 && pats[len(pats)-1].re == nil && n < pats[len(pats)-1].line {
				e.Errorf("line number %s is smaller than preceding line number, %d", quote(a), pats[len(pats)-1].line)
				return 1
			}
			pats = append(pats, csplitPattern{text: a, line: n})
		}
	}
	data, err := readAll(e, ops[0])
	if err != nil {
		e.Errorf("cannot open %s for reading: %s", quote(ops[0]), strerror(err))
		return 1
	}
	var lines [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			lines = append(lines, data)
			break
		}
		lines = append(lines, data[:i+1])
		data = data[i+1:]
	}
	start := 0   // first line (0-based) of the current piece
	current := 0 // 1-based number of the last line examined
	for _, p := range pats {
		for rep := 0; rep <= p.repeat || p.star; rep++ {
			var cut int // 0-based index of the first line of the next piece
			if p.re == nil {
				target := p.line * (rep + 1)
				if target > len(lines) {
					if p.star {
						goto done
					}
					c.write(lines[start:])
					msg := fmt.Sprintf("%s: line number out of range", quote(p.text))
					if rep > 0 {
						msg += fmt.Sprintf(" on repetition %d", rep)
					}
					return c.fail(msg)
				}
				cut = target - 1
			} else {
				found := -1
				for i := current; i < len(lines); i++ {
					if p.re.Match(bytes.TrimSuffix(lines[i], []byte("\n"))) {
						found = i
						break
					}
				}
				if found < 0 {
					if p.star {
						goto done
					}
					c.write(lines[start:])
					msg := fmt.Sprintf("%s: match not found", quote(p.text))
					if rep > 0 {
						msg += fmt.Sprintf(" on repetition %d", rep)
					}
					return c.fail(msg)
				}
				cut = found + p.offset
				if cut < start || cut > len(lines) {
					c.write(lines[start:])
					return c.fail(fmt.Sprintf("%s: line number out of range", quote(p.text)))
				}
				current = found + 1
			}
			if cut < start {
				cut = start
			}
			if !p.skip {
				if err := c.write(lines[start:cut]); err != nil {
					return c.fail(err.Error())
				}
			}
			start = cut
			if c.suppressMatched && start < len(lines) {
				start++
			}
			if p.re == nil {
				current = start
			}
		}
	}
done:
	if err := c.write(lines[start:]); err != nil {
		return c.fail(err.Error())
	}
	return flush(e, c.out, 0)
}

// compileBRE compiles a POSIX basic regular expression (GNU flavour:
// \( \) \{ \} \| \+ \? are the operators, their bare forms literal).
func compileBRE(bre string) (*regexp.Regexp, error) {
	var b strings.Builder
	for i := 0; i < len(bre); i++ {
		c := bre[i]
		switch {
		case c == '\\' && i+1 < len(bre):
			i++
			switch d := bre[i]; d {
			case '(', ')', '{', '}', '|', '+', '?':
				b.WriteByte(d)
			case '<', '>':
				b.WriteString(`\b`)
			default:
				b.WriteByte('\\')
				b.WriteByte(d)
			}
		case c == '[':
			j := i + 1
			if j < len(bre) && bre[j] == '^' {
				j++
			}
			if j < len(bre) && bre[j] == ']' {
				j++
			}
			for j < len(bre) && bre[j] != ']' {
				if bre[j] == '[' && j+1 < len(bre) && bre[j+1] == ':' {
					if k := strings.Index(bre[j+2:], ":]"); k >= 0 {
						j += k + 4
						continue
					}
				}
				j++
			}
			if j >= len(bre) {
				return nil, fmt.Errorf("Unmatched [, [^, [:, [., or [=")
			}
			b.WriteString(strings.ReplaceAll(bre[i:j+1], `\`, `\\`))
			i = j
		case c == '*' && (i == 0 || bre[i-1] == '^' && i == 1):
			b.WriteString(`\*`)
		case strings.IndexByte("(){}|+?", c) >= 0:
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return regexp.Compile(b.String())
}
