package textutils

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
	"github.com/wasmbox/wasmbox/tools/internal/textio"
)

func init() {
	cmd.Register("grep", grepMain)
	cmd.Register("egrep", func(e *cmd.Env) int { return grepWith(e, "-E") })
	cmd.Register("fgrep", func(e *cmd.Env) int { return grepWith(e, "-F") })
}

const grepUsage = "grep [OPTION]... PATTERNS [FILE]..."

const grepHelp = `Search for PATTERNS in each FILE.
Example: grep -i 'hello world' menu.h main.c
PATTERNS can contain multiple patterns separated by newlines.

Pattern selection and interpretation:
  -E, --extended-regexp     PATTERNS are extended regular expressions
  -F, --fixed-strings       PATTERNS are strings
  -G, --basic-regexp        PATTERNS are basic regular expressions
  -P, --perl-regexp         PATTERNS are Perl-compatible regular expressions
                              (RE2 syntax: no look-around, no back-references)
  -e, --regexp=PATTERNS     use PATTERNS for matching
  -f, --file=FILE           take PATTERNS from FILE
  -i, --ignore-case         ignore case distinctions in patterns and data
  -w, --word-regexp         match only whole words
  -x, --line-regexp         match only whole lines
  -z, --null-data           a data line ends in 0 byte, not newline

Miscellaneous:
  -s, --no-messages         suppress error messages
  -v, --invert-match        select non-matching lines

Output control:
  -m, --max-count=NUM       stop after NUM selected lines
  -b, --byte-offset         print the byte offset with output lines
  -n, --line-number         print line number with output lines
  -H, --with-filename       print file name with output lines
  -h, --no-filename         suppress the file name prefix on output
      --label=LABEL         use LABEL as the standard input file name prefix
  -o, --only-matching       show only nonempty parts of lines that match
  -q, --quiet, --silent     suppress all normal output
  -a, --text                equivalent to --binary-files=text
  -I                        equivalent to --binary-files=without-match
  -r, --recursive           search directories recursively
  -R, --dereference-recursive  likewise, but follow all symlinks
      --include=GLOB        search only files that match GLOB
      --exclude=GLOB        skip files that match GLOB
      --exclude-dir=GLOB    skip directories that match GLOB
  -L, --files-without-match  print only names of FILEs with no selected lines
  -l, --files-with-matches  print only names of FILEs with selected lines
  -c, --count               print only a count of selected lines per FILE
  -Z, --null                print 0 byte after FILE name

Context control:
  -B, --before-context=NUM  print NUM lines of leading context
  -A, --after-context=NUM   print NUM lines of trailing context
  -C, --context=NUM         print NUM lines of output context
  -NUM                      same as --context=NUM
      --color[=WHEN]        accepted; output is never colored

When FILE is '-', read standard input.  With no FILE, read '.' if
recursive, '-' otherwise.  Exit status is 0 if any line is selected,
1 otherwise; if any error occurs and -q is not given, the exit status is 2.
`

var grepOpts = []optDef{
	{'E', "extended-regexp", noArg},
	{'F', "fixed-strings", noArg},
	{'G', "basic-regexp", noArg},
	{'P', "perl-regexp", noArg},
	{'e', "regexp", reqArg},
	{'f', "file", reqArg},
	{'i', "ignore-case", noArg},
	{'y', "", noArg},
	{0, "no-ignore-case", noArg},
	{'w', "word-regexp", noArg},
	{'x', "line-regexp", noArg},
	{'z', "null-data", noArg},
	{'s', "no-messages", noArg},
	{'v', "invert-match", noArg},
	{'V', "version", noArg},
	{'m', "max-count", reqArg},
	{'b', "byte-offset", noArg},
	{'n', "line-number", noArg},
	{'H', "with-filename", noArg},
	{'h', "no-filename", noArg},
	{0, "label", reqArg},
	{'o', "only-matching", noArg},
	{'q', "quiet", noArg},
	{0, "silent", noArg},
	{'a', "text", noArg},
	{'I', "", noArg},
	{0, "binary-files", reqArg},
	{'r', "recursive", noArg},
	{'R', "dereference-recursive", noArg},
	{0, "include", reqArg},
	{0, "exclude", reqArg},
	{0, "exclude-dir", reqArg},
	{'L', "files-without-match", noArg},
	{'l', "files-with-matches", noArg},
	{'c', "count", noArg},
	{'Z', "null", noArg},
	{'T', "initial-tab", noArg},
	{'B', "before-context", reqArg},
	{'A', "after-context", reqArg},
	{'C', "context", reqArg},
	{0, "color", optArg},
	{0, "colour", optArg},
	{'U', "binary", noArg},
	{0, "line-buffered", noArg},
	{0, "group-separator", reqArg},
	{0, "no-group-separator", noArg},
	{'0', "", noArg}, {'1', "", noArg}, {'2', "", noArg}, {'3', "", noArg}, {'4', "", noArg},
	{'5', "", noArg}, {'6', "", noArg}, {'7', "", noArg}, {'8', "", noArg}, {'9', "", noArg},
}

