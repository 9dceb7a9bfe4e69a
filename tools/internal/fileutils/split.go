package fileutils

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("truncate", truncateMain)
	cmd.Register("split", splitMain)
}

var truncateUsage = usage{
	synopsis: "OPTION... FILE...",
	text: `Shrink or extend the size of each FILE to the specified size

A FILE argument that does not exist is created.

  -c, --no-create        do not create any files
  -o, --io-blocks        treat SIZE as number of IO blocks instead of bytes
  -r, --reference=RFILE  base size on RFILE
  -s, --size=SIZE        set or adjust the file size by SIZE bytes

SIZE may be prefixed by '+' extend, '-' reduce, '<' at most, '>' at least,
'/' round down to multiple of, '%' round up to multiple of.
`,
	bad: 1,
}

func truncateMain(e *cmd.Env) int {
	opts, files, st, done := getopt(e, "c,no-create o,io-blocks r,reference: s,size:", truncateUsage)
	if done {
		return st
	}
	sizeArg, hasSize := last(opts, "size")
	ref, hasRef := last(opts, "reference")
	if !hasSize && !hasRef {
		return usageErr(e, truncateUsage, "you must specify either '--size' or '--reference'")
	}
	if len(files) == 0 {
		return usageErr(e, truncateUsage, "missing file operand")
	}
	var op byte
	var size int64
	if hasSize {
		s := sizeArg
		if s != "" && strings.IndexByte("+-<>/%", s[0]) >= 0 {
			op, s = s[0], s[1:]
		}
		n, err := parseSize(strings.TrimSpace(s))
		if err != nil {
			e.Errorf("Invalid number: %s", quote(sizeArg))
			return 1
		}
		if has(opts, "io-blocks") {
			n *= 4096
		}
		size = n
		if (op == '/' || op == '%') && n == 0 {
			e.Errorf("division by zero")
			return 1
		}
	}
	var refSize int64 = -1
	if hasRef {
		fi, err := os.Stat(ref)
		if err != nil {
			e.Errorf("cannot stat %s: %s", quote(ref), strerror(err))
			return 1
		}
		refSize = fi.Size()
		if !hasSize {
			size = refSize
		}
	}
	noCreate := has(opts, "no-create")
	status := 0
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			if noCreate && os.IsNotExist(err) {
				continue
			}
			fh, err := os.OpenFile(f, os.O_WRONLY|os.O_CREATE, 0o666)
			if err != nil {
				e.Errorf("cannot open %s for writing: %s", quote(f), strerror(err))
				status = 1
				continue
			}
			fh.Close()
			fi, err = os.Stat(f)
			if err != nil {
				e.Errorf("cannot open %s for writing: %s", quote(f), strerror(err))
				status = 1
				continue
			}
		}
		cur := fi.Size()
		if refSize >= 0 && op != 0 {
			cur = refSize
		}
		target := size
		switch op {
		case '+':
			target = cur + size
		case '-':
			target = max(cur-size, 0)
		case '<':
			target = min(cur, size)
		case '>':
			target = max(cur, size)
		case '/':
			target = cur / size * size
		case '%':
			target = (cur + size - 1) / size * size
		}
		if fi.IsDir() {
			e.Errorf("cannot open %s for writing: Is a directory", quote(f))
			status = 1
			continue
		}
		if err := os.Truncate(f, target); err != nil {
			e.Errorf("failed to truncate %s at %d bytes: %s", quote(f), target, strerror(err))
			status = 1
		}
	}
	return status
}

