package sysutils

import (
	"bufio"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	for name, algo := range digestCommands {
		algo := algo
		cmd.Register(name, func(e *cmd.Env) int { return digestMain(e, algo) })
	}
	cmd.Register("cksum", cksumMain)
	cmd.Register("base64", func(e *cmd.Env) int { return baseMain(e, &base64Codec) })
	cmd.Register("base32", func(e *cmd.Env) int { return baseMain(e, &base32Codec) })
}

// baseCodec is the encoding of base64 or base32.
type baseCodec struct {
	name     string
	std, raw interface {
		AppendEncode(dst, src []byte) []byte
		AppendDecode(dst, src []byte) ([]byte, error)
	}
	group    int // encoded characters per padded group
	block    int // input bytes per read: a multiple of the raw group, so no padding mid-stream
	alphabet func(c byte) bool
	// decodeTail: a final group without padding is decoded before the
	// "invalid input" error (GNU base64 does, base32 does not).
	decodeTail bool
}

var (
	base64Codec = baseCodec{name: "Base64", std: base64.StdEncoding, raw: base64.RawStdEncoding, group: 4, block: 48 * 1024, decodeTail: true,
		alphabet: func(c byte) bool {
			return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
		}}
	base32Codec = baseCodec{name: "Base32", std: base32.StdEncoding, raw: base32.StdEncoding.WithPadding(base32.NoPadding), group: 8, block: 40 * 1024,
		alphabet: func(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '2' && c <= '7' || c == '=' }}
)

// digestAlgo is a hash of the *sum commands.
type digestAlgo struct {
	tag string // BSD tag: "MD5", "SHA256", ...
	new func() hash.Hash
}

var digestAlgos = map[string]digestAlgo{
	"md5":    {"MD5", md5.New},
	"sha1":   {"SHA1", sha1.New},
	"sha224": {"SHA224", newSHA224},
	"sha256": {"SHA256", newSHA256},
	"sha384": {"SHA384", sha512.New384},
	"sha512": {"SHA512", sha512.New},
}

var digestCommands = map[string]digestAlgo{
	"md5sum": digestAlgos["md5"], "sha1sum": digestAlgos["sha1"], "sha224sum": digestAlgos["sha224"],
	"sha256sum": digestAlgos["sha256"], "sha384sum": digestAlgos["sha384"], "sha512sum": digestAlgos["sha512"],
}

// sumOpts are the options shared by the *sum commands and cksum.
type sumOpts struct {
	check, tag, zero, binary       bool
	quiet, status, warn, strict    bool
	ignoreMissing, untagged, isCks bool
}

var sumSpec = []cmd.Option{
	{Short: 'b', Long: "binary"}, {Short: 't', Long: "text"}, {Short: 'c', Long: "check"},
	{Long: "tag"}, {Short: 'z', Long: "zero"}, {Long: "quiet"}, {Long: "status"},
	{Short: 'w', Long: "warn"}, {Long: "strict"}, {Long: "ignore-missing"},
}

func parseSumOpts(e *cmd.Env, opts []cmd.Opt) sumOpts {
	var o sumOpts
	for _, x := range opts {
		switch x.Name {
		case "binary":
			o.binary = true
		case "text":
			o.binary = false
		case "check":
			o.check = true
		case "tag":
			o.tag = true
		case "untagged":
			o.untagged = true
		case "zero":
			o.zero = true
		case "quiet":
			o.quiet = true
		case "status":
			o.status = true
		case "warn":
			o.warn = true
		case "strict":
			o.strict = true
		case "ignore-missing":
			o.ignoreMissing = true
		}
	}
	return o
}

const sumHelp = "[OPTION]... [FILE]...\nPrint or check checksums. With no FILE, or when FILE is -, read standard input.\n  -b, --binary         read in binary mode\n  -c, --check          read checksums from the FILEs and check them\n      --tag            create a BSD-style checksum\n  -t, --text           read in text mode (default)\n  -z, --zero           end each output line with NUL, not newline\n      --ignore-missing  don't fail or report status for missing files\n      --quiet          don't print OK for each successfully verified file\n      --status         don't output anything, status code shows success\n      --strict         exit non-zero for improperly formatted checksum lines\n  -w, --warn           warn about improperly formatted checksum lines\n"