func grepWith(e *cmd.Env, flag string) int {
	args := append([]string{e.Args[0], flag}, e.Args[1:]...)
	return grepMain(&cmd.Env{Args: args, Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr})
}

type grepper struct {
	t                            *tool
	re                           *Regex // matches a line (wrapped for -x/-w)
	reNext                       *Regex // -w: continuation matcher
	fixed                        []byte // fast path: one fixed string (lower case when fixedFold)
	fixedFold                    bool   // -i on an ASCII fixed string
	noPatterns                   bool
	invert, count, quiet, only   bool
	listMatch, listNoMatch       bool
	lineNum, byteOff             bool
	withName                     bool
	nullName, initialTab         bool
	maxCount                     int64
	before, after                int
	groupSep                     *string
	delim                        byte
	binaryMode                   string // "binary", "text", "without-match"
	label                        string
	recursive, deref             bool
	includes, excludes, exclDirs []string
	suppress                     bool
	word                         bool
	status                       int  // 2 once an error happened
	nameAuto                     bool // -r with one operand: names once a directory is searched
	matchedAny                   bool
	lastOut                      bool // something was printed (for "--")
}

func grepMain(e *cmd.Env) int {
	t := newTool(e)
	opts, operands, err := parseOpts(e.Args[1:], grepOpts)
	if err != nil {
		switch {
		case errors.Is(err, errHelp):
			fmt.Fprintf(e.Stdout, "Usage: %s\n%s", grepUsage, grepHelp)
			return 0
		case errors.Is(err, errVersion):
			fmt.Fprintf(e.Stdout, "grep %s\n", version)
			return 0
		}
		e.Errorf("%s", err)
		fmt.Fprintf(e.Stderr, "Usage: %s\nTry 'grep --help' for more information.\n", grepUsage)
		return 2
	}
	g := &grepper{t: t, maxCount: -1, delim: '\n', binaryMode: "binary", label: "(standard input)"}
	mode := "G"
	icase := false
	wrap := wrapNone
	var pats []string
	havePats := false
	withName, noName := false, false
	ctxNum := ""
	for _, o := range opts {
		switch o.name {
		case "extended-regexp":
			mode = "E"
		case "fixed-strings":
			mode = "F"
		case "basic-regexp":
			mode = "G"
		case "perl-regexp":
			mode = "P"
		case "regexp":
			pats = append(pats, strings.Split(o.val, "\n")...)
			havePats = true
		case "file":
			data, err := readAllInput(e, o.val)
			if err != nil {
				e.Errorf("%s: %s", o.val, strerror(err))
				return 2
			}
			havePats = true
			s := string(data)
			s = strings.TrimSuffix(s, "\n")
			if len(data) > 0 {
				pats = append(pats, strings.Split(s, "\n")...)
			}
		case "ignore-case", "y":
			icase = true
		case "no-ignore-case":
			icase = false
		case "word-regexp":
			g.word = true
		case "line-regexp":
			wrap = wrapLine
		case "null-data":
			g.delim = 0
		case "no-messages":
			g.suppress = true
		case "invert-match":
			g.invert = true
		case "max-count":
			n, err := strconv.ParseInt(o.val, 10, 64)
			if err != nil {
				e.Errorf("invalid max count")
				return 2
			}
			g.maxCount = n
		case "byte-offset":
			g.byteOff = true
		case "line-number":
			g.lineNum = true
		case "with-filename":
			withName, noName = true, false
		case "no-filename":
			noName, withName = true, false
		case "label":
			g.label = o.val
		case "only-matching":
			g.only = true
		case "quiet", "silent":
			g.quiet = true
		case "text":
			g.binaryMode = "text"
		case "I":
			g.binaryMode = "without-match"
		case "binary-files":
			switch o.val {
			case "binary", "text", "without-match":
				g.binaryMode = o.val
			default:
				e.Errorf("unknown binary-files type")
				return 2
			}
		case "recursive":
			g.recursive = true
		case "dereference-recursive":
			g.recursive, g.deref = true, true
		case "include":
			g.includes = append(g.includes, o.val)
		case "exclude":
			g.excludes = append(g.excludes, o.val)
		case "exclude-dir":
			g.exclDirs = append(g.exclDirs, o.val)
		case "files-without-match":
			g.listNoMatch, g.listMatch = true, false
		case "files-with-matches":
			g.listMatch, g.listNoMatch = true, false
		case "count":
			g.count = true
		case "null":
			g.nullName = true
		case "initial-tab":
			g.initialTab = true
		case "before-context", "after-context", "context":
			n, err := strconv.Atoi(o.val)
			if err != nil || n < 0 {
				e.Errorf("%s: invalid context length argument", o.val)
				return 2
			}
			switch o.name {
			case "before-context":
				g.before = n
			case "after-context":
				g.after = n
			default:
				g.before, g.after = n, n
			}
		case "group-separator":
			s := o.val
			g.groupSep = &s
		case "no-group-separator":
			g.groupSep = new(string)
			*g.groupSep = "\x00none"
		case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9":
			ctxNum += o.name
			n, _ := strconv.Atoi(ctxNum)
			g.before, g.after = n, n
		}
	}
	if !havePats {
		if len(operands) == 0 {
			fmt.Fprintf(e.Stderr, "Usage: %s\nTry 'grep --help' for more information.\n", grepUsage)
			return 2
		}
		pats = strings.Split(operands[0], "\n")
		operands = operands[1:]
	}
	if err := g.compile(pats, mode, icase, wrap); err != nil {
		e.Errorf("%s", err)
		return 2
	}
	implicitDot := false
	if len(operands) == 0 {
		if g.recursive {
			operands = []string{"."}
			implicitDot = true
		} else {
			operands = []string{"-"}
		}
	}
	g.withName = withName || (!noName && len(operands) > 1)
	g.nameAuto = !withName && !noName && len(operands) == 1 && g.recursive
	for _, name := range operands {
		if g.quiet && g.matchedAny {
			break
		}
		if name == "-" {
			g.searchReader(e.Stdin, g.label)
			continue
		}
		g.searchPath(name, true, implicitDot)
	}
	status := 1
	if g.matchedAny {
		status = 0
	}
	// With -L too, success means a line was selected (GNU grep >= 3.5:
	// "grep -L zzz f" lists f and exits 1).
	if g.status == 2 && !(g.quiet && g.matchedAny) {
		status = 2
	}
	return t.flush(status)
}

