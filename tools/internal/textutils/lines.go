package textutils

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("nl", nlMain)
	cmd.Register("fold", foldMain)
	cmd.Register("paste", pasteMain)
	cmd.Register("rev", revMain)
	cmd.Register("tac", tacMain)
}

// forEachInput opens each operand ("-" is stdin) and calls fn; open
// errors are reported as "CMD: NAME: error" and make the status 1.
func forEachInput(t *tool, files []string, fn func(name string, r io.Reader) error) int {
	status := 0
	for _, name := range inputs(files) {
		r, closeFn, err := openInput(t.e, name)
		if err != nil {
			t.out.Flush()
			if t.openErr != nil {
				t.e.Errorf("%s", t.openErr(name, err))
			} else {
				t.e.Errorf("%s: %s", name, strerror(err))
			}
			status = 1
			continue
		}
		if err := fn(name, r); err != nil {
			t.out.Flush()
			t.e.Errorf("%s: %s", name, strerror(err))
			status = 1
		}
		closeFn()
	}
	return status
}

const nlHelp = `Write each FILE to standard output, with line numbers added.
With no FILE, or when FILE is -, read standard input.

  -b, --body-numbering=STYLE      use STYLE for numbering body lines
  -d, --section-delimiter=CC      use CC for logical page delimiters
  -f, --footer-numbering=STYLE    use STYLE for numbering footer lines
  -h, --header-numbering=STYLE    use STYLE for numbering header lines
  -i, --line-increment=NUMBER     line number increment at each line
  -l, --join-blank-lines=NUMBER   group of NUMBER empty lines counted as one
  -n, --number-format=FORMAT      insert line numbers according to FORMAT
  -p, --no-renumber               do not reset line numbers for each section
  -s, --number-separator=STRING   add STRING after (possible) line number
  -v, --starting-line-number=NUMBER  first line number for each section
  -w, --number-width=NUMBER       use NUMBER columns for line numbers

STYLE is one of: a (all lines), t (nonempty lines), n (no lines),
pBRE (lines matching the basic regular expression BRE).
FORMAT is one of: ln (left justified), rn (right justified), rz (zeros).
`

type nlStyle struct {
	kind byte // a t n p
	re   *Regex
}

func parseNlStyle(s string) (nlStyle, error) {
	if s == "" {
		return nlStyle{}, fmt.Errorf("invalid numbering style: %s", quote(s))
	}
	switch s[0] {
	case 'a', 't', 'n':
		if len(s) == 1 {
			return nlStyle{kind: s[0]}, nil
		}
	case 'p':
		re, err := compileRegex(s[1:], regexOpts{})
		if err != nil {
			return nlStyle{}, err
		}
		return nlStyle{kind: 'p', re: re}, nil
	}
	return nlStyle{}, fmt.Errorf("invalid numbering style: %s", quote(s))
}

