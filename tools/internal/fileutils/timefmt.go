package fileutils

import (
	"math"
	"strconv"
)

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