func (g *grepper) compile(pats []string, mode string, icase bool, wrap int) error {
	if len(pats) == 0 {
		g.noPatterns = true
		return nil
	}
	// One pattern that is a plain string (in any syntax) is searched for
	// as one; under -i only when it is ASCII, which the search folds.
	if len(pats) == 1 && wrap == wrapNone && !g.word && isLiteralPattern(pats[0], mode) && (!icase || isASCII([]byte(pats[0]))) {
		g.fixed = []byte(pats[0])
		if icase {
			g.fixed, g.fixedFold = bytes.ToLower(g.fixed), true
		}
	}
	if mode == "F" {
		q := make([]string, len(pats))
		for i, p := range pats {
			var b strings.Builder
			for j := 0; j < len(p); j++ {
				if strings.IndexByte(`\.[]()*+?{}|^$`, p[j]) >= 0 {
					b.WriteByte('\\')
				}
				b.WriteByte(p[j])
			}
			q[i] = b.String()
		}
		pats, mode = q, "E"
	}
	o := regexOpts{ere: mode == "E", icase: icase, wrap: wrap}
	if g.word {
		o.wrap = wrapWordFirst
	}
	compile := compileRegexes
	if mode == "P" {
		compile = compilePerl
	}
	re, err := compile(pats, o)
	if err != nil {
		return err
	}
	g.re = re
	if g.word {
		o.wrap = wrapWordNext
		if g.reNext, err = compile(pats, o); err != nil {
			return err
		}
	}
	return nil
}

