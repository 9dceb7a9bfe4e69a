package textutils

// POSIX regular expressions for grep and sed.
//
// A pattern (basic or extended syntax, with the GNU extensions) is parsed
// into a small syntax tree. A tree without back-references is rendered to
// Go's RE2 syntax and compiled with leftmost-longest matching, which is
// POSIX's rule; a tree with back-references (`\(a*\)\1`), which RE2 cannot
// express, runs on a backtracking matcher over the same tree that also
// returns the leftmost-longest match, with a step budget so that a
// pathological pattern ends in an error instead of running forever.
//
// Matching is byte-oriented like the C locale, except that the Go engine
// treats a valid UTF-8 sequence as one character.

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// RegexError is a pattern syntax error; its text is GNU's message
// ("Unmatched ( or \\(").
type RegexError struct{ Msg string }

func (e *RegexError) Error() string { return e.Msg }

// ErrRegexTooComplex is returned when a back-reference pattern exceeds the
// backtracking budget.
var ErrRegexTooComplex = errors.New("regular expression too complex (backtracking limit)")

type nodeKind uint8

const (
	nLit       nodeKind = iota // lit: the bytes of one character
	nAny                       // .
	nClass                     // bracket expression
	nGroup                     // capturing group n
	nCat                       // concatenation of sub
	nAlt                       // alternation of sub
	nRep                       // sub[0] repeated min..max (max -1: unbounded)
	nBol                       // ^
	nEol                       // $
	nWordB                     // \b
	nNotWordB                  // \B
	nWordStart                 // \<
	nWordEnd                   // \>
	nBufStart                  // \`
	nBufEnd                    // \'
	nBackref                   // \n
)

type node struct {
	kind     nodeKind
	lit      []byte
	set      *[256]bool // nClass: bytes in the class (negation applied)
	goClass  string     // nClass: the class in Go syntax
	sub      []*node
	min, max int
	n        int // group or back-reference number
}

// posixParser parses one pattern.
type posixParser struct {
	s      string
	i      int
	ere    bool
	icase  bool
	ngroup int
	open   []int // group numbers currently open
	closed map[int]bool
	hasRef bool // needs the backtracking matcher (\1..\9, \<, \>)
	// ngroupBase is the number of groups of the patterns combined before
	// this one; back-references are numbered within the pattern.
	ngroupBase int
}

func (p *posixParser) atAltSep() bool {
	if p.ere {
		return p.i < len(p.s) && p.s[p.i] == '|'
	}
	return strings.HasPrefix(p.s[p.i:], `\|`)
}

func (p *posixParser) atClose() bool {
	if p.ere {
		return p.i < len(p.s) && p.s[p.i] == ')' && len(p.open) > 0
	}
	return strings.HasPrefix(p.s[p.i:], `\)`)
}

func (p *posixParser) parseAlt(depth int) (*node, error) {
	var branches []*node
	for {
		b, err := p.parseCat(depth)
		if err != nil {
			return nil, err
		}
		branches = append(branches, b)
		if p.atAltSep() {
			if p.ere {
				p.i++
			} else {
				p.i += 2
			}
			continue
		}
		break
	}
	if len(branches) == 1 {
		return branches[0], nil
	}
	return &node{kind: nAlt, sub: branches}, nil
}

