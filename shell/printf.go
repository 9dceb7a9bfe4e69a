package shell

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxPrintfWidth bounds a printf field width or precision, so that
// `printf '%999999999d'` cannot allocate gigabytes.
const maxPrintfWidth = 1 << 20

// formatPrintf implements bash's printf: the format is reused until the
// arguments are consumed; missing arguments are empty or zero. It returns
// the output and one message per invalid argument (status 1 in bash).
func formatPrintf(format string, args []string) (string, []string) {
	var sb strings.Builder
	var errs []string
	for {
		consumed, stop := formatOnce(&sb, format, &args, &errs)
		if stop || consumed == 0 || len(args) == 0 {
			break
		}
	}
	return sb.String(), errs
}

func formatOnce(sb *strings.Builder, format string, args *[]string, errs *[]string) (consumed int, stop bool) {
	next := func() (string, bool) {
		if len(*args) == 0 {
			return "", false
		}
		a := (*args)[0]
		*args = (*args)[1:]
		consumed++
		return a, true
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c == '\\' {
			j := i + 1
			if j < len(format) && format[j] == 'c' {
				return consumed, true
			}
			// Find the extent of this escape and expand it alone.
			end := escapeEnd(format, i)
			out, _ := expandEscapes(format[i:end], false)
			sb.WriteString(out)
			i = end - 1
			continue
		}
		if c != '%' {
			sb.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			sb.WriteByte('%')
			break
		}
		if format[i] == '%' {
			sb.WriteByte('%')
			continue
		}
		// %[flags][width][.precision]conv
		start := i
		for i < len(format) && strings.IndexByte("-+ #0'", format[i]) >= 0 {
			i++
		}
		flags := strings.ReplaceAll(format[start:i], "'", "")
		width, prec := -1, -1
		if i < len(format) && format[i] == '*' {
			a, _ := next()
			width = int(parseInt(a, errs))
			if width < 0 {
				flags += "-"
				width = -width
			}
			i++
		} else {
			ws := i
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				i++
			}
			if i > ws {
				width, _ = strconv.Atoi(format[ws:i])
			}
		}
		if i < len(format) && format[i] == '.' {
			i++
			if i < len(format) && format[i] == '*' {
				a, _ := next()
				prec = int(parseInt(a, errs))
				i++
			} else {
				ps := i
				for i < len(format) && format[i] >= '0' && format[i] <= '9' {
					i++
				}
				prec, _ = strconv.Atoi(format[ps:i])
			}
		}
		if width > maxPrintfWidth || prec > maxPrintfWidth || width < -1 {
			*errs = append(*errs, "field width or precision too large")
			return consumed, true
		}
		if i >= len(format) {
			*errs = append(*errs, "`"+format[start-1:]+"': missing format character")
			return consumed, true
		}
		conv := format[i]
		spec := "%" + flags
		if width >= 0 {
			spec += strconv.Itoa(width)
		}
		if prec >= 0 {
			spec += "." + strconv.Itoa(prec)
		}
		arg, _ := next()
		switch conv {
		case 's':
			if prec >= 0 {
				arg = truncRunes(arg, prec)
			}
			sb.WriteString(pad(arg, width, strings.Contains(flags, "-")))
		case 'b':
			out, stopAll := expandEscapes(arg, true)
			if prec >= 0 {
				out = truncRunes(out, prec)
			}
			sb.WriteString(pad(out, width, strings.Contains(flags, "-")))
			if stopAll {
				return consumed, true
			}
		case 'q':
			sb.WriteString(pad(shellQuote(arg), width, strings.Contains(flags, "-")))
		case 'c':
			r := ""
			if arg != "" {
				_, size := utf8.DecodeRuneInString(arg)
				r = arg[:size]
			}
			sb.WriteString(pad(r, width, strings.Contains(flags, "-")))
		case 'd', 'i':
			fmt.Fprintf(sb, spec+"d", parseInt(arg, errs))
		case 'u':
			fmt.Fprintf(sb, spec+"d", uint64(parseInt(arg, errs)))
		case 'o':
			fmt.Fprintf(sb, spec+"o", uint64(parseInt(arg, errs)))
		case 'x', 'X':
			fmt.Fprintf(sb, spec+string(conv), uint64(parseInt(arg, errs)))
		case 'e', 'E', 'f', 'F', 'g', 'G':
			if prec < 0 {
				spec += ".6"
			}
			v := parseFloat(arg, errs)
			fmt.Fprintf(sb, spec+string(conv), v)
		default:
			*errs = append(*errs, "`"+string(conv)+"': invalid format character")
			return consumed, true
		}
	}
	return consumed, false
}

