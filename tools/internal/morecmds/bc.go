package morecmds

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// bc is GNU bc 1.07: POSIX bc with GNU's extensions (long names, else,
// print, read(), halt, continue, &&, || and !, last and ".", # comments,
// call-by-variable arrays), arithmetic on math/big with GNU's scale rules
// (bcnum.go), and -l's library (bclib.go).
//
// The program compiles to a small stack code, one item (a line, or a
// function definition) at a time, and each item runs once parsed, as GNU
// bc does. Every instruction knows the address GNU's byte code would give
// it, so runtime errors and warnings name the same "adr=N".
//
// Numbers are bounded (bcMaxDigits) and so is the call depth (bcMaxDepth):
// input such as 2^99999999 gets a runtime error where GNU bc would spend
// minutes and memory; an endless loop runs until the sandbox's deadline.

func init() { cmd.Register("bc", bcMain) }

const bcUsage = `usage: bc [options] [file ...]
  -h  --help         print this usage and exit
  -i  --interactive  force interactive mode
  -l  --mathlib      use the predefined math routines
  -q  --quiet        don't print initial banner
  -s  --standard     non-standard bc constructs are errors
  -w  --warn         warn about non-standard bc constructs
  -v  --version      print version information and exit
`

// bcMaxDepth bounds nested function calls.
const bcMaxDepth = 10000

func bcMain(e *cmd.Env) int {
	spec := []cmd.Option{
		{Short: 'h', Long: "help"}, {Short: 'i', Long: "interactive"}, {Short: 'l', Long: "mathlib"},
		{Short: 'q', Long: "quiet"}, {Short: 's', Long: "standard"}, {Short: 'w', Long: "warn"},
		{Short: 'v', Long: "version"},
	}
	opts, files, err := cmd.Getopt(e.Args[1:], spec, false)
	if err != nil {
		e.Errorf("%s", err.Error())
		io.WriteString(e.Stdout, bcUsage)
		return 1
	}
	mathlib := false
	for _, o := range opts {
		switch o.Name {
		case "help":
			io.WriteString(e.Stdout, bcUsage)
			return 0
		case "version":
			fmt.Fprintf(e.Stdout, "bc 1.07.1 %s\n", version)
			return 0
		case "mathlib":
			mathlib = true
		}
	}
	out := bufio.NewWriter(e.Stdout)
	defer out.Flush()
	m := newBcMachine(out, e.Stderr)
	if ll, ok := os.LookupEnv("BC_LINE_LENGTH"); ok {
		n, _ := strconv.Atoi(strings.TrimSpace(ll))
		if n < 3 && n != 0 {
			n = 70
		}
		m.lineLen = n
	}
	if mathlib {
		m.scale = 20
		st := m.run(newBcLexer("(library)", bufio.NewReader(strings.NewReader(bcMathLib))))
		if st >= 0 {
			return st
		}
	}
	stdin := bufio.NewReader(e.Stdin)
	m.stdin = stdin
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			out.Flush()
			fmt.Fprintf(e.Stderr, "File %s is unavailable.\n", f)
			return 1
		}
		st := m.run(newBcLexer(f, bufio.NewReader(fh)))
		fh.Close()
		if st >= 0 {
			return st
		}
	}
	if st := m.run(newBcLexer("(standard_in)", stdin)); st >= 0 {
		return st
	}
	return 0
}

// --- lexer ---

type bcTokKind int

const (
	tkEOF bcTokKind = iota
	tkNewline
	tkNum
	tkName
	tkStr
	tkOp  // punctuation and operators; text holds it
	tkKey // keywords; text holds it
)

type bcTok struct {
	kind bcTokKind
	text string
}

var bcKeywords = map[string]bool{
	"auto": true, "break": true, "continue": true, "define": true, "else": true, "for": true,
	"halt": true, "ibase": true, "if": true, "last": true, "length": true, "obase": true,
	"print": true, "quit": true, "read": true, "return": true, "scale": true, "sqrt": true,
	"while": true, "limits": true, "warranty": true,
}

type bcLexer struct {
	name    string
	r       *bufio.Reader
	line    int
	pending []bcTok // tokens peeked or pushed back, the next one last
	// lastNewline: the last token next returned was a newline.
	lastNewline bool
	// hadError: an illegal character was reported; the item in
	// progress does not run (GNU's had_error).
	hadError bool
	errw     io.Writer
	flush    func()
}

func (l *bcLexer) illegal(c byte, line int) {
	l.flush()
	fmt.Fprintf(l.errw, "%s %d: illegal character: %c\n", l.name, line, c)
	l.hadError = true
}

func newBcLexer(name string, r *bufio.Reader) *bcLexer {
	return &bcLexer{name: name, r: r, line: 1}
}

func (l *bcLexer) getc() int {
	c, err := l.r.ReadByte()
	if err != nil {
		return -1
	}
	return int(c)
}

func (l *bcLexer) ungetc() { l.r.UnreadByte() }

func (l *bcLexer) peek() bcTok {
	if len(l.pending) == 0 {
		l.pending = append(l.pending, l.scan())
	}
	return l.pending[len(l.pending)-1]
}

func (l *bcLexer) next() bcTok {
	t := l.peek()
	l.pending = l.pending[:len(l.pending)-1]
	l.lastNewline = t.kind == tkNewline
	return t
}

// unread pushes t back: next returns it first.
func (l *bcLexer) unread(t bcTok) { l.pending = append(l.pending, t) }

func isBcDigit(c int) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' }