var splitUsage = usage{
	synopsis: "[OPTION]... [FILE [PREFIX]]",
	text: `Output pieces of FILE to PREFIXaa, PREFIXab, ...;
default size is 1000 lines, and default PREFIX is 'x'.

With no FILE, or when FILE is -, read standard input.

  -a, --suffix-length=N   generate suffixes of length N (default 2)
      --additional-suffix=SUFFIX  append an additional SUFFIX to file names
  -b, --bytes=SIZE        put SIZE bytes per output file
  -C, --line-bytes=SIZE   put at most SIZE bytes of records per output file
  -d                      use numeric suffixes starting at 0, not alphabetic
      --numeric-suffixes[=FROM]  same as -d, but allow setting the start value
  -x                      use hex suffixes starting at 0, not alphabetic
      --hex-suffixes[=FROM]  same as -x, but allow setting the start value
  -e, --elide-empty-files  do not generate empty output files with '-n'
  -l, --lines=NUMBER      put NUMBER lines/records per output file
  -n, --number=CHUNKS     generate CHUNKS output files: N, K/N, l/N, l/K/N, r/N
  -t, --separator=SEP     use SEP instead of newline as the record separator
      --verbose           print a diagnostic just before each output file is opened
`,
	bad: 1,
}

type splitter struct {
	e         *cmd.Env
	prefix    string
	suffix    string
	suffixLen int
	autoLen   bool
	alphabet  string
	index     int
	verbose   bool
	cur       *os.File
	curW      *bufio.Writer
	err       error
}

func splitMain(e *cmd.Env) int {
	opts, operands, st, done := getopt(e, "a,suffix-length: ,additional-suffix: b,bytes: C,line-bytes: d ,numeric-suffixes? x ,hex-suffixes? e,elide-empty-files l,lines: n,number: t,separator: u,unbuffered ,verbose ,filter:", splitUsage)
	if done {
		return st
	}
	s := &splitter{e: e, prefix: "x", suffixLen: 2, autoLen: true, alphabet: "abcdefghijklmnopqrstuvwxyz"}
	mode, amount := "lines", int64(1000)
	chunkSpec := ""
	sep := byte('\n')
	modes := 0
	for _, o := range opts {
		switch o.name {
		case "suffix-length":
			n, err := strconv.Atoi(o.val)
			if err != nil || n < 0 {
				e.Errorf("%s: invalid suffix length", quote(o.val))
				return 1
			}
			if n > 0 {
				s.suffixLen, s.autoLen = n, false
			}
		case "additional-suffix":
			if strings.Contains(o.val, "/") {
				e.Errorf("invalid suffix %s, contains directory separator", quote(o.val))
				return 1
			}
			s.suffix = o.val
		case "d", "numeric-suffixes":
			s.alphabet = "0123456789"
			if o.has {
				n, err := strconv.Atoi(o.val)
				if err != nil || n < 0 {
					e.Errorf("%s: invalid start value for numerical suffix", quote(o.val))
					return 1
				}
				s.index = n
			}
		case "x", "hex-suffixes":
			s.alphabet = "0123456789abcdef"
			if o.has {
				n, err := strconv.ParseInt(o.val, 16, 64)
				if err != nil || n < 0 {
					e.Errorf("%s: invalid start value for hexadecimal suffix", quote(o.val))
					return 1
				}
				s.index = int(n)
			}
		case "bytes", "line-bytes", "lines":
			n, err := parseSize(o.val)
			if err != nil || n <= 0 {
				what := map[string]string{"bytes": "number of bytes", "line-bytes": "number of bytes", "lines": "number of lines"}[o.name]
				if err == nil {
					e.Errorf("invalid %s: %s: Numerical result out of range", what, quote(o.val))
				} else {
					e.Errorf("invalid %s: %s", what, quote(o.val))
				}
				return 1
			}
			mode, amount = o.name, n
			modes++
		case "number":
			mode, chunkSpec = "number", o.val
			modes++
		case "separator":
			v := unescapeC(o.val)
			if len(v) != 1 {
				e.Errorf("multi-character separator %s", quote(o.val))
				return 1
			}
			sep = v[0]
		case "verbose":
			s.verbose = true
		case "filter":
			e.Errorf("--filter is not supported in the sandbox")
			return 1
		}
	}
	if modes > 1 {
		return usageErr(e, splitUsage, "cannot split in more than one way")
	}
	in := "-"
	switch len(operands) {
	case 0:
	case 1:
		in = operands[0]
	case 2:
		in, s.prefix = operands[0], operands[1]
	default:
		return usageErr(e, splitUsage, "extra operand %s", quote(operands[2]))
	}
	r, closeFn, err := openIn(e, in)
	if err != nil {
		e.Errorf("cannot open %s for reading: %s", quote(in), strerror(err))
		return 1
	}
	defer closeFn()
	var ok bool
	switch mode {
	case "lines":
		ok = s.byLines(r, amount, sep)
	case "bytes":
		ok = s.byBytes(r, amount)
	case "line-bytes":
		ok = s.byLineBytes(r, amount, sep)
	case "number":
		ok = s.byChunks(r, chunkSpec, sep, has(opts, "elide-empty-files"))
	}
	if !s.close() {
		ok = false
	}
	if !ok {
		return 1
	}
	return 0
}

