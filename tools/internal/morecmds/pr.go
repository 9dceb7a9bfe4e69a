package morecmds

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
	"github.com/wasmbox/wasmbox/tools/internal/timefmt"
)

func init() { cmd.Register("pr", prMain) }

// pr is GNU pr (coreutils 9.1) for the common forms: pages of -l lines
// with the 5-line header (date, file name, page) and 5-line trailer, -t,
// -n, -d, -o, -w, -h, -D, +FIRST[:LAST], -COLUMN down (balanced on the
// last page) or across (-a), -m and -s. White space between columns is
// written with tabs where a tab reaches (GNU's print_white_space).

type prOpts struct {
	pageLen, width, margin int
	columns                int
	across, merge, double  bool
	omitHeader             bool
	number                 bool
	numSep                 byte
	numDigits              int
	sep                    string
	sepGiven               bool
	header                 string
	headerGiven            bool
	dateFmt                string
	firstPage, lastPage    int
}

type prOut struct {
	w       *bufio.Writer
	pos     int // output column
	pending int // spaces not yet written
}

func (o *prOut) space(n int) { o.pending += n }

// white writes the pending spaces, as tabs where a tab fits.
func (o *prOut) white() {
	goal := o.pos + o.pending
	for goal-o.pos > 1 {
		next := (o.pos/8 + 1) * 8
		if next > goal {
			break
		}
		o.w.WriteByte('\t')
		o.pos = next
	}
	for o.pos < goal {
		o.w.WriteByte(' ')
		o.pos++
	}
	o.pending = 0
}

func (o *prOut) text(s string) {
	o.white()
	o.w.WriteString(s)
	for i := 0; i < len(s); i++ {
		if s[i] == '\t' {
			o.pos = (o.pos/8 + 1) * 8
		} else {
			o.pos++
		}
	}
}

func (o *prOut) padTo(col int) {
	if cur := o.pos + o.pending; col > cur {
		o.pending += col - cur
	}
}

func (o *prOut) newline() {
	o.w.WriteByte('\n')
	o.pos, o.pending = 0, 0
}