func (l *bcLexer) scan() bcTok {
	for {
		c := l.getc()
		switch {
		case c < 0:
			return bcTok{kind: tkEOF}
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			continue
		case c == '\\':
			if d := l.getc(); d == '\n' {
				l.line++
				continue
			} else if d >= 0 {
				l.ungetc()
			}
			l.illegal('\\', l.line)
			continue
		case c == '\n':
			l.line++
			return bcTok{kind: tkNewline}
		case c == '#':
			for c >= 0 && c != '\n' {
				c = l.getc()
			}
			if c == '\n' {
				l.line++
				return bcTok{kind: tkNewline}
			}
			return bcTok{kind: tkEOF}
		case c == '/':
			if d := l.getc(); d == '*' {
				prev := 0
				for {
					d = l.getc()
					if d < 0 {
						l.flush()
						fmt.Fprintln(l.errw, "EOF encountered in a comment.")
						return bcTok{kind: tkEOF}
					}
					if d == '\n' {
						l.line++
					}
					if prev == '*' && d == '/' {
						break
					}
					prev = d
				}
				continue
			} else if d == '=' {
				return bcTok{kind: tkOp, text: "/="}
			} else if d >= 0 {
				l.ungetc()
			}
			return bcTok{kind: tkOp, text: "/"}
		case c == '"':
			var b strings.Builder
			start := l.line
			closed := false
			for {
				d := l.getc()
				if d < 0 {
					break
				}
				if d == '"' {
					closed = true
					break
				}
				if d == '\n' {
					l.line++
				}
				b.WriteByte(byte(d))
			}
			if closed {
				return bcTok{kind: tkStr, text: b.String()}
			}
			// Unterminated: the quote is illegal and what followed it
			// is read again as program text.
			l.illegal('"', start)
			l.line = start
			l.r = bufio.NewReader(strings.NewReader(b.String()))
			continue
		case isBcDigit(c) || c == '.':
			var b strings.Builder
			dot := false
			for {
				if c == '.' {
					if dot {
						break
					}
					dot = true
				} else if c == '\\' {
					if d := l.getc(); d == '\n' {
						l.line++
						c = l.getc()
						continue
					} else if d >= 0 {
						l.ungetc()
					}
					break
				} else if !isBcDigit(c) {
					break
				}
				b.WriteByte(byte(c))
				c = l.getc()
			}
			if c >= 0 {
				l.ungetc()
			}
			s := b.String()
			if s == "." {
				return bcTok{kind: tkKey, text: "last"}
			}
			// GNU drops leading zeros and a final point.
			s = strings.TrimLeft(s, "0")
			s = strings.TrimSuffix(s, ".")
			if s == "" {
				s = "0"
			}
			return bcTok{kind: tkNum, text: s}
		case c >= 'a' && c <= 'z':
			var b strings.Builder
			for c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' {
				b.WriteByte(byte(c))
				c = l.getc()
			}
			if c >= 0 {
				l.ungetc()
			}
			s := b.String()
			if bcKeywords[s] {
				return bcTok{kind: tkKey, text: s}
			}
			return bcTok{kind: tkName, text: s}
		default:
			d := l.getc()
			two := string([]byte{byte(c), byte(d)})
			switch two {
			case "==", "<=", ">=", "!=", "&&", "||", "++", "--", "+=", "-=", "*=", "%=", "^=":
				return bcTok{kind: tkOp, text: two}
			}
			if d >= 0 {
				l.ungetc()
			}
			if strings.IndexByte("+-*%^=<>!(){}[],;&", byte(c)) >= 0 {
				return bcTok{kind: tkOp, text: string(rune(c))}
			}
			l.illegal(byte(c), l.line)
			continue
		}
	}
}

// --- code ---

type bcOp uint8

const (
	opConst    bcOp = iota // text
	opLoad                 // var
	opStore                // var; leaves the value
	opLoadArr              // arr; pops index
	opStoreArr             // arr; pops value, index; pushes value
	opIncr                 // var, n: +1 or -1
	opIncrArr              // arr, n; pops index
	opDup
	opSwap
	opPop
	opBin // text: + - * / % ^ and comparisons
	opNeg
	opNot
	opJump    // n: label
	opJumpZ   // n: label; pops
	opJumpNZ  // n: label; pops
	opPrint   // n: 1 with newline
	opStr     // text: printed as is
	opPrintS  // text: with escapes
	opCall    // n: function, text: argument kinds ('0' value, '1' array)
	opArrArg  // arr: an array argument
	opReturn  // pops the value
	opHalt    //
	opBuiltin // text: L R S I
)

type bcInst struct {
	op   bcOp
	n    int
	text string
	adr  int // GNU's pc after this instruction
	size int
	val  *bcNum // a constant converted at ibase cbase
	base int
}

type bcCode struct {
	insts  []bcInst
	labels map[int]int // label -> instruction index
	pc     int         // GNU's code size so far
}

func (c *bcCode) emit(in bcInst, size int) {
	c.pc += size
	in.size = size
	in.adr = c.pc
	c.insts = append(c.insts, in)
}

func (c *bcCode) label(n int) { c.labels[n] = len(c.insts) }

func newBcCode() *bcCode { return &bcCode{labels: map[int]int{}} }

type bcParam struct {
	idx   int
	array bool
	ref   bool
}

type bcFunc struct {
	name    string
	defined bool
	params  []bcParam
	autos   []bcParam
	code    *bcCode
}

// --- parser ---

type bcParser struct {
	m          *bcMachine
	lx         *bcLexer
	code       *bcCode
	nextLabel  int
	breakLab   int
	contLab    int
	inFunc     bool
	quit       bool
	errLine    int
	errMsg     string
	errPending bool
	depth      int
}

type bcSyntaxError struct{ msg string }

func (e *bcSyntaxError) Error() string { return e.msg }

func (p *bcParser) fail(msg string) {
	panic(&bcSyntaxError{msg})
}

func (p *bcParser) expect(text string) {
	t := p.lx.next()
	if t.kind != tkOp || t.text != text {
		p.fail("syntax error")
	}
}

func (p *bcParser) isOp(t bcTok, text string) bool { return t.kind == tkOp && t.text == text }

func (p *bcParser) newLabel() int {
	n := p.nextLabel
	p.nextLabel++
	return n
}

// varSize is the size of a variable operand in GNU's code: one byte
// below 128, else two.
func varSize(idx int) int {
	if idx > 127 {
		return 2
	}
	return 1
}

// expression flags, as GNU's grammar keeps them.
const (
	exAssign = 0
	exReg    = 1
	exComp   = 2
	exParen  = 4
)

// lvalue is a named expression: a variable (arr false) or an array
// element (its index already on the stack).
type lvalue struct {
	idx   int
	arr   bool
	name  string
	valid bool
}

// bcMaxNesting bounds the parser's recursion (parentheses, blocks), so
// that hostile input gets a syntax error instead of exhausting the stack.
const bcMaxNesting = 1000

func (p *bcParser) enter() {
	p.depth++
	if p.depth > bcMaxNesting {
		p.fail("nesting too deep")
	}
}

func (p *bcParser) expr() int {
	p.enter()
	defer func() { p.depth-- }()
	return p.orExpr()
}

