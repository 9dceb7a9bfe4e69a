package sysutils

import (
	"bufio"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("printf", printfMain)
}

func printfMain(e *cmd.Env) int {
	args := e.Args[1:]
	if len(args) == 1 && (args[0] == "--help" || args[0] == "--version") {
		opts, _, _ := cmd.Getopt(args, helpOpts, false)
		helpOrVersion(e, opts, "FORMAT [ARGUMENT]...\nPrint ARGUMENT(s) according to FORMAT, reusing FORMAT while arguments remain.\nConversions: %d %i %o %u %x %X %f %F %e %E %g %G %a %A %c %s %b %q %%.\n")
		return 0
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return e.Usage(1, fmt.Errorf("missing operand"))
	}
	w, flush := output(e)
	p := &printer{e: e, w: w}
	format, rest := args[0], args[1:]
	for {
		used, stop := p.run(format, rest)
		if stop {
			break
		}
		rest = rest[used:]
		if used == 0 || len(rest) == 0 {
			if used == 0 && len(rest) > 0 {
				e.Errorf("warning: ignoring excess arguments, starting with '%s'", rest[0])
			}
			break
		}
	}
	if flush() != 0 {
		return 1
	}
	return p.status
}

// printer formats one printf invocation.
type printer struct {
	e      *cmd.Env
	w      *bufio.Writer
	status int
}

// run prints format once with args and returns how many arguments it used
// and whether output must stop (\c, or a fatal format error).
func (p *printer) run(format string, args []string) (used int, stop bool) {
	next := func() (string, bool) {
		if used < len(args) {
			used++
			return args[used-1], true
		}
		return "", false
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch {
		case c == '\\':
			j := escapeEnd(format, i)
			if k := format[i+1:]; len(k) > 0 && (k[0] == 'u' || k[0] == 'U') && j-i > 2 {
				v, _ := strconv.ParseUint(format[i+2:j], 16, 32)
				if v < 0xa0 && v != '$' && v != '@' && v != '`' || v >= 0xd800 && v <= 0xdfff || v > 0x10ffff {
					p.e.Errorf("invalid universal character name %s", format[i:j])
					p.status = 1
					return used, true
				}
			}
			s, st := unescape(format[i:j], escFormat)
			p.w.WriteString(s)
			if st {
				return used, true
			}
			i = j - 1
		case c == '%':
			j, ok := p.conversion(format, i, next)
			if !ok {
				return used, true
			}
			if j < 0 {
				return used, true // \c inside %b
			}
			i = j
		default:
			p.w.WriteByte(c)
		}
	}
	return used, false
}

// escapeEnd returns the index just past the escape sequence at s[i]=='\\'.
func escapeEnd(s string, i int) int {
	j := i + 1
	if j >= len(s) {
		return j
	}
	switch c := s[j]; {
	case c == 'x':
		j++
		for n := 0; n < 2 && j < len(s) && isHex(s[j]); n++ {
			j++
		}
		return j
	case c == 'u' || c == 'U':
		n := 4
		if c == 'U' {
			n = 8
		}
		if allHex(s[j+1:], n) {
			return j + 1 + n
		}
		return j + 1
	case c >= '0' && c <= '7':
		for n := 0; n < 3 && j < len(s) && s[j] >= '0' && s[j] <= '7'; n++ {
			j++
		}
		return j
	}
	return j + 1
}

