package textutils

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("comm", commMain)
	cmd.Register("join", joinMain)
	cmd.Register("column", columnMain)
}

const commHelp = `Compare sorted files FILE1 and FILE2 line by line.

With no options, produce three-column output.  Column one contains
lines unique to FILE1, column two contains lines unique to FILE2,
and column three contains lines common to both files.

  -1                      suppress column 1 (lines unique to FILE1)
  -2                      suppress column 2 (lines unique to FILE2)
  -3                      suppress column 3 (lines that appear in both files)
      --check-order       check that the input is correctly sorted
      --nocheck-order     do not check that the input is correctly sorted
      --output-delimiter=STR  separate columns with STR
      --total             output a summary
  -z, --zero-terminated   line delimiter is NUL, not newline
`

// readLines reads all records of an input.
func readLines(e *cmd.Env, name string, delim byte) ([][]byte, error) {
	data, err := readAllInput(e, name)
	if err != nil {
		return nil, err
	}
	return splitRecords(data, delim), nil
}

func commMain(e *cmd.Env) int {
	t := newTool(e)
	opts, files, st, ok := t.parse([]optDef{
		{'1', "", noArg}, {'2', "", noArg}, {'3', "", noArg},
		{0, "check-order", noArg}, {0, "nocheck-order", noArg},
		{0, "output-delimiter", reqArg}, {0, "total", noArg}, {'z', "zero-terminated", noArg},
	}, "comm [OPTION]... FILE1 FILE2", commHelp, 1)
	if !ok {
		return st
	}
	show := [4]bool{false, true, true, true}
	check := 0 // 0 default, 1 check, -1 nocheck
	sep := "\t"
	sepSet := false
	total := false
	eol := byte('\n')
	for _, o := range opts {
		switch o.name {
		case "1", "2", "3":
			show[o.name[0]-'0'] = false
		case "check-order":
			check = 1
		case "nocheck-order":
			check = -1
		case "output-delimiter":
			if sepSet && sep != o.val {
				e.Errorf("multiple output delimiters specified")
				return 1
			}
			sep, sepSet = o.val, true
			if sep == "" {
				sep = "\x00"
			}
		case "total":
			total = true
		case "zero-terminated":
			eol = 0
		}
	}
	if len(files) < 2 {
		if len(files) == 0 {
			e.Errorf("missing operand")
		} else {
			e.Errorf("missing operand after %s", quote(files[0]))
		}
		t.usageHint()
		return 1
	}
	if len(files) > 2 {
		e.Errorf("extra operand %s", quote(files[2]))
		t.usageHint()
		return 1
	}
	if files[0] == "-" && files[1] == "-" {
		e.Errorf("%s", "both files cannot be standard input")
		return 1
	}
	var in [2][][]byte
	for i := 0; i < 2; i++ {
		l, err := readLines(e, files[i], eol)
		if err != nil {
			e.Errorf("%s: %s", files[i], strerror(err))
			return 1
		}
		in[i] = l
	}
	w := t.out
	var counts [4]int
	emit := func(col int, line []byte) {
		counts[col]++
		if !show[col] {
			return
		}
		for c := 1; c < col; c++ {
			if show[c] {
				w.WriteString(sep)
			}
		}
		w.Write(line)
		w.WriteByte(eol)
	}
	status := 0
	disorder := [2]bool{}
	reported := false
	checkOrder := func(k int, idx int) {
		if check < 0 || idx == 0 || disorder[k] {
			return
		}
		if bytes.Compare(in[k][idx-1], in[k][idx]) > 0 {
			disorder[k] = true
			if check == 1 || !reported {
				w.Flush()
				e.Errorf("file %d is not in sorted order", k+1)
				reported = true
				status = 1
				if check == 1 {
					return
				}
			}
		}
	}
	i, j := 0, 0
	for i < len(in[0]) || j < len(in[1]) {
		if check == 1 && (disorder[0] || disorder[1]) {
			break
		}
		var c int
		switch {
		case i >= len(in[0]):
			c = 1
		case j >= len(in[1]):
			c = -1
		default:
			c = bytes.Compare(in[0][i], in[1][j])
		}
		switch {
		case c < 0:
			checkOrder(0, i)
			emit(1, in[0][i])
			i++
		case c > 0:
			checkOrder(1, j)
			emit(2, in[1][j])
			j++
		default:
			checkOrder(0, i)
			checkOrder(1, j)
			emit(3, in[0][i])
			i++
			j++
		}
	}
	if total {
		fmt.Fprintf(w, "%d%s%d%s%d%stotal%c", counts[1], sep, counts[2], sep, counts[3], sep, eol)
	}
	if status != 0 && check != 1 {
		w.Flush()
		e.Errorf("input is not in sorted order")
	}
	return t.flush(status)
}