func digestMain(e *cmd.Env, algo digestAlgo) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(sumSpec...), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, sumHelp) {
		return 0
	}
	o := parseSumOpts(e, opts)
	if o.tag && o.check {
		e.Errorf("the --tag option is meaningless when verifying checksums")
		return e.Usage(1, nil)
	}
	if len(ops) == 0 {
		ops = []string{"-"}
	}
	if o.check {
		return checkSums(e, ops, o, func(string) (digestAlgo, bool) { return algo, true })
	}
	w, flush := output(e)
	status := 0
	for _, name := range ops {
		sum, err := hashFile(e, name, algo.new())
		if err != nil {
			w.Flush()
			e.Errorf("%s: %s", name, errText(err))
			status = 1
			continue
		}
		writeSumLine(w, algo.tag, hex.EncodeToString(sum), name, o)
	}
	if flush() != 0 {
		return 1
	}
	return status
}

// writeSumLine prints "HASH  NAME" (or BSD "TAG (NAME) = HASH"), escaping
// a name with a backslash or newline the GNU way.
func writeSumLine(w *bufio.Writer, tag, sum, name string, o sumOpts) {
	prefix := ""
	if !o.zero && strings.ContainsAny(name, "\\\n") {
		prefix = "\\"
		name = strings.NewReplacer("\\", "\\\\", "\n", "\\n").Replace(name)
	}
	end := "\n"
	if o.zero {
		end = "\x00"
	}
	if o.tag {
		fmt.Fprintf(w, "%s%s (%s) = %s%s", prefix, tag, name, sum, end)
		return
	}
	mode := " "
	if o.binary {
		mode = "*"
	}
	fmt.Fprintf(w, "%s%s %s%s%s", prefix, sum, mode, name, end)
}