func (p *bcParser) orExpr() int {
	f := p.andExpr()
	for p.isOp(p.lx.peek(), "||") {
		p.lx.next()
		l1 := p.newLabel()
		p.code.emit(bcInst{op: opJumpNZ, n: l1}, 3)
		g := p.andExpr()
		l2 := p.newLabel()
		p.code.emit(bcInst{op: opJumpNZ, n: l1}, 3)
		p.code.emit(bcInst{op: opConst, text: "0"}, 1)
		p.code.emit(bcInst{op: opJump, n: l2}, 3)
		p.code.label(l1)
		p.code.emit(bcInst{op: opConst, text: "1"}, 1)
		p.code.label(l2)
		f = (f | g) &^ exParen
	}
	return f
}

func (p *bcParser) andExpr() int {
	f := p.notExpr()
	for p.isOp(p.lx.peek(), "&&") {
		p.lx.next()
		l := p.newLabel()
		p.code.emit(bcInst{op: opDup}, 1)
		p.code.emit(bcInst{op: opJumpZ, n: l}, 3)
		p.code.emit(bcInst{op: opPop}, 1)
		g := p.notExpr()
		p.code.emit(bcInst{op: opDup}, 1)
		p.code.emit(bcInst{op: opJumpZ, n: l}, 3)
		p.code.emit(bcInst{op: opPop}, 1)
		p.code.emit(bcInst{op: opConst, text: "1"}, 1)
		p.code.label(l)
		f = (f | g) &^ exParen
	}
	return f
}

func (p *bcParser) notExpr() int {
	p.enter()
	defer func() { p.depth-- }()
	if p.isOp(p.lx.peek(), "!") {
		p.lx.next()
		f := p.notExpr()
		p.code.emit(bcInst{op: opNot}, 1)
		return f &^ exParen
	}
	return p.relExpr()
}

func (p *bcParser) relExpr() int {
	f := p.addExpr()
	for {
		t := p.lx.peek()
		if t.kind != tkOp {
			return f
		}
		switch t.text {
		case "==", "!=", "<", "<=", ">", ">=":
		default:
			return f
		}
		p.lx.next()
		p.addExpr()
		p.code.emit(bcInst{op: opBin, text: t.text}, 1)
		f = exReg | exComp
	}
}

func (p *bcParser) addExpr() int {
	f := p.mulExpr()
	for {
		t := p.lx.peek()
		if !p.isOp(t, "+") && !p.isOp(t, "-") {
			return f
		}
		p.lx.next()
		g := p.mulExpr()
		p.code.emit(bcInst{op: opBin, text: t.text}, 1)
		f = (f | g) &^ exParen
	}
}

func (p *bcParser) mulExpr() int {
	f := p.powExpr()
	for {
		t := p.lx.peek()
		if !p.isOp(t, "*") && !p.isOp(t, "/") && !p.isOp(t, "%") {
			return f
		}
		p.lx.next()
		g := p.powExpr()
		p.code.emit(bcInst{op: opBin, text: t.text}, 1)
		f = (f | g) &^ exParen
	}
}

func (p *bcParser) powExpr() int {
	p.enter()
	defer func() { p.depth-- }()
	f := p.unary()
	if p.isOp(p.lx.peek(), "^") {
		p.lx.next()
		g := p.powExpr()
		p.code.emit(bcInst{op: opBin, text: "^"}, 1)
		f = (f | g) &^ exParen
	}
	return f
}

func (p *bcParser) unary() int {
	p.enter()
	defer func() { p.depth-- }()
	if p.isOp(p.lx.peek(), "-") {
		p.lx.next()
		f := p.unary()
		p.code.emit(bcInst{op: opNeg}, 1)
		return f &^ exParen
	}
	return p.primary()
}

// named parses a named expression after its first token t; for an array
// element it emits the index expression.
func (p *bcParser) named(t bcTok) lvalue {
	switch {
	case t.kind == tkKey && t.text == "ibase":
		return lvalue{idx: 0, valid: true}
	case t.kind == tkKey && t.text == "obase":
		return lvalue{idx: 1, valid: true}
	case t.kind == tkKey && t.text == "scale":
		return lvalue{idx: 2, valid: true}
	case t.kind == tkKey && t.text == "last":
		return lvalue{idx: 3, valid: true}
	case t.kind == tkName:
		if p.isOp(p.lx.peek(), "[") {
			p.lx.next()
			p.expr()
			p.expect("]")
			return lvalue{idx: p.m.arrayIndex(t.text), arr: true, name: t.text, valid: true}
		}
		return lvalue{idx: p.m.varIndex(t.text), name: t.text, valid: true}
	}
	return lvalue{}
}

func (p *bcParser) load(lv lvalue) {
	if lv.arr {
		p.code.emit(bcInst{op: opLoadArr, n: lv.idx}, 1+varSize(lv.idx))
	} else {
		p.code.emit(bcInst{op: opLoad, n: lv.idx}, 1+varSize(lv.idx))
	}
}

func (p *bcParser) store(lv lvalue) {
	if lv.arr {
		p.code.emit(bcInst{op: opStoreArr, n: lv.idx, text: lv.name}, 1+varSize(lv.idx))
	} else {
		p.code.emit(bcInst{op: opStore, n: lv.idx}, 1+varSize(lv.idx))
	}
}

func (p *bcParser) primary() int {
	t := p.lx.next()
	switch {
	case t.kind == tkNum:
		if t.text == "0" || t.text == "1" {
			p.code.emit(bcInst{op: opConst, text: t.text}, 1)
		} else {
			p.code.emit(bcInst{op: opConst, text: t.text}, 2+len(t.text))
		}
		return exReg
	case p.isOp(t, "("):
		f := p.expr()
		p.expect(")")
		return f | exReg | exParen
	case p.isOp(t, "++") || p.isOp(t, "--"):
		n := 1
		if t.text == "--" {
			n = -1
		}
		lv := p.named(p.lx.next())
		if !lv.valid {
			p.fail("syntax error")
		}
		if lv.arr {
			p.code.emit(bcInst{op: opDup}, 1)
			p.code.emit(bcInst{op: opIncrArr, n: lv.idx, text: lv.name, val: nil, base: n}, 1+varSize(lv.idx))
			p.load(lv)
		} else {
			p.code.emit(bcInst{op: opIncr, n: lv.idx, base: n}, 1+varSize(lv.idx))
			p.load(lv)
		}
		return exReg
	case t.kind == tkKey && (t.text == "length" || t.text == "sqrt" || t.text == "scale" && p.isOp(p.lx.peek(), "(")):
		p.expect("(")
		p.expr()
		p.expect(")")
		p.code.emit(bcInst{op: opBuiltin, text: map[string]string{"length": "L", "sqrt": "R", "scale": "S"}[t.text]}, 2)
		return exReg
	case t.kind == tkKey && t.text == "read":
		p.expect("(")
		p.expect(")")
		p.code.emit(bcInst{op: opBuiltin, text: "I"}, 2)
		return exReg
	case t.kind == tkName && p.isOp(p.lx.peek(), "("):
		p.lx.next()
		var kinds []byte
		if !p.isOp(p.lx.peek(), ")") {
			for {
				// NAME[] is an array argument.
				if a := p.lx.peek(); a.kind == tkName {
					p.lx.next()
					if br := p.lx.peek(); p.isOp(br, "[") {
						p.lx.next()
						if p.isOp(p.lx.peek(), "]") {
							p.lx.next()
							ai := p.m.arrayIndex(a.text)
							p.code.emit(bcInst{op: opArrArg, n: ai}, 2+len(strconv.Itoa(ai)))
							kinds = append(kinds, '1')
							goto nextArg
						}
						p.lx.unread(br)
					}
					p.lx.unread(a)
				}
				p.expr()
				kinds = append(kinds, '0')
			nextArg:
				if !p.isOp(p.lx.peek(), ",") {
					break
				}
				p.lx.next()
			}
		}
		p.expect(")")
		p.emitCall(t.text, kinds)
		return exReg
	}
	lv := p.named(t)
	if !lv.valid {
		p.fail("syntax error")
	}
	return p.finishNamed(lv)
}

