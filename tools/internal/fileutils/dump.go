package fileutils

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("od", odMain)
	cmd.Register("xxd", xxdMain)
	cmd.Register("strings", stringsMain)
}

// multiReader concatenates the named inputs ("-" is stdin), reporting
// open errors through report and skipping those files.
func multiReader(e *cmd.Env, files []string, report func(name string, err error)) (io.Reader, func()) {
	if len(files) == 0 {
		return e.Stdin, func() {}
	}
	var rs []io.Reader
	var closers []func()
	for _, f := range files {
		r, c, err := openIn(e, f)
		if err != nil {
			report(f, err)
			continue
		}
		rs = append(rs, r)
		closers = append(closers, c)
	}
	return io.MultiReader(rs...), func() {
		for _, c := range closers {
			c()
		}
	}
}

var odUsage = usage{
	synopsis: "[OPTION]... [FILE]...",
	text: `Write an unambiguous representation, octal bytes by default,
of FILE to standard output.

  -A, --address-radix=RADIX   output format for file offsets; RADIX is one
                                of [doxn], for Decimal, Octal, Hex or None
  -j, --skip-bytes=BYTES      skip BYTES input bytes first
  -N, --read-bytes=BYTES      limit dump to BYTES input bytes
  -t, --format=TYPE           select output format or formats
  -v, --output-duplicates     do not use * to mark line suppression
  -w[BYTES], --width[=BYTES]  output BYTES bytes per output line
  -a   same as -t a,  select named characters, ignoring high-order bit
  -b   same as -t o1, select octal bytes
  -c   same as -t c,  select printable characters or backslash escapes
  -d   same as -t u2, select unsigned decimal 2-byte units
  -f   same as -t fF, select floats
  -i   same as -t dI, select decimal ints
  -l   same as -t dL, select decimal longs
  -o   same as -t o2, select octal 2-byte units
  -s   same as -t d2, select decimal 2-byte units
  -x   same as -t x2, select hexadecimal 2-byte units

TYPE is made up of one or more of these specifications:
  a  named character;  c  printable character or backslash escape;
  d[SIZE] signed decimal;  f[SIZE] floating point;  o[SIZE] octal;
  u[SIZE] unsigned decimal;  x[SIZE] hexadecimal; SIZE is 1, 2, 4, 8 or C, S, I, L.
`,
	bad: 1,
}

// odType is one output format: kind (a c d f o u x) and element size.
type odType struct {
	kind  byte
	size  int
	width int  // field width including the leading space
	z     bool // append the printable characters, >like this<
}

var odNames = [...]string{"nul", "soh", "stx", "etx", "eot", "enq", "ack", "bel", "bs", "ht", "nl", "vt", "ff", "cr", "so", "si",
	"dle", "dc1", "dc2", "dc3", "dc4", "nak", "syn", "etb", "can", "em", "sub", "esc", "fs", "gs", "rs", "us", "sp"}

func parseOdTypes(s string) ([]odType, error) {
	var ts []odType
	for s != "" {
		k := s[0]
		s = s[1:]
		t := odType{kind: k}
		switch k {
		case 'a', 'c':
			t.size = 1
		case 'd', 'o', 'u', 'x', 'f':
			t.size = 4
			if k == 'f' {
				t.size = 8
			}
			if s != "" {
				switch s[0] {
				case 'C':
					t.size, s = 1, s[1:]
				case 'S':
					t.size, s = 2, s[1:]
				case 'I':
					t.size, s = 4, s[1:]
				case 'L':
					t.size, s = 8, s[1:]
				case 'F':
					t.size, s = 4, s[1:]
				case 'D':
					t.size, s = 8, s[1:]
				default:
					i := 0
					for i < len(s) && isDigit(s[i]) {
						i++
					}
					if i > 0 {
						n, _ := strconv.Atoi(s[:i])
						t.size, s = n, s[i:]
					}
				}
			}
			if t.size != 1 && t.size != 2 && t.size != 4 && t.size != 8 || k == 'f' && t.size < 4 {
				return nil, fmt.Errorf("invalid type string %s;\nthis system doesn't provide a %d-byte integral type", quote(string(k)+strconv.Itoa(t.size)), t.size)
			}
		default:
			return nil, fmt.Errorf("invalid character '%c' in type string %s", k, quote(string(k)+s))
		}
		if s != "" && s[0] == 'z' {
			s, t.z = s[1:], true
		}
		t.width = odWidth(t)
		ts = append(ts, t)
	}
	return ts, nil
}

