package textutils

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("uniq", uniqMain)
	cmd.Register("cut", cutMain)
	cmd.Register("tee", teeMain)
}

const uniqHelp = `Filter adjacent matching lines from INPUT (or standard input),
writing to OUTPUT (or standard output).

  -c, --count           prefix lines by the number of occurrences
  -d, --repeated        only print duplicate lines, one for each group
  -D                    print all duplicate lines
      --all-repeated[=METHOD]  like -D, but allow separating groups
                                 with an empty line;
                                 METHOD={none(default),prepend,separate}
  -f, --skip-fields=N   avoid comparing the first N fields
      --group[=METHOD]  show all items, separating groups with an empty line;
                          METHOD={separate(default),prepend,append,both}
  -i, --ignore-case     ignore differences in case when comparing
  -s, --skip-chars=N    avoid comparing the first N characters
  -u, --unique          only print unique lines
  -z, --zero-terminated     line delimiter is NUL, not newline
  -w, --check-chars=N   compare no more than N characters in lines
`

var uniqOpts = []optDef{
	{'c', "count", noArg},
	{'d', "repeated", noArg},
	{'D', "", noArg},
	{0, "all-repeated", optArg},
	{'f', "skip-fields", reqArg},
	{0, "group", optArg},
	{'i', "ignore-case", noArg},
	{'s', "skip-chars", reqArg},
	{'u', "unique", noArg},
	{'z', "zero-terminated", noArg},
	{'w', "check-chars", reqArg},
}

