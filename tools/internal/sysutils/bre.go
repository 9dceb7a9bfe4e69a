package sysutils

import (
	"fmt"
	"regexp"
	"strings"
)

// breToGo translates a POSIX basic regular expression (with the GNU
// extensions \+ \? \|) into Go regexp syntax. Back-references are not
// supported and give an error.
func breToGo(bre string) (string, error) {
	var b strings.Builder
	atStart := true // where * is literal and ^ is an anchor
	for i := 0; i < len(bre); i++ {
		c := bre[i]
		switch c {
		case '\\':
			if i+1 == len(bre) {
				return "", fmt.Errorf("Trailing backslash")
			}
			i++
			switch d := bre[i]; d {
			case '(':
				b.WriteByte('(')
				atStart = true
				continue
			case ')':
				b.WriteByte(')')
			case '{':
				j := strings.Index(bre[i:], `\}`)
				if j < 0 {
					return "", fmt.Errorf("Unmatched \\{")
				}
				b.WriteString("{" + bre[i+1:i+j] + "}")
				i += j + 1
			case '|':
				b.WriteByte('|')
				atStart = true
				continue
			case '+', '?':
				b.WriteByte(d)
			case '<', '>':
				b.WriteString(`\b`)
			case 'w', 'W', 's', 'S', 'b', 'B':
				b.WriteByte('\\')
				b.WriteByte(d)
			case 'n':
				b.WriteString(`\n`)
			case 't':
				b.WriteString(`\t`)
			default:
				if d >= '1' && d <= '9' {
					return "", fmt.Errorf("back-references are not supported")
				}
				b.WriteString(regexp.QuoteMeta(string(d)))
			}
		case '[':
			j := bracketEnd(bre, i)
			if j < 0 {
				return "", fmt.Errorf("Unmatched [, [^, [:, [., or [=")
			}
			// Inside brackets a backslash is literal in POSIX.
			b.WriteString(strings.ReplaceAll(bre[i:j+1], `\`, `\\`))
			i = j
		case '*':
			if atStart {
				b.WriteString(`\*`)
			} else {
				b.WriteByte('*')
			}
		case '^':
			if atStart {
				b.WriteByte('^')
				continue // a * right after ^ is still literal
			}
			b.WriteString(`\^`)
		case '$':
			if i+1 == len(bre) || strings.HasPrefix(bre[i+1:], `\)`) || strings.HasPrefix(bre[i+1:], `\|`) {
				b.WriteByte('$')
			} else {
				b.WriteString(`\$`)
			}
		case '.':
			b.WriteByte('.')
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
		atStart = false
	}
	return b.String(), nil
}

// bracketEnd returns the index of the ']' closing the bracket expression
// that starts at s[i]=='[', or -1.
func bracketEnd(s string, i int) int {
	j := i + 1
	if j < len(s) && s[j] == '^' {
		j++
	}
	if j < len(s) && s[j] == ']' {
		j++
	}
	for ; j < len(s); j++ {
		switch {
		case s[j] == ']':
			return j
		case s[j] == '[' && j+1 < len(s) && strings.IndexByte(":.=", s[j+1]) >= 0:
			end := strings.Index(s[j+2:], string(s[j+1])+"]")
			if end < 0 {
				return -1
			}
			j += 2 + end + 1
		}
	}
	return -1
}
