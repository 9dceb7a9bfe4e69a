package textutils

// The sed script parser: it turns the script text into a flat list of
// commands, with '{' blocks and branches resolved to indices.

import (
	"fmt"
	"strconv"
	"strings"
)

// sedError is a script error, printed GNU style: "-e expression #1,
// char 3: unterminated `s' command".
type sedError struct {
	where  string
	msg    string
	status int // exit status; 0 means 1
}

func (e *sedError) Error() string {
	if e.where == "" {
		return e.msg
	}
	return e.where + ": " + e.msg
}

type addrKind uint8

const (
	addrNone  addrKind = iota
	addrLine           // n
	addrLast           // $
	addrRegex          // /re/
	addrStep           // first~step
	addrPlus           // addr1,+N
	addrMult           // addr1,~N
	addrZero           // 0 (only as 0,/re/)
)

type sedAddr struct {
	kind  addrKind
	n     int64
	step  int64
	re    *Regex
	empty bool // "//": the last regex used
}

type replPart struct {
	lit   string
	group int  // -1: literal; 0: &; 1..9
	conv  byte // case conversion starting here: 'L','U','l','u','E' or 0
}

type sedCmd struct {
	a1, a2  *sedAddr
	negate  bool
	name    byte
	text    string // a i c: the text; b t T :: the label; r R w W: the file
	jump    int    // '{': index after the matching '}'; b t T: target
	intArg  int
	hasInt  bool
	re      *Regex // s
	reEmpty bool   // s//.../: use the last regex
	repl    []replPart
	global  bool
	nth     int
	print   int
	wfile   string
	ymap    *[256]byte
	// range state
	inRange  bool
	rangeEnd int64
	done     bool // 0,/re/ and one-line ranges that already ended
}

type sedParser struct {
	src    string
	i      int
	pieces []sedPiece
	ere    bool
	cmds   []*sedCmd
	blocks []int
	wfiles map[string]bool
}

// sedPiece maps a range of the combined script to where it came from.
type sedPiece struct {
	start int
	expr  int    // -e expression number (1-based), 0 for a file
	file  string // -f file name
}

func (p *sedParser) errAt(msg string) error {
	pos := p.i
	for k := len(p.pieces) - 1; k >= 0; k-- {
		pc := p.pieces[k]
		if pos >= pc.start || k == 0 {
			if pc.file != "" {
				line := 1 + strings.Count(p.src[pc.start:min(p.i, len(p.src))], "\n")
				if p.i > 0 && p.i <= len(p.src) && p.src[p.i-1] == '\n' {
					line--
				}
				return &sedError{fmt.Sprintf("file %s line %d", pc.file, line), msg, 0}
			}
			return &sedError{fmt.Sprintf("-e expression #%d, char %d", pc.expr, pos-pc.start), msg, 0}
		}
	}
	return &sedError{"", msg, 0}
}

func (p *sedParser) eof() bool { return p.i >= len(p.src) }

func (p *sedParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.src[p.i]
}

func (p *sedParser) skipSpace() {
	for !p.eof() && (p.src[p.i] == ' ' || p.src[p.i] == '\t') {
		p.i++
	}
}

// parseSed parses the whole script.
func parseSed(src string, pieces []sedPiece, ere bool) ([]*sedCmd, error) {
	p := &sedParser{src: src, pieces: pieces, ere: ere, wfiles: map[string]bool{}}
	for {
		for !p.eof() && strings.IndexByte(" \t\n;", p.src[p.i]) >= 0 {
			p.i++
		}
		if p.eof() {
			break
		}
		if p.peek() == '#' {
			for !p.eof() && p.src[p.i] != '\n' {
				p.i++
			}
			continue
		}
		if err := p.command(); err != nil {
			return nil, err
		}
	}
	if len(p.blocks) > 0 {
		p.i = 0
		return nil, &sedError{fmt.Sprintf("-e expression #%d, char 0", 1), "unmatched `{'", 0}
	}
	// Resolve labels.
	labels := map[string]int{}
	for i, c := range p.cmds {
		if c.name == ':' {
			labels[c.text] = i
		}
	}
	for _, c := range p.cmds {
		switch c.name {
		case 'b', 't', 'T':
			if c.text == "" {
				c.jump = len(p.cmds)
				continue
			}
			j, ok := labels[c.text]
			if !ok {
				return nil, &sedError{"", fmt.Sprintf("can't find label for jump to `%s'", c.text), 4}
			}
			c.jump = j
		}
	}
	return p.cmds, nil
}

func (p *sedParser) number() (int64, bool) {
	start := p.i
	for !p.eof() && p.src[p.i] >= '0' && p.src[p.i] <= '9' {
		p.i++
	}
	if p.i == start {
		return 0, false
	}
	n, err := strconv.ParseInt(p.src[start:p.i], 10, 64)
	if err != nil {
		n = 1<<63 - 1
	}
	return n, true
}