func nlMain(e *cmd.Env) int {
	t := newTool(e)
	opts, files, st, ok := t.parse([]optDef{
		{'b', "body-numbering", reqArg}, {'d', "section-delimiter", reqArg}, {'f', "footer-numbering", reqArg},
		{'h', "header-numbering", reqArg}, {'i', "line-increment", reqArg}, {'l', "join-blank-lines", reqArg},
		{'n', "number-format", reqArg}, {'p', "no-renumber", noArg}, {'s', "number-separator", reqArg},
		{'v', "starting-line-number", reqArg}, {'w', "number-width", reqArg},
	}, "nl [OPTION]... [FILE]...", nlHelp, 1)
	if !ok {
		return st
	}
	styles := [3]nlStyle{{kind: 'n'}, {kind: 't'}, {kind: 'n'}} // header body footer
	delim := `\:`
	incr, start, width, joinBlank := int64(1), int64(1), 6, int64(1)
	format := "rn"
	sep := "\t"
	renumber := true
	for _, o := range opts {
		var err error
		switch o.name {
		case "body-numbering", "header-numbering", "footer-numbering":
			idx := map[string]int{"header-numbering": 0, "body-numbering": 1, "footer-numbering": 2}[o.name]
			styles[idx], err = parseNlStyle(o.val)
		case "section-delimiter":
			delim = o.val
			if len(delim) == 1 {
				delim += ":"
			}
		case "line-increment", "starting-line-number", "join-blank-lines", "number-width":
			n, perr := strconv.ParseInt(o.val, 10, 64)
			if perr != nil {
				e.Errorf("invalid %s: %s", map[string]string{"line-increment": "line number increment",
					"starting-line-number": "starting line number", "join-blank-lines": "line number of blank lines",
					"number-width": "line number field width"}[o.name], quote(o.val))
				return 1
			}
			switch o.name {
			case "line-increment":
				incr = n
			case "starting-line-number":
				start = n
			case "join-blank-lines":
				joinBlank = n
			default:
				if n < 1 {
					e.Errorf("invalid line number field width: %s", quote(o.val))
					return 1
				}
				width = int(n)
			}
		case "number-format":
			if o.val != "ln" && o.val != "rn" && o.val != "rz" {
				e.Errorf("invalid line numbering format: %s", quote(o.val))
				return 1
			}
			format = o.val
		case "no-renumber":
			renumber = false
		case "number-separator":
			sep = o.val
		}
		if err != nil {
			e.Errorf("%s", err)
			return 1
		}
	}
	num := start
	section := 1
	blanks := int64(0)
	w := t.out
	status := forEachInput(t, files, func(name string, r io.Reader) error {
		lr := newLineReader(r, '\n')
		for {
			raw, err := lr.next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			line := bytes.TrimSuffix(raw, []byte{'\n'})
			// Section delimiters: header, body, footer.
			if s := string(line); len(delim) > 0 && s != "" && strings.Count(s, delim)*len(delim) == len(s) && strings.Count(s, delim) <= 3 {
				switch strings.Count(s, delim) {
				case 3:
					section = 0
				case 2:
					section = 1
				case 1:
					section = 2
				}
				if renumber && section == 0 {
					num = start
				}
				w.WriteByte('\n')
				continue
			}
			st := styles[section]
			number := false
			switch st.kind {
			case 'a':
				if len(line) == 0 {
					blanks++
					if blanks >= joinBlank {
						number, blanks = true, 0
					}
				} else {
					number, blanks = true, 0
				}
			case 't':
				number = len(line) > 0
			case 'p':
				m, err := st.re.Match(line)
				if err != nil {
					return err
				}
				number = m
			}
			if number {
				s := strconv.FormatInt(num, 10)
				switch format {
				case "ln":
					fmt.Fprintf(w, "%-*s", width, s)
				case "rz":
					if num < 0 {
						fmt.Fprintf(w, "-%0*d", width-1, -num)
					} else {
						fmt.Fprintf(w, "%0*d", width, num)
					}
				default:
					fmt.Fprintf(w, "%*s", width, s)
				}
				w.WriteString(sep)
				num += incr
			} else {
				w.WriteString(strings.Repeat(" ", width+len(sep)))
			}
			w.Write(raw)
			if len(raw) > 0 && raw[len(raw)-1] != '\n' {
				w.WriteByte('\n')
			}
		}
	})
	return t.flush(status)
}

const foldHelp = `Wrap input lines in each FILE, writing to standard output.

  -b, --bytes         count bytes rather than columns
  -s, --spaces        break at spaces
  -w, --width=WIDTH   use WIDTH columns instead of 80
`

