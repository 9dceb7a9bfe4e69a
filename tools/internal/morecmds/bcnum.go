package morecmds

import (
	"errors"
	"math"
	"math/big"
	"strings"
)

// bcNum is a bc number: v / 10^s, with s the number's scale (digits after
// the point, kept even when they are zero, as GNU bc keeps n_scale).
type bcNum struct {
	v *big.Int
	s int
}

// bcMaxDigits bounds the digits of any number bc computes (integer and
// fraction digits together), so that hostile input such as 2^99999999 or
// scale=2000000000 ends with an error instead of exhausting the module's
// memory. GNU bc has no such bound; 500,000 digits is far beyond what
// calculations at the command line need (2^100000 has 30,103).
const bcMaxDigits = 500_000

// errBcTooLarge is the runtime error of a result over bcMaxDigits.
var errBcTooLarge = errors.New("number too large (over 500000 digits)")

var (
	bigOne = big.NewInt(1)
	bigTen = big.NewInt(10)
	pow10s []*big.Int
)

// pow10 is 10^n.
func pow10(n int) *big.Int {
	if n < 64 {
		for len(pow10s) <= n {
			if len(pow10s) == 0 {
				pow10s = append(pow10s, big.NewInt(1))
				continue
			}
			pow10s = append(pow10s, new(big.Int).Mul(pow10s[len(pow10s)-1], bigTen))
		}
		return pow10s[n]
	}
	return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil)
}

func bcInt(i int64) bcNum { return bcNum{v: big.NewInt(i)} }

func (x bcNum) isZero() bool { return x.v.Sign() == 0 }

// withScale returns x at scale s: truncated toward zero, or extended with
// zeros.
func (x bcNum) withScale(s int) bcNum {
	switch {
	case s == x.s:
		return x
	case s > x.s:
		return bcNum{v: new(big.Int).Mul(x.v, pow10(s-x.s)), s: s}
	default:
		return bcNum{v: new(big.Int).Quo(x.v, pow10(x.s-s)), s: s}
	}
}

// digitEstimate is an upper bound of the decimal digits of |v|.
func digitEstimate(v *big.Int) int { return v.BitLen()*30103/100000 + 1 }

// intLen is GNU's n_len: the digits of the integer part, at least 1.
func (x bcNum) intLen() int {
	ip := new(big.Int).Quo(x.v, pow10(x.s))
	ip.Abs(ip)
	if ip.Sign() == 0 {
		return 1
	}
	return len(ip.String())
}

func bcCheck(x bcNum) (bcNum, error) {
	if x.s > bcMaxDigits || digitEstimate(x.v) > bcMaxDigits+1 {
		return bcNum{}, errBcTooLarge
	}
	return x, nil
}

func bcAdd(a, b bcNum) bcNum {
	s := max(a.s, b.s)
	a, b = a.withScale(s), b.withScale(s)
	return bcNum{v: new(big.Int).Add(a.v, b.v), s: s}
}

func bcSub(a, b bcNum) bcNum {
	s := max(a.s, b.s)
	a, b = a.withScale(s), b.withScale(s)
	return bcNum{v: new(big.Int).Sub(a.v, b.v), s: s}
}

// bcMul is GNU's bc_multiply: the product truncated to
// min(a.s+b.s, max(scale, a.s, b.s)) digits.
func bcMul(a, b bcNum, scale int) (bcNum, error) {
	if a.s+b.s > bcMaxDigits || digitEstimate(a.v)+digitEstimate(b.v) > bcMaxDigits+2 {
		return bcNum{}, errBcTooLarge
	}
	p := bcNum{v: new(big.Int).Mul(a.v, b.v), s: a.s + b.s}
	return p.withScale(min(a.s+b.s, max(scale, a.s, b.s))), nil
}

var errBcDivZero = errors.New("Divide by zero")

// bcDiv is GNU's bc_divide: the quotient truncated to scale digits.
func bcDiv(a, b bcNum, scale int) (bcNum, error) {
	if b.isZero() {
		return bcNum{}, errBcDivZero
	}
	if scale > bcMaxDigits || digitEstimate(a.v)-a.s+b.s+scale > bcMaxDigits+2 {
		return bcNum{}, errBcTooLarge
	}
	n := new(big.Int).Mul(a.v, pow10(b.s+scale))
	d := new(big.Int).Mul(b.v, pow10(a.s))
	return bcNum{v: n.Quo(n, d), s: scale}, nil
}

// bcMod is GNU's bc_modulo: a - (a/b at scale)*b at scale
// max(a.s, b.s+scale).
func bcMod(a, b bcNum, scale int) (bcNum, error) {
	if b.isZero() {
		return bcNum{}, errors.New("Modulo by zero")
	}
	rs := max(a.s, b.s+scale)
	q, err := bcDiv(a, b, scale)
	if err != nil {
		return bcNum{}, err
	}
	p := bcNum{v: new(big.Int).Mul(q.v, b.v), s: q.s + b.s}
	return bcSub(a, p).withScale(rs), nil
}

// bcToLong is GNU's bc_num2long: the integer part, 0 when it overflows.
func bcToLong(x bcNum) int64 {
	ip := new(big.Int).Quo(x.v, pow10(x.s))
	if !ip.IsInt64() {
		return 0
	}
	return ip.Int64()
}

