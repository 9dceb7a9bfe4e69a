package native

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// configEntry is one variable of a git config file: Section and Name
// lowercased, Sub (the subsection) as written, as git's config.c reads
// them.
type configEntry struct {
	Section, Sub, Name string
	Value              string
	NoValue            bool // "name" alone: a boolean true
	Line               int
}

// Key is the entry's key as "section.sub.name" (or "section.name").
func (e configEntry) Key() string {
	if e.Section == "" {
		return e.Name // git accepts a variable before any section
	}
	if e.Sub != "" {
		return e.Section + "." + e.Sub + "." + e.Name
	}
	return e.Section + "." + e.Name
}

// maxConfigSize bounds the config files the lane parses.
const maxConfigSize = 1 << 20

// parseGitConfig parses a git config file with git's own grammar
// (config.c: git_parse_source, get_base_var, get_extended_base_var,
// get_value, parse_value): a UTF-8 byte order mark is skipped, CRLF is
// LF, comments start with '#' or ';' outside quotes, section names are
// case-insensitive ("[Filter.X]" is the deprecated spelling of
// [filter "x"], lowercased), a subsection is a quoted string with
// backslash escapes, several headers and a variable may share a line,
// variable names are case-insensitive, and a value may be quoted and
// continued across lines with a trailing backslash. Anything git would
// reject is an error here: the caller refuses the command, as git would
// fail on it.
func parseGitConfig(b []byte) ([]configEntry, error) {
	if len(b) > maxConfigSize {
		return nil, fmt.Errorf("config file larger than %d bytes", maxConfigSize)
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	p := &cfgParser{b: b, line: 1}
	var out []configEntry
	section, sub := "", ""
	comment := false
	for {
		c, ok := p.next()
		if !ok {
			return out, nil
		}
		switch {
		case c == '\n':
			comment = false
			continue
		case comment || c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f':
			continue
		case c == '#' || c == ';':
			comment = true
			continue
		case c == '[':
			var err error
			if section, sub, err = p.header(); err != nil {
				return nil, p.errorf("bad section header: %v", err)
			}
			continue
		case !isAlpha(c):
			return nil, p.errorf("bad config line")
		}
		e, err := p.variable(c)
		if err != nil {
			return nil, p.errorf("%v", err)
		}
		e.Section, e.Sub = section, sub
		out = append(out, e)
	}
}

type cfgParser struct {
	b    []byte
	i    int
	line int
}

func (p *cfgParser) errorf(format string, args ...any) error {
	return fmt.Errorf("line %d: %s", p.line, fmt.Sprintf(format, args...))
}

// next returns the next byte, with "\r\n" read as '\n'.
func (p *cfgParser) next() (byte, bool) {
	if p.i >= len(p.b) {
		return 0, false
	}
	c := p.b[p.i]
	p.i++
	if c == '\r' && p.i < len(p.b) && p.b[p.i] == '\n' {
		c = '\n'
		p.i++
	}
	if c == '\n' {
		p.line++
	}
	return c, true
}

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isKeyChar(c byte) bool {
	return isAlpha(c) || c >= '0' && c <= '9' || c == '-'
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

var errIncomplete = errors.New("incomplete line")

// header reads a section header after its '['.
func (p *cfgParser) header() (section, sub string, err error) {
	var name []byte
	for {
		c, ok := p.next()
		if !ok || c == '\n' {
			return "", "", errIncomplete
		}
		if c == ']' {
			break
		}
		if c == ' ' || c == '\t' {
			// The extended form: whitespace, then a quoted subsection.
			for c == ' ' || c == '\t' {
				if c, ok = p.next(); !ok {
					return "", "", errIncomplete
				}
			}
			if c != '"' {
				return "", "", errors.New("subsection must be quoted")
			}
			var s []byte
			for {
				c, ok = p.next()
				if !ok || c == '\n' {
					return "", "", errIncomplete
				}
				if c == '"' {
					break
				}
				if c == '\\' {
					if c, ok = p.next(); !ok || c == '\n' {
						return "", "", errIncomplete
					}
				}
				s = append(s, c)
			}
			if c, ok = p.next(); !ok || c != ']' {
				return "", "", errors.New("missing ] after subsection")
			}
			if len(name) == 0 {
				return "", "", errors.New("empty section name")
			}
			return string(name), string(s), nil
		}
		if !isKeyChar(c) && c != '.' {
			return "", "", fmt.Errorf("invalid character %q in section name", c)
		}
		name = append(name, lower(c))
	}
	if len(name) == 0 {
		return "", "", errors.New("empty section name")
	}
	// The deprecated [section.sub] form: everything lowercased.
	section, sub, _ = strings.Cut(string(name), ".")
	if section == "" {
		return "", "", errors.New("empty section name")
	}
	return section, sub, nil
}

// variable reads "name [= value]" whose first byte is c.
func (p *cfgParser) variable(c byte) (configEntry, error) {
	e := configEntry{Line: p.line}
	name := []byte{lower(c)}
	var ok bool
	for {
		if c, ok = p.next(); !ok {
			e.Name, e.NoValue = string(name), true
			return e, nil
		}
		if !isKeyChar(c) {
			break
		}
		name = append(name, lower(c))
	}
	e.Name = string(name)
	for c == ' ' || c == '\t' {
		if c, ok = p.next(); !ok {
			e.NoValue = true
			return e, nil
		}
	}
	switch c {
	case '\n':
		e.NoValue = true // a boolean "true"
		return e, nil
	case '=':
	default:
		return e, fmt.Errorf("bad config line (variable %q)", e.Name)
	}
	v, err := p.value()
	e.Value = v
	return e, err
}

// value reads a value after its '=' up to the end of its (continued) line.
func (p *cfgParser) value() (string, error) {
	var v []byte
	quoted, comment := false, false
	trim := 0 // length of v without its trailing unquoted whitespace
	for {
		c, ok := p.next()
		if !ok || c == '\n' {
			if quoted {
				return "", errors.New("unterminated quoted value")
			}
			return string(v[:trim]), nil
		}
		if comment {
			continue
		}
		if !quoted && (c == ' ' || c == '\t') {
			if len(v) > 0 {
				v = append(v, ' ') // as git: each blank is a space
			}
			continue
		}
		if !quoted && (c == ';' || c == '#') {
			comment = true
			continue
		}
		switch c {
		case '\\':
			c, ok = p.next()
			if !ok {
				return "", errIncomplete
			}
			switch c {
			case '\n':
				continue // a continuation line
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", fmt.Errorf("invalid escape \\%c in a value", c)
			}
			v = append(v, c)
		case '"':
			quoted = !quoted
		default:
			v = append(v, c)
		}
		trim = len(v)
	}
}