func (p *bcParser) emitCall(name string, kinds []byte) {
	fi := p.m.funcIndex(name)
	size := 1 + varSize(fi) + 1
	if len(kinds) > 0 {
		size += len(kinds)
	}
	p.code.emit(bcInst{op: opCall, n: fi, text: string(kinds)}, size)
}

// finishNamed completes a named expression: an assignment, a postfix
// increment or a plain load.
func (p *bcParser) finishNamed(lv lvalue) int {
	t := p.lx.peek()
	if t.kind == tkOp {
		switch t.text {
		case "=", "+=", "-=", "*=", "/=", "%=", "^=":
			p.lx.next()
			if t.text != "=" {
				if lv.arr {
					p.code.emit(bcInst{op: opDup}, 1)
					p.code.emit(bcInst{op: opLoadArr, n: lv.idx}, 1+varSize(lv.idx))
				} else {
					p.load(lv)
				}
			}
			p.assignRHS()
			if t.text != "=" {
				p.code.emit(bcInst{op: opBin, text: t.text[:1]}, 1)
			}
			p.store(lv)
			return exAssign
		case "++", "--":
			p.lx.next()
			n := 1
			if t.text == "--" {
				n = -1
			}
			if lv.arr {
				p.code.emit(bcInst{op: opDup}, 1)
				p.code.emit(bcInst{op: opLoadArr, n: lv.idx}, 1+varSize(lv.idx))
				p.code.emit(bcInst{op: opSwap}, 1)
				p.code.emit(bcInst{op: opIncrArr, n: lv.idx, text: lv.name, base: n}, 1+varSize(lv.idx))
			} else {
				p.load(lv)
				p.code.emit(bcInst{op: opIncr, n: lv.idx, base: n}, 1+varSize(lv.idx))
			}
			return exReg
		}
	}
	p.load(lv)
	return exReg
}

// assignRHS parses the right side of an assignment: operators binding
// tighter than assignment (+ - * / % ^), and nested assignments.
func (p *bcParser) assignRHS() { p.addExpr() }

// statement parses one statement (not empty).
func (p *bcParser) statement() {
	p.enter()
	defer func() { p.depth-- }()
	t := p.lx.peek()
	switch {
	case p.isOp(t, "{"):
		p.lx.next()
		p.statementList("}")
		p.expect("}")
		return
	case t.kind == tkStr:
		p.lx.next()
		p.code.emit(bcInst{op: opStr, text: t.text}, 2+len(t.text))
		return
	case t.kind == tkKey:
		switch t.text {
		case "quit":
			p.lx.next()
			p.quit = true
			panic(&bcSyntaxError{""})
		case "halt":
			p.lx.next()
			p.code.emit(bcInst{op: opHalt}, 1)
			return
		case "limits":
			// Printed as it is parsed, as GNU bc does.
			p.lx.next()
			p.m.outString("BC_BASE_MAX     = 2147483647\nBC_DIM_MAX      = 16777215\nBC_SCALE_MAX    = 2147483647\n" +
				"BC_STRING_MAX   = 2147483647\nMAX Exponent    = 9223372036854775807\nNumber of vars  = 32767\n")
			return
		case "break":
			p.lx.next()
			if p.breakLab == 0 {
				p.fail("Break outside a for/while")
			}
			p.code.emit(bcInst{op: opJump, n: p.breakLab}, 3)
			return
		case "continue":
			p.lx.next()
			if p.contLab == 0 {
				p.fail("Continue outside a for")
			}
			p.code.emit(bcInst{op: opJump, n: p.contLab}, 3)
			return
		case "return":
			p.lx.next()
			n := p.lx.peek()
			if n.kind == tkNewline || n.kind == tkEOF || p.isOp(n, ";") || p.isOp(n, "}") {
				p.code.emit(bcInst{op: opConst, text: "0"}, 1)
			} else {
				p.expr()
			}
			if !p.inFunc {
				p.fail("Return outside of a function.")
			}
			p.code.emit(bcInst{op: opReturn}, 1)
			return
		case "print":
			p.lx.next()
			for {
				if s := p.lx.peek(); s.kind == tkStr {
					p.lx.next()
					p.code.emit(bcInst{op: opPrintS, text: s.text}, 2+len(s.text))
				} else {
					p.expr()
					p.code.emit(bcInst{op: opPrint}, 1)
				}
				if !p.isOp(p.lx.peek(), ",") {
					return
				}
				p.lx.next()
			}
		case "if":
			p.lx.next()
			p.expect("(")
			p.expr()
			p.expect(")")
			l := p.newLabel()
			p.code.emit(bcInst{op: opJumpZ, n: l}, 3)
			p.optNewline()
			p.statement()
			if n := p.lx.peek(); n.kind == tkKey && n.text == "else" {
				p.lx.next()
				l2 := p.newLabel()
				p.code.emit(bcInst{op: opJump, n: l2}, 3)
				p.code.label(l)
				l = l2
				p.optNewline()
				p.statement()
			}
			p.code.label(l)
			return
		case "while":
			p.lx.next()
			top := p.newLabel()
			p.code.label(top)
			p.expect("(")
			p.expr()
			p.expect(")")
			saved := p.breakLab
			p.breakLab = p.newLabel()
			p.code.emit(bcInst{op: opJumpZ, n: p.breakLab}, 3)
			p.optNewline()
			p.statement()
			p.code.emit(bcInst{op: opJump, n: top}, 3)
			p.code.label(p.breakLab)
			p.breakLab = saved
			return
		case "for":
			p.lx.next()
			savedBreak, savedCont := p.breakLab, p.contLab
			p.breakLab = p.newLabel()
			p.expect("(")
			if !p.isOp(p.lx.peek(), ";") {
				p.expr()
				p.code.emit(bcInst{op: opPop}, 1)
			}
			p.expect(";")
			cond := p.newLabel()
			p.code.label(cond)
			if !p.isOp(p.lx.peek(), ";") {
				p.expr()
			} else {
				p.code.emit(bcInst{op: opConst, text: "1"}, 1)
			}
			p.expect(";")
			body := p.newLabel()
			p.code.emit(bcInst{op: opJumpNZ, n: body}, 3)
			p.code.emit(bcInst{op: opJump, n: p.breakLab}, 3)
			p.contLab = p.newLabel()
			p.code.label(p.contLab)
			if !p.isOp(p.lx.peek(), ")") {
				p.expr()
				p.code.emit(bcInst{op: opPop}, 1)
			}
			p.expect(")")
			p.code.emit(bcInst{op: opJump, n: cond}, 3)
			p.code.label(body)
			p.optNewline()
			p.statement()
			p.code.emit(bcInst{op: opJump, n: p.contLab}, 3)
			p.code.label(p.breakLab)
			p.breakLab, p.contLab = savedBreak, savedCont
			return
		}
	}
	f := p.expr()
	if f&exReg != 0 {
		p.code.emit(bcInst{op: opPrint, n: 1}, 1)
	} else {
		p.code.emit(bcInst{op: opPop}, 1)
	}
}