// regexText reads a delimited regex or replacement up to the unescaped
// delimiter; "\delim" becomes delim. In regexes, \n becomes a newline.
func (p *sedParser) delimited(delim byte, isRegex bool) (string, bool) {
	var b strings.Builder
	for !p.eof() {
		c := p.src[p.i]
		p.i++
		if c == '\\' {
			if p.eof() {
				b.WriteByte('\\')
				break
			}
			d := p.src[p.i]
			p.i++
			switch {
			case d == delim:
				if delim == '&' && !isRegex {
					b.WriteString(`\&`)
				} else {
					b.WriteByte(delim)
				}
			case d == 'n' && isRegex:
				b.WriteByte('\n')
			case d == '\n' && !isRegex:
				b.WriteByte('\n')
			default:
				b.WriteByte('\\')
				b.WriteByte(d)
			}
			continue
		}
		if c == delim {
			return b.String(), true
		}
		if c == '\n' && isRegex {
			// A newline cannot be in a delimited regex.
			return "", false
		}
		b.WriteByte(c)
	}
	return "", false
}

func (p *sedParser) compileRe(pat string, flags string) (*Regex, bool, error) {
	if pat == "" {
		return nil, true, nil
	}
	o := regexOpts{ere: p.ere}
	for _, f := range flags {
		switch f {
		case 'I', 'i':
			o.icase = true
		case 'M', 'm':
			o.multiline = true
		}
	}
	re, err := compileRegex(pat, o)
	if err != nil {
		return nil, false, p.errAt(err.Error())
	}
	return re, false, nil
}

func (p *sedParser) address() (*sedAddr, error) {
	c := p.peek()
	switch {
	case c >= '0' && c <= '9':
		n, _ := p.number()
		if p.peek() == '~' {
			p.i++
			step, _ := p.number()
			return &sedAddr{kind: addrStep, n: n, step: step}, nil
		}
		if n == 0 {
			return &sedAddr{kind: addrZero}, nil
		}
		return &sedAddr{kind: addrLine, n: n}, nil
	case c == '$':
		p.i++
		return &sedAddr{kind: addrLast}, nil
	case c == '/' || c == '\\':
		p.i++
		delim := byte('/')
		if c == '\\' {
			if p.eof() {
				return nil, p.errAt("unexpected `,'")
			}
			delim = p.src[p.i]
			p.i++
		}
		pat, ok := p.delimited(delim, true)
		if !ok {
			return nil, p.errAt("unterminated address regex")
		}
		flags := ""
		for !p.eof() && (p.peek() == 'I' || p.peek() == 'M') {
			flags += string(p.peek())
			p.i++
		}
		re, empty, err := p.compileRe(sedRegexText(pat), flags)
		if err != nil {
			return nil, err
		}
		return &sedAddr{kind: addrRegex, re: re, empty: empty}, nil
	}
	return nil, nil
}

