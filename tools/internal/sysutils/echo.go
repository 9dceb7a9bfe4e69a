package sysutils

import (
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("echo", echo)
}

// echo is GNU /bin/echo: leading arguments made only of the letters n, e
// and E are options; --help and --version count only as the sole argument.
func echo(e *cmd.Env) int {
	args := e.Args[1:]
	if len(args) == 1 && (args[0] == "--help" || args[0] == "--version") {
		opts, _, _ := cmd.Getopt(args, helpOpts, false)
		helpOrVersion(e, opts, "[SHORT-OPTION]... [STRING]...\nEcho the STRING(s) to standard output.\n  -n  do not output the trailing newline\n  -e  enable interpretation of backslash escapes\n  -E  disable interpretation of backslash escapes (default)\n")
		return 0
	}
	newline, escapes := true, false
	for len(args) > 0 {
		a := args[0]
		if len(a) < 2 || a[0] != '-' || strings.Trim(a[1:], "neE") != "" {
			break
		}
		for _, c := range a[1:] {
			switch c {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
		args = args[1:]
	}
	w, flush := output(e)
	for i, a := range args {
		if i > 0 {
			w.WriteByte(' ')
		}
		if !escapes {
			w.WriteString(a)
			continue
		}
		s, stop := unescape(a, escEcho)
		w.WriteString(s)
		if stop {
			return flush()
		}
	}
	if newline {
		w.WriteByte('\n')
	}
	return flush()
}

// Escape dialects of unescape.
const (
	escEcho   = iota // echo -e: \0NNN or \NNN octal, no \" or \u
	escB             // printf %b: like echo, plus \" and \u \U
	escFormat        // a printf format: \NNN octal (the leading 0 counts)
)

// unescape interprets backslash escapes in one of the dialects above:
// \\ \a \b \c (stop all output: the second result is true) \e \f \n \r
// \t \v, octal, \xHH, and (escB, escFormat) \" \uHHHH \UHHHHHHHH. An
// unknown escape is kept as is, backslash included.
func unescape(s string, dialect int) (string, bool) {
	if !strings.Contains(s, `\`) {
		return s, false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case '\\':
			b.WriteByte('\\')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'c':
			return b.String(), true
		case 'e':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '"':
			if dialect == escEcho {
				b.WriteByte('\\')
			}
			b.WriteByte('"')
		case 'x':
			v, n := 0, 0
			for n < 2 && i+1 < len(s) && isHex(s[i+1]) {
				v = v*16 + hexVal(s[i+1])
				i++
				n++
			}
			if n == 0 {
				b.WriteString(`\x`)
			} else {
				b.WriteByte(byte(v))
			}
		case 'u', 'U':
			want := 4
			if c == 'U' {
				want = 8
			}
			if dialect == escEcho || !allHex(s[i+1:], want) {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			hex := s[i+1 : i+1+want]
			i += want
			if v, _ := strconv.ParseUint(hex, 16, 32); v < 0x80 {
				b.WriteByte(byte(v))
				continue
			}
			// The C locale cannot encode the character: GNU printf
			// prints it as an escape, upper-case.
			b.WriteByte('\\')
			b.WriteByte(c)
			b.WriteString(strings.ToUpper(hex))
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i // the first digit
			if dialect != escFormat && c == '0' {
				j++ // \0NNN: the 0 only introduces the digits
			}
			v, n := 0, 0
			for ; n < 3 && j < len(s) && s[j] >= '0' && s[j] <= '7'; j, n = j+1, n+1 {
				v = v*8 + int(s[j]-'0')
			}
			i = j - 1
			b.WriteByte(byte(v))
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String(), false
}

func allHex(s string, n int) bool {
	if len(s) < n {
		return false
	}
	for i := 0; i < n; i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return int(c-'A') + 10
}
