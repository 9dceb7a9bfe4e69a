package runtime

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadSize is wrapped by ParseBytes errors.
var ErrBadSize = errors.New("bad size")

// ParseBytes parses a memory size such as "64MiB", "1G", "512k" or
// "1048576". Units are binary whatever their spelling: K, KB, KiB = 1024;
// M, MB, MiB = 1024²; G, GB, GiB = 1024³; T, TB, TiB = 1024⁴ (case
// insensitive). The value must be a positive integer.
func ParseBytes(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("%w %q: want a number with an optional unit, e.g. 64MiB", ErrBadSize, s)
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w %q: %v", ErrBadSize, s, err)
	}
	var shift uint
	switch unit {
	case "", "b":
	case "k", "kb", "kib":
		shift = 10
	case "m", "mb", "mib":
		shift = 20
	case "g", "gb", "gib":
		shift = 30
	case "t", "tb", "tib":
		shift = 40
	default:
		return 0, fmt.Errorf("%w %q: unknown unit %q", ErrBadSize, s, strings.TrimSpace(t[i:]))
	}
	if n == 0 {
		return 0, fmt.Errorf("%w %q: must be positive", ErrBadSize, s)
	}
	if n > (1<<64-1)>>shift {
		return 0, fmt.Errorf("%w %q: too large", ErrBadSize, s)
	}
	return n << shift, nil
}