func (p *bcParser) optNewline() {
	if p.lx.peek().kind == tkNewline {
		p.lx.next()
	}
}

// statementList parses statements separated by newlines and semicolons
// up to (not including) the closing token.
func (p *bcParser) statementList(end string) {
	for {
		t := p.lx.peek()
		switch {
		case t.kind == tkNewline || p.isOp(t, ";"):
			p.lx.next()
			continue
		case p.isOp(t, end):
			return
		case t.kind == tkEOF:
			p.fail("syntax error")
		}
		p.statement()
		t = p.lx.peek()
		if !(t.kind == tkNewline || p.isOp(t, ";") || p.isOp(t, end)) {
			p.fail("syntax error")
		}
	}
}

// function parses a definition after "define".
func (p *bcParser) function() {
	name := p.lx.next()
	if name.kind != tkName {
		p.fail("syntax error")
	}
	p.expect("(")
	params := p.defineList(")")
	p.expect(")")
	p.optNewline()
	p.expect("{")
	for p.lx.peek().kind == tkNewline {
		p.lx.next()
	}
	var autos []bcParam
	if t := p.lx.peek(); t.kind == tkKey && t.text == "auto" {
		p.lx.next()
		autos = p.defineList(";")
		if t := p.lx.next(); t.kind != tkNewline && !p.isOp(t, ";") {
			p.fail("syntax error")
		}
	}
	fi := p.m.funcIndex(name.text)
	p.code, p.nextLabel, p.inFunc = newBcCode(), 1, true
	p.statementList("}")
	p.expect("}")
	p.code.emit(bcInst{op: opConst, text: "0"}, 1)
	p.code.emit(bcInst{op: opReturn}, 1)
	f := p.m.funcs[fi]
	f.defined, f.params, f.autos, f.code = true, params, autos, p.code
}

func (p *bcParser) defineList(end string) []bcParam {
	var list []bcParam
	if p.isOp(p.lx.peek(), end) || p.lx.peek().kind == tkNewline {
		return nil
	}
	for {
		t := p.lx.next()
		ref := false
		if p.isOp(t, "*") || p.isOp(t, "&") {
			ref = true
			t = p.lx.next()
		}
		if t.kind != tkName {
			p.fail("syntax error")
		}
		if p.isOp(p.lx.peek(), "[") {
			p.lx.next()
			p.expect("]")
			list = append(list, bcParam{idx: p.m.arrayIndex(t.text), array: true, ref: ref})
		} else {
			if ref {
				p.fail("syntax error")
			}
			list = append(list, bcParam{idx: p.m.varIndex(t.text)})
		}
		if !p.isOp(p.lx.peek(), ",") {
			return list
		}
		p.lx.next()
	}
}

// item parses one input item: a function definition, or statements up
// to the end of a line. It returns the main code to run (nil for none)
// and whether the input ended.
func (p *bcParser) item() (code *bcCode, eof bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(*bcSyntaxError)
			if !ok {
				panic(r)
			}
			code, err = nil, se
			if p.quit {
				return
			}
			// Resynchronise after the end of the line (GNU's "error
			// ENDOFLINE"): the newline may be the token that failed.
			line := p.lx.line
			if p.lx.lastNewline && len(p.lx.pending) == 0 {
				p.errLine = line
				return
			}
			if len(p.lx.pending) > 0 && p.lx.peek().kind == tkNewline {
				p.lx.next()
				p.errLine = line
				return
			}
			for {
				t := p.lx.next()
				if t.kind == tkNewline || t.kind == tkEOF {
					eof = t.kind == tkEOF
					break
				}
			}
			p.errLine = line
		}
	}()
	p.code, p.nextLabel, p.inFunc, p.breakLab, p.contLab, p.depth = newBcCode(), 1, false, 0, 0, 0
	t := p.lx.peek()
	switch {
	case t.kind == tkEOF:
		return nil, true, nil
	case t.kind == tkKey && t.text == "define":
		p.lx.next()
		p.function()
		return nil, false, nil
	}
	for {
		t := p.lx.peek()
		switch {
		case t.kind == tkNewline:
			p.lx.next()
			return p.code, false, nil
		case t.kind == tkEOF:
			if len(p.code.insts) > 0 {
				p.fail("syntax error")
			}
			return nil, true, nil
		case p.isOp(t, ";"):
			p.lx.next()
			continue
		}
		p.statement()
		t = p.lx.peek()
		if !(t.kind == tkNewline || p.isOp(t, ";") || t.kind == tkEOF) {
			p.fail("syntax error")
		}
	}
}

// --- machine ---

type bcArray struct{ m map[int64]bcNum }

