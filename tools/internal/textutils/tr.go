package textutils

import (
	"fmt"
	"io"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("tr", trMain) }

const trHelp = `Translate, squeeze, and/or delete characters from standard input,
writing to standard output.  STRING1 and STRING2 specify arrays of
characters ARRAY1 and ARRAY2 that control the action.

  -c, -C, --complement    use the complement of ARRAY1
  -d, --delete            delete characters in ARRAY1, do not translate
  -s, --squeeze-repeats   replace each sequence of a repeated character
                            that is listed in the last specified ARRAY,
                            with a single occurrence of that character
  -t, --truncate-set1     first truncate ARRAY1 to length of ARRAY2

ARRAYs are specified as strings of characters.  Most represent themselves.
Interpreted sequences are: \NNN \\ \a \b \f \n \r \t \v, CHAR1-CHAR2,
[CHAR*], [CHAR*REPEAT], [:alnum:] [:alpha:] [:blank:] [:cntrl:] [:digit:]
[:graph:] [:lower:] [:print:] [:punct:] [:space:] [:upper:] [:xdigit:],
[=CHAR=].
`

// trSet is an expanded tr array. classes remembers where [:upper:] and
// [:lower:] were used so that case conversion pairs line up.
type trSet struct {
	chars   []byte
	repeats []int // index in chars of a [c*] without count (SET2 only), or -1
	hasRep  bool
	class   []string // class name per position, "" if none
}

func parseTrSet(s string, set2 bool) (*trSet, error) {
	ts := &trSet{}
	// First unescape into units: a byte that is literal, or markers.
	i := 0
	readChar := func() (byte, bool) {
		if i >= len(s) {
			return 0, false
		}
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			i++
			return c, true
		}
		i++
		d := s[i]
		i++
		switch d {
		case 'a':
			return 7, true
		case 'b':
			return 8, true
		case 'f':
			return 12, true
		case 'n':
			return '\n', true
		case 'r':
			return '\r', true
		case 't':
			return '\t', true
		case 'v':
			return 11, true
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(d - '0')
			for k := 0; k < 2 && i < len(s) && s[i] >= '0' && s[i] <= '7'; k++ {
				if v*8+int(s[i]-'0') > 255 {
					break
				}
				v = v*8 + int(s[i]-'0')
				i++
			}
			return byte(v), true
		}
		return d, true
	}
	add := func(c byte, class string) {
		ts.chars = append(ts.chars, c)
		ts.class = append(ts.class, class)
	}
	for i < len(s) {
		// [:class:], [=c=], [c*n]
		if s[i] == '[' && i+1 < len(s) {
			if s[i+1] == ':' {
				if end := strings.Index(s[i+2:], ":]"); end >= 0 {
					name := s[i+2 : i+2+end]
					f, ok := classNames[name]
					if !ok {
						return nil, fmt.Errorf("invalid character class %s", quote(name))
					}
					for c := 0; c < 256; c++ {
						if f(byte(c)) {
							add(byte(c), name)
						}
					}
					i += 2 + end + 2
					continue
				}
			}
			if s[i+1] == '=' && i+4 < len(s) && s[i+3] == '=' && s[i+4] == ']' {
				add(s[i+2], "")
				i += 5
				continue
			}
			// [c*n]
			save := i
			i++
			c, ok := readChar()
			if ok && i < len(s) && s[i] == '*' {
				j := strings.IndexByte(s[i:], ']')
				if j >= 0 {
					num := s[i+1 : i+j]
					i += j + 1
					if !set2 {
						return nil, fmt.Errorf("the [c*] repeat construct may not appear in string1")
					}
					if num == "" {
						ts.hasRep = true
						ts.repeats = append(ts.repeats, len(ts.chars))
						add(c, "*")
						continue
					}
					base := 10
					if num[0] == '0' {
						base = 8
					}
					n := 0
					for _, d := range num {
						if d < '0' || int(d-'0') >= base {
							return nil, fmt.Errorf("invalid repeat count %s in [c*n] construct", quote(num))
						}
						n = n*base + int(d-'0')
					}
					if n == 0 {
						ts.hasRep = true
						ts.repeats = append(ts.repeats, len(ts.chars))
						add(c, "*")
						continue
					}
					for k := 0; k < n; k++ {
						add(c, "")
					}
					continue
				}
			}
			i = save
		}
		c, _ := readChar()
		// Range c-d.
		if i+1 < len(s) && s[i] == '-' {
			i++
			d, _ := readChar()
			if d < c {
				return nil, fmt.Errorf("range-endpoints of '%c-%c' are in reverse collating sequence order", c, d)
			}
			for x := int(c); x <= int(d); x++ {
				add(byte(x), "")
			}
			continue
		}
		add(c, "")
	}
	return ts, nil
}