func odWidth(t odType) int {
	switch t.kind {
	case 'a', 'c':
		return 4
	case 'f':
		if t.size == 4 {
			return 15
		}
		return 24
	}
	bits := float64(8 * t.size)
	var digits int
	switch t.kind {
	case 'o':
		digits = int(math.Ceil(bits / 3))
	case 'x':
		digits = 2 * t.size
	case 'u':
		digits = len(strconv.FormatUint(1<<uint(bits)-1, 10))
		if t.size == 8 {
			digits = 20
		}
	case 'd':
		digits = len(strconv.FormatUint(1<<uint(bits-1), 10)) + 1
		if t.size == 8 {
			digits = 20
		}
	}
	return digits + 1
}

func odMain(e *cmd.Env) int {
	opts, files, st, done := getopt(e, "A,address-radix: j,skip-bytes: N,read-bytes: S,strings? t,format: v,output-duplicates w,width? ,traditional ,endian: a b c d D f i l o O s x X h B e F H I L", odUsage)
	if done {
		return st
	}
	radix := byte('o')
	var skip, limit int64 = 0, -1
	var types []odType
	width := 16
	dup := false
	add := func(s string) bool {
		ts, err := parseOdTypes(s)
		if err != nil {
			e.Errorf("%s", err.Error())
			return false
		}
		types = append(types, ts...)
		return true
	}
	short := map[string]string{"a": "a", "b": "o1", "c": "c", "d": "u2", "D": "u4", "f": "fF", "F": "fD", "i": "dI", "I": "dL", "L": "dL",
		"l": "dL", "o": "o2", "O": "o4", "s": "d2", "x": "x2", "X": "x4", "h": "x2", "H": "x4", "B": "o2", "e": "fD"}
	for _, o := range opts {
		switch o.name {
		case "address-radix":
			if len(o.val) != 1 || !strings.Contains("doxn", o.val) {
				e.Errorf("invalid output address radix '%s'; it must be one character from [doxn]", o.val)
				return 1
			}
			radix = o.val[0]
		case "skip-bytes", "read-bytes":
			n, err := parseODSize(o.val)
			if err != nil {
				e.Errorf("invalid %s argument %s", map[string]string{"skip-bytes": "--skip-bytes", "read-bytes": "--read-bytes"}[o.name], quote(o.val))
				return 1
			}
			if o.name == "skip-bytes" {
				skip = n
			} else {
				limit = n
			}
		case "format":
			if !add(o.val) {
				return 1
			}
		case "output-duplicates":
			dup = true
		case "width":
			width = 32
			if o.has {
				n, err := strconv.Atoi(o.val)
				if err != nil || n <= 0 {
					e.Errorf("invalid -w argument %s", quote(o.val))
					return 1
				}
				width = n
			}
		default:
			if t, ok := short[o.name]; ok {
				add(t)
			}
		}
	}
	if len(types) == 0 {
		types = []odType{{kind: 'o', size: 2, width: 7}}
	}
	for _, t := range types {
		if width%t.size != 0 {
			e.Errorf("warning: invalid width %d; using %d instead", width, t.size)
			width = t.size
		}
	}
	status, failed := 0, 0
	r, closeAll := multiReader(e, files, func(name string, err error) {
		e.Errorf("%s: %s", quoteIf(name), strerror(err))
		status = 1
		failed++
	})
	defer closeAll()
	if len(files) > 0 && failed == len(files) {
		return 1
	}
	br := bufio.NewReaderSize(r, 64<<10)
	if skip > 0 {
		n, _ := io.CopyN(io.Discard, br, skip)
		if n < skip {
			e.Errorf("cannot skip past end of combined input")
			return 1
		}
	}
	var in io.Reader = br
	if limit >= 0 {
		in = io.LimitReader(br, limit)
	}
	out := newOut(e)
	defer out.Flush()
	// Align all formats to the widest line, as GNU od does.
	lineW := 0
	for _, t := range types {
		lineW = max(lineW, width/t.size*t.width)
	}
	offset := skip
	prev := make([]byte, 0, width)
	block := make([]byte, width)
	starred := false
	first := true
	for {
		n, err := io.ReadFull(in, block)
		if n == 0 {
			break
		}
		b := block[:n]
		if !dup && !first && n == width && bytes.Equal(b, prev) {
			if !starred {
				out.WriteString("*\n")
				starred = true
			}
			offset += int64(n)
			continue
		}
		first, starred = false, false
		prev = append(prev[:0], b...)
		for i, t := range types {
			if i == 0 {
				writeAddr(out, radix, offset)
			} else if radix != 'n' {
				out.WriteString(strings.Repeat(" ", addrWidth(radix)))
			}
			odLine(out, t, b, width, lineW)
			if t.z {
				written := (len(b) + t.size - 1) / t.size * t.width
				if nf := width / t.size; nf > 0 {
					pad := lineW - nf*t.width
					written += pad * ((len(b) + t.size - 1) / t.size) / nf
				}
				for k := written; k < lineW; k++ {
					out.WriteByte(' ')
				}
				out.WriteString("  >")
				for _, c := range b {
					if c >= 32 && c < 127 {
						out.WriteByte(c)
					} else {
						out.WriteByte('.')
					}
				}
				out.WriteByte('<')
			}
			out.WriteByte('\n')
		}
		offset += int64(n)
		if err != nil {
			break
		}
	}
	if radix != 'n' {
		writeAddr(out, radix, offset)
		out.WriteByte('\n')
	}
	return status
}