func (p *posixParser) parseCat(depth int) (*node, error) {
	cat := &node{kind: nCat}
	for p.i < len(p.s) {
		if p.atAltSep() {
			break
		}
		if p.atClose() {
			if depth == 0 && !p.ere {
				return nil, &RegexError{"Unmatched ) or \\)"}
			}
			break
		}
		c := p.s[p.i]
		start := len(cat.sub) == 0
		// Quantifiers.
		if q, ok, err := p.quantifier(start, cat); err != nil {
			return nil, err
		} else if ok {
			last := cat.sub[len(cat.sub)-1]
			cat.sub[len(cat.sub)-1] = &node{kind: nRep, sub: []*node{last}, min: q[0], max: q[1]}
			continue
		}
		switch {
		case c == '^':
			p.i++
			if p.ere || start {
				cat.sub = append(cat.sub, &node{kind: nBol})
			} else {
				cat.sub = append(cat.sub, p.litNode("^"))
			}
		case c == '$':
			p.i++
			if p.ere || p.i == len(p.s) || p.atAltSep() || p.atClose() {
				cat.sub = append(cat.sub, &node{kind: nEol})
			} else {
				cat.sub = append(cat.sub, p.litNode("$"))
			}
		case c == '.':
			p.i++
			cat.sub = append(cat.sub, &node{kind: nAny})
		case c == '[':
			n, err := p.bracket()
			if err != nil {
				return nil, err
			}
			cat.sub = append(cat.sub, n)
		case p.ere && c == '(':
			p.i++
			g, err := p.group(depth)
			if err != nil {
				return nil, err
			}
			cat.sub = append(cat.sub, g)
		case p.ere && c == ')':
			// Unmatched ')' in ERE is an ordinary character (GNU).
			p.i++
			cat.sub = append(cat.sub, p.litNode(")"))
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return nil, &RegexError{"Trailing backslash"}
			}
			d := p.s[p.i+1]
			if !p.ere && d == '(' {
				p.i += 2
				g, err := p.group(depth)
				if err != nil {
					return nil, err
				}
				cat.sub = append(cat.sub, g)
				continue
			}
			if !p.ere && d == '{' && start {
				p.i += 2
				cat.sub = append(cat.sub, p.litNode("{"))
				continue
			}
			p.i += 2
			n, err := p.escape(d)
			if err != nil {
				return nil, err
			}
			cat.sub = append(cat.sub, n)
		default:
			_, size := utf8.DecodeRuneInString(p.s[p.i:])
			cat.sub = append(cat.sub, p.litNode(p.s[p.i:p.i+size]))
			p.i += size
		}
	}
	if len(cat.sub) == 1 {
		return cat.sub[0], nil
	}
	return cat, nil
}

// quantifier recognises *, \+, \?, \{m,n\} (BRE) or *, +, ?, {m,n} (ERE)
// after an atom. A quantifier with nothing to repeat is a literal.
func (p *posixParser) quantifier(start bool, cat *node) ([2]int, bool, error) {
	s := p.s[p.i:]
	var prevAnchor bool
	if !start {
		k := cat.sub[len(cat.sub)-1].kind
		prevAnchor = k == nBol
	}
	nothing := start || prevAnchor
	switch {
	case s[0] == '*':
		if nothing {
			return [2]int{}, false, nil
		}
		p.i++
		return [2]int{0, -1}, true, nil
	case p.ere && (s[0] == '+' || s[0] == '?'):
		if nothing {
			return [2]int{}, false, nil
		}
		p.i++
		if s[0] == '+' {
			return [2]int{1, -1}, true, nil
		}
		return [2]int{0, 1}, true, nil
	case !p.ere && (strings.HasPrefix(s, `\+`) || strings.HasPrefix(s, `\?`)):
		if nothing {
			return [2]int{}, false, nil
		}
		p.i += 2
		if s[1] == '+' {
			return [2]int{1, -1}, true, nil
		}
		return [2]int{0, 1}, true, nil
	case p.ere && s[0] == '{':
		body, end, ok := intervalBody(s[1:], "}")
		if !ok {
			// Not a valid interval: '{' is an ordinary character (GNU).
			return [2]int{}, false, nil
		}
		if nothing {
			return [2]int{}, false, &RegexError{"Invalid preceding regular expression"}
		}
		q, err := parseInterval(body)
		if err != nil {
			return q, false, err
		}
		p.i += 1 + end
		return q, true, nil
	case !p.ere && strings.HasPrefix(s, `\{`):
		if nothing {
			return [2]int{}, false, nil
		}
		body, end, ok := intervalBody(s[2:], `\}`)
		if !ok {
			if !strings.Contains(s[2:], `\}`) {
				return [2]int{}, false, &RegexError{"Unmatched \\{"}
			}
			return [2]int{}, false, &RegexError{"Invalid content of \\{\\}"}
		}
		q, err := parseInterval(body)
		if err != nil {
			return q, false, err
		}
		p.i += 2 + end
		return q, true, nil
	}
	return [2]int{}, false, nil
}

