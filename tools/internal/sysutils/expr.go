package sysutils

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("expr", exprMain)
}

// exprError is an error of expr with its exit status (2 for a bad
// expression, 3 for other failures).
type exprError struct {
	msg    string
	status int
}

func (e *exprError) Error() string { return e.msg }

func syntaxErr(format string, args ...any) error {
	return &exprError{"syntax error: " + fmt.Sprintf(format, args...), 2}
}

func exprMain(e *cmd.Env) int {
	args := e.Args[1:]
	if len(args) == 1 && (args[0] == "--help" || args[0] == "--version") {
		opts, _, _ := cmd.Getopt(args, helpOpts, false)
		helpOrVersion(e, opts, "EXPRESSION\nPrint the value of EXPRESSION to standard output. Operators, lowest\nprecedence first: | & (< <= = == != >= >) (+ -) (* / %) :\nand match STRING REGEXP, substr STRING POS LENGTH, index STRING CHARS,\nlength STRING, + TOKEN, ( EXPRESSION ).\nExit status is 0 if EXPRESSION is neither null nor 0, 1 if it is, 2 if it\nis invalid, 3 on another error.\n")
		return 0
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return e.Usage(2, fmt.Errorf("missing operand"))
	}
	p := &exprParser{args: args}
	v, err := p.or()
	if err == nil && p.pos < len(args) {
		err = syntaxErr("unexpected argument '%s'", args[p.pos])
	}
	if err != nil {
		status := 2
		if ee, ok := err.(*exprError); ok {
			status = ee.status
		}
		e.Errorf("%s", err.Error())
		return status
	}
	fmt.Fprintln(e.Stdout, v.String())
	if v.null() {
		return 1
	}
	return 0
}

// exprValue is a string that may also be an integer.
type exprValue struct {
	s string
	n *big.Int // non-nil when the value is an integer
}

func strVal(s string) exprValue { return exprValue{s: s} }

func intVal(n *big.Int) exprValue { return exprValue{n: n} }

func (v exprValue) String() string {
	if v.n != nil {
		return v.n.String()
	}
	return v.s
}

// integer returns v as an integer: an integer value, or a string of an
// optional '-' and digits.
func (v exprValue) integer() (*big.Int, bool) {
	if v.n != nil {
		return v.n, true
	}
	s := strings.TrimPrefix(v.s, "-")
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return nil, false
	}
	n, ok := new(big.Int).SetString(v.s, 10)
	return n, ok
}

// null reports whether v is the empty string or zero ("0", "-0", "00").
func (v exprValue) null() bool {
	if v.n != nil {
		return v.n.Sign() == 0
	}
	s := strings.TrimPrefix(v.s, "-")
	return v.s == "" || (s != "" && strings.Trim(s, "0") == "")
}

type exprParser struct {
	args []string
	pos  int
}

func (p *exprParser) next(op ...string) bool {
	if p.pos < len(p.args) {
		for _, o := range op {
			if p.args[p.pos] == o {
				p.pos++
				return true
			}
		}
	}
	return false
}

func (p *exprParser) or() (exprValue, error) {
	l, err := p.and()
	for err == nil && p.next("|") {
		var r exprValue
		if r, err = p.and(); err == nil {
			switch {
			case !l.null():
			case !r.null():
				l = r
			default:
				l = intVal(big.NewInt(0))
			}
		}
	}
	return l, err
}

func (p *exprParser) and() (exprValue, error) {
	l, err := p.compare()
	for err == nil && p.next("&") {
		var r exprValue
		if r, err = p.compare(); err == nil && (l.null() || r.null()) {
			l = intVal(big.NewInt(0))
		}
	}
	return l, err
}

func (p *exprParser) compare() (exprValue, error) {
	l, err := p.additive()
	for err == nil && p.next("<", "<=", "=", "==", "!=", ">=", ">") {
		op := p.args[p.pos-1]
		var r exprValue
		if r, err = p.additive(); err != nil {
			break
		}
		var c int
		a, aok := l.integer()
		b, bok := r.integer()
		if aok && bok {
			c = a.Cmp(b)
		} else {
			c = strings.Compare(l.String(), r.String())
		}
		t := map[string]bool{"<": c < 0, "<=": c <= 0, "=": c == 0, "==": c == 0, "!=": c != 0, ">=": c >= 0, ">": c > 0}[op]
		l = intVal(big.NewInt(0))
		if t {
			l = intVal(big.NewInt(1))
		}
	}
	return l, err
}

func (p *exprParser) additive() (exprValue, error) {
	l, err := p.multiplicative()
	for err == nil && p.next("+", "-") {
		op := p.args[p.pos-1]
		var r exprValue
		if r, err = p.multiplicative(); err == nil {
			l, err = arith(op, l, r)
		}
	}
	return l, err
}