// name returns the output file name for the current index. Without an
// explicit -a, GNU split widens the suffix when it runs out: after "yz"
// comes "zaaa" (a fixed last letter plus one more position), after "89"
// comes "9000".
func (s *splitter) name() (string, bool) {
	base := len(s.alphabet)
	idx, width := s.index, s.suffixLen
	fixed := ""
	for {
		limit := 1
		for i := 0; i < width; i++ {
			limit *= base
			if limit > 1<<40 {
				return "", false
			}
		}
		if !s.autoLen {
			if idx >= limit {
				return "", false
			}
			break
		}
		region := limit / base * (base - 1)
		if idx < region {
			break
		}
		idx -= region
		fixed += string(s.alphabet[base-1])
		width++
	}
	return s.prefix + fixed + encodeSuffix(idx, width, s.alphabet) + s.suffix, true
}

func encodeSuffix(n, width int, alphabet string) string {
	b := make([]byte, width)
	for i := width - 1; i >= 0; i-- {
		b[i] = alphabet[n%len(alphabet)]
		n /= len(alphabet)
	}
	return string(b)
}

func (s *splitter) next() bool {
	if !s.close() {
		return false
	}
	name, ok := s.name()
	if !ok {
		s.e.Errorf("output file suffixes exhausted")
		return false
	}
	s.index++
	if s.verbose {
		fmt.Fprintf(s.e.Stdout, "creating file %s\n", quote(name))
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		s.e.Errorf("%s: %s", quoteIf(name), strerror(err))
		return false
	}
	s.cur, s.curW = f, bufio.NewWriterSize(f, 64<<10)
	return true
}

func (s *splitter) write(b []byte) bool {
	if _, err := s.curW.Write(b); err != nil {
		s.e.Errorf("%s: %s", quoteIf(s.cur.Name()), strerror(err))
		return false
	}
	return true
}

func (s *splitter) close() bool {
	if s.cur == nil {
		return true
	}
	err := s.curW.Flush()
	if cerr := s.cur.Close(); err == nil {
		err = cerr
	}
	name := s.cur.Name()
	s.cur, s.curW = nil, nil
	if err != nil {
		s.e.Errorf("%s: %s", quoteIf(name), strerror(err))
		return false
	}
	return true
}

