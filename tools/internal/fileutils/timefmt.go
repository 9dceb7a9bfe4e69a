package fileutils

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// strftime formats t with the C strftime conversions agents use.
func strftime(format string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			b.WriteString(strconv.Itoa(t.Year()))
		case 'C':
			b.WriteString(pad2(t.Year() / 100))
		case 'y':
			b.WriteString(pad2(t.Year() % 100))
		case 'm':
			b.WriteString(pad2(int(t.Month())))
		case 'd':
			b.WriteString(pad2(t.Day()))
		case 'e':
			b.WriteString(t.Format("_2"))
		case 'H':
			b.WriteString(pad2(t.Hour()))
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			b.WriteString(pad2(h))
		case 'M':
			b.WriteString(pad2(t.Minute()))
		case 'S':
			b.WriteString(pad2(t.Second()))
		case 'N':
			b.WriteString(t.Format(".000000000")[1:])
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'b', 'h':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'j':
			b.WriteString(pad3(t.YearDay()))
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			b.WriteString(strconv.Itoa(wd))
		case 'w':
			b.WriteString(strconv.Itoa(int(t.Weekday())))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 's':
			b.WriteString(strconv.FormatInt(t.Unix(), 10))
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case 'R':
			b.WriteString(t.Format("15:04"))
		case 'D':
			b.WriteString(t.Format("01/02/06"))
		case 'c':
			b.WriteString(t.Format("Mon Jan _2 15:04:05 2006"))
		case 'x':
			b.WriteString(t.Format("01/02/06"))
		case 'X':
			b.WriteString(t.Format("15:04:05"))
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

func pad2(n int) string {
	if n < 10 && n >= 0 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

func pad3(n int) string {
	s := strconv.Itoa(n)
	for len(s) < 3 {
		s = "0" + s
	}
	return s
}

// humanSize renders a byte count the way GNU -h options do: powers of
// 1024, rounded up, one decimal below 10 ("1.5K", "96K", "1.0M").
func humanSize(n int64) string { return humanUnits(n, 1024, false) }

// humanUnits is humanSize with a choice of base (1000 for --si); with
// lowerK the kilo unit prints as 'k' as --si does.
func humanUnits(n int64, base float64, lowerK bool) string {
	if n < 0 {
		return "-" + humanUnits(-n, base, lowerK)
	}
	if float64(n) < base {
		return strconv.FormatInt(n, 10)
	}
	const units = "KMGTPEZY"
	v := float64(n)
	i := -1
	for v >= base && i < len(units)-1 {
		v /= base
		i++
	}
	unit := func(i int) string {
		if i == 0 && lowerK {
			return "k"
		}
		return string(units[i])
	}
	if v < 10 {
		r := math.Ceil(v*10-1e-9) / 10
		if r < 10 {
			return strconv.FormatFloat(r, 'f', 1, 64) + unit(i)
		}
		return "10" + unit(i)
	}
	r := math.Ceil(v - 1e-9)
	if r >= base && i < len(units)-1 {
		return "1.0" + unit(i+1)
	}
	return strconv.FormatFloat(r, 'f', 0, 64) + unit(i)
}