func (p *exprParser) multiplicative() (exprValue, error) {
	l, err := p.match()
	for err == nil && p.next("*", "/", "%") {
		op := p.args[p.pos-1]
		var r exprValue
		if r, err = p.match(); err == nil {
			l, err = arith(op, l, r)
		}
	}
	return l, err
}

func arith(op string, l, r exprValue) (exprValue, error) {
	a, aok := l.integer()
	b, bok := r.integer()
	if !aok || !bok {
		return exprValue{}, &exprError{"non-integer argument", 2}
	}
	z := new(big.Int)
	switch op {
	case "+":
		z.Add(a, b)
	case "-":
		z.Sub(a, b)
	case "*":
		z.Mul(a, b)
	case "/", "%":
		if b.Sign() == 0 {
			return exprValue{}, &exprError{"division by zero", 2}
		}
		if op == "/" {
			z.Quo(a, b) // truncates toward zero, like C
		} else {
			z.Rem(a, b)
		}
	}
	return intVal(z), nil
}

func (p *exprParser) match() (exprValue, error) {
	l, err := p.primary()
	for err == nil && p.next(":") {
		var r exprValue
		if r, err = p.primary(); err == nil {
			l, err = regexMatch(l.String(), r.String())
		}
	}
	return l, err
}

// regexMatch is STRING : REGEXP, anchored at the start: the text of the
// first \( \) group, or the length of the match.
func regexMatch(s, pattern string) (exprValue, error) {
	g, err := breToGo(pattern)
	if err != nil {
		return exprValue{}, &exprError{err.Error(), 2}
	}
	re, err := regexp.Compile(`\A(?:` + g + `)`)
	if err != nil {
		return exprValue{}, &exprError{"Invalid regular expression", 2}
	}
	re.Longest()
	m := re.FindStringSubmatchIndex(s)
	if re.NumSubexp() > 0 {
		if m == nil || m[2] < 0 {
			return strVal(""), nil
		}
		return strVal(s[m[2]:m[3]]), nil
	}
	if m == nil {
		return intVal(big.NewInt(0)), nil
	}
	return intVal(big.NewInt(int64(m[1]))), nil
}

func (p *exprParser) operand() (string, error) {
	if p.pos >= len(p.args) {
		return "", syntaxErr("missing argument after '%s'", p.args[p.pos-1])
	}
	p.pos++
	return p.args[p.pos-1], nil
}

func (p *exprParser) primary() (exprValue, error) {
	if p.pos >= len(p.args) {
		if p.pos == 0 {
			return exprValue{}, syntaxErr("missing argument")
		}
		return exprValue{}, syntaxErr("missing argument after '%s'", p.args[p.pos-1])
	}
	tok := p.args[p.pos]
	p.pos++
	switch tok {
	case "(":
		v, err := p.or()
		if err != nil {
			return v, err
		}
		if p.pos >= len(p.args) {
			return v, syntaxErr("expecting ')' after '%s'", p.args[p.pos-1])
		}
		if p.args[p.pos] != ")" {
			return v, syntaxErr("expecting ')' instead of '%s'", p.args[p.pos])
		}
		p.pos++
		return v, nil
	case ")":
		return exprValue{}, syntaxErr("unexpected ')'")
	case "+":
		s, err := p.operand()
		return strVal(s), err
	case "length":
		v, err := p.primary()
		return intVal(big.NewInt(int64(len(v.String())))), err
	case "match":
		s, err := p.primary()
		if err != nil {
			return s, err
		}
		re, err := p.primary()
		if err != nil {
			return re, err
		}
		return regexMatch(s.String(), re.String())
	case "index":
		s, err := p.primary()
		if err != nil {
			return s, err
		}
		chars, err := p.primary()
		if err != nil {
			return chars, err
		}
		return intVal(big.NewInt(int64(strings.IndexAny(s.String(), chars.String()) + 1))), nil
	case "substr":
		var v [3]exprValue
		for i := range v {
			var err error
			if v[i], err = p.primary(); err != nil {
				return v[i], err
			}
		}
		s := v[0].String()
		pos, ok1 := v[1].integer()
		n, ok2 := v[2].integer()
		if !ok1 || !ok2 || pos.Sign() <= 0 || n.Sign() <= 0 || !pos.IsInt64() || pos.Int64() > int64(len(s)) {
			return strVal(""), nil
		}
		start := int(pos.Int64()) - 1
		end := len(s)
		if n.IsInt64() && n.Int64() < int64(end-start) {
			end = start + int(n.Int64())
		}
		return strVal(s[start:end]), nil
	}
	return strVal(tok), nil
}