func (s *splitter) byLines(r io.Reader, n int64, sep byte) bool {
	br := bufio.NewReaderSize(r, 64<<10)
	var count int64
	for {
		line, err := br.ReadSlice(sep)
		if len(line) > 0 {
			if s.cur == nil || count == n {
				if !s.next() {
					return false
				}
				count = 0
			}
			if !s.write(line) {
				return false
			}
			if line[len(line)-1] == sep {
				count++
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			return true
		}
		if err != nil {
			s.e.Errorf("read error: %s", strerror(err))
			return false
		}
	}
}

func (s *splitter) byBytes(r io.Reader, n int64) bool {
	buf := make([]byte, 64<<10)
	var inFile int64
	for {
		k, err := r.Read(buf)
		b := buf[:k]
		for len(b) > 0 {
			if s.cur == nil || inFile == n {
				if !s.next() {
					return false
				}
				inFile = 0
			}
			take := min(int64(len(b)), n-inFile)
			if !s.write(b[:take]) {
				return false
			}
			inFile += take
			b = b[take:]
		}
		if err == io.EOF {
			return true
		}
		if err != nil {
			s.e.Errorf("read error: %s", strerror(err))
			return false
		}
	}
}

func (s *splitter) byLineBytes(r io.Reader, n int64, sep byte) bool {
	data, err := io.ReadAll(r)
	if err != nil {
		s.e.Errorf("read error: %s", strerror(err))
		return false
	}
	var cur []byte
	flush := func() bool {
		if len(cur) == 0 {
			return true
		}
		if !s.next() || !s.write(cur) {
			return false
		}
		cur = cur[:0]
		return true
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, sep)
		var line []byte
		if i < 0 {
			line, data = data, nil
		} else {
			line, data = data[:i+1], data[i+1:]
		}
		for int64(len(line)) > n {
			// A record longer than SIZE is split by bytes.
			if !flush() {
				return false
			}
			if !s.next() || !s.write(line[:n]) {
				return false
			}
			line = line[n:]
		}
		if int64(len(cur)+len(line)) > n && !flush() {
			return false
		}
		cur = append(cur, line...)
	}
	return flush()
}

func (s *splitter) byChunks(r io.Reader, spec string, sep byte, elide bool) bool {
	kind := ""
	parts := strings.Split(spec, "/")
	if parts[0] == "l" || parts[0] == "r" {
		kind, parts = parts[0], parts[1:]
	}
	var k, n int64
	var err error
	switch len(parts) {
	case 1:
		n, err = strconv.ParseInt(parts[0], 10, 64)
	case 2:
		k, err = strconv.ParseInt(parts[0], 10, 64)
		if err == nil {
			n, err = strconv.ParseInt(parts[1], 10, 64)
		}
	default:
		err = errBadMode
	}
	if err == nil && n == 0 {
		s.e.Errorf("invalid number of chunks: %s: Numerical result out of range", quote(spec))
		return false
	}
	if err != nil || n < 0 || k < 0 || k > n {
		s.e.Errorf("invalid number of chunks: %s", quote(spec))
		return false
	}
	data, rerr := io.ReadAll(r)
	if rerr != nil {
		s.e.Errorf("read error: %s", strerror(rerr))
		return false
	}
	size := int64(len(data))
	if kind == "r" {
		// Round robin: line i goes to chunk i mod n.
		chunks := make([][]byte, n)
		i := int64(0)
		for len(data) > 0 {
			j := bytes.IndexByte(data, sep)
			var line []byte
			if j < 0 {
				line, data = data, nil
			} else {
				line, data = data[:j+1], data[j+1:]
			}
			chunks[i%n] = append(chunks[i%n], line...)
			i++
		}
		return s.emitChunks(chunks, k, elide)
	}
	chunks := make([][]byte, n)
	start := int64(0)
	for i := int64(0); i < n; i++ {
		end := (i + 1) * (size / n)
		if i == n-1 {
			end = size
		}
		if kind == "l" {
			if end < start {
				end = start
			}
			if i < n-1 {
				if j := bytes.IndexByte(data[min(max(end-1, start), size):], sep); j >= 0 && end > start {
					end = min(max(end-1, start), size) + int64(j) + 1
				} else if end > start {
					end = size
				}
			}
		}
		if end > size {
			end = size
		}
		if start > end {
			start = end
		}
		chunks[i] = data[start:end]
		start = end
	}
	return s.emitChunks(chunks, k, elide)
}

func (s *splitter) emitChunks(chunks [][]byte, k int64, elide bool) bool {
	if k > 0 {
		s.e.Stdout.Write(chunks[k-1])
		return true
	}
	for _, c := range chunks {
		if elide && len(c) == 0 {
			continue
		}
		if !s.next() || !s.write(c) {
			return false
		}
	}
	return true
}
