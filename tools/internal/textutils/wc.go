package textutils

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
	"github.com/wasmbox/wasmbox/tools/internal/textio"
)

func init() { cmd.Register("wc", wcMain) }

const wcHelp = `Print newline, word, and byte counts for each FILE, and a total line if
more than one FILE is specified.  A word is a non-zero-length sequence of
characters delimited by white space.
With no FILE, or when FILE is -, read standard input.

  -c, --bytes            print the byte counts
  -m, --chars            print the character counts
  -l, --lines            print the newline counts
  -L, --max-line-length  print the maximum display width
  -w, --words            print the word counts
      --total=WHEN       when to print a line with total counts;
                           WHEN can be: auto, always, only, never
`

var wcOpts = []optDef{
	{'c', "bytes", noArg},
	{'m', "chars", noArg},
	{'l', "lines", noArg},
	{'L', "max-line-length", noArg},
	{'w', "words", noArg},
	{0, "total", reqArg},
	{0, "files0-from", reqArg},
}

type wcCounts struct {
	lines, words, chars, bytes, maxLen int64
}

// wcNeed says which counts wcCount must compute beyond bytes and lines,
// which are always cheap.
type wcNeed struct{ words, maxLen bool }

// wcBufSize is the read size of wc: few large reads, each a host call.
const wcBufSize = 256 << 10

// wcWordStep is the word automaton of wcCount without -L: indexed by the
// state (1 inside a word) and the byte, an entry holds the next state in
// bit 0 and 1 in bit 1 when the byte starts a word. Printable bytes make
// words, space bytes end them, other bytes (control, non-ASCII in the C
// locale) neither start nor end one.
var wcWordStep = func() (t [2][256]uint8) {
	for b := 0; b < 256; b++ {
		switch {
		case b > 0x20 && b < 0x7f:
			t[0][b], t[1][b] = 1|2, 1
		case b == ' ' || (b >= '\t' && b <= '\r'):
			t[0][b], t[1][b] = 0, 0
		default:
			t[0][b], t[1][b] = 0, 1
		}
	}
	return t
}()

// wcCount counts r in one pass. Lines (and bytes) are counted a word at a
// time; words and the display width only when need asks for them. Words
// are maximal runs of non-space bytes (C locale isspace); the display
// width counts printable bytes, with tabs advancing to the next multiple
// of 8.
func wcCount(r io.Reader, need wcNeed) (wcCounts, error) {
	var c wcCounts
	buf := make([]byte, wcBufSize)
	inWord := false
	var st uint8
	var pos int64
	for {
		n, err := r.Read(buf)
		p := buf[:n]
		switch {
		case need.maxLen:
			for _, b := range p {
				switch b {
				case '\n':
					c.lines++
					fallthrough
				case '\r', '\f':
					if pos > c.maxLen {
						c.maxLen = pos
					}
					pos = 0
					inWord = false
				case '\t':
					pos += 8 - pos%8
					inWord = false
				case ' ', '\v':
					pos++
					inWord = false
				default:
					// Printable characters make words; other bytes
					// (control, non-ASCII in the C locale) neither start
					// nor end one.
					if b > 0x20 && b < 0x7f {
						pos++
						if !inWord {
							c.words++
							inWord = true
						}
					}
				}
			}
		case need.words:
			var words int64
			for _, b := range p {
				v := wcWordStep[st&1][b]
				words += int64(v >> 1)
				st = v
			}
			c.words += words
			c.lines += int64(textio.CountByte(p, '\n'))
		default:
			c.lines += int64(textio.CountByte(p, '\n'))
		}
		c.bytes += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return c, err
		}
	}
	if pos > c.maxLen {
		c.maxLen = pos
	}
	c.chars = c.bytes
	return c, nil
}