const joinHelp = `For each pair of input lines with identical join fields, write a line to
standard output.  The default join field is the first, delimited by blanks.

  -a FILENUM        also print unpairable lines from file FILENUM, where
                      FILENUM is 1 or 2, corresponding to FILE1 or FILE2
  -e STRING         replace missing (empty) input fields with STRING
  -i, --ignore-case  ignore differences in case when comparing fields
  -j FIELD          equivalent to '-1 FIELD -2 FIELD'
  -o FORMAT         obey FORMAT while constructing output line
  -t CHAR           use CHAR as input and output field separator
  -v FILENUM        like -a FILENUM, but suppress joined output lines
  -1 FIELD          join on this FIELD of file 1
  -2 FIELD          join on this FIELD of file 2
  --check-order     check that the input is correctly sorted
  --nocheck-order   do not check that the input is correctly sorted
  --header          treat the first line in each file as field headers
  -z, --zero-terminated     line delimiter is NUL, not newline
`

type joinLine struct {
	raw    []byte
	fields [][]byte
}

func joinSplit(line []byte, tab int) [][]byte {
	if tab >= 0 {
		return bytes.Split(line, []byte{byte(tab)})
	}
	return bytes.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' })
}

type joinSpec struct {
	file, field int // file 0 = the join field
}