// escapeEnd returns the index just past the backslash escape at format[i].
func escapeEnd(format string, i int) int {
	j := i + 1
	if j >= len(format) {
		return j
	}
	switch c := format[j]; {
	case c >= '0' && c <= '7':
		k := j
		for k < len(format) && k < j+3 && format[k] >= '0' && format[k] <= '7' {
			k++
		}
		return k
	case c == 'x' || c == 'u' || c == 'U':
		maxDigits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		k := j + 1
		for k < len(format) && k < j+1+maxDigits && isHex(format[k]) {
			k++
		}
		return k
	}
	return j + 1
}

func truncRunes(s string, n int) string {
	if n >= len(s) {
		return s
	}
	i := 0
	for count := 0; i < len(s) && count < n; count++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

func pad(s string, width int, left bool) string {
	n := utf8.RuneCountInString(s)
	if width <= n {
		return s
	}
	if left {
		return s + strings.Repeat(" ", width-n)
	}
	return strings.Repeat(" ", width-n) + s
}

// parseInt parses a printf integer argument like bash: decimal, 0x hex,
// 0 octal, or 'c / "c for a character's code. An invalid argument is
// reported and its valid prefix used.
func parseInt(a string, errs *[]string) int64 {
	s := strings.TrimSpace(a)
	if s == "" {
		return 0
	}
	if s[0] == '\'' || s[0] == '"' {
		if len(s) == 1 {
			return 0
		}
		r, _ := utf8.DecodeRuneInString(s[1:])
		return int64(r)
	}
	neg := false
	body := s
	if body[0] == '-' || body[0] == '+' {
		neg = body[0] == '-'
		body = body[1:]
	}
	base := 10
	digits := body
	switch {
	case strings.HasPrefix(body, "0x") || strings.HasPrefix(body, "0X"):
		base, digits = 16, body[2:]
	case len(body) > 1 && body[0] == '0':
		base, digits = 8, body[1:]
	}
	end := 0
	for end < len(digits) && digitVal(digits[end]) < base {
		end++
	}
	var n uint64
	if end > 0 {
		var err error
		n, err = strconv.ParseUint(digits[:end], base, 64)
		if err != nil {
			*errs = append(*errs, a+": Numerical result out of range")
			n = 1<<63 - 1
		}
	}
	if end != len(digits) || (end == 0 && base != 8) {
		*errs = append(*errs, a+": invalid number")
	}
	if neg {
		return -int64(n)
	}
	return int64(n)
}

func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return 99
}

func parseFloat(a string, errs *[]string) float64 {
	s := strings.TrimSpace(a)
	if s == "" {
		return 0
	}
	if s[0] == '\'' || s[0] == '"' {
		if len(s) == 1 {
			return 0
		}
		r, _ := utf8.DecodeRuneInString(s[1:])
		return float64(r)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		*errs = append(*errs, a+": invalid number")
	}
	return v
}

// shellQuote quotes like bash's printf %q: backslashes before special
// characters, or $'...' when the string has control characters.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	needsANSI := false
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			needsANSI = true
			break
		}
	}
	var sb strings.Builder
	if needsANSI {
		sb.WriteString("$'")
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch c {
			case '\n':
				sb.WriteString(`\n`)
			case '\t':
				sb.WriteString(`\t`)
			case '\r':
				sb.WriteString(`\r`)
			case '\\':
				sb.WriteString(`\\`)
			case '\'':
				sb.WriteString(`\'`)
			default:
				if c < 0x20 || c == 0x7f || c >= 0x80 && !utf8.FullRuneInString(s[i:]) {
					fmt.Fprintf(&sb, `\%03o`, c)
				} else if c >= 0x80 {
					r, size := utf8.DecodeRuneInString(s[i:])
					if r == utf8.RuneError {
						fmt.Fprintf(&sb, `\%03o`, c)
					} else {
						sb.WriteString(s[i : i+size])
						i += size - 1
					}
				} else {
					sb.WriteByte(c)
				}
			}
		}
		sb.WriteByte('\'')
		return sb.String()
	}
	for i, r := range s {
		if strings.ContainsRune(" \t!\"#$&'()*;<>?[\\]^`{|}~", r) {
			if r == '~' && i != 0 {
				sb.WriteRune(r)
				continue
			}
			sb.WriteByte('\\')
		}
		sb.WriteRune(r)
	}
	return sb.String()
}