// conversion handles the conversion starting at format[i]=='%'. It returns
// the index of its last byte, -1 when %b hit \c, and ok=false after a
// fatal error.
func (p *printer) conversion(format string, i int, next func() (string, bool)) (int, bool) {
	j := i + 1
	var flags []byte
	for j < len(format) && strings.IndexByte("-+ #0'", format[j]) >= 0 {
		flags = append(flags, format[j])
		j++
	}
	width, prec := "", ""
	hasPrec := false
	if j < len(format) && format[j] == '*' {
		a, _ := next()
		width = strconv.FormatInt(p.intArg(a), 10)
		j++
	} else {
		for j < len(format) && format[j] >= '0' && format[j] <= '9' {
			width += format[j : j+1]
			j++
		}
	}
	if j < len(format) && format[j] == '.' {
		hasPrec = true
		j++
		if j < len(format) && format[j] == '*' {
			a, _ := next()
			v := p.intArg(a)
			if v < 0 {
				hasPrec = false
			} else {
				prec = strconv.FormatInt(v, 10)
			}
			j++
		} else {
			for j < len(format) && format[j] >= '0' && format[j] <= '9' {
				prec += format[j : j+1]
				j++
			}
			if prec == "" {
				prec = "0"
			}
		}
	}
	for j < len(format) && strings.IndexByte("hlLjzt", format[j]) >= 0 {
		j++
	}
	if j >= len(format) {
		p.e.Errorf("%s: invalid conversion specification", format[i:])
		p.status = 1
		return j, false
	}
	verb := format[j]
	allowed, ok := map[byte]string{
		'd': "-+ 0'", 'i': "-+ 0'", 'o': "-#0'", 'u': "-0'", 'x': "-#0'", 'X': "-#0'",
		'f': "-+ #0'", 'F': "-+ #0'", 'e': "-+ #0'", 'E': "-+ #0'", 'g': "-+ #0'", 'G': "-+ #0'",
		'a': "-+ #0'", 'A': "-+ #0'", 'c': "-", 's': "-", 'b': "-", 'q': "-", '%': "",
	}[verb]
	if verb == '%' && j == i+1 {
		p.w.WriteByte('%')
		return j, true
	}
	bad := !ok || verb == '%' || (verb == 'c' && hasPrec)
	for _, f := range flags {
		if strings.IndexByte(allowed, f) < 0 {
			bad = true
		}
	}
	if bad {
		p.e.Errorf("%s: invalid conversion specification", format[i:j+1])
		p.status = 1
		return j, false
	}
	var goflags strings.Builder
	for _, f := range flags {
		if f != '\'' {
			goflags.WriteByte(f)
		}
	}
	spec := "%" + goflags.String() + width
	if hasPrec {
		spec += "." + prec
	}
	arg, _ := next()
	switch verb {
	case 'd', 'i':
		fmt.Fprintf(p.w, spec+"d", p.intArg(arg))
	case 'o', 'u', 'x', 'X':
		v := uint64(p.intArg(arg))
		gv := map[byte]string{'o': "o", 'u': "d", 'x': "x", 'X': "X"}[verb]
		if v == 0 && (verb == 'x' || verb == 'X') {
			spec = strings.ReplaceAll(spec, "#", "")
		}
		fmt.Fprintf(p.w, spec+gv, v)
	case 'f', 'F', 'e', 'E', 'g', 'G', 'a', 'A':
		p.float(spec, hasPrec, verb, p.floatArg(arg))
	case 'c':
		s := "\x00" // an empty or missing argument prints a NUL
		if arg != "" {
			s = arg[:1]
		}
		fmt.Fprintf(p.w, spec+"s", s)
	case 's':
		fmt.Fprintf(p.w, spec+"s", arg)
	case 'b':
		s, stop := unescape(arg, escB)
		fmt.Fprintf(p.w, spec+"s", s)
		if stop {
			return -1, true
		}
	case 'q':
		fmt.Fprintf(p.w, spec+"s", shellQuote(arg))
	}
	return j, true
}