func addrWidth(radix byte) int {
	if radix == 'x' {
		return 6
	}
	return 7
}

func writeAddr(out *bufio.Writer, radix byte, off int64) {
	switch radix {
	case 'o':
		fmt.Fprintf(out, "%07o", off)
	case 'x':
		fmt.Fprintf(out, "%06x", off)
	case 'd':
		fmt.Fprintf(out, "%07d", off)
	}
}

func odLine(out *bufio.Writer, t odType, b []byte, width, lineW int) {
	nfields := width / t.size
	pad := lineW - nfields*t.width
	var chunk [8]byte
	var num [64]byte
	if t.kind == 'x' && t.size == 1 && pad == 0 {
		// The common -t x1: a space and two hex digits per byte.
		const hexd = "0123456789abcdef"
		for _, c := range b {
			out.WriteByte(' ')
			out.WriteByte(hexd[c>>4])
			out.WriteByte(hexd[c&15])
		}
		return
	}
	for i := 0; i*t.size < len(b); i++ {
		clear(chunk[:])
		copy(chunk[:t.size], b[i*t.size:])
		extra := pad*(i+1)/nfields - pad*i/nfields
		w := t.width + extra
		var s []byte
		switch t.kind {
		case 'c':
			s = append(num[:0], odChar(chunk[0])...)
		case 'a':
			c := chunk[0] & 0x7f
			switch {
			case c <= 32:
				s = append(num[:0], odNames[c]...)
			case c == 127:
				s = append(num[:0], "del"...)
			default:
				s = append(num[:0], c)
			}
		case 'f':
			if t.size == 4 {
				s = strconv.AppendFloat(num[:0], float64(math.Float32frombits(binary.LittleEndian.Uint32(chunk[:]))), 'g', 8, 32)
			} else {
				s = strconv.AppendFloat(num[:0], math.Float64frombits(binary.LittleEndian.Uint64(chunk[:])), 'g', 17, 64)
			}
		default:
			u := binary.LittleEndian.Uint64(chunk[:])
			digits := t.width - 1
			switch t.kind {
			case 'x', 'o':
				base := 16
				if t.kind == 'o' {
					base = 8
				}
				var tmp [24]byte
				d := strconv.AppendUint(tmp[:0], u, base)
				s = num[:0]
				for n := digits - len(d); n > 0; n-- {
					s = append(s, '0')
				}
				s = append(s, d...)
			case 'u':
				s = strconv.AppendUint(num[:0], u, 10)
			case 'd':
				shift := uint(64 - 8*t.size)
				s = strconv.AppendInt(num[:0], int64(u<<shift)>>shift, 10)
			}
		}
		for k := len(s); k < w; k++ {
			out.WriteByte(' ')
		}
		out.Write(s)
	}
}