func prMain(e *cmd.Env) int {
	op := prOpts{pageLen: 66, width: 72, columns: 1, numSep: '\t', numDigits: 5, dateFmt: "%Y-%m-%d %H:%M", firstPage: 1}
	var args []string
	widthGiven := false
	for i, a := range e.Args[1:] {
		if a == "--" {
			args = append(args, e.Args[1+i:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' && strings.Trim(a[1:], "0123456789") == "" {
			n, ok := prNum(e, "invalid number of columns", a[1:], 1)
			if !ok {
				return 1
			}
			op.columns = n
			continue
		}
		if len(a) > 1 && a[0] == '+' {
			first, last, hasLast := strings.Cut(a[1:], ":")
			f, err := strconv.Atoi(first)
			if err != nil || f < 1 {
				e.Errorf("invalid page range %s", quote(a[1:]))
				return 1
			}
			op.firstPage = f
			if hasLast {
				l, err := strconv.Atoi(last)
				if err != nil || l < f {
					e.Errorf("invalid page range %s", quote(a[1:]))
					return 1
				}
				op.lastPage = l
			}
			continue
		}
		args = append(args, a)
	}
	spec := []cmd.Option{
		{Short: 'a', Long: "across"}, {Short: 'd', Long: "double-space"}, {Short: 'm', Long: "merge"},
		{Short: 't', Long: "omit-header"}, {Short: 'T', Long: "omit-pagination"},
		{Short: 'n', Long: "number-lines", Arg: cmd.OptionalArg}, {Short: 's', Long: "separator", Arg: cmd.OptionalArg},
		{Short: 'l', Long: "length", Arg: cmd.RequiredArg}, {Short: 'w', Long: "width", Arg: cmd.RequiredArg},
		{Short: 'o', Long: "indent", Arg: cmd.RequiredArg}, {Short: 'h', Long: "header", Arg: cmd.RequiredArg},
		{Short: 'D', Long: "date-format", Arg: cmd.RequiredArg}, {Long: "columns", Arg: cmd.RequiredArg},
	}
	opts, files, err := cmd.Getopt(args, append(spec, helpOpts...), false)
	if err != nil {
		return e.Usage(1, err)
	}
	num := func(name, v string, min int) (int, bool) {
		what := map[string]string{"length": "'-l PAGE_LENGTH' invalid number of lines",
			"width": "'-w PAGE_WIDTH' invalid number of characters", "indent": "'-o MARGIN' invalid line offset",
			"columns": "invalid number of columns"}[name]
		return prNum(e, what, v, min)
	}
	for _, o := range opts {
		var ok = true
		switch o.Name {
		case "help":
			fmt.Fprintln(e.Stdout, "Usage: pr [OPTION]... [FILE]...")
			return 0
		case "version":
			fmt.Fprintf(e.Stdout, "pr %s\n", version)
			return 0
		case "across":
			op.across = true
		case "double-space":
			op.double = true
		case "merge":
			op.merge = true
		case "omit-header", "omit-pagination":
			op.omitHeader = true
		case "number-lines":
			op.number = true
			v := o.Value
			if v != "" && (v[0] < '0' || v[0] > '9') {
				op.numSep = v[0]
				v = v[1:]
			}
			if v != "" {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					e.Errorf("invalid line number field width: %s", quote(v))
					return 1
				}
				op.numDigits = n
			}
		case "separator":
			op.sepGiven = true
			op.sep = o.Value
			if !o.HasValue {
				op.sep = "\t"
			}
		case "length":
			op.pageLen, ok = num(o.Name, o.Value, 1)
		case "width":
			op.width, ok = num(o.Name, o.Value, 1)
			widthGiven = true
		case "indent":
			op.margin, ok = num(o.Name, o.Value, 0)
		case "columns":
			op.columns, ok = num(o.Name, o.Value, 1)
		case "header":
			op.header, op.headerGiven = o.Value, true
		case "date-format":
			op.dateFmt = o.Value
		}
		if !ok {
			return 1
		}
	}
	if op.merge && op.columns > 1 {
		e.Errorf("cannot specify number of columns when printing in parallel")
		return 1
	}
	if op.across && op.columns == 1 && !op.merge {
		op.across = false
	}
	truncate := (op.columns > 1 || op.merge) && (!op.sepGiven || widthGiven)
	out := &prOut{w: bufio.NewWriter(e.Stdout)}
	status := 0
	read := func(name string) ([]string, time.Time, bool) {
		data, err := readAll(e, name)
		if err != nil {
			out.w.Flush()
			e.Errorf("%s: %s", name, strerror(err))
			status = 1
			return nil, time.Time{}, false
		}
		t := time.Now()
		if name != "-" {
			if st, err := os.Stat(name); err == nil {
				t = st.ModTime()
			}
		}
		s := string(data)
		s = strings.TrimSuffix(s, "\n")
		var lines []string
		if len(data) > 0 {
			lines = strings.Split(s, "\n")
		}
		return lines, t, true
	}
	if op.merge {
		var cols [][]string
		for _, f := range inputs(files) {
			l, _, ok := read(f)
			if ok {
				cols = append(cols, l)
			}
		}
		if len(cols) > 0 {
			op.columns = len(cols)
			prPrint(out, &op, cols, "", time.Now(), truncate, true)
		}
	} else {
		for _, f := range inputs(files) {
			l, t, ok := read(f)
			if !ok {
				continue
			}
			title := f
			if f == "-" {
				title = ""
			}
			prPrint(out, &op, [][]string{l}, title, t, truncate, false)
		}
	}
	return flush(e, out.w, status)
}

// prPrint paginates one file (or, merged, several).
func prPrint(out *prOut, op *prOpts, files [][]string, title string, t time.Time, truncate, merge bool) {
	header := op.pageLen > 10 && !op.omitHeader
	lines := op.pageLen
	if header {
		lines -= 10
	}
	body := lines // rows of text a page holds
	if op.double {
		body = max(1, lines/2)
		lines = 2 * body // GNU pads a double-spaced page to that
	}
	if op.headerGiven {
		title = op.header
	}
	date := timefmt.Strftime(t.Local(), op.dateFmt)
	cols := op.columns
	sepLen := 1
	if op.sepGiven {
		sepLen = len(op.sep)
	}
	numWidth := 0
	if op.number {
		numWidth = op.numDigits + 1
		if op.numSep == '\t' {
			numWidth = op.numDigits + 8 - op.numDigits%8 // to the next tab stop
		}
	}
	colWidth := (op.width - (cols-1)*sepLen) / cols
	if op.number && merge {
		colWidth = (op.width - numWidth - (cols-1)*sepLen) / cols
	} else if op.number && cols > 1 {
		colWidth = (op.width - cols*numWidth - (cols-1)*sepLen) / cols
	}
	// A text line of the output: items in columns (nil: absent).
	type cell struct {
		text string
		n    int // line number, 0 for none
		ok   bool
	}
	var rows [][]cell
	lineNo := 0
	pageRows := func() [][]cell { return rows }
	_ = pageRows
	page := 0
	emitPage := func(pageRows [][]cell, final bool) {
		page++
		if page < op.firstPage || op.lastPage > 0 && page > op.lastPage {
			return
		}
		if header {
			out.space(op.margin)
			out.white()
			out.w.WriteString("\n\n")
			pt := fmt.Sprintf("Page %d", page)
			avail := max(0, op.width-len(date)-len(title)-len(pt))
			lhs, rhs := avail>>1, avail-(avail>>1)
			fmt.Fprintf(out.w, "%*s%s%*s%s%*s%s\n\n\n", op.margin, "", date, lhs, " ", title, rhs, " ", pt)
			out.pos, out.pending = 0, 0
		}
		for ri, r := range pageRows {
			for c, cl := range r {
				if op.sepGiven {
					if c > 0 {
						out.text(op.sep)
					} else {
						out.space(op.margin)
					}
				} else {
					start := op.margin + c*(colWidth+sepLen+numWidth)
					if merge && c > 0 {
						start = op.margin + numWidth + c*(colWidth+sepLen)
					}
					if !cl.ok && !merge {
						break
					}
					out.padTo(start)
					// GNU writes the white space up to each column
					// before the column's own.
					out.white()
				}
				if !cl.ok {
					continue
				}
				if cl.n > 0 {
					s := strconv.Itoa(cl.n)
					if len(s) > op.numDigits {
						s = s[len(s)-op.numDigits:]
					}
					out.space(op.numDigits - len(s))
					out.text(s)
					if op.numSep == '\t' && (cols > 1 || merge) {
						out.space(numWidth - op.numDigits)
					} else {
						out.text(string(op.numSep))
					}
				}
				txt := cl.text
				if truncate {
					// Columns: tabs expand, and spaces are white space
					// that only text after them writes.
					txt = prTruncate(prExpand(txt), colWidth)
					for len(txt) > 0 {
						i := strings.IndexByte(txt, ' ')
						if i < 0 {
							out.text(txt)
							break
						}
						if i > 0 {
							out.text(txt[:i])
						}
						out.space(1)
						txt = txt[i+1:]
					}
				} else {
					out.text(txt)
				}
			}
			out.newline()
			// Columns end without the blank line of the last row.
			if op.double && !(final && cols > 1 && !merge && !header && ri == len(pageRows)-1) {
				out.newline()
			}
		}
		if header {
			n := len(pageRows)
			if op.double {
				n *= 2
			}
			for i := n; i < lines; i++ {
				out.newline()
			}
			out.w.WriteString("\n\n\n\n\n")
		}
	}
	mk := func(s string) cell {
		lineNo++
		c := cell{text: s, ok: true}
		if op.number {
			c.n = lineNo
		}
		return c
	}
	if merge {
		n := 0
		for _, f := range files {
			n = max(n, len(f))
		}
		for i := 0; i < n; i++ {
			r := make([]cell, len(files))
			lineNo++
			for c, f := range files {
				if i < len(f) {
					r[c] = cell{text: f[i], ok: true}
					if op.number && c == 0 {
						r[c].n = lineNo
					}
				}
			}
			rows = append(rows, r)
		}
		for len(rows) > 0 {
			k := min(body, len(rows))
			emitPage(rows[:k], k == len(rows))
			rows = rows[k:]
		}
		return
	}
	var items []cell
	for _, l := range files[0] {
		items = append(items, mk(l))
	}
	if cols == 1 {
		for len(items) > 0 {
			k := min(body, len(items))
			var pr [][]cell
			for _, it := range items[:k] {
				pr = append(pr, []cell{it})
			}
			emitPage(pr, k == len(items))
			items = items[k:]
		}
		return
	}
	for len(items) > 0 {
		capacity := body * cols
		k := min(capacity, len(items))
		chunk := items[:k]
		items = items[k:]
		pr := make([][]cell, 0, body)
		if op.across {
			for i := 0; i < len(chunk); i += cols {
				r := make([]cell, 0, cols)
				for c := 0; c < cols && i+c < len(chunk); c++ {
					r = append(r, chunk[i+c])
				}
				pr = append(pr, r)
			}
		} else {
			counts := make([]int, cols)
			if len(chunk) < capacity {
				for c := range counts {
					counts[c] = len(chunk) / cols
					if c < len(chunk)%cols {
						counts[c]++
					}
				}
			} else {
				for c := range counts {
					counts[c] = body
				}
			}
			starts := make([]int, cols)
			for c := 1; c < cols; c++ {
				starts[c] = starts[c-1] + counts[c-1]
			}
			for r := 0; r < counts[0]; r++ {
				row := make([]cell, 0, cols)
				for c := 0; c < cols; c++ {
					if r >= counts[c] {
						break
					}
					row = append(row, chunk[starts[c]+r])
				}
				pr = append(pr, row)
			}
		}
		emitPage(pr, len(items) == 0)
	}
}

// prTruncate cuts s to width columns (tabs expanded to stops of 8).
func prTruncate(s string, width int) string {
	col := 0
	for i := 0; i < len(s); i++ {
		next := col + 1
		if s[i] == '\t' {
			next = (col/8 + 1) * 8
		}
		if next > width {
			return s[:i]
		}
		col = next
	}
	return s
}

// prExpand expands tabs to stops of 8.
func prExpand(s string) string {
	if strings.IndexByte(s, '\t') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\t' {
			n := 8 - b.Len()%8
			b.WriteString(strings.Repeat(" ", n))
		} else {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// prNum parses a numeric option argument as GNU's xdectoimax does, with
// its two messages.
func prNum(e *cmd.Env, what, v string, min int) (int, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		e.Errorf("%s: %s", what, quote(v))
		return 0, false
	}
	if err != nil || n > math.MaxInt32 {
		e.Errorf("%s: %s: Value too large for defined data type", what, quote(v))
		return 0, false
	}
	if n < int64(min) {
		e.Errorf("%s: %s: Numerical result out of range", what, quote(v))
		return 0, false
	}
	return int(n), true
}
