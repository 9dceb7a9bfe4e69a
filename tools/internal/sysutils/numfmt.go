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
	cmd.Register("numfmt", numfmtMain)
}

type numfmtOpts struct {
	from, to         string
	fromUnit, toUnit float64
	round            string
	suffix           string
	padding          int
	fields           string
	delim            string
	header           int
	format           string
	invalid          string
	zero             bool
}

const numfmtHelp = "[OPTION]... [NUMBER]...\nReformat NUMBER(s), or the numbers from standard input if none are specified.\n  -d, --delimiter=X    use X instead of whitespace for field delimiter\n      --field=FIELDS   replace the numbers in these input fields (default=1)\n      --format=FORMAT  use printf style floating-point FORMAT\n      --from=UNIT      auto-scale input numbers to UNITs (none, auto, si, iec, iec-i)\n      --from-unit=N    specify the input unit size (instead of the default 1)\n      --header[=N]     print (without converting) the first N header lines\n      --invalid=MODE   failure mode for invalid numbers: abort, fail, warn, ignore\n      --padding=N      pad the output to N characters\n      --round=METHOD   up, down, from-zero (default), towards-zero, nearest\n      --suffix=SUFFIX  add SUFFIX to output numbers\n      --to=UNIT        auto-scale output numbers to UNITs\n      --to-unit=N      the output unit size (instead of the default 1)\n  -z, --zero-terminated  line delimiter is NUL, not newline\n"