func hashFile(e *cmd.Env, name string, h hash.Hash) ([]byte, error) {
	r, done, err := openInput(e, name)
	if err != nil {
		return nil, err
	}
	defer done()
	// Large reads: each is a host call in wasm.
	if _, err := io.CopyBuffer(h, onlyReader{r}, make([]byte, 256<<10)); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// checkSums verifies checksum files (-c). algoFor picks the algorithm for
// a BSD tag ("" for untagged lines).
func checkSums(e *cmd.Env, files []string, o sumOpts, algoFor func(tag string) (digestAlgo, bool)) int {
	w, flush := output(e)
	status := 0
	for _, file := range files {
		r, done, err := openInput(e, file)
		if err != nil {
			w.Flush()
			e.Errorf("%s: %s", file, errText(err))
			status = 1
			continue
		}
		bad, unreadable, mismatched, good := 0, 0, 0, 0
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		lineNo := 0
		for sc.Scan() {
			lineNo++
			line := strings.TrimSuffix(sc.Text(), "\r")
			if strings.HasPrefix(line, "#") {
				continue
			}
			tag, want, name, ok := parseSumLine(line)
			var algo digestAlgo
			if ok {
				algo, ok = algoFor(tag)
			}
			if ok {
				_, err := hex.DecodeString(want)
				ok = err == nil && len(want) == 2*algo.new().Size()
			}
			if !ok {
				bad++
				if o.warn {
					w.Flush()
					e.Errorf("%s: %d: improperly formatted %s checksum line", file, lineNo, strings.ToUpper(strings.TrimSuffix(e.Name(), "sum")))
				}
				continue
			}
			good++
			sum, err := hashFile(e, name, algo.new())
			if err != nil {
				if o.ignoreMissing && strings.Contains(errText(err), "No such file") {
					continue
				}
				unreadable++
				if !o.status {
					w.Flush()
					e.Errorf("%s: %s", name, errText(err))
					fmt.Fprintf(w, "%s: FAILED open or read\n", name)
				}
				continue
			}
			if hex.EncodeToString(sum) != strings.ToLower(want) {
				mismatched++
				if !o.status {
					fmt.Fprintf(w, "%s: FAILED\n", name)
				}
			} else if !o.quiet && !o.status {
				fmt.Fprintf(w, "%s: OK\n", name)
			}
		}
		done()
		w.Flush()
		if good == 0 {
			e.Errorf("%s: no properly formatted checksum lines found", file)
			status = 1
			continue
		}
		plural := func(n int, one, many string) string {
			if n == 1 {
				return one
			}
			return many
		}
		if !o.status {
			if bad > 0 {
				e.Errorf("WARNING: %d %s improperly formatted", bad, plural(bad, "line is", "lines are"))
			}
			if unreadable > 0 {
				e.Errorf("WARNING: %d listed %s could not be read", unreadable, plural(unreadable, "file", "files"))
			}
			if mismatched > 0 {
				e.Errorf("WARNING: %d computed %s did NOT match", mismatched, plural(mismatched, "checksum", "checksums"))
			}
		}
		if unreadable > 0 || mismatched > 0 || (o.strict && bad > 0) {
			status = 1
		}
	}
	if flush() != 0 {
		return 1
	}
	return status
}

// parseSumLine parses "HASH  NAME", "HASH *NAME" or "TAG (NAME) = HASH",
// with the GNU backslash escaping of names.
func parseSumLine(line string) (tag, sum, name string, ok bool) {
	escaped := strings.HasPrefix(line, "\\")
	if escaped {
		line = line[1:]
	}
	unesc := func(s string) string {
		if !escaped {
			return s
		}
		return strings.NewReplacer("\\\\", "\\", "\\n", "\n").Replace(s)
	}
	if i := strings.Index(line, " ("); i > 0 && !strings.ContainsAny(line[:i], " ") {
		if j := strings.LastIndex(line, ") = "); j > i {
			return line[:i], line[j+4:], unesc(line[i+2 : j]), true
		}
	}
	i := strings.IndexByte(line, ' ')
	if i <= 0 || i+2 > len(line) || (line[i+1] != ' ' && line[i+1] != '*') {
		return "", "", "", false
	}
	return "", line[:i], unesc(line[i+2:]), true
}

func cksumMain(e *cmd.Env) int {
	spec := append([]cmd.Option{{Short: 'a', Long: "algorithm", Arg: cmd.RequiredArg}, {Long: "untagged"},
		{Long: "base64"}, {Long: "raw"}, {Short: 'l', Long: "length", Arg: cmd.RequiredArg}}, sumSpec...)
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(spec...), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "[OPTION]... [FILE]...\nPrint or verify checksums. By default use the 32 bit CRC algorithm.\n  -a, --algorithm=TYPE  crc (default), md5, sha1, sha224, sha256, sha384, sha512\n  -c, --check           read checksums from the FILEs and check them\n      --untagged        create a reversed style checksum, without digest type\n") {
		return 0
	}
	o := parseSumOpts(e, opts)
	algoName := "crc"
	for _, x := range opts {
		switch x.Name {
		case "algorithm":
			algoName = x.Value
			if _, ok := digestAlgos[algoName]; !ok && algoName != "crc" {
				e.Errorf("invalid argument '%s' for '--algorithm'", x.Value)
				fmt.Fprintln(e.Stderr, "Valid arguments are:\n  - 'bsd'\n  - 'sysv'\n  - 'crc'\n  - 'md5'\n  - 'sha1'\n  - 'sha224'\n  - 'sha256'\n  - 'sha384'\n  - 'sha512'\n  - 'blake2b'\n  - 'sm3'")
				return e.Usage(1, nil)
			}
		case "length":
			e.Errorf("--length is only supported with --algorithm=blake2b")
			return 1
		}
	}
	if len(ops) == 0 {
		ops = []string{"-"}
	}
	if o.check {
		return checkSums(e, ops, o, func(tag string) (digestAlgo, bool) {
			if tag == "" {
				a, ok := digestAlgos[algoName]
				return a, ok
			}
			for _, a := range digestAlgos {
				if a.tag == tag {
					return a, true
				}
			}
			return digestAlgo{}, false
		})
	}
	w, flush := output(e)
	status := 0
	for _, name := range ops {
		if algoName == "crc" {
			crc, size, err := cksumFile(e, name)
			if err != nil {
				w.Flush()
				e.Errorf("%s: %s", name, errText(err))
				status = 1
				continue
			}
			if name == "-" && len(ops) == 1 {
				fmt.Fprintf(w, "%d %d\n", crc, size)
			} else {
				fmt.Fprintf(w, "%d %d %s\n", crc, size, name)
			}
			continue
		}
		algo := digestAlgos[algoName]
		sum, err := hashFile(e, name, algo.new())
		if err != nil {
			w.Flush()
			e.Errorf("%s: %s", name, errText(err))
			status = 1
			continue
		}
		lo := o
		lo.tag = !o.untagged
		writeSumLine(w, algo.tag, hex.EncodeToString(sum), name, lo)
	}
	if flush() != 0 {
		return 1
	}
	return status
}

// cksumTable is the CRC-32 table of POSIX cksum (polynomial 0x04C11DB7,
// most significant bit first), built on first use.
var cksumTable *[256]uint32

