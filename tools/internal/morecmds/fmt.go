package morecmds

import (
	"bufio"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("fmt", fmtMain) }

// fmt is GNU fmt (coreutils 9.1): the same paragraph reading (indentation,
// -p prefixes, -c crown and -t tagged modes, -s) and the same optimal-fit
// line breaking, whose cost function (short lines, raggedness, sentence
// ends, widows and orphans) decides where lines break.

const (
	fmtMaxChars = 5000 // GNU's paragraph buffer: a longer paragraph is flushed in parts
	fmtMaxWords = 1000
	fmtTabWidth = 8
)

type fmtCost = int64

func fmtEquiv(n int) fmtCost      { return fmtCost(n) * fmtCost(n) }
func fmtShortCost(n int) fmtCost  { return fmtEquiv(n * 10) }
func fmtRaggedCost(n int) fmtCost { return fmtShortCost(n) / 2 }
func fmtWidowCost(n int) fmtCost  { return fmtEquiv(200) / fmtCost(n+2) }
func fmtOrphanCost(n int) fmtCost { return fmtEquiv(150) / fmtCost(n+2) }
func fmtLineCostBase() fmtCost    { return fmtEquiv(70) }
func fmtSentenceBonus() fmtCost   { return fmtEquiv(50) }
func fmtNobreakCost() fmtCost     { return fmtEquiv(600) }
func fmtParenBonus() fmtCost      { return fmtEquiv(40) }
func fmtPunctBonus() fmtCost      { return fmtEquiv(40) }
func fmtIsOpen(c byte) bool       { return strings.IndexByte("(['`\"", c) >= 0 }
func fmtIsClose(c byte) bool      { return strings.IndexByte(")]'\"", c) >= 0 }
func fmtIsPeriod(c byte) bool     { return strings.IndexByte(".?!", c) >= 0 }
func fmtIsSpace(c int) bool       { return c == ' ' || c >= '\t' && c <= '\r' }
func fmtIsPunct(c byte) bool {
	return c > ' ' && c < 0x7f && !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
}
func fmtMaxCost() fmtCost         { return math.MaxInt64 }
func fmtTabTarget(target int) int { return target / fmtTabWidth * fmtTabWidth }
func fmtNextTab(col int) int      { return (col/fmtTabWidth + 1) * fmtTabWidth }
func fmtGoal(maxWidth int) int    { return maxWidth * (2*(100-7) + 1) / 200 }

type fmtWord struct {
	text                        []byte
	length, space               int
	paren, period, punct, final bool
	lineLength                  int
	bestCost                    fmtCost
	nextBreak                   int
}

type fmtState struct {
	r   *bufio.Reader
	out *bufio.Writer

	crown, tagged, split, uniform bool
	prefix                        string
	prefixFull, prefixLead        int
	maxWidth, goalWidth           int

	tabs                                bool
	prefixIndent, firstIndent           int
	otherIndent                         int
	nextChar                            int
	nextPrefixIndent                    int
	lastLineLength, inColumn, outColumn int

	words []fmtWord // words[len-1] is the sentinel (word_limit)
	chars int
}