type bcMachine struct {
	out      *bufio.Writer
	errw     io.Writer
	stdin    *bufio.Reader
	lineLen  int
	col      int
	scale    int
	ibase    int
	obase    int
	last     bcNum
	varNames map[string]int
	arrNames map[string]int
	fnNames  map[string]int
	vars     [][]bcNum    // stacks by variable index (0-3 unused)
	arrays   [][]*bcArray // stacks by array index
	funcs    []*bcFunc
}

func newBcMachine(out *bufio.Writer, errw io.Writer) *bcMachine {
	return &bcMachine{out: out, errw: errw, lineLen: 70, ibase: 10, obase: 10, last: bcInt(0),
		varNames: map[string]int{}, arrNames: map[string]int{}, fnNames: map[string]int{},
		vars: make([][]bcNum, 4)}
}

func (m *bcMachine) varIndex(name string) int {
	if i, ok := m.varNames[name]; ok {
		return i
	}
	m.varNames[name] = len(m.vars)
	m.vars = append(m.vars, nil)
	return len(m.vars) - 1
}

func (m *bcMachine) arrayIndex(name string) int {
	if i, ok := m.arrNames[name]; ok {
		return i
	}
	m.arrays = append(m.arrays, nil)
	m.arrNames[name] = len(m.arrays)
	return len(m.arrays)
}

func (m *bcMachine) funcIndex(name string) int {
	if i, ok := m.fnNames[name]; ok {
		return i
	}
	m.fnNames[name] = len(m.funcs)
	m.funcs = append(m.funcs, &bcFunc{name: name})
	return len(m.funcs) - 1
}

func (m *bcMachine) arrayName(idx int) string {
	for n, i := range m.arrNames {
		if i == idx {
			return n
		}
	}
	return "?"
}

// run parses and runs one source. It returns the exit status when the
// program ends (quit, halt), else -1.
func (m *bcMachine) run(lx *bcLexer) int {
	p := &bcParser{m: m, lx: lx}
	lx.errw, lx.flush = m.errw, func() { m.out.Flush() }
	for {
		lx.hadError = false
		code, eof, err := p.item()
		if lx.hadError {
			code = nil // GNU runs nothing of an item with an illegal character
		}
		if p.quit {
			return 0
		}
		if err != nil {
			m.out.Flush()
			fmt.Fprintf(m.errw, "%s %d: %s\n", lx.name, p.errLine, err.Error())
			m.col = 0
		}
		if code != nil && len(code.insts) > 0 {
			if st := m.exec(code); st >= 0 {
				return st
			}
		}
		if eof {
			return -1
		}
	}
}

// --- execution ---

type bcRuntimeError struct {
	fn  string
	adr int
	msg string
}

type bcFrame struct {
	fn   *bcFunc
	code *bcCode
	pc   int
	base int // operand stack height at the call
}

func (m *bcMachine) warn(fn string, adr int, msg string) {
	m.out.Flush()
	fmt.Fprintf(m.errw, "Runtime warning (func=%s, adr=%d): %s\n", fn, adr, msg)
}