func joinMain(e *cmd.Env) int {
	t := newTool(e)
	opts, files, st, ok := t.parse([]optDef{
		{'a', "", reqArg}, {'e', "", reqArg}, {'i', "ignore-case", noArg}, {'j', "", reqArg},
		{'o', "", reqArg}, {'t', "", reqArg}, {'v', "", reqArg}, {'1', "", reqArg}, {'2', "", reqArg},
		{0, "check-order", noArg}, {0, "nocheck-order", noArg}, {0, "header", noArg}, {'z', "zero-terminated", noArg},
	}, "join [OPTION]... FILE1 FILE2", joinHelp, 1)
	if !ok {
		return st
	}
	key := [2]int{0, 0}
	unpaired := [2]bool{}
	onlyUnpaired := false
	empty := ""
	emptySet := false
	icase := false
	tab := -1
	var format []joinSpec
	autoFormat := false
	check := 0
	header := false
	eol := byte('\n')
	fieldNum := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			e.Errorf("invalid field number: %s", quote(s))
			return 0, false
		}
		return n - 1, true
	}
	for _, o := range opts {
		switch o.name {
		case "a", "v":
			if o.val != "1" && o.val != "2" {
				e.Errorf("invalid field number: %s", quote(o.val))
				return 1
			}
			unpaired[o.val[0]-'1'] = true
			if o.name == "v" {
				onlyUnpaired = true
			}
		case "e":
			empty, emptySet = o.val, true
		case "ignore-case":
			icase = true
		case "j", "1", "2":
			n, ok := fieldNum(o.val)
			if !ok {
				return 1
			}
			if o.name != "2" {
				key[0] = n
			}
			if o.name != "1" {
				key[1] = n
			}
		case "o":
			if o.val == "auto" {
				autoFormat = true
				continue
			}
			for _, spec := range strings.FieldsFunc(o.val, func(r rune) bool { return r == ',' || r == ' ' }) {
				if spec == "0" {
					format = append(format, joinSpec{0, 0})
					continue
				}
				f, n, ok := strings.Cut(spec, ".")
				if !ok || (f != "1" && f != "2") {
					e.Errorf("invalid field specifier: %s", quote(spec))
					return 1
				}
				fi, good := fieldNum(n)
				if !good {
					return 1
				}
				format = append(format, joinSpec{int(f[0] - '0'), fi})
			}
		case "t":
			if len(o.val) > 1 {
				e.Errorf("multi-character tab %s", quote(o.val))
				return 1
			}
			tab = '\n'
			if len(o.val) == 1 {
				tab = int(o.val[0])
			}
		case "check-order":
			check = 1
		case "nocheck-order":
			check = -1
		case "header":
			header = true
		case "zero-terminated":
			eol = 0
		}
	}
	if len(files) != 2 {
		if len(files) < 2 {
			if len(files) == 0 {
				e.Errorf("missing operand")
			} else {
				e.Errorf("missing operand after %s", quote(files[0]))
			}
		} else {
			e.Errorf("extra operand %s", quote(files[2]))
		}
		t.usageHint()
		return 1
	}
	var in [2][]joinLine
	for k := 0; k < 2; k++ {
		recs, err := readLines(e, files[k], eol)
		if err != nil {
			e.Errorf("%s: %s", files[k], strerror(err))
			return 1
		}
		for _, r := range recs {
			in[k] = append(in[k], joinLine{raw: r, fields: joinSplit(r, tab)})
		}
	}
	outSep := " "
	if tab >= 0 && tab != '\n' {
		outSep = string(rune(tab))
	}
	keyOf := func(k int, l *joinLine) []byte {
		if key[k] < len(l.fields) {
			return l.fields[key[k]]
		}
		return nil
	}
	cmpKeys := func(a, b []byte) int {
		if icase {
			return bytes.Compare(bytes.ToLower(a), bytes.ToLower(b))
		}
		return bytes.Compare(a, b)
	}
	if autoFormat {
		n1, n2 := 0, 0
		if len(in[0]) > 0 {
			n1 = len(in[0][0].fields)
		}
		if len(in[1]) > 0 {
			n2 = len(in[1][0].fields)
		}
		format = append(format, joinSpec{0, 0})
		for f := 0; f < n1; f++ {
			if f != key[0] {
				format = append(format, joinSpec{1, f})
			}
		}
		for f := 0; f < n2; f++ {
			if f != key[1] {
				format = append(format, joinSpec{2, f})
			}
		}
	}
	w := t.out
	field := func(l *joinLine, f int) ([]byte, bool) {
		if l == nil || f >= len(l.fields) {
			return nil, false
		}
		return l.fields[f], true
	}
	printLine := func(l1, l2 *joinLine) {
		var parts [][]byte
		put := func(b []byte, ok bool) {
			if !ok || (len(b) == 0 && emptySet) {
				parts = append(parts, []byte(empty))
				return
			}
			parts = append(parts, b)
		}
		if format != nil {
			for _, s := range format {
				switch s.file {
				case 0:
					if l1 != nil {
						put(field(l1, key[0]))
					} else {
						put(field(l2, key[1]))
					}
				case 1:
					put(field(l1, s.field))
				case 2:
					put(field(l2, s.field))
				}
			}
		} else {
			if l1 != nil {
				put(field(l1, key[0]))
			} else {
				put(field(l2, key[1]))
			}
			if l1 != nil {
				for f := range l1.fields {
					if f != key[0] {
						put(l1.fields[f], true)
					}
				}
			}
			if l2 != nil {
				for f := range l2.fields {
					if f != key[1] {
						put(l2.fields[f], true)
					}
				}
			}
		}
		w.Write(bytes.Join(parts, []byte(outSep)))
		w.WriteByte(eol)
	}
	i, j := 0, 0
	if header && len(in[0]) > 0 && len(in[1]) > 0 {
		printLine(&in[0][0], &in[1][0])
		i, j = 1, 1
	}
	status := 0
	disorder := [2]bool{}
	checkSorted := func(k, idx int) {
		if check < 0 || disorder[k] || idx == 0 || (header && idx == 1) {
			return
		}
		if cmpKeys(keyOf(k, &in[k][idx-1]), keyOf(k, &in[k][idx])) > 0 {
			disorder[k] = true
			w.Flush()
			e.Errorf("%s:%d: is not sorted: %s", files[k], idx+1, in[k][idx].raw)
			status = 1
		}
	}
	seenUnpairable := false
	for i < len(in[0]) && j < len(in[1]) {
		if check == 1 && status != 0 {
			break
		}
		c := cmpKeys(keyOf(0, &in[0][i]), keyOf(1, &in[1][j]))
		if c < 0 {
			if unpaired[0] {
				printLine(&in[0][i], nil)
			}
			seenUnpairable = true
			i++
			if i < len(in[0]) && (check == 1 || seenUnpairable) {
				checkSorted(0, i)
			}
			continue
		}
		if c > 0 {
			if unpaired[1] {
				printLine(nil, &in[1][j])
			}
			seenUnpairable = true
			j++
			if j < len(in[1]) && (check == 1 || seenUnpairable) {
				checkSorted(1, j)
			}
			continue
		}
		// Equal keys: cross product of both groups.
		i2 := i + 1
		for i2 < len(in[0]) && cmpKeys(keyOf(0, &in[0][i2]), keyOf(0, &in[0][i])) == 0 {
			i2++
		}
		j2 := j + 1
		for j2 < len(in[1]) && cmpKeys(keyOf(1, &in[1][j2]), keyOf(1, &in[1][j])) == 0 {
			j2++
		}
		if !onlyUnpaired {
			for a := i; a < i2; a++ {
				for b := j; b < j2; b++ {
					printLine(&in[0][a], &in[1][b])
				}
			}
		}
		i, j = i2, j2
		if check == 1 || seenUnpairable {
			if i < len(in[0]) {
				checkSorted(0, i)
			}
			if j < len(in[1]) {
				checkSorted(1, j)
			}
		}
	}
	// The rest of a file is read when its unpairable lines print or its
	// order must be checked.
	for k, idx := range [2]int{i, j} {
		if check == 1 && status != 0 {
			break
		}
		if !unpaired[k] && !(check == 1 || check == 0 && seenUnpairable) {
			continue
		}
		if idx < len(in[k]) && !unpaired[k] {
			seenUnpairable = true
		}
		for ; idx < len(in[k]); idx++ {
			checkSorted(k, idx)
			if check == 1 && status != 0 {
				break
			}
			if !unpaired[k] {
				continue
			}
			if k == 0 {
				printLine(&in[0][idx], nil)
			} else {
				printLine(nil, &in[1][idx])
			}
		}
	}
	if status != 0 && check != 1 {
		w.Flush()
		e.Errorf("input is not in sorted order")
	}
	return t.flush(status)
}

