package wire

import (
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendStateJSON appends st to b as JSON, the encoding/json form of State
// (field names, omitempty, sorted map keys; strings that are not valid
// UTF-8 get U+FFFD, as encoding/json gives them), without reflection: the
// shell encodes its state after every run that changed it, where
// encoding/json is slow.
func AppendStateJSON(b []byte, st State) []byte {
	b = append(b, `{"Dir":`...)
	b = appendString(b, st.Dir)
	b = append(b, `,"Umask":`...)
	b = strconv.AppendUint(b, uint64(st.Umask), 10)
	b = append(b, `,"Vars":`...)
	if st.Vars == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, v := range st.Vars {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendVar(b, v)
		}
		b = append(b, ']')
	}
	b = append(b, `,"Funcs":`...)
	b = appendMap(b, st.Funcs)
	b = append(b, `,"Aliases":`...)
	b = appendMap(b, st.Aliases)
	b = append(b, `,"Options":`...)
	b = appendStrings(b, st.Options)
	b = append(b, `,"ShellOptions":`...)
	b = appendStrings(b, st.ShellOptions)
	b = append(b, `,"ErrTrap":`...)
	b = appendString(b, st.ErrTrap)
	return append(b, '}')
}

func appendVar(b []byte, v Var) []byte {
	b = append(b, `{"Name":`...)
	b = appendString(b, v.Name)
	b = append(b, `,"Kind":`...)
	b = appendString(b, v.Kind)
	if v.Str != "" {
		b = append(b, `,"Str":`...)
		b = appendString(b, v.Str)
	}
	if len(v.List) > 0 {
		b = append(b, `,"List":`...)
		b = appendStrings(b, v.List)
	}
	if len(v.Indexes) > 0 {
		b = append(b, `,"Indexes":[`...)
		for i, n := range v.Indexes {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(n), 10)
		}
		b = append(b, ']')
	}
	if len(v.Map) > 0 {
		b = append(b, `,"Map":`...)
		b = appendMap(b, v.Map)
	}
	if v.Exported {
		b = append(b, `,"Exported":true`...)
	}
	if v.ReadOnly {
		b = append(b, `,"ReadOnly":true`...)
	}
	return append(b, '}')
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

func appendMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, m[k])
	}
	return append(b, '}')
}

const hex = "0123456789abcdef"

// appendString is encoding/json's string encoding with HTML escaping.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
