package morecmds

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("iconv", iconvMain) }

// A charset of iconv: decode reads one character from p (n bytes; n == 0
// with incomplete for a truncated sequence at the end, rune < 0 for an
// invalid sequence), encode appends r or reports it unrepresentable.
type charset struct {
	name   string
	decode func(p []byte) (r rune, n int, incomplete bool)
	encode func(dst []byte, r rune) ([]byte, bool)
	bom    []byte // written before the output of BOM-marked encodings
}

// cp1252High maps Windows-1252's 0x80..0x9f (0: undefined).
var cp1252High = [32]rune{0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017d, 0,
	0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0, 0x017e, 0x0178}

func singleByte(limit rune, high *[32]rune) (func([]byte) (rune, int, bool), func([]byte, rune) ([]byte, bool)) {
	dec := func(p []byte) (rune, int, bool) {
		c := rune(p[0])
		if high != nil && c >= 0x80 && c < 0xa0 {
			if high[c-0x80] == 0 {
				return -1, 1, false
			}
			return high[c-0x80], 1, false
		}
		if c >= limit {
			return -1, 1, false
		}
		return c, 1, false
	}
	enc := func(dst []byte, r rune) ([]byte, bool) {
		if high != nil {
			for i, h := range high {
				if h == r && h != 0 {
					return append(dst, byte(0x80+i)), true
				}
			}
			if r >= 0x80 && r < 0xa0 {
				return dst, false
			}
		}
		if r < 0 || r >= limit {
			return dst, false
		}
		return append(dst, byte(r)), true
	}
	return dec, enc
}

// byteOrder reads and appends fixed-size integers.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func utf16Codec(order byteOrder) (func([]byte) (rune, int, bool), func([]byte, rune) ([]byte, bool)) {
	dec := func(p []byte) (rune, int, bool) {
		if len(p) < 2 {
			return 0, 0, true
		}
		u := rune(order.Uint16(p))
		if u >= 0xd800 && u < 0xdc00 {
			if len(p) < 4 {
				return 0, 0, true
			}
			l := rune(order.Uint16(p[2:]))
			if l < 0xdc00 || l >= 0xe000 {
				return -1, 2, false
			}
			return 0x10000 + (u-0xd800)<<10 + (l - 0xdc00), 4, false
		}
		if u >= 0xdc00 && u < 0xe000 {
			return -1, 2, false
		}
		return u, 2, false
	}
	enc := func(dst []byte, r rune) ([]byte, bool) {
		if r >= 0x10000 {
			r -= 0x10000
			dst = order.AppendUint16(dst, uint16(0xd800+(r>>10)))
			return order.AppendUint16(dst, uint16(0xdc00+(r&0x3ff))), true
		}
		return order.AppendUint16(dst, uint16(r)), true
	}
	return dec, enc
}

func utf32Codec(order byteOrder) (func([]byte) (rune, int, bool), func([]byte, rune) ([]byte, bool)) {
	dec := func(p []byte) (rune, int, bool) {
		if len(p) < 4 {
			return 0, 0, true
		}
		u := order.Uint32(p)
		if u > utf8.MaxRune || u >= 0xd800 && u < 0xe000 {
			return -1, 4, false
		}
		return rune(u), 4, false
	}
	enc := func(dst []byte, r rune) ([]byte, bool) { return order.AppendUint32(dst, uint32(r)), true }
	return dec, enc
}

// lookupCharset finds a charset by any of its common names.
func lookupCharset(name string) (*charset, bool) {
	n := strings.ToUpper(name)
	n = strings.NewReplacer("_", "-", " ", "").Replace(n)
	c := &charset{name: n}
	switch n {
	case "UTF-8", "UTF8":
		c.decode = func(p []byte) (rune, int, bool) {
			if !utf8.FullRune(p) {
				return 0, 0, true
			}
			r, size := utf8.DecodeRune(p)
			if r == utf8.RuneError && size <= 1 {
				return -1, 1, false
			}
			return r, size, false
		}
		c.encode = func(dst []byte, r rune) ([]byte, bool) { return utf8.AppendRune(dst, r), true }
	case "ASCII", "US-ASCII", "ANSI-X3.4-1968", "646", "US":
		c.decode, c.encode = singleByte(0x80, nil)
	case "ISO-8859-1", "ISO8859-1", "LATIN1", "LATIN-1", "L1", "ISO-IR-100", "CP819", "IBM819":
		c.decode, c.encode = singleByte(0x100, nil)
	case "WINDOWS-1252", "CP1252", "MS-ANSI":
		c.decode, c.encode = singleByte(0x100, &cp1252High)
	case "UTF-16BE", "UNICODEBIG", "UCS-2BE":
		c.decode, c.encode = utf16Codec(binary.BigEndian)
	case "UTF-16LE", "UNICODELITTLE", "UCS-2LE":
		c.decode, c.encode = utf16Codec(binary.LittleEndian)
	case "UTF-16", "UTF16":
		// Input: a BOM chooses the order (little-endian without one);
		// output: little-endian with a BOM, as glibc on this machine.
		c.decode, c.encode = utf16Codec(binary.LittleEndian)
		c.bom = []byte{0xff, 0xfe}
	case "UTF-32BE", "UCS-4BE":
		c.decode, c.encode = utf32Codec(binary.BigEndian)
	case "UTF-32LE", "UCS-4LE":
		c.decode, c.encode = utf32Codec(binary.LittleEndian)
	case "UTF-32", "UTF32":
		c.decode, c.encode = utf32Codec(binary.LittleEndian)
		c.bom = []byte{0xff, 0xfe, 0, 0}
	default:
		return nil, false
	}
	return c, true
}