func odChar(c byte) string {
	switch c {
	case 0:
		return `\0`
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\t':
		return `\t`
	case '\n':
		return `\n`
	case '\v':
		return `\v`
	case '\f':
		return `\f`
	case '\r':
		return `\r`
	}
	if c >= 32 && c < 127 {
		return printable[c-32 : c-31]
	}
	return string([]byte{'0' + c>>6, '0' + c>>3&7, '0' + c&7})
}

// printable holds the printable ASCII characters, so odChar can slice them.
const printable = " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"

// parseODSize parses od's byte counts: decimal, 0x hex, 0 octal, with
// b (512), k/K (1024), m/M suffixes.
func parseODSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "b") && !strings.HasPrefix(s, "0x"):
		mult, s = 512, s[:len(s)-1]
	case strings.HasSuffix(s, "k") || strings.HasSuffix(s, "K"):
		mult, s = 1024, s[:len(s)-1]
	case strings.HasSuffix(s, "m") || strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil || n < 0 {
		return 0, errBadMode
	}
	return n * mult, nil
}

var xxdUsage = usage{
	synopsis: "[options] [infile [outfile]]\n    or\n       xxd -r [-s [-]offset] [-c cols] [-ps] [infile [outfile]]",
	text: `Options:
    -a          toggle autoskip: A single '*' replaces nul-lines. Default off.
    -b          binary digit dump (incompatible with -ps,-i,-r). Default hex.
    -c cols     format <cols> octets per line. Default 16 (-i: 12, -ps: 30).
    -e          little-endian dump (incompatible with -ps,-i,-r).
    -g bytes    number of octets per group in normal output. Default 2 (-e: 4).
    -i          output in C include file style.
    -l len      stop after <len> octets.
    -n name     set the variable name used in C include output (-i).
    -o off      add <off> to the displayed file position.
    -ps         output in postscript plain hexdump style.
    -r          reverse operation: convert (or patch) hexdump into binary.
    -s [+][-]seek  start at <seek> bytes abs. (or +: rel.) infile offset.
    -u          use upper case hex letters.
`,
	bad: 1,
}