const columnHelp = `Columnate lists.

  -t, --table                      create a table
  -s, --separator <string>         possible table delimiters
  -o, --output-separator <string>  columns separator for table output
                                     (default is two spaces)
  -c, --output-width <width>       width of output in number of characters
  -x, --fillrows                   fill rows before columns
  -L, --keep-empty-lines           don't ignore empty lines
  -R, --table-right <columns>      right align text in these columns
  -N, --table-columns <names>      comma separated columns names
`

func columnMain(e *cmd.Env) int {
	t := newTool(e)
	opts, files, st, ok := t.parse([]optDef{
		{'t', "table", noArg}, {'s', "separator", reqArg}, {'o', "output-separator", reqArg},
		{'c', "output-width", reqArg}, {'x', "fillrows", noArg}, {'L', "keep-empty-lines", noArg},
		{'R', "table-right", reqArg}, {'N', "table-columns", reqArg}, {'d', "table-noheadings", noArg},
	}, "column [options] [<file>...]", columnHelp, 1)
	if !ok {
		return st
	}
	table, fillRows, keepEmpty, noHead := false, false, false, false
	seps := " \t"
	sepSet := false
	outSep := "  "
	width := 80
	if v, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && v > 0 {
		width = v
	}
	var right map[int]bool
	var names []string
	for _, o := range opts {
		switch o.name {
		case "table":
			table = true
		case "separator":
			seps, sepSet = unescapeC(o.val), true
		case "output-separator":
			outSep = unescapeC(o.val)
		case "output-width":
			n, err := strconv.Atoi(o.val)
			if err != nil || n < 0 {
				e.Errorf("invalid columns argument: '%s'", o.val)
				return 1
			}
			width = n
		case "fillrows":
			fillRows = true
		case "keep-empty-lines":
			keepEmpty = true
		case "table-right":
			right = map[int]bool{}
			for _, f := range strings.Split(o.val, ",") {
				if n, err := strconv.Atoi(f); err == nil {
					right[n-1] = true
				}
			}
		case "table-columns":
			names = strings.Split(o.val, ",")
		case "table-noheadings":
			noHead = true
		}
	}
	var lines []string
	status := forEachInput(t, files, func(name string, r io.Reader) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		for _, l := range splitRecords(data, '\n') {
			s := string(l)
			if strings.TrimLeft(s, " \t") == "" && !keepEmpty {
				continue
			}
			lines = append(lines, s)
		}
		return nil
	})
	w := t.out
	if table {
		var rows [][]string
		if names != nil && !noHead {
			rows = append(rows, names)
		}
		for _, l := range lines {
			if l == "" {
				rows = append(rows, nil)
				continue
			}
			if sepSet {
				rows = append(rows, splitAny(l, seps))
				continue
			}
			rows = append(rows, strings.FieldsFunc(l, func(r rune) bool { return strings.ContainsRune(seps, r) }))
		}
		var widths []int
		for _, r := range rows {
			for i, c := range r {
				if i >= len(widths) {
					widths = append(widths, 0)
				}
				widths[i] = max(widths[i], len(c))
			}
		}
		ncols := len(widths)
		for _, r := range rows {
			var b strings.Builder
			if r == nil {
				w.WriteByte('\n')
				continue
			}
			for i := 0; i < ncols; i++ {
				c := ""
				if i < len(r) {
					c = r[i]
				}
				if i > 0 {
					b.WriteString(outSep)
				}
				pad := widths[i] - len(c)
				if right[i] {
					b.WriteString(strings.Repeat(" ", pad))
					b.WriteString(c)
					continue
				}
				b.WriteString(c)
				if i < ncols-1 {
					b.WriteString(strings.Repeat(" ", pad))
				}
			}
			w.WriteString(b.String())
			w.WriteByte('\n')
		}
		return t.flush(status)
	}
	if len(lines) == 0 {
		return t.flush(status)
	}
	maxLen := 0
	for _, l := range lines {
		maxLen = max(maxLen, len(l))
	}
	colWidth := (maxLen + 8) &^ 7
	cols := width / colWidth
	if cols <= 1 {
		for _, l := range lines {
			w.WriteString(l)
			w.WriteByte('\n')
		}
		return t.flush(status)
	}
	rowsN := (len(lines) + cols - 1) / cols
	pad := func(n int) {
		for n < colWidth {
			w.WriteByte('\t')
			n = (n + 8) &^ 7
		}
	}
	if fillRows {
		for i, l := range lines {
			w.WriteString(l)
			if (i+1)%cols == 0 || i == len(lines)-1 {
				w.WriteByte('\n')
			} else {
				pad(len(l))
			}
		}
		return t.flush(status)
	}
	for r := 0; r < rowsN; r++ {
		for c := 0; c < cols; c++ {
			idx := c*rowsN + r
			if idx >= len(lines) {
				break
			}
			w.WriteString(lines[idx])
			if c < cols-1 && (c+1)*rowsN+r < len(lines) {
				pad(len(lines[idx]))
			}
		}
		w.WriteByte('\n')
	}
	return t.flush(status)
}

// splitAny splits s at every byte in seps, keeping empty fields.
func splitAny(s, seps string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(seps, s[i]) >= 0 {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
