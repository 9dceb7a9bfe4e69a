// Package timefmt formats times as GNU strftime does, for date, ls
// --time-style, find -printf and pr -D.
package timefmt

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Strftime formats t like GNU date: the conversions of C strftime plus
// %N, %s, %q, %P, %:z, %::z, %:::z, and the flags - _ 0 ^ # and a field
// width after the %.
func Strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		start := i
		i++
		var pad byte // 0: the conversion's default
		upper, swap := false, false
		for ; i < len(format) && strings.IndexByte("-_0^#", format[i]) >= 0; i++ {
			switch format[i] {
			case '-', '_', '0':
				pad = format[i]
			case '^':
				upper = true
			case '#':
				swap = true
			}
		}
		width := -1
		for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
			width = max(width, 0)*10 + int(format[i]-'0')
		}
		colons := 0
		for ; i < len(format) && format[i] == ':'; i++ {
			colons++
		}
		for ; i < len(format) && (format[i] == 'E' || format[i] == 'O'); i++ {
		}
		if i >= len(format) {
			b.WriteString(format[start:])
			break
		}
		conv := format[i]
		// num formats a number with its default padding and width.
		num := func(v, w int, defPad byte) string {
			p := defPad
			if pad != 0 {
				p = pad
			}
			if width >= 0 {
				w = width
			}
			s := strconv.Itoa(v)
			neg := v < 0
			if neg {
				s = s[1:]
			}
			switch p {
			case '-':
				if neg {
					s = "-" + s
				}
				return s
			case '_':
				if neg {
					s = "-" + s
				}
				if len(s) < w {
					s = strings.Repeat(" ", w-len(s)) + s
				}
				return s
			}
			if neg {
				w--
			}
			if len(s) < w {
				s = strings.Repeat("0", w-len(s)) + s
			}
			if neg {
				s = "-" + s
			}
			return s
		}
		// str pads a text conversion (with spaces, or zeros for flag 0).
		str := func(s string, lowerOnSwap bool) string {
			if upper {
				s = strings.ToUpper(s)
			}
			if swap {
				if lowerOnSwap {
					s = strings.ToLower(s)
				} else {
					s = strings.ToUpper(s)
				}
			}
			if width > len(s) {
				p := " "
				if pad == '0' {
					p = "0"
				}
				s = strings.Repeat(p, width-len(s)) + s
			}
			return s
		}
		year, week := t.ISOWeek()
		hour12 := t.Hour() % 12
		if hour12 == 0 {
			hour12 = 12
		}
		var out string
		switch conv {
		case '%':
			out = str("%", false)
		case 'a':
			out = str(t.Weekday().String()[:3], false)
		case 'A':
			out = str(t.Weekday().String(), false)
		case 'b', 'h':
			out = str(t.Month().String()[:3], false)
		case 'B':
			out = str(t.Month().String(), false)
		case 'c':
			out = str(Strftime(t, "%a %b %e %H:%M:%S %Y"), false)
		case 'C':
			out = num(t.Year()/100, 2, '0')
		case 'd':
			out = num(t.Day(), 2, '0')
		case 'D', 'x':
			out = str(Strftime(t, "%m/%d/%y"), false)
		case 'e':
			out = num(t.Day(), 2, '_')
		case 'F':
			yw := 4
			if width >= 0 {
				yw, width = max(0, width-6), -1
			}
			y := num(t.Year(), yw, '0')
			out = y + Strftime(t, "-%m-%d")
		case 'g':
			out = num(year%100, 2, '0')
		case 'G':
			out = num(year, 4, '0')
		case 'H':
			out = num(t.Hour(), 2, '0')
		case 'I':
			out = num(hour12, 2, '0')
		case 'j':
			out = num(t.YearDay(), 3, '0')
		case 'k':
			out = num(t.Hour(), 2, '_')
		case 'l':
			out = num(hour12, 2, '_')
		case 'm':
			out = num(int(t.Month()), 2, '0')
		case 'M':
			out = num(t.Minute(), 2, '0')
		case 'n':
			out = "\n"
		case 't':
			out = "\t"
		case 'N':
			ns := fmt.Sprintf("%09d", t.Nanosecond())
			if width > 0 && width < 9 {
				ns = ns[:width]
			}
			out = ns
		case 'p':
			ap := "AM"
			if t.Hour() >= 12 {
				ap = "PM"
			}
			out = str(ap, true)
		case 'P':
			ap := "am"
			if t.Hour() >= 12 {
				ap = "pm"
			}
			out = str(ap, false)
		case 'q':
			out = num((int(t.Month())+2)/3, 1, '0')
		case 'r':
			out = str(Strftime(t, "%I:%M:%S %p"), false)
		case 'R':
			out = str(Strftime(t, "%H:%M"), false)
		case 's':
			out = num(int(t.Unix()), 1, '0')
		case 'S':
			out = num(t.Second(), 2, '0')
		case 'T', 'X':
			out = str(Strftime(t, "%H:%M:%S"), false)
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			out = num(wd, 1, '0')
		case 'U':
			out = num((t.YearDay()+6-int(t.Weekday()))/7, 2, '0')
		case 'V':
			out = num(week, 2, '0')
		case 'w':
			out = num(int(t.Weekday()), 1, '0')
		case 'W':
			out = num((t.YearDay()+6-(int(t.Weekday())+6)%7)/7, 2, '0')
		case 'y':
			out = num(t.Year()%100, 2, '0')
		case 'Y':
			out = num(t.Year(), 1, '0')
		case 'z':
			_, off := t.Zone()
			sign := '+'
			if off < 0 {
				sign, off = '-', -off
			}
			h, m, s := off/3600, off/60%60, off%60
			switch colons {
			case 0:
				out = fmt.Sprintf("%c%02d%02d", sign, h, m)
			case 1:
				out = fmt.Sprintf("%c%02d:%02d", sign, h, m)
			case 2:
				out = fmt.Sprintf("%c%02d:%02d:%02d", sign, h, m, s)
			default:
				out = fmt.Sprintf("%c%02d", sign, h)
				if m != 0 || s != 0 {
					out += fmt.Sprintf(":%02d", m)
				}
				if s != 0 {
					out += fmt.Sprintf(":%02d", s)
				}
			}
		case 'Z':
			name, _ := t.Zone()
			out = str(name, true)
		default:
			out = format[start : i+1]
		}
		b.WriteString(out)
	}
	return b.String()
}