// isLiteralPattern reports whether pattern p of syntax mode (F, G, E, P)
// matches exactly its own bytes.
func isLiteralPattern(p, mode string) bool {
	switch mode {
	case "F":
		return p != ""
	case "G":
		return p != "" && !strings.ContainsAny(p, `\.[]*^$`)
	case "E":
		return p != "" && !strings.ContainsAny(p, `\.[]*+?{}()|^$`)
	}
	return false
}

// matches returns the [start,end) spans of the matches in line (all of
// them when all is set, else only the first).
func (g *grepper) matches(line []byte, all bool) ([][2]int, error) {
	if g.noPatterns {
		return nil, nil
	}
	if g.fixed != nil {
		var out [][2]int
		pos := 0
		for {
			var i int
			if g.fixedFold {
				i = indexFold(line[pos:], g.fixed)
			} else {
				i = bytes.Index(line[pos:], g.fixed)
			}
			if i < 0 {
				return out, nil
			}
			out = append(out, [2]int{pos + i, pos + i + len(g.fixed)})
			pos += i + len(g.fixed)
			if !all {
				return out, nil
			}
		}
	}
	if g.word {
		return g.wordMatches(line, all)
	}
	if !all {
		loc, err := g.re.FindSubmatchIndex(line)
		if loc == nil || err != nil {
			return nil, err
		}
		return [][2]int{{loc[0], loc[1]}}, nil
	}
	locs, err := g.re.FindAllSubmatchIndex(line, -1)
	out := make([][2]int, 0, len(locs))
	for _, l := range locs {
		out = append(out, [2]int{l[0], l[1]})
	}
	return out, err
}

// wordMatches implements -w: a match must be preceded by the line start
// or a non-word character and followed by the line end or a non-word
// character.
func (g *grepper) wordMatches(line []byte, all bool) ([][2]int, error) {
	var out [][2]int
	k := 2 * g.re.wordGroup
	re := g.re
	pos := 0
	for pos <= len(line) {
		loc, err := re.FindSubmatchIndex(line[pos:])
		if err != nil {
			return out, err
		}
		if loc == nil || loc[k] < 0 {
			break
		}
		s, e := pos+loc[k], pos+loc[k+1]
		if e == len(line) || !isWordByte(line[e]) {
			if e > s || !all {
				out = append(out, [2]int{s, e})
			}
			if !all {
				return out, nil
			}
			if e > s {
				pos = e
			} else {
				pos = e + 1
			}
		} else {
			// No word end here: a later match must start after a
			// non-word character, so skip the rest of this word.
			pos = max(e, s+1)
			for pos < len(line) && isWordByte(line[pos]) {
				pos++
			}
		}
		re = g.reNext
	}
	return out, nil
}

func (g *grepper) errorf(format string, args ...any) {
	g.status = 2
	if g.suppress {
		return
	}
	g.t.out.Flush()
	g.t.e.Errorf(format, args...)
}

// searchPath searches a file operand, descending into directories with -r.
func (g *grepper) searchPath(name string, cmdline, implicitDot bool) {
	var fi os.FileInfo
	var err error
	if g.deref || cmdline {
		fi, err = os.Stat(name)
	} else {
		fi, err = os.Lstat(name)
	}
	if err != nil {
		g.errorf("%s: %s", name, strerror(err))
		return
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return // -r skips symlinks met while recursing
	}
	if fi.IsDir() {
		if !g.recursive {
			g.errorf("%s: Is a directory", name)
			return
		}
		if !cmdline && globAny(g.exclDirs, fi.Name()) {
			return
		}
		if g.nameAuto {
			g.withName = true
		}
		ents, err := os.ReadDir(name)
		if err != nil {
			g.errorf("%s: %s", name, strerror(err))
			return
		}
		for _, ent := range ents {
			child := name + "/" + ent.Name()
			if implicitDot && name == "." {
				child = ent.Name()
			} else if strings.HasSuffix(name, "/") {
				child = name + ent.Name()
			}
			g.searchPath(child, false, false)
			if g.quiet && g.matchedAny {
				return
			}
		}
		return
	}
	if !cmdline || g.recursive {
		base := filepath.Base(name)
		if len(g.includes) > 0 && !globAny(g.includes, base) {
			return
		}
		if globAny(g.excludes, base) {
			return
		}
	}
	if !cmdline && !fi.Mode().IsRegular() {
		return
	}
	f, err := os.Open(name)
	if err != nil {
		g.errorf("%s: %s", name, strerror(err))
		return
	}
	defer f.Close()
	g.searchReader(f, name)
}