func uniqMain(e *cmd.Env) int {
	t := newTool(e)
	opts, operands, st, ok := t.parse(uniqOpts, "uniq [OPTION]... [INPUT [OUTPUT]]", uniqHelp, 1)
	if !ok {
		return st
	}
	var count, dup, allDup, uniq, icase bool
	skipF, skipC, checkC := 0, 0, -1
	delim := byte('\n')
	allMethod, group := "", ""
	num := func(o opt, what string) (int, bool) {
		n, err := strconv.Atoi(o.val)
		if err != nil || n < 0 {
			e.Errorf("%s: invalid number of %s to skip", o.val, what)
			return 0, false
		}
		return n, true
	}
	for _, o := range opts {
		switch o.name {
		case "count":
			count = true
		case "repeated":
			dup = true
		case "D":
			allDup, allMethod = true, "none"
		case "all-repeated":
			allDup, allMethod = true, "none"
			if o.hasVal {
				allMethod = o.val
			}
		case "group":
			group = "separate"
			if o.hasVal {
				group = o.val
			}
		case "skip-fields":
			if skipF, ok = num(o, "fields"); !ok {
				return 1
			}
		case "skip-chars":
			if skipC, ok = num(o, "bytes"); !ok {
				return 1
			}
		case "check-chars":
			n, err := strconv.Atoi(o.val)
			if err != nil || n < 0 {
				e.Errorf("%s: invalid number of bytes to compare", o.val)
				return 1
			}
			checkC = n
		case "ignore-case":
			icase = true
		case "unique":
			uniq = true
		case "zero-terminated":
			delim = 0
		}
	}
	if len(operands) > 2 {
		e.Errorf("extra operand %s", quote(operands[2]))
		t.usageHint()
		return 1
	}
	if group != "" && (count || dup || allDup || uniq) {
		e.Errorf("--group is mutually exclusive with -c/-d/-D/-u")
		t.usageHint()
		return 1
	}
	if allDup && count {
		e.Errorf("printing all duplicated lines and repeat counts is meaningless")
		t.usageHint()
		return 1
	}
	in := "-"
	if len(operands) > 0 {
		in = operands[0]
	}
	r, closeFn, err := openInput(e, in)
	if err != nil {
		e.Errorf("%s: %s", in, strerror(err))
		return 1
	}
	defer closeFn()
	if len(operands) == 2 && operands[1] != "-" {
		f, err := os.Create(operands[1])
		if err != nil {
			e.Errorf("%s: %s", operands[1], strerror(err))
			return 1
		}
		defer f.Close()
		t.out.Reset(f)
	}
	key := func(line []byte) []byte {
		i := 0
		for f := 0; f < skipF; f++ {
			for i < len(line) && isBlank(line[i]) {
				i++
			}
			for i < len(line) && !isBlank(line[i]) {
				i++
			}
		}
		i = min(len(line), i+skipC)
		k := line[i:]
		if checkC >= 0 && len(k) > checkC {
			k = k[:checkC]
		}
		return k
	}
	equal := func(a, b []byte) bool {
		ka, kb := key(a), key(b)
		if icase {
			return bytes.EqualFold(ka, kb)
		}
		return bytes.Equal(ka, kb)
	}
	w := t.out
	lr := newLineReader(r, delim)
	var prev []byte
	have := false
	n := 0
	groups := 0
	printedGroups := 0
	emit := func(line []byte, cnt int) {
		if group != "" {
			return
		}
		if allDup {
			return
		}
		if dup && cnt < 2 || uniq && cnt > 1 {
			return
		}
		if count {
			fmt.Fprintf(w, "%7d ", cnt)
		}
		w.Write(line)
		w.WriteByte(delim)
	}
	var run [][]byte // the current group, for -D and --group
	flushRun := func() {
		if allDup && len(run) > 1 {
			if allMethod == "prepend" || allMethod == "separate" && printedGroups > 0 {
				w.WriteByte(delim)
			}
			for _, l := range run {
				w.Write(l)
				w.WriteByte(delim)
			}
			printedGroups++
		}
		if group != "" && len(run) > 0 {
			if (group == "prepend" || group == "both") || (printedGroups > 0 && (group == "separate" || group == "append")) {
				w.WriteByte(delim)
			}
			for _, l := range run {
				w.Write(l)
				w.WriteByte(delim)
			}
			printedGroups++
		}
		run = run[:0]
	}
	for {
		line, err := lr.next()
		if err != nil {
			if err != io.EOF {
				e.Errorf("%s: %s", in, strerror(err))
				return 1
			}
			break
		}
		line = bytes.TrimSuffix(line, []byte{delim})
		if have && equal(prev, line) {
			n++
			if allDup || group != "" {
				run = append(run, slices.Clone(line))
			}
			continue
		}
		if have {
			emit(prev, n)
			flushRun()
			groups++
		}
		prev = append(prev[:0], line...)
		have, n = true, 1
		if allDup || group != "" {
			run = append(run, slices.Clone(line))
		}
	}
	if have {
		emit(prev, n)
		flushRun()
	}
	if group == "append" || group == "both" {
		if printedGroups > 0 {
			w.WriteByte(delim)
		}
	}
	return t.flush(0)
}

const cutHelp = `Print selected parts of lines from each FILE to standard output.

With no FILE, or when FILE is -, read standard input.

  -b, --bytes=LIST        select only these bytes
  -c, --characters=LIST   select only these characters
  -d, --delimiter=DELIM   use DELIM instead of TAB for field delimiter
  -f, --fields=LIST       select only these fields;  also print any line
                            that contains no delimiter character, unless
                            the -s option is specified
  -n                      (ignored)
      --complement        complement the set of selected bytes, characters
                            or fields
  -s, --only-delimited    do not print lines not containing delimiters
      --output-delimiter=STRING  use STRING as the output delimiter
                            the default is to use the input delimiter
  -z, --zero-terminated   line delimiter is NUL, not newline

Each LIST is made up of one range, or many ranges separated by commas.
`

var cutOpts = []optDef{
	{'b', "bytes", reqArg},
	{'c', "characters", reqArg},
	{'d', "delimiter", reqArg},
	{'f', "fields", reqArg},
	{'n', "", noArg},
	{0, "complement", noArg},
	{'s', "only-delimited", noArg},
	{0, "output-delimiter", reqArg},
	{'z', "zero-terminated", noArg},
}