// float prints v like C's printf: default precision 6, "inf"/"nan".
func (p *printer) float(spec string, hasPrec bool, verb byte, v float64) {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		s := "inf"
		switch {
		case math.IsNaN(v):
			s = "nan"
			if math.Signbit(v) {
				s = "-nan"
			}
		case v < 0:
			s = "-inf"
		case strings.Contains(spec, "+"):
			s = "+inf"
		case strings.Contains(spec, " "):
			s = " inf"
		}
		if verb >= 'A' && verb <= 'Z' {
			s = strings.ToUpper(s)
		}
		spec = strings.NewReplacer("0", "", "#", "", "+", "", " ", "").Replace(spec[:1]) + strings.TrimLeft(spec[1:], "0+ #")
		if i := strings.IndexByte(spec, '.'); i >= 0 {
			spec = spec[:i]
		}
		fmt.Fprintf(p.w, spec+"s", s)
		return
	}
	if !hasPrec && verb != 'a' && verb != 'A' {
		spec += ".6"
	}
	switch verb {
	case 'F':
		verb = 'f'
	case 'a', 'A':
		s := hexFloat(v, strings.Contains(spec, "+"), strings.Contains(spec, " "))
		if verb == 'A' {
			s = strings.ToUpper(s)
		}
		if i := strings.IndexByte(spec, '.'); i >= 0 {
			spec = spec[:i]
		}
		fmt.Fprintf(p.w, strings.NewReplacer("0", "", "+", "", " ", "", "#", "").Replace(spec)+"s", s)
		return
	}
	fmt.Fprintf(p.w, spec+string(rune(verb)), v)
}

// hexFloat formats v the way glibc's %La does for a long double on x86:
// the leading hex digit holds the explicit integer bit, so it is 8 to f
// ("0x8p-3" for 1).
func hexFloat(v float64, plus, space bool) string {
	sign := ""
	switch {
	case math.Signbit(v):
		sign = "-"
	case plus:
		sign = "+"
	case space:
		sign = " "
	}
	v = math.Abs(v)
	if v == 0 {
		return sign + "0x0p+0"
	}
	frac, exp := math.Frexp(v)        // v = frac * 2^exp, 0.5 <= frac < 1
	m := uint64(math.Ldexp(frac, 64)) // exact: 53 significant bits
	digits := strings.TrimRight(fmt.Sprintf("%016x", m)[1:], "0")
	s := fmt.Sprintf("%s0x%x", sign, m>>60)
	if digits != "" {
		s += "." + digits
	}
	return s + fmt.Sprintf("p%+d", exp-4)
}

// intArg converts a printf argument to an integer the way GNU printf does
// (strtoimax, or the code of the character after a leading quote),
// reporting conversion problems and setting the exit status.
func (p *printer) intArg(a string) int64 {
	if len(a) >= 2 && (a[0] == '\'' || a[0] == '"') {
		return int64(a[1])
	}
	if len(a) == 1 && (a[0] == '\'' || a[0] == '"') {
		return 0
	}
	s := strings.TrimLeft(a, " \t\n\v\f\r")
	neg := false
	k := 0
	if k < len(s) && (s[k] == '+' || s[k] == '-') {
		neg = s[k] == '-'
		k++
	}
	base := uint64(10)
	if k+1 < len(s) && s[k] == '0' && (s[k+1] == 'x' || s[k+1] == 'X') && k+2 < len(s) && isHex(s[k+2]) {
		base, k = 16, k+2
	} else if k < len(s) && s[k] == '0' {
		base = 8
	}
	start := k
	var v uint64
	overflow := false
	for ; k < len(s); k++ {
		d := uint64(99)
		switch c := s[k]; {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		}
		if d >= base {
			break
		}
		if v > (math.MaxUint64-d)/base {
			overflow = true
		}
		v = v*base + d
	}
	var r int64
	switch {
	case a == "":
		return 0
	case k == start:
		p.e.Errorf("'%s': expected a numeric value", a)
		p.status = 1
		return 0
	case overflow || (!neg && v > math.MaxInt64) || (neg && v > 1<<63):
		p.e.Errorf("'%s': Numerical result out of range", a)
		p.status = 1
		if neg {
			return math.MinInt64
		}
		return math.MaxInt64
	case neg:
		r = -int64(v)
	default:
		r = int64(v)
	}
	if k < len(s) {
		p.e.Errorf("'%s': value not completely converted", a)
		p.status = 1
	}
	return r
}