func fmtMain(e *cmd.Env) int {
	// The obsolete -WIDTH form comes first, as in GNU fmt.
	args := append([]string(nil), e.Args[1:]...)
	var widthOpt, goalOpt string
	if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && args[0][1] >= '0' && args[0][1] <= '9' {
		widthOpt = args[0][1:]
		args = args[1:]
	}
	spec := []cmd.Option{
		{Short: 'c', Long: "crown-margin"}, {Short: 'p', Long: "prefix", Arg: cmd.RequiredArg},
		{Short: 's', Long: "split-only"}, {Short: 't', Long: "tagged-paragraph"},
		{Short: 'u', Long: "uniform-spacing"}, {Short: 'w', Long: "width", Arg: cmd.RequiredArg},
		{Short: 'g', Long: "goal", Arg: cmd.RequiredArg},
	}
	opts, files, err := cmd.Getopt(args, append(spec, helpOpts...), false)
	if err != nil {
		return e.Usage(1, err)
	}
	f := &fmtState{maxWidth: 75}
	for _, o := range opts {
		switch o.Name {
		case "help":
			fmt.Fprintf(e.Stdout, "Usage: fmt [-WIDTH] [OPTION]... [FILE]...\n")
			return 0
		case "version":
			fmt.Fprintf(e.Stdout, "fmt %s\n", version)
			return 0
		case "crown-margin":
			f.crown = true
		case "split-only":
			f.split = true
		case "tagged-paragraph":
			f.tagged = true
		case "uniform-spacing":
			f.uniform = true
		case "width":
			widthOpt = o.Value
		case "goal":
			goalOpt = o.Value
		case "prefix":
			p := o.Value
			for strings.HasPrefix(p, " ") {
				f.prefixLead++
				p = p[1:]
			}
			f.prefixFull = len(p)
			f.prefix = strings.TrimRight(p, " ")
		}
	}
	parseWidth := func(s string, max int) (int, bool) {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange && strings.Trim(s, "0123456789") == "" {
				e.Errorf("invalid width: %s: Numerical result out of range", quote(s))
			} else {
				e.Errorf("invalid width: %s", quote(s))
			}
			return 0, false
		}
		if n > uint64(max) {
			e.Errorf("invalid width: %s: Numerical result out of range", quote(s))
			return 0, false
		}
		return int(n), true
	}
	if widthOpt != "" {
		n, ok := parseWidth(widthOpt, fmtMaxChars/2)
		if !ok {
			return 1
		}
		f.maxWidth = n
	}
	if goalOpt != "" {
		n, ok := parseWidth(goalOpt, f.maxWidth)
		if !ok {
			return 1
		}
		f.goalWidth = n
		if widthOpt == "" {
			f.maxWidth = n + 10
		}
	} else {
		f.goalWidth = fmtGoal(f.maxWidth)
	}
	out := bufio.NewWriter(e.Stdout)
	f.out = out
	status := 0
	for _, name := range inputs(files) {
		r, closeFn, err := openIn(e, name)
		if err != nil {
			out.Flush()
			e.Errorf("cannot open %s for reading: %s", quote(name), strerror(err))
			status = 1
			continue
		}
		f.r = bufio.NewReader(r)
		f.run()
		closeFn()
	}
	return flush(e, out, status)
}

func (f *fmtState) getc() int {
	c, err := f.r.ReadByte()
	if err != nil {
		return -1
	}
	return int(c)
}

func (f *fmtState) run() {
	f.tabs = false
	f.otherIndent = 0
	f.nextChar = f.getPrefix()
	for f.getParagraph() {
		f.fmtParagraph()
		f.putParagraph(len(f.words) - 1)
	}
}

func (f *fmtState) getSpace(c int) int {
	for {
		switch c {
		case ' ':
			f.inColumn++
		case '\t':
			f.tabs = true
			f.inColumn = fmtNextTab(f.inColumn)
		default:
			return c
		}
		c = f.getc()
	}
}

func (f *fmtState) getPrefix() int {
	f.inColumn = 0
	c := f.getSpace(f.getc())
	if len(f.prefix) == 0 {
		f.nextPrefixIndent = min(f.prefixLead, f.inColumn)
	} else {
		f.nextPrefixIndent = f.inColumn
		for i := 0; i < len(f.prefix); i++ {
			if c != int(f.prefix[i]) {
				return c
			}
			f.inColumn++
			c = f.getc()
		}
		c = f.getSpace(c)
	}
	return c
}

func (f *fmtState) sameParagraph(c int) bool {
	return f.nextPrefixIndent == f.prefixIndent && f.inColumn >= f.nextPrefixIndent+f.prefixFull &&
		c != '\n' && c != -1
}

func (f *fmtState) setOtherIndent(same bool) {
	switch {
	case f.split:
		f.otherIndent = f.firstIndent
	case f.crown:
		if same {
			f.otherIndent = f.inColumn
		} else {
			f.otherIndent = f.firstIndent
		}
	case f.tagged:
		if same && f.inColumn != f.firstIndent {
			f.otherIndent = f.inColumn
		} else if f.otherIndent == f.firstIndent {
			if f.firstIndent == 0 {
				f.otherIndent = 3
			} else {
				f.otherIndent = 0
			}
		}
	default:
		f.otherIndent = f.firstIndent
	}
}