func globAny(globs []string, name string) bool {
	for _, p := range globs {
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	return false
}

// nameOut writes a file name and its separator.
func (g *grepper) nameOut(name string, sep byte) {
	g.t.out.WriteString(name)
	if g.nullName {
		g.t.out.WriteByte(0)
	} else {
		g.t.out.WriteByte(sep)
	}
}

func (g *grepper) prefix(name string, lineno, off int64, sep byte) {
	w := g.t.out
	if g.withName {
		g.nameOut(name, sep)
	}
	if g.lineNum {
		w.WriteString(strconv.FormatInt(lineno, 10))
		w.WriteByte(sep)
	}
	if g.byteOff {
		w.WriteString(strconv.FormatInt(off, 10))
		w.WriteByte(sep)
	}
	if g.initialTab && (g.withName || g.lineNum || g.byteOff) {
		w.WriteByte('\t')
	}
}

type ctxLine struct {
	text   []byte
	lineno int64
	off    int64
}

// searchReader searches one input; name is used in prefixes and messages.
func (g *grepper) searchReader(r io.Reader, name string) {
	br := bufio.NewReaderSize(r, 64<<10)
	binary := false
	if g.binaryMode != "text" && g.delim != 0 {
		head, _ := br.Peek(32 << 10)
		binary = bytes.IndexByte(head, 0) >= 0
		if binary && g.binaryMode == "without-match" {
			return
		}
	}
	w := g.t.out
	var count int64
	var beforeBuf []ctxLine
	afterLeft := 0
	lastPrinted := int64(0) // line number of the last printed line
	printLines := !g.count && !g.quiet && !g.listMatch && !g.listNoMatch
	// handle processes one line (delimiter included when present): it
	// returns lineNext to go on, lineBreak to end the input (the count or
	// name is still printed) or lineReturn to end it silently.
	// sure says that the line is known to match (the block search found
	// the one fixed string in it).
	handle := func(line []byte, lineno, lineOff int64, sure bool) int {
		body := line
		if n := len(body); n > 0 && body[n-1] == g.delim {
			body = body[:n-1]
		}
		if g.maxCount >= 0 && count >= g.maxCount {
			// Only trailing context is left to print after -m; GNU
			// prints it even when those lines match.
			g.emitLine(name, body, lineno, lineOff, '-')
			lastPrinted = lineno
			afterLeft--
			return lineNext
		}
		var spans [][2]int
		selected := sure && !g.invert
		if !sure || (g.only && printLines) {
			var merr error
			spans, merr = g.matches(body, g.only && printLines)
			if merr != nil {
				g.errorf("%s", merr)
				return lineReturn
			}
			selected = (len(spans) > 0) != g.invert
		}
		if !selected {
			if printLines && afterLeft > 0 {
				g.emitLine(name, body, lineno, lineOff, '-')
				lastPrinted = lineno
				afterLeft--
			} else if printLines && g.before > 0 {
				if len(beforeBuf) == g.before {
					copy(beforeBuf, beforeBuf[1:])
					beforeBuf = beforeBuf[:len(beforeBuf)-1]
				}
				beforeBuf = append(beforeBuf, ctxLine{append([]byte(nil), body...), lineno, lineOff})
			}
			return lineNext
		}
		count++
		g.matchedAny = true
		if g.quiet {
			return lineReturn
		}
		if g.listMatch || g.listNoMatch {
			return lineBreak
		}
		if !printLines {
			return lineNext
		}
		if binary {
			w.Flush()
			fmt.Fprintf(g.t.e.Stderr, "grep: %s: binary file matches\n", name)
			return lineReturn
		}
		// Separator between non-adjacent groups.
		if (g.before > 0 || g.after > 0) && g.lastOut {
			first := lineno
			if len(beforeBuf) > 0 {
				first = beforeBuf[0].lineno
			}
			if lastPrinted == 0 || first > lastPrinted+1 {
				g.groupSeparator()
			}
		}
		for _, c := range beforeBuf {
			g.emitLine(name, c.text, c.lineno, c.off, '-')
		}
		beforeBuf = beforeBuf[:0]
		if g.only {
			if !g.invert {
				for _, sp := range spans {
					if sp[1] == sp[0] {
						continue
					}
					g.prefix(name, lineno, lineOff+int64(sp[0]), ':')
					w.Write(body[sp[0]:sp[1]])
					w.WriteByte(g.delim)
				}
			}
		} else {
			g.emitLine(name, body, lineno, lineOff, ':')
		}
		g.lastOut = true
		lastPrinted = lineno
		afterLeft = g.after
		return lineNext
	}
	if mode := g.litScanMode(printLines, binary); mode != 0 {
		count = g.scanLiteral(br, name, mode)
	} else if lits, fold := g.prefilter(); lits != nil {
		// Only lines holding one of lits can be selected: find those in
		// large blocks and hand only them to handle.
		// A hit of the one fixed string is a match.
		sure := g.fixed != nil
		if g.scanBlocks(br, name, lits, fold, sure, handle, func() bool {
			return g.maxCount >= 0 && count >= g.maxCount
		}) {
			return
		}
	} else {
		lr := &lineReader{r: br, delim: g.delim}
		var lineno, off int64
		for {
			if g.maxCount >= 0 && count >= g.maxCount && afterLeft == 0 {
				break
			}
			line, err := lr.next()
			if err != nil {
				if err != io.EOF {
					g.errorf("%s: %s", name, strerror(err))
				}
				break
			}
			lineno++
			lineOff := off
			off += int64(len(line))
			if r := handle(line, lineno, lineOff, false); r == lineReturn {
				return
			} else if r == lineBreak {
				break
			}
		}
	}
	switch {
	case g.count:
		if g.withName {
			g.nameOut(name, ':')
		}
		w.WriteString(strconv.FormatInt(count, 10))
		w.WriteByte('\n')
	case g.listMatch && count > 0:
		w.WriteString(name)
		g.listEnd()
	case g.listNoMatch && count == 0:
		w.WriteString(name)
		g.listEnd()
	}
}

// What handle (in searchReader) asks of the line loop.
const (
	lineNext = iota
	lineBreak
	lineReturn
)

// grepBlockSearch enables the block search (tests compare it with the line
// loop).
var grepBlockSearch = true

// grepBlock is the read size of the block search of grep.
const grepBlock = 256 << 10

// prefilter returns literals of which every selected line holds one
// (lower case when fold), when the block search applies: one fixed
// string, no -v (a line without it is selected) and no context (lines
// around are printed). Regular expressions keep the line loop: in wasm,
// their literal prefilter per block measured slower than per line.
func (g *grepper) prefilter() (lits [][]byte, fold bool) {
	if !grepBlockSearch || g.noPatterns || g.invert || g.before > 0 || g.after > 0 {
		return nil, false
	}
	switch {
	case g.fixed != nil:
		lits, fold = [][]byte{g.fixed}, g.fixedFold
	default:
		return nil, false
	}
	for _, l := range lits {
		if len(l) == 0 || bytes.IndexByte(l, g.delim) >= 0 {
			return nil, false
		}
	}
	return lits, fold
}

// fillBlock reads more of r into buf after the unconsumed buf[start:end],
// moving that to the front first and doubling buf when one line fills it.
// It returns the buffer and bounds to use; eof is set at the end of r.
func fillBlock(r io.Reader, buf []byte, start, end int) (_ []byte, _, _ int, eof bool, err error) {
	if start > 0 {
		end = copy(buf, buf[start:end])
		start = 0
	}
	if end == len(buf) {
		buf = append(buf, make([]byte, len(buf))...)
	}
	n, err := r.Read(buf[end:])
	end += n
	if err == io.EOF {
		return buf, start, end, true, nil
	}
	return buf, start, end, false, err
}

// scanBlocks reads r in large blocks of whole lines, finds the lines that
// hold one of lits and calls handle on each with its offset and (with
// -n only) its number; sure is handed on to handle.
// It stops when done reports true, at the end of input or when handle
// says so; it returns true when handle asked to return silently.
func (g *grepper) scanBlocks(r io.Reader, name string, lits [][]byte, fold, sure bool, handle func([]byte, int64, int64, bool) int, done func() bool) bool {
	f := newLitFinder(lits, fold)
	buf := make([]byte, grepBlock)
	start, end := 0, 0     // unconsumed data is buf[start:end]
	var lineno, base int64 // lines and bytes before buf[start]
	eof := false
	for !(eof && start == end) {
		if !eof {
			var err error
			if buf, start, end, eof, err = fillBlock(r, buf, start, end); err != nil {
				g.errorf("%s: %s", name, strerror(err))
				return false
			}
		}
		chunk := buf[start:end]
		if !eof {
			k := bytes.LastIndexByte(chunk, g.delim)
			if k < 0 {
				continue // no whole line yet
			}
			chunk = chunk[:k+1]
		}
		f.reset()
		pos, counted := 0, 0
		for pos < len(chunk) {
			if done() {
				return false
			}
			i := f.find(chunk, pos)
			if i < 0 {
				break
			}
			ls := pos + bytes.LastIndexByte(chunk[pos:i], g.delim) + 1
			le := len(chunk)
			if k := bytes.IndexByte(chunk[i:], g.delim); k >= 0 {
				le = i + k + 1
			}
			if g.lineNum {
				lineno += int64(textio.CountByte(chunk[counted:ls], g.delim))
				counted = ls
			}
			if r := handle(chunk[ls:le], lineno+1, base+int64(ls), sure); r == lineReturn {
				return true
			} else if r == lineBreak {
				return false
			}
			pos = le
		}
		if g.lineNum {
			lineno += int64(textio.CountByte(chunk[counted:], g.delim))
		}
		base += int64(len(chunk))
		start += len(chunk)
	}
	return false
}

// litFinder finds the leftmost occurrence of any of its literals in a
// block, remembering where each occurs next so that a rare literal is not
// searched for again at every candidate.
type litFinder struct {
	lits  [][]byte
	folds []*foldSearch // per literal under -i
	next  []int         // per literal: its next position, -1 none, -2 not known
}

func newLitFinder(lits [][]byte, fold bool) *litFinder {
	f := &litFinder{lits: lits, next: make([]int, len(lits))}
	if fold {
		for _, l := range lits {
			f.folds = append(f.folds, newFoldSearch(l))
		}
	}
	return f
}

func (f *litFinder) reset() {
	for i := range f.next {
		f.next[i] = -2
	}
	for _, fs := range f.folds {
		fs.reset()
	}
}

// find returns the first position at or after pos where a literal
// starts, or -1; b must stay the same between resets.
func (f *litFinder) find(b []byte, pos int) int {
	best := -1
	for k, lit := range f.lits {
		n := f.next[k]
		if n == -2 || (n >= 0 && n < pos) {
			if f.folds != nil {
				n = f.folds[k].index(b, pos)
			} else if n = bytes.Index(b[pos:], lit); n >= 0 {
				n += pos
			}
			f.next[k] = n
		}
		if n >= 0 && (best < 0 || n < best) {
			best = n
		}
	}
	return best
}

func (g *grepper) listEnd() {
	if g.nullName {
		g.t.out.WriteByte(0)
	} else {
		g.t.out.WriteByte('\n')
	}
}

func (g *grepper) groupSeparator() {
	if g.groupSep == nil {
		g.t.out.WriteString("--\n")
		return
	}
	if *g.groupSep == "\x00none" {
		return
	}
	g.t.out.WriteString(*g.groupSep)
	g.t.out.WriteByte('\n')
}

func (g *grepper) emitLine(name string, body []byte, lineno, off int64, sep byte) {
	g.lastOut = true
	g.prefix(name, lineno, off, sep)
	g.t.out.Write(body)
	g.t.out.WriteByte(g.delim)
}