// floatArg converts a printf argument to a float (strtold-like).
func (p *printer) floatArg(a string) float64 {
	if len(a) >= 2 && (a[0] == '\'' || a[0] == '"') {
		return float64(a[1])
	}
	s := strings.TrimLeft(a, " \t\n\v\f\r")
	if s == "" {
		if a != "" {
			p.e.Errorf("'%s': expected a numeric value", a)
			p.status = 1
		}
		return 0
	}
	n := floatPrefix(s)
	if n == 0 {
		p.e.Errorf("'%s': expected a numeric value", a)
		p.status = 1
		return 0
	}
	v, err := strconv.ParseFloat(s[:n], 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		p.e.Errorf("'%s': expected a numeric value", a)
		p.status = 1
		return 0
	}
	if n < len(s) {
		p.e.Errorf("'%s': value not completely converted", a)
		p.status = 1
	}
	return v
}

// floatPrefix returns the length of the longest prefix of s that is a C
// floating-point number (decimal, hex, inf, infinity, nan).
func floatPrefix(s string) int {
	k := 0
	if k < len(s) && (s[k] == '+' || s[k] == '-') {
		k++
	}
	low := strings.ToLower(s[k:])
	for _, w := range []string{"infinity", "inf", "nan"} {
		if strings.HasPrefix(low, w) {
			return k + len(w)
		}
	}
	digits := func(hex bool) int {
		n := 0
		for k < len(s) && (s[k] >= '0' && s[k] <= '9' || hex && isHex(s[k])) {
			k++
			n++
		}
		return n
	}
	hex := strings.HasPrefix(low, "0x")
	if hex {
		k += 2
	}
	n := digits(hex)
	if k < len(s) && s[k] == '.' {
		k++
		n += digits(hex)
	}
	if n == 0 {
		return 0
	}
	if k < len(s) && (!hex && (s[k] == 'e' || s[k] == 'E') || hex && (s[k] == 'p' || s[k] == 'P')) {
		save := k
		k++
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if digits(false) == 0 {
			k = save
		}
	} else if hex {
		// Go needs a p exponent in hex floats.
		return 0
	}
	return k
}

// shellQuote quotes s so that a POSIX shell reads it back as one word, the
// way GNU printf %q does.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	printable := true
	safe := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f {
			printable = false
			continue
		}
		switch {
		case strings.IndexByte(" \t!\"$&'()*;<=>?[\\]^`|", c) >= 0:
			safe = false
		case (c == '#' || c == '~') && i == 0:
			safe = false
		case (c == '{' || c == '}') && len(s) == 1:
			safe = false
		}
	}
	if printable && safe {
		return s
	}
	if printable {
		if strings.Contains(s, "'") {
			if !strings.ContainsAny(s, "$`\\\"!") {
				return `"` + s + `"`
			}
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
		return "'" + s + "'"
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		if c := s[i]; c < 0x20 || c >= 0x7f {
			for j < len(s) && (s[j] < 0x20 || s[j] >= 0x7f) {
				j++
			}
			if i == 0 {
				b.WriteString("''")
			}
			b.WriteString("$'")
			for _, c := range []byte(s[i:j]) {
				if k := strings.IndexByte("\a\b\f\n\r\t\v", c); k >= 0 {
					b.WriteByte('\\')
					b.WriteByte("abfnrtv"[k])
				} else {
					fmt.Fprintf(&b, "\\%03o", c)
				}
			}
			b.WriteByte('\'')
		} else {
			for j < len(s) && s[j] >= 0x20 && s[j] < 0x7f {
				j++
			}
			b.WriteString("'" + strings.ReplaceAll(s[i:j], "'", `'\''`) + "'")
		}
		i = j
	}
	return b.String()
}