func foldMain(e *cmd.Env) int {
	t := newTool(e)
	args := e.Args
	// Obsolete "-NUM" width.
	for i := 1; i < len(args); i++ {
		a := args[i]
		if len(a) > 1 && a[0] == '-' && isDigit(a[1]) {
			if _, err := strconv.Atoi(a[1:]); err == nil {
				args = append(append(append([]string{}, args[:i]...), "-w", a[1:]), args[i+1:]...)
				break
			}
		}
	}
	t.e = &cmd.Env{Args: args, Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr}
	opts, files, st, ok := t.parse([]optDef{{'b', "bytes", noArg}, {'s', "spaces", noArg}, {'w', "width", reqArg}},
		"fold [OPTION]... [FILE]...", foldHelp, 1)
	if !ok {
		return st
	}
	width := 80
	countBytes, breakSpaces := false, false
	for _, o := range opts {
		switch o.name {
		case "bytes":
			countBytes = true
		case "spaces":
			breakSpaces = true
		case "width":
			n, err := strconv.Atoi(o.val)
			if err != nil {
				e.Errorf("invalid number of columns: %s", quote(o.val))
				return 1
			}
			if n < 1 {
				e.Errorf("invalid number of columns: %s: Numerical result out of range", quote(o.val))
				return 1
			}
			width = n
		}
	}
	adjust := func(col int, c byte) int {
		if countBytes {
			return col + 1
		}
		switch c {
		case '\b':
			if col > 0 {
				return col - 1
			}
			return 0
		case '\r':
			return 0
		case '\t':
			return col + 8 - col%8
		}
		return col + 1
	}
	w := t.out
	status := forEachInput(t, files, func(name string, r io.Reader) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		var line []byte
		col := 0
		for i := 0; i < len(data); i++ {
			c := data[i]
			if c == '\n' {
				w.Write(line)
				w.WriteByte('\n')
				line, col = line[:0], 0
				continue
			}
		rescan:
			col = adjust(col, c)
			if col > width {
				if breakSpaces {
					if k := bytes.LastIndexAny(line, " \t"); k >= 0 {
						w.Write(line[:k+1])
						w.WriteByte('\n')
						rest := append([]byte(nil), line[k+1:]...)
						line = append(line[:0], rest...)
						col = 0
						for _, rc := range line {
							col = adjust(col, rc)
						}
						goto rescan
					}
				}
				if len(line) == 0 {
					line = append(line, c)
					continue
				}
				w.Write(line)
				w.WriteByte('\n')
				line, col = line[:0], 0
				goto rescan
			}
			line = append(line, c)
		}
		w.Write(line)
		return nil
	})
	return t.flush(status)
}

const pasteHelp = `Write lines consisting of the sequentially corresponding lines from
each FILE, separated by TABs, to standard output.

  -d, --delimiters=LIST   reuse characters from LIST instead of TABs
  -s, --serial            paste one file at a time instead of in parallel
  -z, --zero-terminated   line delimiter is NUL, not newline
`

// pasteDelims expands the -d list (\n \t \\ \0 = no delimiter).
func pasteDelims(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				out = append(out, "\n")
			case 't':
				out = append(out, "\t")
			case '\\':
				out = append(out, "\\")
			case '0':
				out = append(out, "")
			default:
				out = append(out, string(s[i]))
			}
			continue
		}
		out = append(out, string(c))
	}
	return out
}

func pasteMain(e *cmd.Env) int {
	t := newTool(e)
	opts, files, st, ok := t.parse([]optDef{{'d', "delimiters", reqArg}, {'s', "serial", noArg}, {'z', "zero-terminated", noArg}},
		"paste [OPTION]... [FILE]...", pasteHelp, 1)
	if !ok {
		return st
	}
	delims := []string{"\t"}
	serial := false
	eol := byte('\n')
	for _, o := range opts {
		switch o.name {
		case "delimiters":
			delims = pasteDelims(o.val)
			if len(delims) == 0 {
				delims = []string{""}
			}
		case "serial":
			serial = true
		case "zero-terminated":
			eol = 0
		}
	}
	files = inputs(files)
	w := t.out
	status := 0
	if serial {
		status = forEachInput(t, files, func(name string, r io.Reader) error {
			lr := newLineReader(r, eol)
			k := 0
			first := true
			for {
				line, err := lr.next()
				if err == io.EOF {
					break
				}
				if err != nil {
					return err
				}
				if !first {
					w.WriteString(delims[k%len(delims)])
					k++
				}
				first = false
				w.Write(bytes.TrimSuffix(line, []byte{eol}))
			}
			w.WriteByte(eol)
			return nil
		})
		return t.flush(status)
	}
	var readers []*lineReader
	var closers []func()
	var stdin *lineReader
	for _, name := range files {
		if name == "-" {
			if stdin == nil {
				stdin = newLineReader(e.Stdin, eol)
			}
			readers = append(readers, stdin)
			continue
		}
		r, closeFn, err := openInput(e, name)
		if err != nil {
			e.Errorf("%s: %s", name, strerror(err))
			for _, c := range closers {
				c()
			}
			return 1
		}
		closers = append(closers, closeFn)
		readers = append(readers, newLineReader(r, eol))
	}
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	done := make([]bool, len(readers))
	for {
		any := false
		var row []byte
		for i, lr := range readers {
			if i > 0 {
				row = append(row, delims[(i-1)%len(delims)]...)
			}
			if done[i] {
				continue
			}
			line, err := lr.next()
			if err != nil {
				done[i] = true
				continue
			}
			any = true
			row = append(row, bytes.TrimSuffix(line, []byte{eol})...)
		}
		if !any {
			break
		}
		w.Write(row)
		w.WriteByte(eol)
	}
	return t.flush(status)
}