// sedRegexText converts the sed-only escapes (\t inside brackets too) of
// a regex; \n was converted while reading it.
func sedRegexText(s string) string {
	if !strings.Contains(s, `\t`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			if s[i+1] == 't' {
				b.WriteByte('\t')
			} else {
				b.WriteByte(s[i])
				b.WriteByte(s[i+1])
			}
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func (p *sedParser) command() error {
	c := &sedCmd{}
	a1, err := p.address()
	if err != nil {
		return err
	}
	if a1 != nil {
		c.a1 = a1
		p.skipSpace()
		if p.peek() == ',' {
			p.i++
			p.skipSpace()
			switch p.peek() {
			case '+', '~':
				k := p.peek()
				p.i++
				n, ok := p.number()
				if !ok {
					return p.errAt("expected newer version of sed")
				}
				if k == '+' {
					c.a2 = &sedAddr{kind: addrPlus, n: n}
				} else {
					c.a2 = &sedAddr{kind: addrMult, n: n}
				}
			default:
				a2, err := p.address()
				if err != nil {
					return err
				}
				if a2 == nil {
					if !p.eof() {
						p.i++
					}
					return p.errAt("unexpected `,'")
				}
				if a2.kind == addrZero {
					return p.errAt("invalid usage of line address 0")
				}
				if a2.kind == addrStep {
					a2 = &sedAddr{kind: addrLine, n: a2.n}
				}
				c.a2 = a2
			}
		}
		if a1.kind == addrZero && (c.a2 == nil || c.a2.kind != addrRegex) {
			p.skipSpace()
			if !p.eof() {
				p.i++ // GNU reports the position after the command letter
			}
			return p.errAt("invalid usage of line address 0")
		}
	}
	p.skipSpace()
	for p.peek() == '!' {
		p.i++
		c.negate = true
		p.skipSpace()
	}
	if p.eof() {
		return p.errAt("missing command")
	}
	c.name = p.src[p.i]
	p.i++
	oneAddr := func() error {
		if c.a2 != nil {
			return p.errAt("command only uses one address")
		}
		return nil
	}
	switch c.name {
	case '{':
		p.blocks = append(p.blocks, len(p.cmds))
		p.cmds = append(p.cmds, c)
		return nil
	case '}':
		if c.a1 != nil {
			return p.errAt("} doesn't want any addresses")
		}
		if len(p.blocks) == 0 {
			return p.errAt("unexpected `}'")
		}
		open := p.blocks[len(p.blocks)-1]
		p.blocks = p.blocks[:len(p.blocks)-1]
		p.cmds[open].jump = len(p.cmds) + 1
		p.cmds = append(p.cmds, c)
		return p.endCommand()
	case '#':
		if c.a1 != nil {
			return p.errAt("comments don't accept any addresses")
		}
		for !p.eof() && p.src[p.i] != '\n' {
			p.i++
		}
		return nil
	case ':':
		if c.a1 != nil {
			return p.errAt(": doesn't want any addresses")
		}
		p.skipSpace()
		start := p.i
		for !p.eof() && p.src[p.i] != '\n' && p.src[p.i] != ';' {
			p.i++
		}
		c.text = strings.TrimRight(p.src[start:p.i], " \t")
		if c.text == "" {
			return p.errAt("\":\" lacks a label")
		}
		p.cmds = append(p.cmds, c)
		return nil
	case 'a', 'i', 'c':
		if c.name == 'i' || c.name == 'a' {
			// GNU accepts two addresses for a and i.
		}
		text, err := p.readText()
		if err != nil {
			return err
		}
		c.text = text
		p.cmds = append(p.cmds, c)
		return nil
	case 'b', 't', 'T':
		p.skipSpace()
		start := p.i
		for !p.eof() && p.src[p.i] != '\n' && p.src[p.i] != ';' && p.src[p.i] != '}' {
			p.i++
		}
		c.text = strings.TrimRight(p.src[start:p.i], " \t")
		p.cmds = append(p.cmds, c)
		return p.endCommand()
	case 'r', 'R', 'w', 'W':
		p.skipSpace()
		start := p.i
		for !p.eof() && p.src[p.i] != '\n' {
			p.i++
		}
		c.text = p.src[start:p.i]
		if c.text == "" {
			return p.errAt("missing filename in r/R/w/W commands")
		}
		if c.name == 'w' || c.name == 'W' {
			p.wfiles[c.text] = true
		}
		p.cmds = append(p.cmds, c)
		return nil
	case 'q', 'Q', 'l', 'L':
		if c.name == 'q' || c.name == 'Q' {
			if err := oneAddr(); err != nil {
				return err
			}
		}
		p.skipSpace()
		if n, ok := p.number(); ok {
			c.intArg, c.hasInt = int(n), true
		}
		p.cmds = append(p.cmds, c)
		return p.endCommand()
	case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		p.cmds = append(p.cmds, c)
		return p.endCommand()
	case 's':
		if err := p.parseS(c); err != nil {
			return err
		}
		p.cmds = append(p.cmds, c)
		return nil
	case 'y':
		if err := p.parseY(c); err != nil {
			return err
		}
		p.cmds = append(p.cmds, c)
		return p.endCommand()
	case 'e':
		return p.errAt("e command is not supported in the sandbox")
	}
	return p.errAt(fmt.Sprintf("unknown command: `%c'", c.name))
}

// endCommand accepts what may follow a command: spaces, then ';', a
// newline, '}', '#' or the end.
func (p *sedParser) endCommand() error {
	p.skipSpace()
	if p.eof() {
		return nil
	}
	switch p.src[p.i] {
	case ';', '\n':
		p.i++
		return nil
	case '}', '#':
		return nil
	}
	p.i++
	return p.errAt("extra characters after command")
}

// readText reads the text of a, i, c: "a\" newline text (lines ending in
// a backslash continue), or the GNU one-liner "a text".
func (p *sedParser) readText() (string, error) {
	p.skipSpace()
	if p.eof() {
		return "", p.errAt("expected \\ after `a', `c' or `i'")
	}
	if p.src[p.i] == '\\' {
		p.i++
		if !p.eof() && p.src[p.i] == '\n' {
			p.i++
		}
	}
	var b strings.Builder
	for !p.eof() {
		ch := p.src[p.i]
		p.i++
		if ch == '\\' {
			if p.eof() {
				break
			}
			ch = p.src[p.i]
			p.i++
			b.WriteByte(ch)
			continue
		}
		if ch == '\n' {
			break
		}
		b.WriteByte(ch)
	}
	return b.String(), nil
}

func (p *sedParser) parseS(c *sedCmd) error {
	if p.eof() {
		return p.errAt("unterminated `s' command")
	}
	delim := p.src[p.i]
	p.i++
	if delim == '\n' || delim == '\\' {
		return p.errAt("unterminated `s' command")
	}
	pat, ok := p.delimited(delim, true)
	if !ok {
		return p.errAt("unterminated `s' command")
	}
	repl, ok := p.delimited(delim, false)
	if !ok {
		return p.errAt("unterminated `s' command")
	}
	flags := ""
	seenG, seenP, seenN := false, false, false
flags:
	for !p.eof() {
		ch := p.src[p.i]
		switch {
		case ch == 'g':
			p.i++
			if seenG {
				return p.errAt("multiple `g' options to `s' command")
			}
			seenG, c.global = true, true
		case ch == 'p':
			p.i++
			if seenP {
				return p.errAt("multiple `p' options to `s' command")
			}
			seenP = true
			c.print++
		case ch >= '0' && ch <= '9':
			if seenN {
				p.i++
				return p.errAt("multiple number options to `s' command")
			}
			n, _ := p.number()
			if n == 0 {
				return p.errAt("number option to `s' command may not be zero")
			}
			seenN = true
			c.nth = int(min(n, 1<<31))
		case ch == 'i' || ch == 'I' || ch == 'm' || ch == 'M':
			p.i++
			flags += string(ch)
		case ch == 'e':
			p.i++
			return p.errAt("e flag is not supported in the sandbox")
		case ch == 'w':
			p.i++
			p.skipSpace()
			start := p.i
			for !p.eof() && p.src[p.i] != '\n' {
				p.i++
			}
			c.wfile = p.src[start:p.i]
			if c.wfile == "" {
				return p.errAt("missing filename in r/R/w/W commands")
			}
			p.wfiles[c.wfile] = true
			break flags
		case ch == ';' || ch == '\n' || ch == '}' || ch == '#' || ch == ' ' || ch == '\t':
			break flags
		default:
			p.i++
			return p.errAt("unknown option to `s'")
		}
	}
	if c.wfile == "" {
		if err := p.endCommand(); err != nil {
			return err
		}
	}
	re, empty, err := p.compileRe(sedRegexText(pat), flags)
	if err != nil {
		return err
	}
	c.re, c.reEmpty = re, empty
	parts, maxRef := parseRepl(repl)
	if re != nil && maxRef > re.NumSubexp() {
		return p.errAt(fmt.Sprintf("invalid reference \\%d on `s' command's RHS", maxRef))
	}
	c.repl = parts
	return nil
}

// parseRepl splits a replacement into literals, group references and
// GNU case conversions.
func parseRepl(s string) ([]replPart, int) {
	var parts []replPart
	var lit strings.Builder
	maxRef := 0
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, replPart{lit: lit.String(), group: -1})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == '&' {
			flush()
			parts = append(parts, replPart{group: 0})
			continue
		}
		if ch != '\\' || i+1 >= len(s) {
			lit.WriteByte(ch)
			continue
		}
		i++
		d := s[i]
		switch {
		case d >= '0' && d <= '9':
			flush()
			n := int(d - '0')
			maxRef = max(maxRef, n)
			parts = append(parts, replPart{group: n})
		case d == 'n':
			lit.WriteByte('\n')
		case d == 't':
			lit.WriteByte('\t')
		case d == 'r':
			lit.WriteByte('\r')
		case d == 'a':
			lit.WriteByte(7)
		case d == 'f':
			lit.WriteByte('\f')
		case d == 'v':
			lit.WriteByte('\v')
		case d == 'L' || d == 'U' || d == 'l' || d == 'u' || d == 'E':
			flush()
			parts = append(parts, replPart{group: -1, conv: d})
		default:
			lit.WriteByte(d)
		}
	}
	flush()
	return parts, maxRef
}

func (p *sedParser) parseY(c *sedCmd) error {
	if p.eof() {
		return p.errAt("unterminated `y' command")
	}
	delim := p.src[p.i]
	p.i++
	src, ok := p.delimited(delim, false)
	if !ok {
		return p.errAt("unterminated `y' command")
	}
	dst, ok := p.delimited(delim, false)
	if !ok {
		return p.errAt("unterminated `y' command")
	}
	a, b := unescapeY(src), unescapeY(dst)
	if len(a) != len(b) {
		return p.errAt("strings for `y' command are different lengths")
	}
	var m [256]byte
	for i := range m {
		m[i] = byte(i)
	}
	for i := 0; i < len(a); i++ {
		m[a[i]] = b[i]
	}
	c.ymap = &m
	return nil
}

func unescapeY(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '\\':
				b.WriteByte('\\')
			default:
				b.WriteByte('\\')
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
