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
	cmd.Register("seq", seqMain)
}

// seqNum is a parsed seq operand and the number of decimals it was
// written with.
type seqNum struct {
	v     float64
	prec  int
	i     int64
	isInt bool
}

func parseSeqNum(s string) (seqNum, bool) {
	t := strings.TrimLeft(s, " \t")
	if t == "" || floatPrefix(t) != len(t) {
		return seqNum{}, false
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		return seqNum{}, false
	}
	if math.IsNaN(v) {
		return seqNum{}, false
	}
	n := seqNum{v: v}
	low := strings.ToLower(t)
	mant, exp, hasExp := strings.Cut(low, "e")
	if strings.HasPrefix(strings.TrimLeft(low, "+-"), "0x") {
		mant, hasExp = low, false
	}
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		n.prec = len(mant) - i - 1
	}
	if hasExp {
		e, _ := strconv.Atoi(exp)
		n.prec = max(0, n.prec-e)
	}
	if !hasExp && n.prec == 0 && !strings.ContainsAny(low, "xin") {
		if i, err := strconv.ParseInt(t, 10, 64); err == nil {
			n.i, n.isInt = i, true
		}
	}
	return n, true
}

func seqMain(e *cmd.Env) int {
	// Negative numbers are operands, not options.
	var optArgs, operands []string
	args := e.Args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' || a[1] == '.' || a[1] >= '0' && a[1] <= '9' {
			operands = append(operands, a)
			continue
		}
		optArgs = append(optArgs, a)
		if (a == "-s" || a == "-f" || a == "--separator" || a == "--format") && i+1 < len(args) {
			i++
			optArgs = append(optArgs, args[i])
		}
	}
	opts, ops, err := cmd.Getopt(optArgs, withHelp(
		cmd.Option{Short: 'w', Long: "equal-width"}, cmd.Option{Short: 's', Long: "separator", Arg: cmd.RequiredArg},
		cmd.Option{Short: 'f', Long: "format", Arg: cmd.RequiredArg}), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "[OPTION]... LAST\n  or:  seq [OPTION]... FIRST LAST\n  or:  seq [OPTION]... FIRST INCREMENT LAST\nPrint numbers from FIRST to LAST, in steps of INCREMENT.\n  -f, --format=FORMAT      use printf style floating-point FORMAT\n  -s, --separator=STRING   use STRING to separate numbers (default: \\n)\n  -w, --equal-width        equalize width by padding with leading zeroes\n") {
		return 0
	}
	operands = append(operands, ops...)
	sep, format, equal := "\n", "", false
	for _, o := range opts {
		switch o.Name {
		case "equal-width":
			equal = true
		case "separator":
			sep = o.Value
		case "format":
			format = o.Value
		}
	}
	switch {
	case len(operands) == 0:
		return e.Usage(1, fmt.Errorf("missing operand"))
	case len(operands) > 3:
		return e.Usage(1, fmt.Errorf("extra operand '%s'", operands[3]))
	}
	if format != "" && equal {
		return e.Usage(1, fmt.Errorf("format string may not be specified when printing equal width strings"))
	}
	nums := make([]seqNum, len(operands))
	for i, s := range operands {
		n, ok := parseSeqNum(s)
		if !ok {
			return e.Usage(1, fmt.Errorf("invalid floating point argument: '%s'", s))
		}
		nums[i] = n
	}
	first, step, last := seqNum{v: 1, i: 1, isInt: true}, seqNum{v: 1, i: 1, isInt: true}, nums[len(nums)-1]
	switch len(nums) {
	case 2:
		first = nums[0]
	case 3:
		first, step = nums[0], nums[1]
		if step.v == 0 {
			return e.Usage(1, fmt.Errorf("invalid Zero increment value: '%s'", operands[1]))
		}
	}
	w, flush := output(e)
	if format == "" && first.isInt && step.isInt && last.isInt && !equal {
		seqInts(w, first.i, step.i, last.i, sep)
		return flush()
	}
	var pre, spec, post string
	var verb byte
	if format != "" {
		var err error
		if pre, spec, verb, post, err = splitSeqFormat(format); err != nil {
			e.Errorf("%s", err.Error())
			return 1
		}
	} else {
		verb = 'f'
		spec = "%." + strconv.Itoa(max(first.prec, step.prec))
	}
	fmtOne := func(v float64) string {
		return pre + cFloat(spec, verb, v) + post
	}
	if format == "" {
		prec := max(first.prec, step.prec)
		fmtOne = func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	}
	width := 0
	if equal {
		width = max(len(fmtOne(first.v)), len(fmtOne(last.v)))
	}
	for i := 0; ; i++ {
		v := first.v + float64(i)*step.v
		if step.v > 0 && v > last.v || step.v < 0 && v < last.v {
			break
		}
		if i > 0 {
			w.WriteString(sep)
		}
		s := fmtOne(v)
		if len(s) < width {
			neg := strings.HasPrefix(s, "-")
			s = strings.TrimPrefix(s, "-")
			s = strings.Repeat("0", width-len(s)-btoi(neg)) + s
			if neg {
				s = "-" + s
			}
		}
		w.WriteString(s)
		if math.IsInf(v, 0) || i > 0 && v == first.v+float64(i-1)*step.v {
			break // no progress: the step is below float precision
		}
	}
	if !(step.v > 0 && first.v > last.v || step.v < 0 && first.v < last.v) {
		w.WriteString("\n")
	}
	return flush()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// seqInts is the fast path for integer sequences.
func seqInts(w *bufio.Writer, first, step, last int64, sep string) {
	if step > 0 && first > last || step < 0 && first < last {
		return
	}
	var buf []byte
	for v := first; ; {
		buf = strconv.AppendInt(buf[:0], v, 10)
		w.Write(buf)
		// Stop before overflowing past last.
		if step > 0 && (v > last-step || v+step < v) || step < 0 && (v < last-step || v+step > v) {
			break
		}
		v += step
		w.WriteString(sep)
	}
	w.WriteString("\n")
}

// splitSeqFormat checks a seq -f format: exactly one floating-point
// conversion, and %% elsewhere.
func splitSeqFormat(f string) (pre, spec string, verb byte, post string, err error) {
	found := false
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		if i+1 < len(f) && f[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		if found {
			return "", "", 0, "", fmt.Errorf("format '%s' has too many %% directives", f)
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("-+ #0'", f[j]) >= 0 {
			j++
		}
		for j < len(f) && (f[j] >= '0' && f[j] <= '9' || f[j] == '.') {
			j++
		}
		for j < len(f) && f[j] == 'L' {
			j++
		}
		if j >= len(f) || strings.IndexByte("efgEFGaA", f[j]) < 0 {
			if j >= len(f) {
				return "", "", 0, "", fmt.Errorf("format '%s' ends in %%", f)
			}
			return "", "", 0, "", fmt.Errorf("format '%s' has unknown %%%c directive", f, f[j])
		}
		found = true
		pre = b.String()
		b.Reset()
		spec = strings.ReplaceAll(strings.ReplaceAll(f[i:j], "'", ""), "L", "")
		verb = f[j]
		i = j
	}
	if !found {
		return "", "", 0, "", fmt.Errorf("format '%s' has no %% directive", f)
	}
	return pre, spec, verb, b.String(), nil
}

// cFloat formats v with a C conversion spec ("%-8.3" and verb 'g').
func cFloat(spec string, verb byte, v float64) string {
	var sb strings.Builder
	w := bufio.NewWriter(&sb)
	p := &printer{w: w}
	p.float(spec, strings.Contains(spec, "."), verb, v)
	w.Flush()
	return sb.String()
}