// copyRest copies a line not introduced by the prefix.
func (f *fmtState) copyRest(c int) int {
	f.outColumn = 0
	if f.inColumn > f.nextPrefixIndent || (c != '\n' && c != -1) {
		f.putSpace(f.nextPrefixIndent)
		for i := 0; f.outColumn != f.inColumn && i < len(f.prefix); i++ {
			f.out.WriteByte(f.prefix[i])
			f.outColumn++
		}
		if c != -1 && c != '\n' {
			f.putSpace(f.inColumn - f.outColumn)
		}
		if c == -1 && f.inColumn >= f.nextPrefixIndent+len(f.prefix) {
			f.out.WriteByte('\n')
		}
	}
	for c != '\n' && c != -1 {
		f.out.WriteByte(byte(c))
		c = f.getc()
	}
	return c
}

func (f *fmtState) getParagraph() bool {
	f.lastLineLength = 0
	c := f.nextChar
	for c == '\n' || c == -1 || f.nextPrefixIndent < f.prefixLead ||
		f.inColumn < f.nextPrefixIndent+f.prefixFull {
		c = f.copyRest(c)
		if c == -1 {
			f.nextChar = -1
			return false
		}
		f.out.WriteByte('\n')
		c = f.getPrefix()
	}
	f.prefixIndent = f.nextPrefixIndent
	f.firstIndent = f.inColumn
	f.words = f.words[:0]
	f.chars = 0
	f.words = append(f.words, fmtWord{}) // the sentinel
	c = f.getLine(c)
	f.setOtherIndent(f.sameParagraph(c))
	switch {
	case f.split:
	case f.crown:
		if f.sameParagraph(c) {
			for {
				c = f.getLine(c)
				if !(f.sameParagraph(c) && f.inColumn == f.otherIndent) {
					break
				}
			}
		}
	case f.tagged:
		if f.sameParagraph(c) && f.inColumn != f.firstIndent {
			for {
				c = f.getLine(c)
				if !(f.sameParagraph(c) && f.inColumn == f.otherIndent) {
					break
				}
			}
		}
	default:
		for f.sameParagraph(c) && f.inColumn == f.otherIndent {
			c = f.getLine(c)
		}
	}
	last := &f.words[len(f.words)-2]
	last.period, last.final = true, true
	f.nextChar = c
	return true
}

func (f *fmtState) getLine(c int) int {
	for {
		w := fmtWord{}
		var text []byte
		for {
			if f.chars == fmtMaxChars {
				f.words[len(f.words)-1] = fmtWord{text: text}
				f.setOtherIndent(true)
				f.flushParagraph()
				text = f.words[len(f.words)-1].text
			}
			text = append(text, byte(c))
			f.chars++
			c = f.getc()
			if c == -1 || fmtIsSpace(c) {
				break
			}
		}
		w.text = text
		w.length = len(text)
		f.inColumn += w.length
		fmtCheckPunct(&w)
		start := f.inColumn
		c = f.getSpace(c)
		w.space = f.inColumn - start
		w.final = c == -1 || w.period && (c == '\n' || w.space > 1)
		if c == '\n' || c == -1 || f.uniform {
			if w.final {
				w.space = 2
			} else {
				w.space = 1
			}
		}
		f.words[len(f.words)-1] = w
		if len(f.words)-1 == fmtMaxWords-2 {
			// GNU flushes with this word as the limit, then keeps it.
			f.setOtherIndent(true)
			f.flushParagraph()
		}
		f.words = append(f.words, fmtWord{})
		if c == '\n' || c == -1 {
			break
		}
	}
	return f.getPrefix()
}

func fmtCheckPunct(w *fmtWord) {
	t := w.text
	start, finish := 0, len(t)-1
	w.paren = fmtIsOpen(t[start])
	w.punct = fmtIsPunct(t[finish])
	for start < finish && fmtIsClose(t[finish]) {
		finish--
	}
	w.period = fmtIsPeriod(t[finish])
}