var iconvNames = []string{"ANSI_X3.4-1968", "ASCII", "CP1252", "ISO-8859-1", "LATIN1", "US-ASCII", "UTF-16", "UTF-16BE", "UTF-16LE",
	"UTF-32", "UTF-32BE", "UTF-32LE", "UTF-8", "WINDOWS-1252"}

func iconvMain(e *cmd.Env) int {
	spec := []cmd.Option{{Short: 'f', Long: "from-code", Arg: cmd.RequiredArg}, {Short: 't', Long: "to-code", Arg: cmd.RequiredArg},
		{Short: 'l', Long: "list"}, {Short: 'c'}, {Short: 'o', Long: "output", Arg: cmd.RequiredArg}, {Short: 's', Long: "silent"}}
	opts, files, status, ok := parse(e, spec, "iconv [OPTION...] [FILE...]", 64)
	if !ok {
		return status
	}
	from, to, output := "UTF-8", "UTF-8", ""
	omit := false
	for _, o := range opts {
		switch o.Name {
		case "from-code":
			from = o.Value
		case "to-code":
			to = o.Value
		case "c":
			omit = true
		case "output":
			output = o.Value
		case "list":
			for _, n := range iconvNames {
				fmt.Fprintf(e.Stdout, "%s//\n", n)
			}
			return 0
		}
	}
	// Suffixes: //IGNORE drops what the target cannot represent; //TRANSLIT
	// writes '?' for it.
	translit, ignoreSuffix := false, false
	if i := strings.Index(to, "//"); i >= 0 {
		for _, s := range strings.Split(strings.ToUpper(to[i+2:]), "//") {
			switch s {
			case "IGNORE":
				omit, ignoreSuffix = true, true
			case "TRANSLIT":
				translit = true
			}
		}
		to = to[:i]
	}
	from, _, _ = strings.Cut(from, "//")
	src, ok1 := lookupCharset(from)
	dst, ok2 := lookupCharset(to)
	if !ok1 || !ok2 {
		e.Errorf("failed to start conversion processing")
		return 1
	}
	var w io.Writer = e.Stdout
	if output != "" {
		f, err := os.Create(output)
		if err != nil {
			e.Errorf("cannot open output file `%s': %s", output, strerror(err))
			return 1
		}
		defer f.Close()
		w = f
	}
	out := bufio.NewWriter(w)
	wroteBOM := false
	for _, name := range inputs(files) {
		data, err := readAll(e, name)
		if err != nil {
			out.Flush()
			if name == "-" {
				e.Errorf("unable to read input: %s", strerror(err))
			} else {
				e.Errorf("cannot open input file `%s': %s", name, strerror(err))
			}
			status = 1
			continue
		}
		decode := src.decode
		start := 0
		switch src.name {
		case "UTF-16", "UTF16":
			order := byteOrder(binary.LittleEndian)
			if len(data) >= 2 && data[0] == 0xff && data[1] == 0xfe {
				start = 2
			} else if len(data) >= 2 && data[0] == 0xfe && data[1] == 0xff {
				order, start = binary.BigEndian, 2
			}
			decode, _ = utf16Codec(order)
		case "UTF-32", "UTF32":
			order := byteOrder(binary.LittleEndian)
			if len(data) >= 4 && string(data[:4]) == "\xff\xfe\x00\x00" {
				start = 4
			} else if len(data) >= 4 && string(data[:4]) == "\x00\x00\xfe\xff" {
				order, start = binary.BigEndian, 4
			}
			decode, _ = utf32Codec(order)
		}
		var buf []byte
		failed, omitted := false, false
		for i := start; i < len(data); {
			r, n, incomplete := decode(data[i:])
			if incomplete {
				out.Write(buf)
				out.Flush()
				e.Errorf("incomplete character or shift sequence at end of buffer")
				return 1
			}
			if r < 0 {
				if omit {
					i += n
					omitted = true
					continue
				}
				failed = true
				out.Write(buf)
				out.Flush()
				e.Errorf("illegal input sequence at position %d", i)
				break
			}
			if dst.bom != nil && !wroteBOM {
				buf = append(buf, dst.bom...)
				wroteBOM = true
			}
			var ok bool
			before := len(buf)
			buf, ok = dst.encode(buf, r)
			if !ok {
				buf = buf[:before]
				switch {
				case translit:
					buf, _ = dst.encode(buf, '?')
				case omit:
					omitted = true
				default:
					failed = true
					out.Write(buf)
					out.Flush()
					e.Errorf("illegal input sequence at position %d", i)
					break
				}
				if failed {
					break
				}
			}
			i += n
		}
		if failed {
			return 1
		}
		out.Write(buf)
		if omitted && ignoreSuffix {
			// glibc's iconv reports the skipped characters of //IGNORE
			// as an error at the end of the input.
			out.Flush()
			e.Errorf("illegal input sequence at position %d", len(data))
			return 1
		}
	}
	return flush(e, out, status)
}
