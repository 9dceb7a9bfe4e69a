package morecmds

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("hexdump", hexdumpMain)
	cmd.Register("hd", hexdumpMain)
}

// hexFormat is one of hexdump's built-in display formats: every line
// shows 16 bytes as units of size bytes, each rendered by unit (or blank
// of the same width past the end of the data).
type hexFormat struct {
	offWidth  int    // digits of the line offset
	offSep    string // after the offset
	size      int    // bytes per unit
	unit      func(v uint64) string
	width     int  // width of one rendered unit, for padding
	canonical bool // -C: two groups of 8 and the |text| column
}

var (
	hexDefault = hexFormat{offWidth: 7, offSep: " ", size: 2, width: 5, unit: func(v uint64) string { return fmt.Sprintf("%04x ", v) }}
	hexOneOct  = hexFormat{offWidth: 7, offSep: " ", size: 1, width: 4, unit: func(v uint64) string { return fmt.Sprintf("%03o ", v) }}
	hexChar    = hexFormat{offWidth: 7, offSep: " ", size: 1, width: 4, unit: func(v uint64) string { return hexCharUnit(byte(v)) + " " }}
	hexDec     = hexFormat{offWidth: 7, offSep: " ", size: 2, width: 8, unit: func(v uint64) string { return fmt.Sprintf("  %05d ", v) }}
	hexOct     = hexFormat{offWidth: 7, offSep: " ", size: 2, width: 8, unit: func(v uint64) string { return fmt.Sprintf(" %06o ", v) }}
	hexHex     = hexFormat{offWidth: 7, offSep: " ", size: 2, width: 8, unit: func(v uint64) string { return fmt.Sprintf("   %04x ", v) }}
	hexCanon   = hexFormat{offWidth: 8, offSep: "  ", size: 1, width: 3, canonical: true, unit: func(v uint64) string { return fmt.Sprintf("%02x ", v) }}
)

// hexCharUnit is hexdump's %_c: a printable character, a C escape, or
// three octal digits, right-aligned in three columns.
func hexCharUnit(c byte) string {
	switch c {
	case 0:
		return " \\0"
	case '\a':
		return " \\a"
	case '\b':
		return " \\b"
	case '\f':
		return " \\f"
	case '\n':
		return " \\n"
	case '\r':
		return " \\r"
	case '\t':
		return " \\t"
	case '\v':
		return " \\v"
	}
	if c >= 32 && c < 127 {
		return "  " + string(rune(c))
	}
	return fmt.Sprintf("%03o", c)
}

func (f *hexFormat) line(w *bufio.Writer, off int64, data []byte) {
	fmt.Fprintf(w, "%0*x%s", f.offWidth, off, f.offSep)
	for i := 0; i < 16; i += f.size {
		if f.canonical && i == 8 {
			w.WriteByte(' ')
		}
		// hexdump drops the trailing blank of the last unit of a line.
		last := !f.canonical && i+f.size >= 16
		if i >= len(data) {
			if last {
				w.WriteString(strings.Repeat(" ", f.width-1))
			} else {
				w.WriteString(strings.Repeat(" ", f.width))
			}
			continue
		}
		var v uint64
		for k := f.size - 1; k >= 0; k-- { // little-endian units
			v <<= 8
			if i+k < len(data) {
				v |= uint64(data[i+k])
			}
		}
		u := f.unit(v)
		if last {
			u = u[:len(u)-1]
		}
		w.WriteString(u)
	}
	if f.canonical {
		w.WriteString(" |")
		for _, c := range data {
			if c < 32 || c >= 127 {
				c = '.'
			}
			w.WriteByte(c)
		}
		w.WriteString("|")
	}
	w.WriteByte('\n')
}

func hexdumpMain(e *cmd.Env) int {
	spec := []cmd.Option{
		{Short: 'b', Long: "one-byte-octal"}, {Short: 'c', Long: "one-byte-char"}, {Short: 'C', Long: "canonical"},
		{Short: 'd', Long: "two-bytes-decimal"}, {Short: 'o', Long: "two-bytes-octal"}, {Short: 'x', Long: "two-bytes-hex"},
		{Short: 'n', Long: "length", Arg: cmd.RequiredArg}, {Short: 's', Long: "skip", Arg: cmd.RequiredArg},
		{Short: 'v', Long: "no-squeezing"}, {Short: 'e', Long: "format", Arg: cmd.RequiredArg},
		{Short: 'f', Long: "format-file", Arg: cmd.RequiredArg}, {Short: 'L', Long: "color", Arg: cmd.OptionalArg},
	}
	opts, files, status, ok := parse(e, spec, "hexdump [options] <file>...", 1)
	if !ok {
		return status
	}
	var formats []*hexFormat
	if e.Name() == "hd" {
		formats = append(formats, &hexCanon)
	}
	length, skip := int64(-1), int64(0)
	squeeze := true
	for _, o := range opts {
		switch o.Name {
		case "one-byte-octal":
			formats = append(formats, &hexOneOct)
		case "one-byte-char":
			formats = append(formats, &hexChar)
		case "canonical":
			formats = append(formats, &hexCanon)
		case "two-bytes-decimal":
			formats = append(formats, &hexDec)
		case "two-bytes-octal":
			formats = append(formats, &hexOct)
		case "two-bytes-hex":
			formats = append(formats, &hexHex)
		case "no-squeezing":
			squeeze = false
		case "length", "skip":
			n, ok := parseSuffixed(o.Value)
			if !ok {
				what := "length"
				if o.Name == "skip" {
					what = "skip"
				}
				e.Errorf("failed to parse %s: '%s'", what, o.Value)
				return 1
			}
			if o.Name == "length" {
				length = n
			} else {
				skip = n
			}
		case "format", "format-file":
			e.Errorf("format strings (-%s) are not supported", o.Name[:1])
			return 1
		}
	}
	if len(formats) == 0 {
		formats = append(formats, &hexDefault)
	}
	// The operands are read as one stream.
	var readers []io.Reader
	failed := 0
	for _, name := range files {
		r, closeFn, err := openIn(e, name)
		if err != nil {
			e.Errorf("%s: %s", name, strerror(err))
			failed++
			status = 1
			continue
		}
		defer closeFn()
		readers = append(readers, r)
	}
	if len(files) == 0 {
		readers = append(readers, e.Stdin)
	}
	if len(files) > 0 && failed == len(files) {
		e.Errorf("all input file arguments failed")
		return 1
	}
	in := bufio.NewReader(io.MultiReader(readers...))
	if skip > 0 {
		n, _ := io.CopyN(io.Discard, in, skip)
		if n < skip {
			skip = n
		}
	}
	var src io.Reader = in
	if length >= 0 {
		src = io.LimitReader(in, length)
	}
	out := bufio.NewWriter(e.Stdout)
	off := skip
	var prev []byte
	starred := false
	buf := make([]byte, 16)
	for {
		n, err := io.ReadFull(src, buf)
		if n == 0 {
			if err != nil && err != io.EOF {
				e.Errorf("%s", strerror(err))
				status = 1
			}
			break
		}
		data := buf[:n]
		if squeeze && n == 16 && prev != nil && bytes.Equal(prev, data) {
			if !starred {
				out.WriteString("*\n")
				starred = true
			}
		} else {
			starred = false
			for _, f := range formats {
				f.line(out, off, data)
			}
			prev = append(prev[:0], data...)
		}
		off += int64(n)
		if n < 16 {
			break
		}
	}
	if off > skip || starred {
		fmt.Fprintf(out, "%0*x\n", formats[len(formats)-1].offWidth, off)
	}
	return flush(e, out, status)
}