// fmtParagraph computes the best breaks (GNU's fmt_paragraph).
func (f *fmtState) fmtParagraph() {
	words := f.words
	limit := len(words) - 1
	words[limit].bestCost = 0
	saved := words[limit].length
	words[limit].length = f.maxWidth
	for start := limit - 1; start >= 0; start-- {
		best := fmtMaxCost()
		l := f.otherIndent
		if start == 0 {
			l = f.firstIndent
		}
		w := start
		l += words[w].length
		for {
			w++
			wcost := f.lineCost(w, l) + words[w].bestCost
			if start == 0 && f.lastLineLength > 0 {
				wcost += fmtRaggedCost(l - f.lastLineLength)
			}
			if wcost < best {
				best = wcost
				words[start].nextBreak = w
				words[start].lineLength = l
			}
			if w == limit {
				break
			}
			l += words[w-1].space + words[w].length
			if l >= f.maxWidth {
				break
			}
		}
		words[start].bestCost = best + f.baseCost(start)
	}
	words[limit].length = saved
}

func (f *fmtState) baseCost(i int) fmtCost {
	words := f.words
	cost := fmtLineCostBase()
	if i > 0 {
		p := &words[i-1]
		switch {
		case p.period:
			if p.final {
				cost -= fmtSentenceBonus()
			} else {
				cost += fmtNobreakCost()
			}
		case p.punct:
			cost -= fmtPunctBonus()
		case i > 1 && words[i-2].final:
			cost += fmtWidowCost(p.length)
		}
	}
	if words[i].paren {
		cost -= fmtParenBonus()
	} else if words[i].final {
		cost += fmtOrphanCost(words[i].length)
	}
	return cost
}

func (f *fmtState) lineCost(next, l int) fmtCost {
	limit := len(f.words) - 1
	if next == limit {
		return 0
	}
	cost := fmtShortCost(f.goalWidth - l)
	if f.words[next].nextBreak != limit {
		cost += fmtRaggedCost(l - f.words[next].lineLength)
	}
	return cost
}

func (f *fmtState) putParagraph(finish int) {
	f.putLine(0, f.firstIndent)
	for w := f.words[0].nextBreak; w != finish; w = f.words[w].nextBreak {
		f.putLine(w, f.otherIndent)
	}
}

func (f *fmtState) putLine(w, indent int) {
	f.outColumn = 0
	f.putSpace(f.prefixIndent)
	f.out.WriteString(f.prefix)
	f.outColumn += len(f.prefix)
	f.putSpace(indent - f.outColumn)
	end := f.words[w].nextBreak - 1
	for ; w != end; w++ {
		f.putWord(w)
		f.putSpace(f.words[w].space)
	}
	f.putWord(w)
	f.lastLineLength = f.outColumn
	f.out.WriteByte('\n')
}

func (f *fmtState) putWord(w int) {
	f.out.Write(f.words[w].text)
	f.outColumn += f.words[w].length
}

func (f *fmtState) putSpace(space int) {
	target := f.outColumn + space
	if f.tabs {
		tab := fmtTabTarget(target)
		if f.outColumn+1 < tab {
			for f.outColumn < tab {
				f.out.WriteByte('\t')
				f.outColumn = fmtNextTab(f.outColumn)
			}
		}
	}
	for f.outColumn < target {
		f.out.WriteByte(' ')
		f.outColumn++
	}
}

// flushParagraph outputs part of a paragraph too long for GNU's buffers,
// up to a good break near its end (GNU's flush_paragraph).
func (f *fmtState) flushParagraph() {
	limit := len(f.words) - 1
	if limit == 0 {
		f.out.Write(f.words[0].text)
		f.words[0].text = nil
		f.chars = 0
		return
	}
	f.fmtParagraph()
	split := limit
	best := fmtMaxCost()
	for w := f.words[0].nextBreak; w != limit; w = f.words[w].nextBreak {
		if d := f.words[w].bestCost - f.words[f.words[w].nextBreak].bestCost; d < best {
			split = w
			best = d
		}
		if best <= fmtMaxCost()-fmtEquiv(3) {
			best += fmtEquiv(3) // GNU's LINE_CREDIT
		}
	}
	f.putParagraph(split)
	f.words = append(f.words[:0], f.words[split:]...)
	f.chars = 0
	for _, w := range f.words {
		f.chars += len(w.text)
	}
}