func cksumFile(e *cmd.Env, name string) (uint32, int64, error) {
	if cksumTable == nil {
		var t [256]uint32
		for i := range t {
			c := uint32(i) << 24
			for k := 0; k < 8; k++ {
				if c&0x80000000 != 0 {
					c = c<<1 ^ 0x04c11db7
				} else {
					c <<= 1
				}
			}
			t[i] = c
		}
		cksumTable = &t
	}
	r, done, err := openInput(e, name)
	if err != nil {
		return 0, 0, err
	}
	defer done()
	var crc uint32
	var size int64
	buf := make([]byte, 64*1024)
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			crc = crc<<8 ^ cksumTable[byte(crc>>24)^b]
		}
		size += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, err
		}
	}
	for n := size; n > 0; n >>= 8 {
		crc = crc<<8 ^ cksumTable[byte(crc>>24)^byte(n)]
	}
	return ^crc, size, nil
}

func baseMain(e *cmd.Env, codec *baseCodec) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(
		cmd.Option{Short: 'd', Long: "decode"}, cmd.Option{Short: 'i', Long: "ignore-garbage"},
		cmd.Option{Short: 'w', Long: "wrap", Arg: cmd.RequiredArg}), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "[OPTION]... [FILE]\n"+codec.name+" encode or decode FILE, or standard input, to standard output.\n  -d, --decode          decode data\n  -i, --ignore-garbage  when decoding, ignore non-alphabet characters\n  -w, --wrap=COLS       wrap encoded lines after COLS character (default 76).\n                          Use 0 to disable line wrapping\n") {
		return 0
	}
	decode, garbage, wrap := false, false, 76
	for _, o := range opts {
		switch o.Name {
		case "decode":
			decode = true
		case "ignore-garbage":
			garbage = true
		case "wrap":
			n, err := strconv.Atoi(o.Value)
			if err != nil || n < 0 {
				e.Errorf("invalid wrap size: '%s'", o.Value)
				return 1
			}
			wrap = n
		}
	}
	if len(ops) > 1 {
		return e.Usage(1, fmt.Errorf("extra operand '%s'", ops[1]))
	}
	name := "-"
	if len(ops) == 1 {
		name = ops[0]
	}
	r, done, err := openInput(e, name)
	if err != nil {
		e.Errorf("%s: %s", name, errText(err))
		return 1
	}
	defer done()
	w, flush := output(e)
	if decode {
		return baseDecode(e, codec, r, w, flush, garbage)
	}
	enc := codec.std
	buf := make([]byte, codec.block)
	col := 0
	var out []byte
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			out = enc.AppendEncode(out[:0], buf[:n])
			if wrap == 0 {
				w.Write(out)
			} else {
				for len(out) > 0 {
					k := min(wrap-col, len(out))
					w.Write(out[:k])
					out, col = out[k:], col+k
					if col == wrap {
						w.WriteByte('\n')
						col = 0
					}
				}
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			w.Flush()
			e.Errorf("read error: %s", errText(err))
			return 1
		}
	}
	if col > 0 {
		w.WriteByte('\n')
	}
	return flush()
}

func baseDecode(e *cmd.Env, codec *baseCodec, r io.Reader, w *bufio.Writer, flush func() int, garbage bool) int {
	data, err := io.ReadAll(r)
	if err != nil {
		e.Errorf("read error: %s", errText(err))
		return 1
	}
	clean := make([]byte, 0, len(data))
	invalid := false
	for _, c := range data {
		switch {
		case codec.alphabet(c):
			clean = append(clean, c)
		case c == '\n':
		case garbage:
		default:
			invalid = true
		}
		if invalid {
			break
		}
	}
	// Decode what is valid; report the rest.
	n := len(clean) / codec.group * codec.group
	out, err := codec.std.AppendDecode(nil, clean[:n])
	w.Write(out)
	if err == nil && n < len(clean) {
		// A final group without padding: GNU decodes it and then complains.
		tail, err2 := codec.raw.AppendDecode(nil, clean[n:])
		if err2 == nil && codec.decodeTail {
			w.Write(tail)
		}
		invalid = true
	}
	if err != nil || invalid {
		w.Flush()
		e.Errorf("invalid input")
		flush()
		return 1
	}
	return flush()
}

// onlyReader hides a reader's WriteTo (an *os.File's copies through a
// 32 KiB buffer) so that io.CopyBuffer uses the buffer it is given.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