type cutRange struct{ lo, hi int } // 1-based inclusive; hi -1: to the end

// parseCutList parses "1,3-5,7-" into sorted, merged ranges.
func parseCutList(s string, fields bool) ([]cutRange, error) {
	var rs []cutRange
	what := "byte/character positions are"
	if fields {
		what = "fields are"
	}
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		lo, hi, isRange := strings.Cut(part, "-")
		var r cutRange
		parse := func(v string) (int, error) {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				if fields {
					return 0, fmt.Errorf("invalid field value %s", quote(v))
				}
				return 0, fmt.Errorf("invalid byte/character position %s", quote(v))
			}
			if n == 0 {
				return 0, fmt.Errorf("%s numbered from 1", what)
			}
			return n, nil
		}
		if !isRange {
			n, err := parse(part)
			if err != nil {
				return nil, err
			}
			r = cutRange{n, n}
		} else {
			if lo == "" && hi == "" {
				return nil, fmt.Errorf("invalid range with no endpoint: -")
			}
			r = cutRange{1, -1}
			var err error
			if lo != "" {
				if r.lo, err = parse(lo); err != nil {
					return nil, err
				}
			}
			if hi != "" {
				if r.hi, err = parse(hi); err != nil {
					return nil, err
				}
				if r.hi < r.lo {
					return nil, fmt.Errorf("invalid decreasing range")
				}
			}
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		if fields {
			return nil, fmt.Errorf("fields are numbered from 1")
		}
		return nil, fmt.Errorf("byte/character positions are numbered from 1")
	}
	slices.SortFunc(rs, func(a, b cutRange) int { return a.lo - b.lo })
	merged := rs[:1]
	for _, r := range rs[1:] {
		last := &merged[len(merged)-1]
		if last.hi == -1 || r.lo <= last.hi+1 {
			if last.hi != -1 && (r.hi == -1 || r.hi > last.hi) {
				last.hi = r.hi
			}
			continue
		}
		merged = append(merged, r)
	}
	return merged, nil
}

func cutSelected(rs []cutRange, n int) bool {
	for _, r := range rs {
		if n >= r.lo && (r.hi == -1 || n <= r.hi) {
			return true
		}
		if n < r.lo {
			return false
		}
	}
	return false
}