func numfmtMain(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(
		cmd.Option{Short: 'd', Long: "delimiter", Arg: cmd.RequiredArg}, cmd.Option{Long: "field", Arg: cmd.RequiredArg},
		cmd.Option{Long: "format", Arg: cmd.RequiredArg}, cmd.Option{Long: "from", Arg: cmd.RequiredArg},
		cmd.Option{Long: "from-unit", Arg: cmd.RequiredArg}, cmd.Option{Long: "grouping"},
		cmd.Option{Long: "header", Arg: cmd.OptionalArg}, cmd.Option{Long: "invalid", Arg: cmd.RequiredArg},
		cmd.Option{Long: "padding", Arg: cmd.RequiredArg}, cmd.Option{Long: "round", Arg: cmd.RequiredArg},
		cmd.Option{Long: "suffix", Arg: cmd.RequiredArg}, cmd.Option{Long: "to", Arg: cmd.RequiredArg},
		cmd.Option{Long: "to-unit", Arg: cmd.RequiredArg}, cmd.Option{Short: 'z', Long: "zero-terminated"},
		cmd.Option{Long: "debug"}), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, numfmtHelp) {
		return 0
	}
	o := numfmtOpts{from: "none", to: "none", fromUnit: 1, toUnit: 1, round: "from-zero", fields: "1", invalid: "abort"}
	badArg := func(v, opt string, valid []string) int {
		e.Errorf("invalid argument '%s' for '--%s'", v, opt)
		fmt.Fprintln(e.Stderr, "Valid arguments are:")
		for _, x := range valid {
			fmt.Fprintf(e.Stderr, "  - '%s'\n", x)
		}
		return e.Usage(1, nil)
	}
	units := []string{"none", "auto", "si", "iec", "iec-i"}
	for _, x := range opts {
		switch x.Name {
		case "delimiter":
			if len(x.Value) != 1 {
				e.Errorf("the delimiter must be a single character")
				return 1
			}
			o.delim = x.Value
		case "field":
			o.fields = x.Value
		case "format":
			o.format = x.Value
		case "from", "to":
			ok := false
			for _, u := range units {
				ok = ok || u == x.Value
			}
			if !ok || (x.Name == "to" && x.Value == "auto") {
				valid := units
				if x.Name == "to" {
					valid = []string{"none", "si", "iec", "iec-i"}
				}
				return badArg(x.Value, x.Name, valid)
			}
			if x.Name == "from" {
				o.from = x.Value
			} else {
				o.to = x.Value
			}
		case "from-unit", "to-unit":
			v, err := strconv.ParseFloat(x.Value, 64)
			if err != nil || v <= 0 {
				e.Errorf("invalid unit size: '%s'", x.Value)
				return 1
			}
			if x.Name == "from-unit" {
				o.fromUnit = v
			} else {
				o.toUnit = v
			}
		case "header":
			o.header = 1
			if x.HasValue {
				n, err := strconv.Atoi(x.Value)
				if err != nil || n < 1 {
					e.Errorf("invalid header value '%s'", x.Value)
					return 1
				}
				o.header = n
			}
		case "invalid":
			modes := []string{"abort", "fail", "warn", "ignore"}
			ok := false
			for _, m := range modes {
				ok = ok || m == x.Value
			}
			if !ok {
				return badArg(x.Value, "invalid", modes)
			}
			o.invalid = x.Value
		case "padding":
			n, err := strconv.Atoi(x.Value)
			if err != nil || n == 0 {
				e.Errorf("invalid padding value '%s'", x.Value)
				return 1
			}
			o.padding = n
		case "round":
			modes := []string{"up", "down", "from-zero", "towards-zero", "nearest"}
			ok := false
			for _, m := range modes {
				ok = ok || m == x.Value
			}
			if !ok {
				return badArg(x.Value, "round", modes)
			}
			o.round = x.Value
		case "suffix":
			o.suffix = x.Value
		case "zero-terminated":
			o.zero = true
		}
	}
	fieldSet, err := parseFieldList(o.fields)
	if err != nil {
		e.Errorf("%s", err.Error())
		return e.Usage(1, nil)
	}
	w, flush := output(e)
	n := &numfmter{e: e, o: o, w: w, fields: fieldSet}
	if len(ops) > 0 {
		if o.header > 0 {
			e.Errorf("--header ignored with command-line input")
		}
		for _, a := range ops {
			if !n.line(a) {
				break
			}
			w.WriteByte('\n')
		}
	} else {
		sc := bufio.NewScanner(e.Stdin)
		sc.Buffer(make([]byte, 64*1024), 16<<20)
		if o.zero {
			sc.Split(scanNul)
		}
		end := byte('\n')
		if o.zero {
			end = 0
		}
		for i := 0; sc.Scan(); i++ {
			if i < o.header {
				w.WriteString(sc.Text())
				w.WriteByte(end)
				continue
			}
			if !n.line(sc.Text()) {
				break
			}
			w.WriteByte(end)
		}
	}
	if flush() != 0 {
		return 1
	}
	return n.status
}