// exec runs main code; it returns an exit status for halt, else -1.
func (m *bcMachine) exec(code *bcCode) int {
	var stack []bcNum
	frames := []bcFrame{{code: code}}
	pop := func() bcNum {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		return v
	}
	push := func(v bcNum) { stack = append(stack, v) }
	var rerr *bcRuntimeError
	fail := func(fr *bcFrame, adr int, msg string) {
		name := "(main)"
		if fr.fn != nil {
			name = fr.fn.name
		}
		rerr = &bcRuntimeError{fn: name, adr: adr, msg: msg}
	}
	for rerr == nil {
		fr := &frames[len(frames)-1]
		if fr.pc >= len(fr.code.insts) {
			break
		}
		in := &fr.code.insts[fr.pc]
		fr.pc++
		fname := "(main)"
		if fr.fn != nil {
			fname = fr.fn.name
		}
		switch in.op {
		case opConst:
			if in.val == nil || in.base != m.ibase {
				v := bcParseConst(in.text, m.ibase)
				in.val, in.base = &v, m.ibase
			}
			push(*in.val)
		case opLoad:
			push(m.get(in.n))
		case opStore:
			v := stack[len(stack)-1]
			if msg := m.set(in.n, v, fname, in.adr); msg != "" {
				fail(fr, in.adr, msg)
			}
		case opLoadArr:
			i, msg := m.index(pop(), in.n)
			if msg != "" {
				fail(fr, in.adr, msg)
				break
			}
			push(m.arr(in.n).get(i))
		case opStoreArr:
			v := pop()
			i, msg := m.index(pop(), in.n)
			if msg != "" {
				fail(fr, in.adr, msg)
				break
			}
			m.arr(in.n).m[i] = v
			push(v)
		case opIncr:
			v := bcAdd(m.get(in.n), bcInt(int64(in.base)))
			if msg := m.set(in.n, v, fname, in.adr); msg != "" {
				fail(fr, in.adr, msg)
			}
		case opIncrArr:
			i, msg := m.index(pop(), in.n)
			if msg != "" {
				fail(fr, in.adr, msg)
				break
			}
			a := m.arr(in.n)
			a.m[i] = bcAdd(a.get(i), bcInt(int64(in.base)))
		case opDup:
			push(stack[len(stack)-1])
		case opSwap:
			n := len(stack)
			stack[n-1], stack[n-2] = stack[n-2], stack[n-1]
		case opPop:
			pop()
		case opBin:
			b := pop()
			a := pop()
			r, err := m.binary(in.text, a, b, fname, in.adr)
			if err != nil {
				fail(fr, in.adr, err.Error())
				break
			}
			push(r)
		case opNeg:
			a := pop()
			push(bcNum{v: new(big.Int).Neg(a.v), s: a.s})
		case opNot:
			if pop().isZero() {
				push(bcInt(1))
			} else {
				push(bcInt(0))
			}
		case opJump:
			fr.pc = fr.code.labels[in.n]
		case opJumpZ:
			if pop().isZero() {
				fr.pc = fr.code.labels[in.n]
			}
		case opJumpNZ:
			if !pop().isZero() {
				fr.pc = fr.code.labels[in.n]
			}
		case opPrint:
			v := pop()
			m.printNum(v)
			if in.n == 1 {
				m.outByte('\n')
			}
			m.last = v
		case opStr:
			for i := 0; i < len(in.text); i++ {
				m.outByte(in.text[i])
			}
		case opPrintS:
			m.printEscaped(in.text)
		case opArrArg:
			push(bcNum{v: big.NewInt(int64(in.n)), s: -1}) // an array reference
		case opBuiltin:
			switch in.text {
			case "L":
				push(bcInt(int64(bcLength(pop()))))
			case "S":
				push(bcInt(int64(pop().s)))
			case "R":
				r, ok, err := bcSqrt(pop(), m.scale)
				if !ok {
					fail(fr, in.adr, "Square root of a negative number")
				} else if err != nil {
					fail(fr, in.adr, err.Error())
				} else {
					push(r)
				}
			case "I":
				v, ok := m.read()
				if !ok {
					fail(fr, in.adr, "Read error")
					break
				}
				push(v)
			}
		case opHalt:
			return 0
		case opCall:
			f := m.funcs[in.n]
			start := in.adr - in.size
			if !f.defined {
				fail(fr, start+1+varSize(in.n), fmt.Sprintf("Function %s not defined.", f.name))
				break
			}
			// GNU reads the argument kinds one by one against the
			// parameters, then expects the end of the list.
			nargs := len(in.text)
			pc := start + 1 + varSize(in.n)
			bad := false
			for i := range f.params {
				pc++
				if i >= nargs {
					fail(fr, pc, "Parameter number mismatch")
					bad = true
					break
				}
				if (in.text[i] == '1') != f.params[i].array {
					fail(fr, pc, fmt.Sprintf("Parameter type mismatch parameter %s.", m.paramName(f.params[i])))
					m.out.Flush()
					fmt.Fprintf(m.errw, "Runtime error (func=%s, adr=%d): %s\n", rerr.fn, rerr.adr, rerr.msg)
					rerr = nil
					fail(fr, pc+1, "Parameter number mismatch")
					bad = true
					break
				}
			}
			if bad {
				break
			}
			if nargs > len(f.params) {
				fail(fr, pc+1, "Parameter number mismatch")
				break
			}
			if len(frames) >= bcMaxDepth {
				fail(fr, in.adr, "function calls nested too deeply")
				break
			}
			args := stack[len(stack)-nargs:]
			for i, pa := range f.params {
				if pa.array {
					src := m.arr(int(args[i].v.Int64()))
					if pa.ref {
						m.arrays[pa.idx-1] = append(m.arrays[pa.idx-1], src)
					} else {
						c := &bcArray{m: make(map[int64]bcNum, len(src.m))}
						for k, v := range src.m {
							c.m[k] = v
						}
						m.arrays[pa.idx-1] = append(m.arrays[pa.idx-1], c)
					}
				} else {
					m.vars[pa.idx] = append(m.vars[pa.idx], args[i])
				}
			}
			stack = stack[:len(stack)-nargs]
			for _, a := range f.autos {
				if a.array {
					m.arrays[a.idx-1] = append(m.arrays[a.idx-1], &bcArray{m: map[int64]bcNum{}})
				} else {
					m.vars[a.idx] = append(m.vars[a.idx], bcInt(0))
				}
			}
			frames = append(frames, bcFrame{fn: f, code: f.code, base: len(stack)})
		case opReturn:
			v := pop()
			f := fr.fn
			m.popLocals(f)
			stack = stack[:fr.base]
			frames = frames[:len(frames)-1]
			push(v)
		}
	}
	if rerr != nil {
		// Unwind the calls in progress.
		for i := len(frames) - 1; i > 0; i-- {
			m.popLocals(frames[i].fn)
		}
		m.out.Flush()
		fmt.Fprintf(m.errw, "Runtime error (func=%s, adr=%d): %s\n", rerr.fn, rerr.adr, rerr.msg)
	}
	return -1
}

func (m *bcMachine) paramName(pa bcParam) string {
	if pa.array {
		return m.arrayName(pa.idx)
	}
	for n, i := range m.varNames {
		if i == pa.idx {
			return n
		}
	}
	return "?"
}

func (m *bcMachine) popLocals(f *bcFunc) {
	for _, l := range [][]bcParam{f.params, f.autos} {
		for _, pa := range l {
			if pa.array {
				s := m.arrays[pa.idx-1]
				m.arrays[pa.idx-1] = s[:len(s)-1]
			} else {
				s := m.vars[pa.idx]
				m.vars[pa.idx] = s[:len(s)-1]
			}
		}
	}
}

func (a *bcArray) get(i int64) bcNum {
	if v, ok := a.m[i]; ok {
		return v
	}
	return bcInt(0)
}

func (m *bcMachine) arr(idx int) *bcArray {
	s := m.arrays[idx-1]
	if len(s) == 0 {
		m.arrays[idx-1] = append(s, &bcArray{m: map[int64]bcNum{}})
		s = m.arrays[idx-1]
	}
	return s[len(s)-1]
}

// index checks an array subscript as GNU does (0 to BC_DIM_MAX-1).
func (m *bcMachine) index(v bcNum, arr int) (int64, string) {
	i := bcToLong(v)
	if i < 0 || i > 16777215 {
		return 0, fmt.Sprintf("Array %s subscript out of bounds.", m.arrayName(arr))
	}
	return i, ""
}

func (m *bcMachine) get(idx int) bcNum {
	switch idx {
	case 0:
		return bcInt(int64(m.ibase))
	case 1:
		return bcInt(int64(m.obase))
	case 2:
		return bcInt(int64(m.scale))
	case 3:
		return m.last
	}
	s := m.vars[idx]
	if len(s) == 0 {
		return bcInt(0)
	}
	return s[len(s)-1]
}

// set assigns a variable; the special ones take integers within their
// ranges, with GNU's warnings.
func (m *bcMachine) set(idx int, v bcNum, fn string, adr int) string {
	switch idx {
	case 0, 1, 2:
		n := bcToLong(v)
		ip := new(big.Int).Quo(v.v, pow10(v.s))
		huge := n == 0 && ip.Sign() != 0
		if huge {
			if ip.Sign() < 0 {
				n = math.MinInt64
			} else {
				n = math.MaxInt64
			}
		}
		switch idx {
		case 0:
			switch {
			case n < 2:
				m.warn(fn, adr, "ibase too small, set to 2")
				n = 2
			case n > 36:
				m.warn(fn, adr, "ibase too large, set to 36")
				n = 36
			}
			m.ibase = int(n)
		case 1:
			switch {
			case n < 2:
				m.warn(fn, adr, "obase too small, set to 2")
				n = 2
			case n > math.MaxInt32:
				m.warn(fn, adr, "obase too large, set to 2147483647")
				n = math.MaxInt32
			}
			m.obase = int(n)
		case 2:
			switch {
			case n < 0:
				m.warn(fn, adr, "negative scale, set to 0")
				n = 0
			case n > math.MaxInt32:
				m.warn(fn, adr, "scale too large, set to 2147483647")
				n = math.MaxInt32
			}
			m.scale = int(n)
		}
	case 3:
		m.last = v
	default:
		s := m.vars[idx]
		if len(s) == 0 {
			m.vars[idx] = append(s, v)
		} else {
			s[len(s)-1] = v
		}
	}
	return ""
}