func wcMain(e *cmd.Env) int {
	t := newTool(e)
	opts, files, st, ok := t.parse(wcOpts, "wc [OPTION]... [FILE]...", wcHelp, 1)
	if !ok {
		return st
	}
	var pl, pw, pc, pb, pL bool
	total := "auto"
	for _, o := range opts {
		switch o.name {
		case "bytes":
			pb = true
		case "chars":
			pc = true
		case "lines":
			pl = true
		case "max-line-length":
			pL = true
		case "words":
			pw = true
		case "total":
			switch o.val {
			case "auto", "always", "only", "never":
				total = o.val
			default:
				e.Errorf("invalid argument %s for '--total'", quote(o.val))
				fmt.Fprintf(e.Stderr, "Valid arguments are:\n  - 'auto'\n  - 'always'\n  - 'only'\n  - 'never'\n")
				t.usageHint()
				return 1
			}
		case "files0-from":
			data, err := readAllInput(e, o.val)
			if err != nil {
				e.Errorf("cannot open %s for reading: %s", quote(o.val), strerror(err))
				return 1
			}
			for _, f := range strings.Split(string(data), "\x00") {
				if f != "" {
					files = append(files, f)
				}
			}
		}
	}
	if !pl && !pw && !pc && !pb && !pL {
		pl, pw, pb = true, true, true
	}
	names := files
	stdinOnly := len(files) == 0
	if stdinOnly {
		names = []string{"-"}
	}
	nprint := 0
	for _, p := range []bool{pl, pw, pc, pb, pL} {
		if p {
			nprint++
		}
	}
	width := wcWidth(e, names, nprint)
	if total == "only" {
		width = 1
	}
	status := 0
	var tot wcCounts
	var line []byte
	print := func(c wcCounts, label string, showLabel bool) {
		line = line[:0]
		add := func(v int64) {
			if len(line) > 0 {
				line = append(line, ' ')
			}
			s := strconv.FormatInt(v, 10)
			for i := len(s); i < width; i++ {
				line = append(line, ' ')
			}
			line = append(line, s...)
		}
		if pl {
			add(c.lines)
		}
		if pw {
			add(c.words)
		}
		if pc {
			add(c.chars)
		}
		if pb {
			add(c.bytes)
		}
		if pL {
			add(c.maxLen)
		}
		if showLabel {
			line = append(line, ' ')
			line = append(line, label...)
		}
		line = append(line, '\n')
		t.out.Write(line)
	}
	for _, name := range names {
		r, closeFn, err := openInput(e, name)
		if err != nil {
			t.out.Flush()
			e.Errorf("%s: %s", name, strerror(err))
			status = 1
			if isDirErr(err) && total != "only" {
				print(wcCounts{}, name, true)
			}
			continue
		}
		c, err := wcCount(r, wcNeed{words: pw, maxLen: pL})
		closeFn()
		if err != nil {
			t.out.Flush()
			e.Errorf("%s: %s", name, strerror(err))
			status = 1
		}
		tot.lines += c.lines
		tot.words += c.words
		tot.chars += c.chars
		tot.bytes += c.bytes
		if c.maxLen > tot.maxLen {
			tot.maxLen = c.maxLen
		}
		if total != "only" {
			print(c, name, !stdinOnly)
		}
	}
	if total == "always" || total == "only" || (total == "auto" && len(names) > 1) {
		print(tot, "total", total != "only")
	}
	return t.flush(status)
}

// wcWidth computes the column width the way GNU wc does: one column when
// a single count of a single input is printed, else wide enough for the
// total size of the regular files, and at least 7 when any input is not
// a regular file (a pipe, a terminal).
func wcWidth(e *cmd.Env, names []string, nprint int) int {
	if len(names) == 1 && nprint == 1 {
		return 1
	}
	minWidth := 1
	var regTotal int64
	for _, name := range names {
		var fi os.FileInfo
		var err error
		if name == "-" {
			f, isFile := e.Stdin.(*os.File)
			if !isFile {
				minWidth = 7
				continue
			}
			fi, err = f.Stat()
		} else {
			fi, err = os.Stat(name)
		}
		if err != nil {
			continue
		}
		if !fi.Mode().IsRegular() {
			minWidth = 7
		} else {
			regTotal += fi.Size()
		}
	}
	w := 1
	for ; regTotal >= 10; regTotal /= 10 {
		w++
	}
	return max(w, minWidth)
}
