package fileutils

import "errors"

var errBadPattern = errors.New("bad pattern")

// pathMatch is fnmatch(3) without flags: '*' and '?' match any byte
// including '/', "[...]" classes accept '!' or '^' for negation and
// [:alpha:]-style names, and '\' quotes the next byte.
func pathMatch(pattern, name string) (bool, error) {
	return fnmatch(pattern, name, false), nil
}

// fnmatch matches name against a shell pattern; fold makes the match
// case-insensitive (ASCII), as find -iname does.
func fnmatch(p, s string, fold bool) bool {
	// Iterative matching with backtracking to the last '*'.
	px, sx := 0, 0
	starP, starS := -1, -1
	for sx < len(s) {
		if px < len(p) {
			switch p[px] {
			case '*':
				starP, starS = px, sx
				px++
				continue
			case '?':
				px++
				sx++
				continue
			case '[':
				if ok, n := matchClass(p[px:], s[sx], fold); n > 0 {
					if ok {
						px += n
						sx++
						continue
					}
					goto backtrack
				}
				// An unterminated '[' matches itself.
				if s[sx] == '[' {
					px++
					sx++
					continue
				}
				goto backtrack
			case '\\':
				if px+1 < len(p) {
					if eqFold(p[px+1], s[sx], fold) {
						px += 2
						sx++
						continue
					}
					goto backtrack
				}
			}
			if eqFold(p[px], s[sx], fold) {
				px++
				sx++
				continue
			}
		}
	backtrack:
		if starP < 0 {
			return false
		}
		starS++
		px, sx = starP+1, starS
	}
	for px < len(p) && p[px] == '*' {
		px++
	}
	return px == len(p)
}

func eqFold(a, b byte, fold bool) bool {
	if a == b {
		return true
	}
	if !fold {
		return false
	}
	return lower(a) == lower(b)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 32
	}
	return c
}

// matchClass matches c against the bracket expression at the start of p.
// It returns the length of the expression, 0 if it is not terminated.
func matchClass(p string, c byte, fold bool) (bool, int) {
	i := 1
	neg := false
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		neg = true
		i++
	}
	matched := false
	first := true
	for i < len(p) {
		if p[i] == ']' && !first {
			return matched != neg, i + 1
		}
		first = false
		if p[i] == '[' && i+1 < len(p) && p[i+1] == ':' {
			end := -1
			for j := i + 2; j+1 < len(p); j++ {
				if p[j] == ':' && p[j+1] == ']' {
					end = j
					break
				}
			}
			if end > 0 {
				if classHas(p[i+2:end], c) || fold && (classHas(p[i+2:end], lower(c)) || classHas(p[i+2:end], upper(c))) {
					matched = true
				}
				i = end + 2
				continue
			}
		}
		lo := p[i]
		if lo == '\\' && i+1 < len(p) {
			i++
			lo = p[i]
		}
		hi := lo
		if i+2 < len(p) && p[i+1] == '-' && p[i+2] != ']' {
			hi = p[i+2]
			if hi == '\\' && i+3 < len(p) {
				i++
				hi = p[i+2]
			}
			i += 2
		}
		if lo <= c && c <= hi || fold && (lo <= lower(c) && lower(c) <= hi || lo <= upper(c) && upper(c) <= hi) {
			matched = true
		}
		i++
	}
	return false, 0
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 32
	}
	return c
}

func classHas(class string, c byte) bool {
	switch class {
	case "alpha":
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	case "digit":
		return isDigit(c)
	case "alnum":
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c)
	case "upper":
		return c >= 'A' && c <= 'Z'
	case "lower":
		return c >= 'a' && c <= 'z'
	case "space":
		return c == ' ' || c >= '\t' && c <= '\r'
	case "blank":
		return c == ' ' || c == '\t'
	case "punct":
		return c > ' ' && c < 0x7f && !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c))
	case "xdigit":
		return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
	case "print":
		return c >= ' ' && c < 0x7f
	case "graph":
		return c > ' ' && c < 0x7f
	case "cntrl":
		return c < ' ' || c == 0x7f
	}
	return false
}