func xxdMain(e *cmd.Env) int {
	args := e.Args[1:]
	var (
		autoskip, bin, little, include, plain, reverse, upper bool
		cols, group                                           = -1, -1
		length, seek, dispOff                                 int64
		hasLen, relSeek                                       bool
		name                                                  string
		hasName                                               bool
		files                                                 []string
	)
	length = -1
	needArg := func(i int, opt string) (string, int, bool) {
		if i+1 >= len(args) {
			fmt.Fprintf(e.Stderr, "xxd: option '%s' requires an argument\n", opt)
			return "", i, false
		}
		return args[i+1], i + 1, true
	}
	num := func(s string) (int64, bool) {
		n, err := strconv.ParseInt(s, 0, 64)
		return n, err == nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' {
			files = append(files, a)
			continue
		}
		if a == "--" {
			files = append(files, args[i+1:]...)
			break
		}
		opt := strings.TrimPrefix(a, "-")
		// Options with a value may be glued (-c8) or separate (-c 8).
		key, val := opt[:1], opt[1:]
		longKey := opt
		if k, v, ok := strings.Cut(opt, "="); ok {
			longKey, val = k, v
		}
		switch {
		case opt == "a" || opt == "autoskip":
			autoskip = !autoskip
		case opt == "b" || opt == "bits":
			bin = true
		case opt == "e":
			little = true
		case opt == "i" || opt == "include":
			include = true
		case opt == "p" || opt == "ps" || opt == "postscript" || opt == "plain":
			plain = true
		case opt == "r" || opt == "revert":
			reverse = true
		case opt == "u" || opt == "uppercase":
			upper = true
		case opt == "h" || opt == "help" || opt == "-help":
			fmt.Fprintf(e.Stdout, "Usage:\n       xxd %s\n%s", xxdUsage.synopsis, xxdUsage.text)
			return 0
		case opt == "v" || opt == "version" || opt == "-version":
			fmt.Fprintf(e.Stdout, "xxd %s\n", version)
			return 0
		case strings.IndexByte("clgsno", key[0]) >= 0 || longKey == "cols" || longKey == "len" || longKey == "groupsize" || longKey == "seek" || longKey == "name":
			k := key
			switch longKey {
			case "cols":
				k, val = "c", ""
			case "len":
				k, val = "l", ""
			case "groupsize":
				k, val = "g", ""
			case "seek":
				k, val = "s", ""
			case "name":
				k, val = "n", ""
			}
			if strings.Contains(a, "=") {
				_, val, _ = strings.Cut(a, "=")
			}
			if val == "" {
				var ok bool
				if val, i, ok = needArg(i, a); !ok {
					return 1
				}
			}
			switch k {
			case "n":
				name, hasName = val, true
				continue
			case "s":
				if strings.HasPrefix(val, "+") {
					relSeek, val = true, val[1:]
				}
			}
			n, ok := num(val)
			if !ok {
				fmt.Fprintf(e.Stderr, "xxd: invalid number %s\n", quote(val))
				return 1
			}
			switch k {
			case "c":
				cols = int(n)
			case "l":
				length, hasLen = n, true
			case "g":
				group = int(n)
			case "s":
				seek = n
			case "o":
				dispOff = n
			}
		default:
			fmt.Fprintf(e.Stderr, "xxd: invalid option -- %s\n", quote(opt))
			fmt.Fprintf(e.Stderr, "Usage:\n       xxd %s\n", xxdUsage.synopsis)
			return 1
		}
	}
	_ = relSeek
	if len(files) > 2 {
		fmt.Fprintf(e.Stderr, "Usage:\n       xxd %s\n", xxdUsage.synopsis)
		return 1
	}
	var in io.Reader = e.Stdin
	inName := "stdin"
	if len(files) > 0 && files[0] != "-" {
		f, err := os.Open(files[0])
		if err != nil {
			fmt.Fprintf(e.Stderr, "xxd: %s: %s\n", files[0], strerror(err))
			return 2
		}
		defer f.Close()
		in, inName = f, files[0]
	}
	var w io.Writer = e.Stdout
	if len(files) == 2 && files[1] != "-" {
		flags := os.O_WRONLY | os.O_CREATE
		if !reverse {
			flags |= os.O_TRUNC
		}
		f, err := os.OpenFile(files[1], flags, 0o666)
		if err != nil {
			fmt.Fprintf(e.Stderr, "xxd: %s: %s\n", files[1], strerror(err))
			return 3
		}
		defer f.Close()
		w = f
	}
	out := bufio.NewWriterSize(w, 64<<10)
	defer out.Flush()
	if reverse {
		return xxdReverse(e, in, out, plain, cols, seek)
	}
	br := bufio.NewReaderSize(in, 64<<10)
	if seek > 0 {
		if _, err := io.CopyN(io.Discard, br, seek); err != nil {
			fmt.Fprintln(e.Stderr, "xxd: sorry, cannot seek.")
			return 4
		}
	}
	var src io.Reader = br
	if hasLen {
		src = io.LimitReader(br, max(length, 0))
	}
	hexDigits := "0123456789abcdef"
	if upper {
		hexDigits = "0123456789ABCDEF"
	}
	switch {
	case plain:
		if cols < 0 {
			cols = 30
		}
		if cols == 0 {
			cols = 30
		}
		buf := make([]byte, 64<<10)
		col := 0
		for {
			n, err := src.Read(buf)
			for _, c := range buf[:n] {
				out.WriteByte(hexDigits[c>>4])
				out.WriteByte(hexDigits[c&15])
				col++
				if col == cols {
					out.WriteByte('\n')
					col = 0
				}
			}
			if err != nil {
				break
			}
		}
		if col > 0 {
			out.WriteByte('\n')
		}
		return 0
	case include:
		if cols <= 0 {
			cols = 12
		}
		varName := name
		if !hasName {
			varName = cVarName(inName)
		}
		data, _ := io.ReadAll(src)
		if len(files) > 0 && files[0] != "-" {
			fmt.Fprintf(out, "unsigned char %s[] = {\n", varName)
		}
		for i, c := range data {
			if i%cols == 0 {
				out.WriteString("  ")
			}
			if upper {
				fmt.Fprintf(out, "0X%02X", c)
			} else {
				fmt.Fprintf(out, "0x%02x", c)
			}
			switch {
			case i == len(data)-1:
				out.WriteByte('\n')
			case i%cols == cols-1:
				out.WriteString(",\n")
			default:
				out.WriteString(", ")
			}
		}
		if len(files) > 0 && files[0] != "-" {
			fmt.Fprintf(out, "};\nunsigned int %s_len = %d;\n", varName, len(data))
		}
		return 0
	}
	if cols < 0 {
		cols = 16
		if bin {
			cols = 6
		}
	}
	if cols == 0 {
		cols = 16
	}
	if group < 0 {
		group = 2
		switch {
		case bin:
			group = 1
		case little:
			group = 4
		}
	}
	if group == 0 {
		group = cols
	}
	digitsPer := 2
	if bin {
		digitsPer = 8
	}
	hexW := cols*digitsPer + (cols+group-1)/group
	line := make([]byte, cols)
	off := seek + dispOff
	var prevLine []byte
	var lineBuf bytes.Buffer
	skipping := false
	for {
		n, err := io.ReadFull(src, line)
		if n == 0 {
			break
		}
		b := line[:n]
		if autoskip && n == cols && allZero(b) && prevLine != nil && allZero(prevLine) {
			if !skipping {
				out.WriteString("*\n")
				skipping = true
			}
			off += int64(n)
			prevLine = append(prevLine[:0], b...)
			if err != nil {
				break
			}
			continue
		}
		skipping = false
		prevLine = append(prevLine[:0], b...)
		var offb [24]byte
		o := strconv.AppendUint(offb[:0], uint64(off), 16)
		for k := len(o); k < 8; k++ {
			out.WriteByte('0')
		}
		out.Write(o)
		out.WriteString(": ")
		hex := &lineBuf
		for g := 0; g*group < n; g++ {
			end := min((g+1)*group, n)
			grp := b[g*group : end]
			if little {
				// Each group is shown as a little-endian number, right-aligned.
				hex.WriteString(strings.Repeat(" ", (group-len(grp))*digitsPer))
				for k := len(grp) - 1; k >= 0; k-- {
					hex.WriteByte(hexDigits[grp[k]>>4])
					hex.WriteByte(hexDigits[grp[k]&15])
				}
			} else {
				for _, c := range grp {
					if bin {
						for bit := 7; bit >= 0; bit-- {
							hex.WriteByte('0' + (c>>uint(bit))&1)
						}
					} else {
						hex.WriteByte(hexDigits[c>>4])
						hex.WriteByte(hexDigits[c&15])
					}
				}
			}
			hex.WriteByte(' ')
		}
		hs := hex.Bytes()
		out.Write(hs)
		for k := len(hs); k < hexW; k++ {
			out.WriteByte(' ')
		}
		hex.Reset()
		out.WriteByte(' ')
		for _, c := range b {
			if c >= 32 && c < 127 {
				out.WriteByte(c)
			} else {
				out.WriteByte('.')
			}
		}
		out.WriteByte('\n')
		off += int64(n)
		if err != nil {
			break
		}
	}
	if skipping && prevLine != nil {
		// GNU xxd prints the last all-zero line after a '*'.
		_ = prevLine
	}
	return 0
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func cVarName(s string) string {
	var b strings.Builder
	if s != "" && isDigit(s[0]) {
		b.WriteString("__")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// xxdReverse turns a hex dump back into bytes: with plain, every hex digit
// pair anywhere in the input; otherwise the "offset: hex  ascii" lines of
// the normal dump, writing each line at its offset.
func xxdReverse(e *cmd.Env, in io.Reader, out *bufio.Writer, plain bool, cols int, seek int64) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var pos int64
	var pending = -1
	for sc.Scan() {
		l := sc.Text()
		if plain {
			for i := 0; i < len(l); i++ {
				if !isHex(l[i]) {
					continue
				}
				if pending < 0 {
					pending = hexVal(l[i])
				} else {
					out.WriteByte(byte(pending<<4 | hexVal(l[i])))
					pending = -1
				}
			}
			continue
		}
		colon := strings.IndexByte(l, ':')
		if colon < 0 {
			continue
		}
		off, err := strconv.ParseInt(strings.TrimSpace(l[:colon]), 16, 64)
		if err != nil {
			continue
		}
		off += seek
		if off > pos {
			out.Write(make([]byte, off-pos))
			pos = off
		}
		rest := l[colon+1:]
		// The hex area ends at two consecutive spaces before the text column.
		if k := strings.Index(rest, "  "); k >= 0 {
			rest = rest[:k]
		}
		nibble := -1
		for i := 0; i < len(rest); i++ {
			c := rest[i]
			if c == ' ' {
				continue
			}
			if !isHex(c) {
				break
			}
			if nibble < 0 {
				nibble = hexVal(c)
			} else {
				out.WriteByte(byte(nibble<<4 | hexVal(c)))
				nibble = -1
				pos++
			}
		}
	}
	return 0
}

var stringsUsage = usage{
	synopsis: "[option(s)] [file(s)]",
	text: `Display printable strings in [file(s)] (stdin by default)
  -a - --all                Scan the entire file, not just the data section [default]
  -n <number>               Locate & print any sequence of at least <number>
    --bytes=<number>          displayable characters.  (The default is 4).
  -t --radix={o,d,x}        Print the location of the string in base 8, 10 or 16
  -o                        An alias for --radix=o
  -f --print-file-name      Print the name of the file before each string
  -s --output-separator=<string> String used to separate strings in output.
`,
	bad: 1,
}

func stringsMain(e *cmd.Env) int {
	// Accept the historical "-NUM" form (strings -8 file).
	args := []string{e.Args[0]}
	for _, a := range e.Args[1:] {
		if len(a) > 1 && a[0] == '-' && isDigit(a[1]) {
			args = append(args, "-n", a[1:])
			continue
		}
		args = append(args, a)
	}
	e2 := *e
	e2.Args = args
	opts, files, st, done := getopt(&e2, "a,all d,data e,encoding: f,print-file-name n,bytes: o t,radix: s,output-separator: w,include-all-whitespace T,target: U,unicode:", stringsUsage)
	if done {
		return st
	}
	minLen := 4
	radix := byte(0)
	sep := "\n"
	allWS := has(opts, "include-all-whitespace")
	for _, o := range opts {
		switch o.name {
		case "bytes":
			n, err := strconv.Atoi(o.val)
			if err != nil || n < 1 {
				e.Errorf("invalid minimum string length %s", o.val)
				return 1
			}
			minLen = n
		case "o":
			radix = 'o'
		case "radix":
			if len(o.val) != 1 || !strings.Contains("odx", o.val) {
				e.Errorf("invalid radix")
				return 1
			}
			radix = o.val[0]
		case "output-separator":
			sep = o.val
		}
	}
	printName := has(opts, "print-file-name")
	out := newOut(e)
	defer out.Flush()
	status := 0
	scan := func(r io.Reader, name string) {
		var cur []byte
		var start, off int64
		streaming := false // the run reached minLen and is being written out
		head := func() {
			if printName {
				out.WriteString(name + ": ")
			}
			switch radix {
			case 'o':
				fmt.Fprintf(out, "%7o ", start)
			case 'd':
				fmt.Fprintf(out, "%7d ", start)
			case 'x':
				fmt.Fprintf(out, "%7x ", start)
			}
		}
		emit := func() {
			if streaming {
				out.WriteString(sep)
			}
			streaming = false
			cur = cur[:0]
		}
		add := func(b []byte, at int64) {
			if streaming {
				out.Write(b)
				return
			}
			if len(cur) == 0 {
				start = at
			}
			cur = append(cur, b...)
			if len(cur) >= minLen {
				head()
				out.Write(cur)
				streaming = true
			}
		}
		buf := make([]byte, 64<<10)
		for {
			n, err := r.Read(buf)
			chunk := buf[:n]
			for i := 0; i < len(chunk); {
				// Take the longest run of printable bytes at once.
				j := i
				for j < len(chunk) {
					c := chunk[j]
					if c >= 32 && c < 127 || c == '\t' || allWS && (c == '\n' || c == '\r' || c == '\v' || c == '\f') {
						j++
						continue
					}
					break
				}
				if j > i {
					add(chunk[i:j], off+int64(i))
				}
				if j < len(chunk) {
					emit()
					j++
				}
				i = j
			}
			off += int64(n)
			if err != nil {
				break
			}
		}
		emit()
	}
	if len(files) == 0 {
		scan(e.Stdin, "{standard input}")
		return 0
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err == nil && fi.IsDir() {
			e.Errorf("Warning: '%s' is a directory", f)
			status = 1
			continue
		}
		r, closeFn, err := openIn(e, f)
		if err != nil {
			e.Errorf("'%s': No such file", f)
			status = 1
			continue
		}
		scan(r, f)
		closeFn()
	}
	return status
}