func (m *bcMachine) binary(op string, a, b bcNum, fn string, adr int) (bcNum, error) {
	bool01 := func(c bool) (bcNum, error) {
		if c {
			return bcInt(1), nil
		}
		return bcInt(0), nil
	}
	switch op {
	case "+":
		return bcCheck(bcAdd(a, b))
	case "-":
		return bcCheck(bcSub(a, b))
	case "*":
		return bcMul(a, b, m.scale)
	case "/":
		return bcDiv(a, b, m.scale)
	case "%":
		return bcMod(a, b, m.scale)
	case "^":
		if b.s != 0 && new(big.Int).Rem(b.v, pow10(b.s)).Sign() != 0 || b.s != 0 {
			m.warn(fn, adr, "non-zero scale in exponent")
		}
		return bcPow(a, b, m.scale)
	}
	c := bcCmp(a, b)
	switch op {
	case "==":
		return bool01(c == 0)
	case "!=":
		return bool01(c != 0)
	case "<":
		return bool01(c < 0)
	case "<=":
		return bool01(c <= 0)
	case ">":
		return bool01(c > 0)
	default:
		return bool01(c >= 0)
	}
}

func bcCmp(a, b bcNum) int {
	s := max(a.s, b.s)
	return a.withScale(s).v.Cmp(b.withScale(s).v)
}

// read is read(): a number from standard input, in ibase.
func (m *bcMachine) read() (bcNum, bool) {
	if m.stdin == nil {
		return bcNum{}, false
	}
	r := m.stdin
	c, err := r.ReadByte()
	for err == nil && (c == ' ' || c == '\t' || c == '\n') {
		c, err = r.ReadByte()
	}
	if err != nil {
		return bcNum{}, false
	}
	neg := false
	if c == '-' {
		neg = true
		c, err = r.ReadByte()
	}
	var b strings.Builder
	for err == nil && (isBcDigit(int(c)) || c == '.') {
		b.WriteByte(c)
		c, err = r.ReadByte()
	}
	if err == nil {
		r.UnreadByte()
	}
	s := strings.TrimLeft(b.String(), "0")
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		s = "0"
	}
	v := bcParseConst(s, m.ibase)
	if neg {
		v.v.Neg(v.v)
	}
	return v, true
}

// --- output ---

func (m *bcMachine) outByte(c byte) {
	if c == '\n' {
		m.col = 0
		m.out.WriteByte(c)
		return
	}
	m.col++
	if m.lineLen != 0 && m.col == m.lineLen-1 {
		m.out.WriteString("\\\n")
		m.col = 1
	}
	m.out.WriteByte(c)
}

func (m *bcMachine) outString(s string) {
	for i := 0; i < len(s); i++ {
		m.outByte(s[i])
	}
}

func (m *bcMachine) printEscaped(s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'a':
				c = 7
			case 'b':
				c = 8
			case 'f':
				c = 12
			case 'n':
				c = '\n'
			case 'q':
				c = '"'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case '\\':
				c = '\\'
			default:
				continue // GNU prints nothing for other escapes
			}
		}
		m.outByte(c)
	}
}

// printNum is GNU's bc_out_num.
func (m *bcMachine) printNum(x bcNum) {
	if x.v.Sign() < 0 {
		m.outByte('-')
	}
	if x.isZero() {
		m.outByte('0')
		return
	}
	a := new(big.Int).Abs(x.v)
	if m.obase == 10 {
		d := a.String()
		if len(d) <= x.s {
			d = strings.Repeat("0", x.s-len(d)+1) + d
		}
		ip, fp := d[:len(d)-x.s], d[len(d)-x.s:]
		if ip != "0" || x.s == 0 {
			m.outString(ip)
		}
		if x.s > 0 {
			m.outByte('.')
			m.outString(fp)
		}
		return
	}
	ip, fp := new(big.Int).QuoRem(a, pow10(x.s), new(big.Int))
	width := len(strconv.Itoa(m.obase - 1))
	digit := func(d int64, space bool) {
		if m.obase <= 16 {
			m.outByte("0123456789ABCDEF"[d])
			return
		}
		if space {
			m.outByte(' ')
		}
		s := strconv.FormatInt(d, 10)
		m.outString(strings.Repeat("0", width-len(s)) + s)
	}
	if ip.Sign() != 0 {
		for _, d := range bcDigits(ip, m.obase) {
			digit(d, true)
		}
	}
	if x.s > 0 {
		m.outByte('.')
		base := big.NewInt(int64(m.obase))
		t := big.NewInt(1)
		unit := pow10(x.s)
		space := false
		for len(t.String()) <= x.s {
			fp.Mul(fp, base)
			q, r := new(big.Int).QuoRem(fp, unit, new(big.Int))
			fp = r
			digit(q.Int64(), space)
			space = true
			t.Mul(t, base)
		}
	}
}

// bcDigits is n in base b, most significant digit first.
func bcDigits(n *big.Int, b int) []int64 {
	if b <= 36 {
		s := n.Text(b)
		ds := make([]int64, len(s))
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c >= 'a' {
				ds[i] = int64(c-'a') + 10
			} else {
				ds[i] = int64(c - '0')
			}
		}
		return ds
	}
	// Chunks of k digits at a time: b^k below 2^62.
	k, bk := 1, int64(b)
	for bk <= (1<<62)/int64(b) {
		bk *= int64(b)
		k++
	}
	var ds []int64
	n = new(big.Int).Set(n)
	big1 := big.NewInt(bk)
	r := new(big.Int)
	for n.Sign() != 0 {
		n.QuoRem(n, big1, r)
		c := r.Int64()
		for i := 0; i < k; i++ {
			ds = append(ds, c%int64(b))
			c /= int64(b)
			if n.Sign() == 0 && c == 0 {
				break
			}
		}
	}
	for i, j := 0, len(ds)-1; i < j; i, j = i+1, j-1 {
		ds[i], ds[j] = ds[j], ds[i]
	}
	return ds
}