// bcPow is GNU's bc_raise (the exponent an integer).
func bcPow(a, b bcNum, scale int) (bcNum, error) {
	e := bcToLong(b)
	if e == 0 {
		if new(big.Int).Quo(b.v, pow10(b.s)).Sign() != 0 {
			return bcNum{}, errors.New("exponent too large in raise")
		}
		return bcInt(1), nil
	}
	neg := e < 0
	if neg {
		e = -e
	}
	// Bound the work before doing it: the exact power has about
	// e*digits(a) digits.
	if !a.isZero() && a.v.CmpAbs(pow10(a.s)) != 0 {
		if float64(e)*float64(max(digitEstimate(a.v), a.s)) > bcMaxDigits {
			return bcNum{}, errBcTooLarge
		}
	}
	var rs int
	if neg {
		rs = scale
	} else {
		rs = int(min(satMul(int64(a.s), e), int64(max(scale, a.s))))
	}
	var p bcNum
	if a.s == 0 || a.isZero() || a.v.CmpAbs(pow10(a.s)) == 0 {
		// An integer value: the exact power has a.s*e zero digits after
		// the point, which only their count (at most rs) matters of.
		p = bcNum{v: new(big.Int).Exp(new(big.Int).Quo(a.v, pow10(a.s)), big.NewInt(e), nil)}
		p = p.withScale(int(min(satMul(int64(a.s), e), int64(rs))))
	} else {
		p = bcNum{v: new(big.Int).Exp(a.v, big.NewInt(e), nil), s: a.s * int(e)}
	}
	if neg && p.isZero() {
		return bcNum{}, errors.New("divide by zero")
	}
	if neg {
		return bcDiv(bcInt(1), p, rs)
	}
	if p.s > rs {
		p = p.withScale(rs)
	}
	return p, nil
}

// bcSqrt is GNU's bc_sqrt, its Newton iteration step for step so that the
// last digit agrees. ok is false for a negative number.
func bcSqrt(x bcNum, scale int) (bcNum, bool, error) {
	switch c := x.v.Sign(); {
	case c < 0:
		return bcNum{}, false, nil
	case c == 0:
		return bcInt(0), true, nil
	}
	one := bcInt(1)
	cmp1 := x.v.Cmp(pow10(x.s))
	if cmp1 == 0 {
		return one, true, nil
	}
	rs := max(scale, x.s)
	if rs > bcMaxDigits/2 {
		return bcNum{}, true, errBcTooLarge
	}
	var guess bcNum
	var cs int
	if cmp1 < 0 {
		guess, cs = one, x.s
	} else {
		guess = bcNum{v: new(big.Int).Set(pow10(x.intLen() / 2))}
		cs = 3
	}
	half := bcNum{v: big.NewInt(5), s: 1}
	for {
		g1 := guess
		q, err := bcDiv(x, guess, cs)
		if err != nil {
			return bcNum{}, true, err
		}
		guess = bcAdd(q, g1)
		if guess, err = bcMul(guess, half, cs); err != nil {
			return bcNum{}, true, err
		}
		diff := bcSub(guess, g1)
		if bcNearZero(diff, cs) {
			if cs < rs+1 {
				cs = min(cs*3, rs+1)
			} else {
				break
			}
		}
	}
	r, err := bcDiv(guess, one, rs)
	return r, true, err
}

// bcNearZero is GNU's bc_is_near_zero: |x| truncated to scale digits is
// 0 or one unit of the last digit.
func bcNearZero(x bcNum, scale int) bool {
	t := x.withScale(min(scale, x.s))
	a := new(big.Int).Abs(t.v)
	return a.Sign() == 0 || a.Cmp(bigOne) == 0
}

// bcLength is bc's length(): the significant digits.
func bcLength(x bcNum) int {
	if x.isZero() {
		if x.s == 0 {
			return 1
		}
		return x.s
	}
	ip := new(big.Int).Quo(x.v, pow10(x.s))
	if ip.Sign() == 0 {
		return x.s
	}
	return len(new(big.Int).Abs(ip).String()) + x.s
}

// bcParseConst converts the text of a numeric constant (digits 0-9A-Z
// and at most one point) in base ibase the way GNU bc's push_constant
// does: a single digit is its own value, other digits are clamped to
// ibase-1, and a fraction of n digits is (digits as an integer)/ibase^n
// truncated to n decimal digits.
func bcParseConst(text string, ibase int) bcNum {
	val := func(c byte) int64 {
		if c >= 'A' {
			return int64(c-'A') + 10
		}
		return int64(c - '0')
	}
	ipart, fpart, _ := strings.Cut(text, ".")
	if len(text) == 1 {
		return bcInt(val(text[0]))
	}
	base := big.NewInt(int64(ibase))
	digit := func(c byte) *big.Int {
		d := val(c)
		if d >= int64(ibase) {
			d = int64(ibase) - 1
		}
		return big.NewInt(d)
	}
	n := new(big.Int)
	for i := 0; i < len(ipart); i++ {
		n.Mul(n, base)
		n.Add(n, digit(ipart[i]))
	}
	r := bcNum{v: n}
	if fpart == "" {
		return r
	}
	if ibase == 10 {
		f := new(big.Int)
		for i := 0; i < len(fpart); i++ {
			f.Mul(f, bigTen)
			f.Add(f, digit(fpart[i]))
		}
		return bcAdd(r, bcNum{v: f, s: len(fpart)})
	}
	f, mult := new(big.Int), big.NewInt(1)
	for i := 0; i < len(fpart); i++ {
		f.Mul(f, base)
		f.Add(f, digit(fpart[i]))
		mult.Mul(mult, base)
	}
	q, _ := bcDiv(bcNum{v: f}, bcNum{v: mult}, len(fpart))
	return bcAdd(r, q)
}

// satMul is a*b for non-negative a and b, saturated at MaxInt64.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}