func cutMain(e *cmd.Env) int {
	t := newTool(e)
	opts, files, st, ok := t.parse(cutOpts, "cut OPTION... [FILE]...", cutHelp, 1)
	if !ok {
		return st
	}
	mode := byte(0)
	list := ""
	delim := byte('\t')
	delimSet := false
	var outDelim *string
	complement, onlyDelim := false, false
	eol := byte('\n')
	for _, o := range opts {
		switch o.name {
		case "bytes", "characters", "fields":
			if mode != 0 {
				e.Errorf("only one list may be specified")
				t.usageHint()
				return 1
			}
			mode, list = o.name[0], o.val
		case "delimiter":
			if len(o.val) > 1 {
				e.Errorf("the delimiter must be a single character")
				t.usageHint()
				return 1
			}
			delim, delimSet = 0, true
			if len(o.val) == 1 {
				delim = o.val[0]
			}
		case "output-delimiter":
			s := o.val
			outDelim = &s
		case "complement":
			complement = true
		case "only-delimited":
			onlyDelim = true
		case "zero-terminated":
			eol = 0
		}
	}
	if mode == 0 {
		e.Errorf("you must specify a list of bytes, characters, or fields")
		t.usageHint()
		return 1
	}
	if mode != 'f' && delimSet {
		e.Errorf("an input delimiter may be specified only when operating on fields")
		t.usageHint()
		return 1
	}
	if mode != 'f' && onlyDelim {
		e.Errorf("suppressing non-delimited lines makes sense\n\tonly when operating on fields")
		t.usageHint()
		return 1
	}
	rs, err := parseCutList(list, mode == 'f')
	if err != nil {
		e.Errorf("%s", err)
		t.usageHint()
		return 1
	}
	sel := func(n int) bool { return cutSelected(rs, n) != complement }
	// past is the first field or byte after every selected one (0: none,
	// the selection is open-ended): the rest of a line is not looked at.
	past := 0
	if last := rs[len(rs)-1]; !complement && last.hi != -1 {
		past = last.hi + 1
	}
	od := string(delim)
	if outDelim != nil {
		od = *outDelim
	}
	status := 0
	w := t.out
	for _, name := range inputs(files) {
		r, closeFn, err := openInput(e, name)
		if err != nil {
			t.out.Flush()
			e.Errorf("%s: %s", name, strerror(err))
			status = 1
			continue
		}
		lr := newLineReader(r, eol)
		for {
			line, err := lr.next()
			if err != nil {
				if err != io.EOF {
					t.out.Flush()
					e.Errorf("%s: %s", name, strerror(err))
					status = 1
				}
				break
			}
			line = bytes.TrimSuffix(line, []byte{eol})
			if mode == 'f' {
				if bytes.IndexByte(line, delim) < 0 {
					if !onlyDelim {
						w.Write(line)
						w.WriteByte(eol)
					}
					continue
				}
				first := true
				n := 0
				for len(line) >= 0 {
					n++
					i := bytes.IndexByte(line, delim)
					field := line
					if i >= 0 {
						field = line[:i]
					}
					if sel(n) {
						if !first {
							w.WriteString(od)
						}
						w.Write(field)
						first = false
					}
					if i < 0 || n+1 == past {
						break
					}
					line = line[i+1:]
				}
				w.WriteByte(eol)
				continue
			}
			if past > 0 && len(line) >= past {
				line = line[:past-1]
			}
			prevSel := false
			started := false
			for i := range line {
				if sel(i + 1) {
					if outDelim != nil && started && !prevSel {
						w.WriteString(od)
					}
					w.WriteByte(line[i])
					prevSel, started = true, true
				} else {
					prevSel = false
				}
			}
			w.WriteByte(eol)
		}
		closeFn()
	}
	return t.flush(status)
}

const teeHelp = `Copy standard input to each FILE, and also to standard output.

  -a, --append              append to the given FILEs, do not overwrite
  -i, --ignore-interrupts   ignore interrupt signals
  -p                        diagnose errors writing to non pipes
`

func teeMain(e *cmd.Env) int {
	t := newTool(e)
	opts, files, st, ok := t.parse([]optDef{{'a', "append", noArg}, {'i', "ignore-interrupts", noArg}, {'p', "", noArg}, {0, "output-error", optArg}},
		"tee [OPTION]... [FILE]...", teeHelp, 1)
	if !ok {
		return st
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	for _, o := range opts {
		if o.name == "append" {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
	}
	status := 0
	var outs []io.Writer
	var names []string
	var fs []*os.File
	for _, name := range files {
		f, err := os.OpenFile(name, flags, 0o666)
		if err != nil {
			e.Errorf("%s: %s", name, strerror(err))
			status = 1
			continue
		}
		fs = append(fs, f)
		outs = append(outs, f)
		names = append(names, name)
	}
	buf := make([]byte, 64<<10)
	failed := make([]bool, len(outs))
	for {
		n, err := e.Stdin.Read(buf)
		if n > 0 {
			if _, werr := e.Stdout.Write(buf[:n]); werr != nil {
				status = 1
			}
			for i, w := range outs {
				if failed[i] {
					continue
				}
				if _, werr := w.Write(buf[:n]); werr != nil {
					e.Errorf("%s: %s", names[i], strerror(werr))
					failed[i] = true
					status = 1
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			e.Errorf("read error: %s", strerror(err))
			status = 1
			break
		}
	}
	for _, f := range fs {
		if err := f.Close(); err != nil {
			e.Errorf("%s: %s", f.Name(), strerror(err))
			status = 1
		}
	}
	return status
}