// intervalBody finds "m,n" followed by close; end is the offset after it.
func intervalBody(s, close string) (string, int, bool) {
	j := 0
	for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ',') {
		j++
	}
	if !strings.HasPrefix(s[j:], close) {
		return "", 0, false
	}
	body := s[:j]
	if body == "" || strings.Count(body, ",") > 1 || body == "," && close == "}" {
		if body == "," && close == `\}` {
			return body, j + len(close), true
		}
		return "", 0, false
	}
	return body, j + len(close), true
}

const maxRepeat = 1000

func parseInterval(body string) ([2]int, error) {
	lo, hi, comma := strings.Cut(body, ",")
	q := [2]int{0, -1}
	var err error
	if lo != "" {
		if q[0], err = strconv.Atoi(lo); err != nil {
			return q, &RegexError{"Invalid content of \\{\\}"}
		}
	}
	if !comma {
		q[1] = q[0]
	} else if hi != "" {
		if q[1], err = strconv.Atoi(hi); err != nil {
			return q, &RegexError{"Invalid content of \\{\\}"}
		}
	}
	if q[1] != -1 && q[1] < q[0] {
		return q, &RegexError{"Invalid content of \\{\\}"}
	}
	if q[0] > maxRepeat || q[1] > maxRepeat {
		return q, &RegexError{"Regular expression too big"}
	}
	return q, nil
}

func (p *posixParser) group(depth int) (*node, error) {
	p.ngroup++
	n := p.ngroup
	p.open = append(p.open, n)
	sub, err := p.parseAlt(depth + 1)
	if err != nil {
		return nil, err
	}
	if !p.atClose() {
		return nil, &RegexError{"Unmatched ( or \\("}
	}
	if p.ere {
		p.i++
	} else {
		p.i += 2
	}
	p.open = p.open[:len(p.open)-1]
	p.closed[n] = true
	return &node{kind: nGroup, n: n, sub: []*node{sub}}, nil
}

func (p *posixParser) litNode(s string) *node {
	if p.icase && len(s) == 1 {
		c := s[0]
		if lc, uc := lower(c), upper(c); lc != uc {
			var set [256]bool
			set[lc], set[uc] = true, true
			return &node{kind: nClass, set: &set, goClass: "[" + goClassChar(lc) + goClassChar(uc) + "]"}
		}
	}
	return &node{kind: nLit, lit: []byte(s)}
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 32
	}
	return c
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 32
	}
	return c
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func (p *posixParser) escape(d byte) (*node, error) {
	switch d {
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		n := int(d - '0')
		if !p.closed[n+p.base()] {
			return nil, &RegexError{"Invalid back reference"}
		}
		p.hasRef = true
		return &node{kind: nBackref, n: n + p.base()}, nil
	case '<':
		p.hasRef = true // RE2 cannot tell a word start from a word end
		return &node{kind: nWordStart}, nil
	case '>':
		p.hasRef = true
		return &node{kind: nWordEnd}, nil
	case 'b':
		return &node{kind: nWordB}, nil
	case 'B':
		return &node{kind: nNotWordB}, nil
	case '`':
		return &node{kind: nBufStart}, nil
	case '\'':
		return &node{kind: nBufEnd}, nil
	case 'w', 'W', 's', 'S':
		var set [256]bool
		for c := 0; c < 256; c++ {
			b := byte(c)
			switch d {
			case 'w', 'W':
				set[c] = isWordByte(b) == (d == 'w')
			default:
				sp := b == ' ' || b >= '\t' && b <= '\r'
				set[c] = sp == (d == 's')
			}
		}
		gc := map[byte]string{'w': `[0-9A-Za-z_]`, 'W': `[^0-9A-Za-z_]`, 's': `[\t-\r ]`, 'S': `[^\t-\r ]`}[d]
		return &node{kind: nClass, set: &set, goClass: gc}, nil
	case 'n':
		return p.litNode("\n"), nil
	case 't':
		return p.litNode("\t"), nil
	}
	return p.litNode(string(d)), nil
}

// base is the group offset of this pattern when several are combined.
func (p *posixParser) base() int { return p.ngroupBase }