func trMain(e *cmd.Env) int {
	t := newTool(e)
	opts, operands, st, ok := t.parse([]optDef{
		{'c', "complement", noArg}, {'C', "", noArg}, {'d', "delete", noArg},
		{'s', "squeeze-repeats", noArg}, {'t', "truncate-set1", noArg},
	}, "tr [OPTION]... STRING1 [STRING2]", trHelp, 1)
	if !ok {
		return st
	}
	var comp, del, squeeze, trunc bool
	for _, o := range opts {
		switch o.name {
		case "complement", "C":
			comp = true
		case "delete":
			del = true
		case "squeeze-repeats":
			squeeze = true
		case "truncate-set1":
			trunc = true
		}
	}
	translating := !del && len(operands) >= 2
	need := 2
	if del && !squeeze || !del && squeeze && len(operands) < 2 {
		need = 1
	}
	switch {
	case len(operands) == 0:
		e.Errorf("missing operand")
		t.usageHint()
		return 1
	case len(operands) < need:
		e.Errorf("missing operand after %s", quote(operands[len(operands)-1]))
		if !del && !squeeze {
			fmt.Fprintf(e.Stderr, "Two strings must be given when translating.\n")
		} else {
			fmt.Fprintf(e.Stderr, "Two strings must be given when both deleting and squeezing repeats.\n")
		}
		t.usageHint()
		return 1
	case len(operands) > need:
		e.Errorf("extra operand %s", quote(operands[need]))
		if del && !squeeze && len(operands) == 2 {
			fmt.Fprintf(e.Stderr, "Only one string may be given when deleting without squeezing repeats.\n")
		}
		t.usageHint()
		return 1
	}
	s1, err := parseTrSet(operands[0], false)
	if err != nil {
		e.Errorf("%s", err)
		return 1
	}
	var s2 *trSet
	if len(operands) > 1 {
		if s2, err = parseTrSet(operands[1], true); err != nil {
			e.Errorf("%s", err)
			return 1
		}
	}
	var in1 [256]bool
	for _, c := range s1.chars {
		in1[c] = true
	}
	if comp {
		var cs []byte
		for c := 0; c < 256; c++ {
			if !in1[c] {
				cs = append(cs, byte(c))
			}
		}
		for c := range in1 {
			in1[c] = !in1[c]
		}
		s1 = &trSet{chars: cs, class: make([]string, len(cs))}
	}
	var xlate [256]byte
	for c := range xlate {
		xlate[c] = byte(c)
	}
	var squeezeSet [256]bool
	if translating {
		a, b := s1.chars, s2.chars
		if s2.hasRep {
			// [c*] fills SET2 up to the length of SET1.
			fill := len(a) - (len(b) - len(s2.repeats))
			var nb []byte
			for i, c := range b {
				if s2.class[i] == "*" {
					for k := 0; k < fill; k++ {
						nb = append(nb, c)
					}
					fill = 0
					continue
				}
				nb = append(nb, c)
			}
			b = nb
		}
		if len(b) == 0 && len(a) > 0 {
			e.Errorf("when not truncating set1, string2 must be non-empty")
			return 1
		}
		if trunc && len(a) > len(b) {
			a = a[:len(b)]
		}
		for len(b) < len(a) {
			b = append(b, b[len(b)-1])
		}
		for i, c := range a {
			xlate[c] = b[i]
		}
		if squeeze {
			for _, c := range b {
				squeezeSet[c] = true
			}
		}
	} else if squeeze {
		last := s1
		lastComp := comp && !del
		if del {
			last, lastComp = s2, false
		}
		for _, c := range last.chars {
			squeezeSet[c] = true
		}
		if lastComp {
			for c := range squeezeSet {
				squeezeSet[c] = in1[c]
			}
		}
	}
	buf := make([]byte, 64<<10)
	w := t.out
	prev := -1
	for {
		n, err := e.Stdin.Read(buf)
		for _, c := range buf[:n] {
			if del && in1[c] {
				continue
			}
			c = xlate[c]
			if squeeze && squeezeSet[c] && int(c) == prev {
				continue
			}
			prev = int(c)
			w.WriteByte(c)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.out.Flush()
			e.Errorf("read error: %s", strerror(err))
			return 1
		}
	}
	return t.flush(0)
}