func scanNul(data []byte, atEOF bool) (int, []byte, error) {
	for i, c := range data {
		if c == 0 {
			return i + 1, data[:i], nil
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// parseFieldList parses "1", "1,3", "2-4", "-3", "5-" or "-" (all).
func parseFieldList(s string) (func(int) bool, error) {
	type rng struct{ lo, hi int }
	var rs []rng
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		r := rng{1, math.MaxInt}
		var err error
		if lo != "" {
			if r.lo, err = strconv.Atoi(lo); err != nil || r.lo < 1 {
				return nil, fmt.Errorf("invalid field value '%s'", part)
			}
		}
		if !isRange {
			r.hi = r.lo
		} else if hi != "" {
			if r.hi, err = strconv.Atoi(hi); err != nil || r.hi < r.lo {
				return nil, fmt.Errorf("invalid field range")
			}
		}
		rs = append(rs, r)
	}
	return func(f int) bool {
		for _, r := range rs {
			if f >= r.lo && f <= r.hi {
				return true
			}
		}
		return false
	}, nil
}

type numfmter struct {
	e      *cmd.Env
	o      numfmtOpts
	w      *bufio.Writer
	fields func(int) bool
	status int
	prec   int // decimals of the last number parsed
}

// line converts the selected fields of one line; false means abort.
func (n *numfmter) line(s string) bool {
	// Split into fields, each keeping the blanks in front of it.
	var parts []string
	if n.o.delim != "" {
		parts = strings.Split(s, n.o.delim)
	} else {
		i := 0
		for i < len(s) {
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			for j < len(s) && s[j] != ' ' && s[j] != '\t' {
				j++
			}
			parts = append(parts, s[i:j])
			i = j
		}
		if len(parts) == 0 {
			parts = []string{""}
		}
	}
	for i, p := range parts {
		if !n.fields(i + 1) {
			continue
		}
		lead := p[:len(p)-len(strings.TrimLeft(p, " \t"))]
		out, ok := n.convert(strings.TrimLeft(p, " \t"))
		if !ok {
			if n.o.invalid == "abort" {
				n.status = 2
				return false
			}
			if n.o.invalid != "ignore" && n.o.invalid != "warn" {
				n.status = 2
			}
			continue
		}
		if n.o.padding != 0 || lead == "" {
			parts[i] = lead + out
			if n.o.padding != 0 && n.o.delim == "" {
				parts[i] = out
				if i > 0 {
					parts[i] = " " + out
				}
			}
		} else {
			// Right-align in the space the field had, as GNU does.
			width := len(lead) + len(strings.TrimLeft(p, " \t"))
			if len(out) < width {
				parts[i] = strings.Repeat(" ", width-len(out)) + out
			} else {
				parts[i] = " " + out
			}
			if i == 0 {
				parts[i] = lead + out
				if len(out) < width {
					parts[i] = strings.Repeat(" ", width-len(out)) + out
				}
			}
		}
	}
	if n.o.delim != "" {
		n.w.WriteString(strings.Join(parts, n.o.delim))
	} else {
		n.w.WriteString(strings.Join(parts, ""))
	}
	return true
}

var siPrefixes = "KMGTPEZYRQ"

// convert parses one number and formats it.
func (n *numfmter) convert(s string) (string, bool) {
	in := strings.TrimSuffix(s, n.o.suffix)
	if n.o.suffix == "" {
		in = s
	}
	v, ok := n.parse(in, s)
	if !ok {
		return s, false
	}
	v *= n.o.fromUnit
	v /= n.o.toUnit
	out, ok := n.format(v, s)
	if !ok {
		return s, false
	}
	if n.o.padding > 0 && len(out) < n.o.padding {
		out = strings.Repeat(" ", n.o.padding-len(out)) + out
	} else if n.o.padding < 0 && len(out) < -n.o.padding {
		out += strings.Repeat(" ", -n.o.padding-len(out))
	}
	return out, true
}

func (n *numfmter) warn(format string, args ...any) {
	if n.o.invalid == "ignore" {
		return
	}
	n.w.Flush()
	n.e.Errorf(format, args...)
}

func (n *numfmter) parse(s, orig string) (float64, bool) {
	k := floatPrefix(s)
	if k == 0 || strings.ContainsAny(strings.ToLower(s[:k]), "xin") {
		n.warn("invalid number: '%s'", orig)
		return 0, false
	}
	numPart, suf := s[:k], s[k:]
	if strings.ContainsAny(numPart, "eE") {
		// GNU numfmt does not take exponents: "1e3" has suffix "e3".
		i := strings.IndexAny(numPart, "eE")
		numPart, suf = numPart[:i], numPart[i:]+suf
	}
	n.prec = 0
	if i := strings.IndexByte(numPart, '.'); i >= 0 {
		n.prec = len(numPart) - i - 1
	}
	v, err := strconv.ParseFloat(numPart, 64)
	if err != nil {
		n.warn("invalid number: '%s'", orig)
		return 0, false
	}
	if suf == "" {
		return v, true
	}
	p := strings.IndexByte(siPrefixes, suf[0])
	if suf[0] == 'k' {
		p = 0
	}
	rest := suf[1:]
	if p < 0 {
		n.warn("invalid suffix in input: '%s'", orig)
		return 0, false
	}
	if n.o.from == "none" {
		n.warn("rejecting suffix in input: '%s' (consider using --from)", orig)
		return 0, false
	}
	base := 1000.0
	switch n.o.from {
	case "iec":
		base = 1024
		if rest != "" {
			n.warn("invalid suffix in input: '%s'", orig)
			return 0, false
		}
	case "iec-i":
		base = 1024
		if rest != "i" {
			n.warn("missing 'i' suffix in input: '%s' (e.g Ki/Mi/Gi)", orig)
			return 0, false
		}
	case "auto":
		if rest == "i" {
			base = 1024
		} else if rest != "" {
			n.warn("invalid suffix in input: '%s'", orig)
			return 0, false
		}
	default:
		if rest != "" {
			n.warn("invalid suffix in input: '%s'", orig)
			return 0, false
		}
	}
	return v * math.Pow(base, float64(p+1)), true
}

func (n *numfmter) roundTo(v float64, decimals int) float64 {
	m := math.Pow(10, float64(decimals))
	x := v * m
	// Absorb floating-point noise (1.1 * 10 is 11.000000000000002).
	if r := math.Round(x); math.Abs(x-r) < 1e-9 {
		x = r
	}
	switch n.o.round {
	case "up":
		x = math.Ceil(x)
	case "down":
		x = math.Floor(x)
	case "towards-zero":
		x = math.Trunc(x)
	case "nearest":
		x = math.Round(x)
	default: // from-zero
		if x < 0 {
			x = math.Floor(x)
		} else {
			x = math.Ceil(x)
		}
	}
	return x / m
}

func (n *numfmter) format(v float64, orig string) (string, bool) {
	var out string
	if n.o.to == "none" {
		if v != math.Trunc(v) || math.Abs(v) >= 1e18 {
			out = strconv.FormatFloat(n.roundTo(v, n.prec), 'f', n.prec, 64)
		} else {
			out = strconv.FormatFloat(v, 'f', 0, 64)
		}
	} else {
		base := 1000.0
		if n.o.to != "si" {
			base = 1024
		}
		p := 0
		x := v
		for math.Abs(x) >= base && p < len(siPrefixes) {
			x /= base
			p++
		}
		if p == 0 {
			out = strconv.FormatFloat(x, 'f', 0, 64)
			if x != math.Trunc(x) {
				out = fmt.Sprintf("%.0f", x)
			}
		} else {
			if math.Abs(x) < 10 {
				x = n.roundTo(x, 1)
			} else {
				x = n.roundTo(x, 0)
			}
			if math.Abs(x) >= base && p < len(siPrefixes) {
				x /= base
				p++
				x = n.roundTo(x, 1)
			}
			if p > 8 {
				n.warn("value too large to be converted: '%s'", orig)
				return "", false
			}
			if math.Abs(x) < 10 {
				out = strconv.FormatFloat(x, 'f', 1, 64)
			} else {
				out = strconv.FormatFloat(x, 'f', 0, 64)
			}
			out += siPrefixes[p-1 : p]
			if n.o.to == "iec-i" {
				out += "i"
			}
		}
	}
	if n.o.format != "" {
		pre, spec, verb, post, err := splitSeqFormat(n.o.format)
		if err != nil || verb != 'f' {
			n.e.Errorf("invalid format '%s'", n.o.format)
			return "", false
		}
		if n.o.to == "none" {
			out = cFloat(spec, 'f', v)
		} else {
			// Scaled output: the format's width applies to the whole.
			width := strings.TrimLeft(spec[1:], "-+ #0")
			if i := strings.IndexByte(width, '.'); i >= 0 {
				width = width[:i]
			}
			if wd, err := strconv.Atoi(width); err == nil && len(out) < wd {
				if strings.Contains(spec, "-") {
					out += strings.Repeat(" ", wd-len(out))
				} else {
					out = strings.Repeat(" ", wd-len(out)) + out
				}
			}
		}
		out = pre + out + post
	}
	return out + n.o.suffix, true
}