var classNames = map[string]func(byte) bool{
	"alpha": func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' },
	"digit": func(c byte) bool { return c >= '0' && c <= '9' },
	"alnum": func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' },
	"upper": func(c byte) bool { return c >= 'A' && c <= 'Z' },
	"lower": func(c byte) bool { return c >= 'a' && c <= 'z' },
	"space": func(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' },
	"blank": func(c byte) bool { return c == ' ' || c == '\t' },
	"punct": func(c byte) bool {
		return c > ' ' && c < 0x7f && !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
	},
	"print":  func(c byte) bool { return c >= ' ' && c < 0x7f },
	"graph":  func(c byte) bool { return c > ' ' && c < 0x7f },
	"cntrl":  func(c byte) bool { return c < ' ' || c == 0x7f },
	"xdigit": func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' },
}

// bracket parses a bracket expression starting at '['.
func (p *posixParser) bracket() (*node, error) {
	errUnmatched := &RegexError{"Unmatched [, [^, [:, [., or [="}
	p.i++
	var set [256]bool
	neg := false
	if p.i < len(p.s) && p.s[p.i] == '^' {
		neg = true
		p.i++
	}
	var gc strings.Builder
	first := true
	for {
		if p.i >= len(p.s) {
			return nil, errUnmatched
		}
		c := p.s[p.i]
		if c == ']' && !first {
			p.i++
			break
		}
		first = false
		// Character class, equivalence class, collating symbol.
		if c == '[' && p.i+1 < len(p.s) && (p.s[p.i+1] == ':' || p.s[p.i+1] == '=' || p.s[p.i+1] == '.') {
			kind := p.s[p.i+1]
			end := strings.Index(p.s[p.i+2:], string(kind)+"]")
			if end < 0 {
				return nil, errUnmatched
			}
			name := p.s[p.i+2 : p.i+2+end]
			p.i += 2 + end + 2
			if kind == ':' {
				f, ok := classNames[name]
				if !ok {
					return nil, &RegexError{"Invalid character class name"}
				}
				for b := 0; b < 256; b++ {
					if f(byte(b)) {
						set[b] = true
					}
				}
				gc.WriteString("[:" + name + ":]")
				continue
			}
			if len(name) != 1 {
				return nil, &RegexError{"Invalid collation character"}
			}
			c = name[0]
			if p.rangeFollows() {
				if err := p.addRange(&set, &gc, c); err != nil {
					return nil, err
				}
				continue
			}
			set[c] = true
			gc.WriteString(goClassChar(c))
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			if size > 1 {
				p.i += size
				gc.WriteString(regexp.QuoteMeta(string(r)))
				continue
			}
		}
		p.i++
		if p.rangeFollows() {
			if err := p.addRange(&set, &gc, c); err != nil {
				return nil, err
			}
			continue
		}
		set[c] = true
		gc.WriteString(goClassChar(c))
	}
	if p.icase {
		for b := 'a'; b <= 'z'; b++ {
			if set[b] || set[b-32] {
				set[b], set[b-32] = true, true
			}
		}
	}
	if neg {
		for b := range set {
			set[b] = !set[b]
		}
	}
	cls := "[" + gc.String() + "]"
	if neg {
		cls = "[^" + gc.String() + "]"
	}
	if gc.Len() == 0 {
		cls = `[^\x00-\x{10FFFF}]`
	}
	return &node{kind: nClass, set: &set, goClass: cls}, nil
}

// rangeFollows reports a "-X" range continuation (but not "-]").
func (p *posixParser) rangeFollows() bool {
	return p.i+1 < len(p.s) && p.s[p.i] == '-' && p.s[p.i+1] != ']'
}

func (p *posixParser) addRange(set *[256]bool, gc *strings.Builder, lo byte) error {
	p.i++ // '-'
	hi := p.s[p.i]
	if hi == '[' && p.i+1 < len(p.s) && (p.s[p.i+1] == '.' || p.s[p.i+1] == '=') {
		kind := p.s[p.i+1]
		end := strings.Index(p.s[p.i+2:], string(kind)+"]")
		if end != 1 {
			return &RegexError{"Invalid range end"}
		}
		hi = p.s[p.i+2]
		p.i += 5
	} else {
		p.i++
	}
	if hi < lo {
		return &RegexError{"Invalid range end"}
	}
	for b := int(lo); b <= int(hi); b++ {
		set[b] = true
	}
	gc.WriteString(goClassChar(lo) + "-" + goClassChar(hi))
	return nil
}

func goClassChar(c byte) string {
	switch {
	case c == '\\' || c == ']' || c == '[' || c == '^' || c == '-':
		return `\` + string(c)
	case c < ' ' || c >= 0x7f:
		return fmt.Sprintf(`\x{%x}`, c)
	}
	return string(c)
}

// render writes the tree in Go regexp syntax.
func render(b *strings.Builder, n *node) {
	switch n.kind {
	case nLit:
		if len(n.lit) == 1 && n.lit[0] >= utf8.RuneSelf {
			fmt.Fprintf(b, `\x{%x}`, n.lit[0])
			return
		}
		b.WriteString(regexp.QuoteMeta(string(n.lit)))
	case nAny:
		b.WriteString(".")
	case nClass:
		b.WriteString(n.goClass)
	case nGroup:
		b.WriteString("(")
		render(b, n.sub[0])
		b.WriteString(")")
	case nCat:
		if len(n.sub) == 0 {
			b.WriteString("(?:)")
		}
		for _, s := range n.sub {
			render(b, s)
		}
	case nAlt:
		b.WriteString("(?:")
		for i, s := range n.sub {
			if i > 0 {
				b.WriteString("|")
			}
			render(b, s)
		}
		b.WriteString(")")
	case nRep:
		b.WriteString("(?:")
		render(b, n.sub[0])
		b.WriteString(")")
		switch {
		case n.min == 0 && n.max == -1:
			b.WriteString("*")
		case n.min == 1 && n.max == -1:
			b.WriteString("+")
		case n.min == 0 && n.max == 1:
			b.WriteString("?")
		case n.max == -1:
			fmt.Fprintf(b, "{%d,}", n.min)
		case n.min == n.max:
			fmt.Fprintf(b, "{%d}", n.min)
		default:
			fmt.Fprintf(b, "{%d,%d}", n.min, n.max)
		}
	case nBol:
		b.WriteString(`^`)
	case nEol:
		b.WriteString(`$`)
	case nBufStart:
		b.WriteString(`\A`)
	case nBufEnd:
		b.WriteString(`\z`)
	case nWordB, nWordStart, nWordEnd:
		// RE2 has no look-around: \< and \> become \b, which is the same
		// at a word's edge.
		b.WriteString(`\b`)
	case nNotWordB:
		b.WriteString(`\B`)
	case nBackref:
		b.WriteString(`(?:.*)`)
	}
}

// Regex is a compiled POSIX regular expression.
type Regex struct {
	re      *regexp.Regexp // nil when the pattern has back-references
	bt      *node          // the tree, for the backtracking matcher
	pre     *regexp.Regexp // prefilter for bt
	ngroups int
	budget  int
	icase   bool
	// multiline: ^ and $ match around embedded newlines too.
	multiline bool
	// lits are strings of which every match contains one (lower case when
	// litFold): input without any cannot match, which a fast search finds.
	lits    [][]byte
	litFold bool
	// wordGroup is the group holding the match proper under grep -w.
	wordGroup int
}

// compilePerl compiles grep -P patterns: Go's RE2 syntax is the Perl
// subset without look-around and back-references, with Perl's
// leftmost-first matching.
func compilePerl(pats []string, o regexOpts) (*Regex, error) {
	var b strings.Builder
	if o.icase {
		b.WriteString("(?i)")
	}
	var alts []string
	for _, p := range pats {
		if _, err := regexp.Compile(p); err != nil {
			return nil, &RegexError{translateGoErr(err)}
		}
		alts = append(alts, "(?:"+p+")")
	}
	body := strings.Join(alts, "|")
	switch o.wrap {
	case wrapLine:
		b.WriteString("^(?:" + body + ")$")
	case wrapWordFirst:
		b.WriteString("(?:^|[^0-9A-Za-z_])(?P<wasmboxword>" + body + ")")
	case wrapWordNext:
		b.WriteString("[^0-9A-Za-z_](?P<wasmboxword>" + body + ")")
	default:
		b.WriteString(body)
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, &RegexError{translateGoErr(err)}
	}
	r := &Regex{re: re, ngroups: re.NumSubexp(), icase: o.icase}
	if o.wrap == wrapWordFirst || o.wrap == wrapWordNext {
		r.wordGroup = re.SubexpIndex("wasmboxword")
	}
	return r, nil
}

// mayMatch is the literal prefilter: input containing none of the
// alternatives in lits cannot match.
func (r *Regex) mayMatch(b []byte) bool {
	if len(r.lits) == 0 {
		return true
	}
	for _, lit := range r.lits {
		if !r.litFold {
			if bytes.Contains(b, lit) {
				return true
			}
		} else if indexFold(b, lit) >= 0 {
			return true
		}
	}
	return false
}

// requiredAny returns literals of which every match of n contains at
// least one ("error|warning" gives both), or nil.
func requiredAny(n *node, fold bool) [][]byte {
	if l := requiredLit(n, fold); len(l) > 0 {
		return [][]byte{l}
	}
	switch n.kind {
	case nAlt:
		var out [][]byte
		for _, s := range n.sub {
			ls := requiredAny(s, fold)
			if ls == nil {
				return nil
			}
			out = append(out, ls...)
		}
		if len(out) > 16 {
			return nil // too many to be a cheap test
		}
		return out
	case nGroup:
		return requiredAny(n.sub[0], fold)
	case nRep:
		if n.min >= 1 {
			return requiredAny(n.sub[0], fold)
		}
	case nCat:
		for _, s := range n.sub {
			if ls := requiredAny(s, fold); ls != nil {
				return ls
			}
		}
	}
	return nil
}

// indexFold finds lit (lower case ASCII) in b ignoring ASCII case.
func indexFold(b, lit []byte) int {
	f := newFoldSearch(lit)
	return f.index(b, 0)
}

// foldSearch finds a lower-case ASCII literal ignoring ASCII case in one
// buffer, repeatedly: it remembers where each case of the first byte
// occurs next, so that a case that is rare (or absent) is not searched for
// again at every candidate.
type foldSearch struct {
	lit    []byte
	c0, u0 byte
	nc, nu int // next c0 and u0 in the buffer; -1 none, -2 not known
}

func newFoldSearch(lit []byte) *foldSearch {
	f := &foldSearch{lit: lit, c0: lit[0], u0: upper(lit[0])}
	f.reset()
	return f
}

// reset forgets the positions: the next index call may be on another
// buffer.
func (f *foldSearch) reset() {
	f.nc, f.nu = -2, -2
	if f.u0 == f.c0 {
		f.nu = -1
	}
}

// index returns the first match in b at or after i, or -1. Between resets
// b must stay the same.
func (f *foldSearch) index(b []byte, i int) int {
	lit := f.lit
	for i+len(lit) <= len(b) {
		if f.nc != -1 && f.nc < i {
			if f.nc = bytes.IndexByte(b[i:], f.c0); f.nc >= 0 {
				f.nc += i
			}
		}
		if f.nu != -1 && f.nu < i {
			if f.nu = bytes.IndexByte(b[i:], f.u0); f.nu >= 0 {
				f.nu += i
			}
		}
		j := f.nc
		if j < 0 || (f.nu >= 0 && f.nu < j) {
			j = f.nu
		}
		if j < 0 {
			return -1
		}
		i = j
		if i+len(lit) > len(b) {
			return -1
		}
		ok := true
		for k := 1; k < len(lit); k++ {
			if lower(b[i+k]) != lit[k] {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
		i++
	}
	return -1
}

// requiredLit returns a byte string that every match of n contains.
// With fold, a class holding exactly the two cases of a letter counts as
// that (lower-case) letter.
func requiredLit(n *node, fold bool) []byte {
	litOf := func(n *node) ([]byte, bool) {
		switch n.kind {
		case nLit:
			if fold {
				return bytes.ToLower(n.lit), true
			}
			return n.lit, true
		case nClass:
			if !fold {
				return nil, false
			}
			cnt := 0
			var first byte
			for c := 0; c < 256; c++ {
				if n.set[c] {
					if cnt == 0 {
						first = byte(c)
					}
					cnt++
				}
			}
			if cnt == 2 && isAlpha(first) && n.set[lower(first)] && n.set[upper(first)] {
				return []byte{lower(first)}, true
			}
		}
		return nil, false
	}
	switch n.kind {
	case nLit, nClass:
		l, _ := litOf(n)
		return l
	case nGroup:
		return requiredLit(n.sub[0], fold)
	case nRep:
		if n.min >= 1 {
			return requiredLit(n.sub[0], fold)
		}
	case nCat:
		var best, run []byte
		for _, s := range n.sub {
			if l, ok := litOf(s); ok {
				run = append(run, l...)
				if len(run) > len(best) {
					best = append(best[:0:0], run...)
				}
				continue
			}
			run = nil
			if l := requiredLit(s, fold); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return nil
}

// NumSubexp is the number of capturing groups.
func (r *Regex) NumSubexp() int { return r.ngroups }

// regexOpts selects the syntax and how patterns are combined.
type regexOpts struct {
	ere       bool
	icase     bool
	multiline bool // sed M: ^ and $ also match at embedded newlines
	// wrap: 0 none; wrapLine anchors at both ends (grep -x); wrapWordFirst
	// and wrapWordNext require a non-word character or the line start
	// before the match (grep -w; the match is then group NumSubexp()).
	wrap int
}

const (
	wrapNone = iota
	wrapLine
	wrapWordFirst
	wrapWordNext
)

// compileRegex compiles one pattern.
func compileRegex(pat string, o regexOpts) (*Regex, error) {
	return compileRegexes([]string{pat}, o)
}

func nonWordClass() *node {
	var set [256]bool
	for c := 0; c < 256; c++ {
		set[c] = !isWordByte(byte(c))
	}
	return &node{kind: nClass, set: &set, goClass: `[^0-9A-Za-z_]`}
}

// compileRegexes compiles the alternation of several patterns (grep -e
// ... -e ...), each parsed on its own.
func compileRegexes(pats []string, o regexOpts) (*Regex, error) {
	var alts []*node
	total := 0
	hasRef := false
	for _, pat := range pats {
		p := &posixParser{s: pat, ere: o.ere, icase: o.icase, ngroup: total, ngroupBase: total, closed: map[int]bool{}}
		n, err := p.parseAlt(0)
		if err != nil {
			return nil, err
		}
		if p.i < len(p.s) {
			return nil, &RegexError{"Unmatched ) or \\)"}
		}
		total = p.ngroup
		hasRef = hasRef || p.hasRef
		alts = append(alts, n)
	}
	var root *node
	if len(alts) == 1 {
		root = alts[0]
	} else {
		root = &node{kind: nAlt, sub: alts}
	}
	switch o.wrap {
	case wrapLine:
		root = &node{kind: nCat, sub: []*node{{kind: nBol}, root, {kind: nEol}}}
	case wrapWordFirst, wrapWordNext:
		total++
		g := &node{kind: nGroup, n: total, sub: []*node{root}}
		var lead *node = nonWordClass()
		if o.wrap == wrapWordFirst {
			lead = &node{kind: nAlt, sub: []*node{{kind: nBol}, lead}}
		}
		root = &node{kind: nCat, sub: []*node{lead, g}}
	}
	r := &Regex{ngroups: total, budget: 1 << 22, icase: o.icase, multiline: o.multiline}
	if o.wrap == wrapWordFirst || o.wrap == wrapWordNext {
		r.wordGroup = total
	}
	r.litFold = o.icase
	r.lits = requiredAny(root, o.icase)
	var b strings.Builder
	b.WriteString("(?s)")
	if o.icase {
		b.WriteString("(?i)")
	}
	if o.multiline {
		b.WriteString("(?m)")
	}
	render(&b, root)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, &RegexError{translateGoErr(err)}
	}
	re.Longest()
	if hasRef {
		// re (back-references rendered as "any text") is a prefilter: no
		// match of it, no match at all.
		r.bt = root
		r.pre = re
		return r, nil
	}
	r.re = re
	return r, nil
}

func translateGoErr(err error) string {
	s := err.Error()
	if strings.Contains(s, "invalid repeat count") || strings.Contains(s, "expression too large") {
		return "Regular expression too big"
	}
	return s
}