func revMain(e *cmd.Env) int {
	t := newTool(e)
	_, files, st, ok := t.parse(nil, "rev [options] [file ...]", "Reverse lines characterwise.\n", 1)
	if !ok {
		return st
	}
	t.openErr = func(name string, err error) string {
		return fmt.Sprintf("cannot open %s: %s", name, strerror(err))
	}
	w := t.out
	status := forEachInput(t, files, func(name string, r io.Reader) error {
		lr := newLineReader(r, '\n')
		var buf []byte
		for {
			line, err := lr.next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			body := bytes.TrimSuffix(line, []byte{'\n'})
			buf = append(buf[:0], body...)
			for i, j := 0, len(buf)-1; i < j; i, j = i+1, j-1 {
				buf[i], buf[j] = buf[j], buf[i]
			}
			if !utf8.Valid(body) {
				// Not UTF-8: the bytes reversed, as in the C locale.
			} else if !isASCII(body) {
				// UTF-8 text: reverse characters, not bytes.
				buf = buf[:0]
				for end := len(body); end > 0; {
					_, size := utf8.DecodeLastRune(body[:end])
					buf = append(buf, body[end-size:end]...)
					end -= size
				}
			}
			w.Write(buf)
			if len(body) < len(line) {
				w.WriteByte('\n')
			}
		}
	})
	return t.flush(status)
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

const tacHelp = `Write each FILE to standard output, last line first.

  -b, --before             attach the separator before instead of after
  -r, --regex              interpret the separator as a regular expression
  -s, --separator=STRING   use STRING as the separator instead of newline
`

func tacMain(e *cmd.Env) int {
	t := newTool(e)
	opts, files, st, ok := t.parse([]optDef{{'b', "before", noArg}, {'r', "regex", noArg}, {'s', "separator", reqArg}},
		"tac [OPTION]... [FILE]...", tacHelp, 1)
	if !ok {
		return st
	}
	sep := "\n"
	before, isRe := false, false
	for _, o := range opts {
		switch o.name {
		case "before":
			before = true
		case "regex":
			isRe = true
		case "separator":
			if o.val == "" {
				e.Errorf("separator cannot be empty")
				return 1
			}
			sep = o.val
		}
	}
	t.openErr = func(name string, err error) string {
		return fmt.Sprintf("failed to open %s for reading: %s", quote(name), strerror(err))
	}
	var re *Regex
	if isRe {
		var err error
		if re, err = compileRegex(sep, regexOpts{}); err != nil {
			e.Errorf("%s", err)
			return 1
		}
	}
	w := t.out
	status := forEachInput(t, files, func(name string, r io.Reader) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		// Separator spans, in order.
		var seps [][2]int
		if re != nil {
			locs, err := re.FindAllSubmatchIndex(data, -1)
			if err != nil {
				return err
			}
			for _, l := range locs {
				if l[1] > l[0] {
					seps = append(seps, [2]int{l[0], l[1]})
				}
			}
		} else {
			for pos := 0; ; {
				i := bytes.Index(data[pos:], []byte(sep))
				if i < 0 {
					break
				}
				seps = append(seps, [2]int{pos + i, pos + i + len(sep)})
				pos += i + len(sep)
			}
		}
		// Records: with separators after (default) or before (-b).
		var recs [][]byte
		if !before {
			start := 0
			for _, s := range seps {
				recs = append(recs, data[start:s[1]])
				start = s[1]
			}
			if start < len(data) {
				recs = append(recs, data[start:])
			}
		} else {
			start := 0
			for _, s := range seps {
				if s[0] > start {
					recs = append(recs, data[start:s[0]])
				}
				start = s[0]
			}
			if start < len(data) {
				recs = append(recs, data[start:])
			}
		}
		for i := len(recs) - 1; i >= 0; i-- {
			w.Write(recs[i])
		}
		return nil
	})
	return t.flush(status)
}
