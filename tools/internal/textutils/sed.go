package textutils

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("sed", sedMain) }

const sedUsage = "sed [OPTION]... {script-only-if-no-other-script} [input-file]..."

const sedHelp = `
  -n, --quiet, --silent
                 suppress automatic printing of pattern space
      --debug
                 annotate program execution
  -e script, --expression=script
                 add the script to the commands to be executed
  -f script-file, --file=script-file
                 add the contents of script-file to the commands to be executed
  --follow-symlinks
                 follow symlinks when processing in place
  -i[SUFFIX], --in-place[=SUFFIX]
                 edit files in place (makes backup if SUFFIX supplied)
  -l N, --line-length=N
                 specify the desired line-wrap length for the ` + "`" + `l' command
  --posix
                 disable all GNU extensions.
  -E, -r, --regexp-extended
                 use extended regular expressions in the script
                 (for portability use POSIX -E).
  -s, --separate
                 consider files as separate rather than as a single,
                 continuous long stream.
      --sandbox
                 operate in sandbox mode (disable e/r/w commands).
  -u, --unbuffered
                 load minimal amounts of data from the input files and flush
                 the output buffers more often
  -z, --null-data
                 separate lines by NUL characters
      --help     display this help and exit
      --version  output version information and exit

If no -e, --expression, -f, or --file option is given, then the first
non-option argument is taken as the sed script to interpret.  All
remaining arguments are names of input files; if no input files are
specified, then the standard input is read.

GNU sed home page: <https://www.gnu.org/software/sed/>.
General help using GNU software: <https://www.gnu.org/gethelp/>.
`

var sedOpts = []optDef{
	{'n', "quiet", noArg},
	{0, "silent", noArg},
	{'e', "expression", reqArg},
	{'f', "file", reqArg},
	{'i', "in-place", optArg},
	{'l', "line-length", reqArg},
	{'E', "regexp-extended", noArg},
	{'r', "", noArg},
	{'s', "separate", noArg},
	{'z', "null-data", noArg},
	{'u', "unbuffered", noArg},
	{0, "posix", noArg},
	{0, "debug", noArg},
	{0, "sandbox", noArg},
	{0, "follow-symlinks", noArg},
}

// sedArgs pre-processes -i: its suffix can only be attached ("-i.bak"),
// so "-i" is rewritten to the long form before getopt-style parsing.
func sedArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) >= 2 && a[0] == '-' && a[1] != '-' {
			if j := strings.IndexByte(a, 'i'); j > 0 {
				// Options before 'i' in the cluster that take arguments
				// (e, f, l) would have consumed it.
				if !strings.ContainsAny(a[1:j], "efl") {
					if j > 1 {
						out = append(out, a[:j])
					}
					out = append(out, "--in-place="+a[j+1:])
					continue
				}
			}
		}
		out = append(out, a)
	}
	return out
}

func sedMain(e *cmd.Env) int {
	t := newTool(e)
	args := append([]string{e.Args[0]}, sedArgs(e.Args[1:])...)
	opts, operands, err := parseOpts(args[1:], sedOpts)
	if err != nil {
		switch {
		case errors.Is(err, errHelp):
			fmt.Fprintf(e.Stdout, "Usage: %s\n%s", sedUsage, sedHelp)
			return 0
		case errors.Is(err, errVersion):
			fmt.Fprintf(e.Stdout, "sed %s\n", version)
			return 0
		}
		e.Errorf("%s", err)
		fmt.Fprintf(e.Stderr, "Usage: %s\n", sedUsage)
		return 1
	}
	x := &sedExec{t: t, lineLen: 70, delim: '\n'}
	var script strings.Builder
	var pieces []sedPiece
	nexpr := 0
	haveScript := false
	inPlace := false
	suffix := ""
	ere := false
	for _, o := range opts {
		switch o.name {
		case "quiet", "silent":
			x.quiet = true
		case "expression":
			if script.Len() > 0 {
				script.WriteByte('\n')
			}
			nexpr++
			pieces = append(pieces, sedPiece{start: script.Len(), expr: nexpr})
			script.WriteString(o.val)
			haveScript = true
		case "file":
			data, err := readAllInput(e, o.val)
			if err != nil {
				e.Errorf("couldn't open file %s: %s", o.val, strerror(err))
				return 4
			}
			if script.Len() > 0 {
				script.WriteByte('\n')
			}
			pieces = append(pieces, sedPiece{start: script.Len(), file: o.val})
			s := string(data)
			if strings.HasPrefix(s, "#n\n") && script.Len() == 0 {
				x.quiet = true
			}
			script.WriteString(strings.TrimSuffix(s, "\n"))
			haveScript = true
		case "in-place":
			inPlace, suffix = true, o.val
			x.separate = true
		case "line-length":
			n, err := strconv.Atoi(o.val)
			if err != nil {
				e.Errorf("invalid line length: %s", o.val)
				return 1
			}
			x.lineLen = n
		case "regexp-extended", "r":
			ere = true
		case "separate":
			x.separate = true
		case "null-data":
			x.delim = 0
		}
	}
	if !haveScript {
		if len(operands) == 0 {
			fmt.Fprintf(e.Stderr, "Usage: %s\n%s", sedUsage, sedHelp)
			return 1
		}
		nexpr++
		pieces = append(pieces, sedPiece{start: 0, expr: 1})
		script.WriteString(operands[0])
		if strings.HasPrefix(operands[0], "#n\n") {
			x.quiet = true
		}
		operands = operands[1:]
	}
	prog, err := parseSed(script.String(), pieces, ere)
	if err != nil {
		e.Errorf("%s", err)
		var se *sedError
		if errors.As(err, &se) && se.status != 0 {
			return se.status
		}
		return 1
	}
	x.prog = prog
	if err := x.openWFiles(); err != nil {
		e.Errorf("%s", err)
		return 4
	}
	defer x.closeWFiles()
	if inPlace {
		if len(operands) == 0 {
			e.Errorf("no input files")
			return 1
		}
		for _, name := range operands {
			if x.quit {
				break
			}
			x.editInPlace(name, suffix)
		}
		return t.flush(x.exitCode())
	}
	x.out = &sedOut{w: t.out}
	x.in = &sedInput{e: e, files: inputs(operands), x: x}
	x.run()
	return t.flush(x.exitCode())
}

func (x *sedExec) exitCode() int {
	if x.hasQuitCode {
		return x.quitCode
	}
	return x.status
}

// sedOut writes output, remembering a missing final newline so that
// later output first completes the line (as GNU sed does).
type sedOut struct {
	w         io.Writer
	missingNL bool
	delim     byte
}

func (o *sedOut) write(b []byte) {
	if o.missingNL {
		o.w.Write([]byte{o.delim})
		o.missingNL = false
	}
	o.w.Write(b)
}

// line writes b and a delimiter, unless chomped is false (the input line
// had no final newline).
func (o *sedOut) line(b []byte, delim byte, chomped bool) {
	o.delim = delim
	o.write(b)
	if chomped {
		o.w.Write([]byte{delim})
	} else {
		o.missingNL = true
	}
}

type sedInput struct {
	e     *cmd.Env
	files []string
	x     *sedExec
	idx   int
	cur   *lineReader
	close func()
	name  string
	// lookahead
	next        []byte
	nextChomped bool
	hasNext     bool
	nextName    string
	started     bool
}

// fill loads the lookahead line, opening files as needed. With stopAtEOF
// (separate files) it does not move to the next file.
func (in *sedInput) fill(stopAtEOF bool) {
	in.hasNext = false
	for {
		if in.cur == nil {
			if stopAtEOF && in.started {
				return
			}
			if in.idx >= len(in.files) {
				return
			}
			name := in.files[in.idx]
			in.idx++
			r, closeFn, err := openInput(in.e, name)
			if err != nil {
				in.x.t.out.Flush()
				if isDirErr(err) {
					in.e.Errorf("couldn't edit %s: not a regular file", name)
					in.x.status = 4
				} else {
					in.e.Errorf("can't read %s: %s", name, strerror(err))
					in.x.status = 2
				}
				continue
			}
			in.cur, in.close, in.nextName = newLineReader(r, in.x.delim), closeFn, name
			in.started = true
		}
		line, err := in.cur.next()
		if err != nil {
			if err != io.EOF {
				in.e.Errorf("read error on %s: %s", in.nextName, strerror(err))
				in.x.status = 2
			}
			in.close()
			in.cur = nil
			if stopAtEOF {
				return
			}
			continue
		}
		chomped := len(line) > 0 && line[len(line)-1] == in.x.delim
		if chomped {
			line = line[:len(line)-1]
		}
		in.next = append(in.next[:0], line...)
		in.nextChomped, in.hasNext = chomped, true
		return
	}
}

type sedExec struct {
	t           *tool
	prog        []*sedCmd
	in          *sedInput
	out         *sedOut
	quiet       bool
	separate    bool
	delim       byte
	lineLen     int
	ps, hs      []byte
	chomped     bool
	lineno      int64
	tflag       bool
	lastRe      *Regex
	appendQ     []sedAppend
	wfiles      map[string]*sedWFile
	rfiles      map[string]*lineReader
	quit        bool
	quitCode    int
	hasQuitCode bool
	status      int
	fileName    string
	steps       int64
}

type sedAppend struct {
	text []byte
	file string // r: file to copy
}

type sedWFile struct {
	f   *os.File
	out *sedOut
	bw  *bufio.Writer
}

func (x *sedExec) openWFiles() error {
	x.wfiles = map[string]*sedWFile{}
	for _, c := range x.prog {
		name := c.wfile
		if c.name == 'w' || c.name == 'W' {
			name = c.text
		}
		if name == "" || x.wfiles[name] != nil {
			continue
		}
		switch name {
		case "/dev/stdout":
			x.wfiles[name] = &sedWFile{out: &sedOut{w: x.t.out}}
			continue
		case "/dev/stderr":
			x.wfiles[name] = &sedWFile{out: &sedOut{w: x.t.e.Stderr}}
			continue
		}
		f, err := os.Create(name)
		if err != nil {
			return fmt.Errorf("couldn't open file %s: %s", name, strerror(err))
		}
		bw := bufio.NewWriter(f)
		x.wfiles[name] = &sedWFile{f: f, bw: bw, out: &sedOut{w: bw}}
	}
	return nil
}

func (x *sedExec) closeWFiles() {
	for _, w := range x.wfiles {
		if w.f != nil {
			w.bw.Flush()
			w.f.Close()
		}
	}
}

// wfileOut returns the output of a w file; /dev/stdout shares the main
// output's missing-newline state.
func (x *sedExec) wfileOut(name string) *sedOut {
	if name == "/dev/stdout" {
		return x.out
	}
	return x.wfiles[name].out
}

// editInPlace runs the program over one file and replaces it.
func (x *sedExec) editInPlace(name, suffix string) {
	fi, err := os.Stat(name)
	if err != nil {
		x.t.e.Errorf("can't read %s: %s", name, strerror(err))
		x.status = 2
		return
	}
	if !fi.Mode().IsRegular() {
		x.t.e.Errorf("couldn't edit %s: not a regular file", name)
		x.status = 4
		return
	}
	var buf bytes.Buffer
	x.out = &sedOut{w: &buf}
	x.in = &sedInput{e: x.t.e, files: []string{name}, x: x}
	x.lineno = 0
	x.run()
	if suffix != "" {
		bak := suffix
		if strings.Contains(suffix, "*") {
			bak = strings.ReplaceAll(suffix, "*", filepath.Base(name))
			if !strings.Contains(bak, "/") {
				bak = filepath.Join(filepath.Dir(name), bak)
			}
		} else {
			bak = name + suffix
		}
		if err := os.Rename(name, bak); err != nil {
			x.t.e.Errorf("cannot rename %s: %s", name, strerror(err))
			x.status = 4
			return
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "sed")
	if err != nil {
		x.t.e.Errorf("couldn't open temporary file %s: %s", filepath.Join(filepath.Dir(name), "sedXXXXXX"), strerror(err))
		x.status = 4
		return
	}
	_, werr := tmp.Write(buf.Bytes())
	tmp.Chmod(fi.Mode().Perm())
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		x.t.e.Errorf("couldn't write %s: %s", name, strerror(errors.Join(werr, cerr)))
		x.status = 4
		return
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		os.Remove(tmp.Name())
		x.t.e.Errorf("cannot rename %s: %s", tmp.Name(), strerror(err))
		x.status = 4
	}
}

// readLine moves the lookahead into the pattern space.
func (x *sedExec) readLine() bool {
	in := x.in
	if !in.started {
		in.fill(false)
	}
	if !in.hasNext {
		return false
	}
	x.ps = append(x.ps[:0], in.next...)
	x.chomped = in.nextChomped
	if x.separate && x.fileName != "" && in.nextName != x.fileName {
		x.lineno = 0 // -s: line numbers restart with each file
	}
	x.fileName = in.nextName
	x.lineno++
	in.fill(false)
	return true
}

func (x *sedExec) isLast() bool {
	if !x.in.started {
		x.in.fill(false)
	}
	if x.separate {
		return !x.in.hasNext || x.in.nextName != x.fileName
	}
	return !x.in.hasNext
}

func (x *sedExec) printPS() { x.out.line(x.ps, x.delim, x.chomped) }

func (x *sedExec) dumpAppends() {
	for _, a := range x.appendQ {
		if a.file == "" {
			x.out.write(a.text)
			continue
		}
		data, err := os.ReadFile(a.file)
		if err == nil && len(data) > 0 {
			x.out.write(data)
			if data[len(data)-1] != '\n' {
				x.out.missingNL, x.out.delim = true, '\n'
			}
		}
	}
	x.appendQ = x.appendQ[:0]
}

func (x *sedExec) run() {
	for _, c := range x.prog {
		c.inRange, c.done = false, false
		if c.a1 != nil && c.a1.kind == addrZero {
			c.inRange = true
		}
	}
	restart := false
	for !x.quit {
		if !restart {
			if !x.readLine() {
				break
			}
			x.tflag = false
		}
		restart = false
		end := x.cycle()
		switch end {
		case endRestart:
			restart = true
			x.dumpAppends()
			continue
		case endDelete:
		case endQuitSilent:
			x.dumpAppends()
			return
		default:
			if !x.quiet {
				x.printPS()
			}
		}
		x.dumpAppends()
		if end == endQuit {
			return
		}
	}
}

const (
	endNormal = iota
	endDelete
	endRestart
	endQuit
	endQuitSilent
)

func (x *sedExec) regex(re *Regex, empty bool) *Regex {
	if empty {
		if x.lastRe == nil {
			x.t.out.Flush()
			x.t.e.Errorf("no previous regular expression")
			x.quit, x.hasQuitCode, x.quitCode = true, true, 1
			return nil
		}
		return x.lastRe
	}
	x.lastRe = re
	return re
}

func (x *sedExec) matchRe(re *Regex, empty bool) bool {
	r := x.regex(re, empty)
	if r == nil {
		return false
	}
	ok, err := r.Match(x.ps)
	if err != nil {
		x.fail(err)
	}
	return ok
}

func (x *sedExec) fail(err error) {
	x.t.out.Flush()
	x.t.e.Errorf("%s", err)
	x.quit, x.hasQuitCode, x.quitCode = true, true, 4
}

func (x *sedExec) matchOne(a *sedAddr) bool {
	switch a.kind {
	case addrLine:
		return x.lineno == a.n
	case addrLast:
		return x.isLast()
	case addrRegex:
		return x.matchRe(a.re, a.empty)
	case addrStep:
		if a.step <= 0 {
			return x.lineno == a.n
		}
		return x.lineno >= a.n && (x.lineno-a.n)%a.step == 0
	}
	return false
}

func (x *sedExec) selected(c *sedCmd) bool {
	if c.a1 == nil {
		return !c.negate
	}
	var m bool
	if c.a2 == nil {
		m = x.matchOne(c.a1)
	} else {
		m = x.matchRange(c)
	}
	return m != c.negate
}

func (x *sedExec) matchRange(c *sedCmd) bool {
	a2 := c.a2
	if !c.inRange {
		if c.a1.kind == addrZero || !x.matchOne(c.a1) {
			return false
		}
		switch a2.kind {
		case addrLine:
			if a2.n > x.lineno {
				c.inRange, c.rangeEnd = true, a2.n
			}
		case addrPlus:
			if a2.n > 0 {
				c.inRange, c.rangeEnd = true, x.lineno+a2.n
			}
		case addrMult:
			if a2.n > 0 && x.lineno%a2.n != 0 {
				c.inRange, c.rangeEnd = true, (x.lineno/a2.n+1)*a2.n
			}
		case addrLast:
			c.inRange = !x.isLast()
		case addrRegex:
			c.inRange = true
		}
		return true
	}
	switch a2.kind {
	case addrLine, addrPlus, addrMult:
		if x.lineno >= c.rangeEnd {
			c.inRange = false
		}
		if x.lineno > c.rangeEnd {
			// The end line was passed (line number address behind): the
			// range ends without including this line.
			return x.matchRange(c)
		}
	case addrLast:
		if x.isLast() {
			c.inRange = false
		}
	case addrRegex:
		if x.matchRe(a2.re, a2.empty) {
			c.inRange = false
		}
	}
	return true
}

// sedStepLimit bounds the commands one run may execute (0: unlimited).
// Scripts like ":a;ba" loop forever in every sed; in the sandbox the
// deadline ends them, and tests set a limit.
var sedStepLimit int64

func (x *sedExec) cycle() int {
	prog := x.prog
	for pc := 0; pc < len(prog) && !x.quit; pc++ {
		if sedStepLimit > 0 {
			x.steps++
			if x.steps > sedStepLimit {
				x.fail(errors.New("step limit reached"))
				return endQuitSilent
			}
		}
		c := prog[pc]
		if !x.selected(c) {
			if c.name == '{' {
				pc = c.jump - 1
			}
			continue
		}
		switch c.name {
		case '{', '}', ':':
		case '=':
			x.out.write([]byte(strconv.FormatInt(x.lineno, 10) + "\n"))
		case 'a':
			x.appendQ = append(x.appendQ, sedAppend{text: sedText(c.text)})
		case 'i':
			x.out.write(sedText(c.text))
		case 'c':
			if c.a2 == nil || !c.inRange || c.negate {
				x.out.write(sedText(c.text))
			}
			return endDelete
		case 'b':
			pc = c.jump - 1
		case 't':
			if x.tflag {
				x.tflag = false
				pc = c.jump - 1
			}
		case 'T':
			if !x.tflag {
				pc = c.jump - 1
			} else {
				x.tflag = false
			}
		case 'd':
			return endDelete
		case 'D':
			i := bytes.IndexByte(x.ps, x.delim)
			if i < 0 {
				return endDelete
			}
			x.ps = append(x.ps[:0], x.ps[i+1:]...)
			return endRestart
		case 'g':
			x.ps = append(x.ps[:0], x.hs...)
		case 'G':
			x.ps = append(append(x.ps, x.delim), x.hs...)
		case 'h':
			x.hs = append(x.hs[:0], x.ps...)
		case 'H':
			x.hs = append(append(x.hs, x.delim), x.ps...)
		case 'x':
			x.ps, x.hs = x.hs, x.ps
		case 'l':
			n := x.lineLen
			if c.hasInt {
				n = c.intArg
			}
			x.listLine(n)
		case 'n':
			if x.isLastInput() {
				if !x.quiet {
					x.printPS()
				}
				return endQuitSilent
			}
			if !x.quiet {
				x.printPS()
			}
			x.dumpAppends()
			x.readLine()
		case 'N':
			if x.isLastInput() {
				if !x.quiet {
					x.printPS()
				}
				return endQuitSilent
			}
			x.dumpAppends()
			prev := append([]byte(nil), x.ps...)
			x.readLine()
			x.ps = append(append(prev, x.delim), x.ps...)
		case 'p':
			x.printPS()
		case 'P':
			i := bytes.IndexByte(x.ps, x.delim)
			if i < 0 {
				x.printPS()
			} else {
				x.out.line(x.ps[:i], x.delim, true)
			}
		case 'q':
			x.quit = true
			if c.hasInt {
				x.quitCode, x.hasQuitCode = c.intArg, true
			}
			return endQuit
		case 'Q':
			x.quit = true
			if c.hasInt {
				x.quitCode, x.hasQuitCode = c.intArg, true
			}
			return endQuitSilent
		case 'r':
			x.appendQ = append(x.appendQ, sedAppend{file: c.text})
		case 'R':
			x.readOneLine(c.text)
		case 'w':
			x.wfileOut(c.text).line(x.ps, x.delim, true)
		case 'W':
			i := bytes.IndexByte(x.ps, x.delim)
			if i < 0 {
				i = len(x.ps)
			}
			x.wfileOut(c.text).line(x.ps[:i], x.delim, true)
		case 'z':
			x.ps = x.ps[:0]
		case 'F':
			name := x.fileName
			x.out.write([]byte(name + "\n"))
		case 'y':
			for i, b := range x.ps {
				x.ps[i] = c.ymap[b]
			}
		case 's':
			x.substitute(c)
		}
	}
	if x.quit {
		return endQuitSilent
	}
	return endNormal
}

// sedText is the output of a, i and c: the text and a newline, or nothing
// for an empty text ("$a\" only completes a missing final newline).
func sedText(text string) []byte {
	if text == "" {
		return nil
	}
	return []byte(text + "\n")
}

// isLastInput reports that no input line follows (n and N then end the
// script GNU style).
func (x *sedExec) isLastInput() bool {
	if !x.in.started {
		x.in.fill(false)
	}
	return !x.in.hasNext
}

func (x *sedExec) readOneLine(name string) {
	if x.rfiles == nil {
		x.rfiles = map[string]*lineReader{}
	}
	lr, ok := x.rfiles[name]
	if !ok {
		f, err := os.Open(name)
		if err != nil {
			x.rfiles[name] = nil
			return
		}
		lr = newLineReader(f, '\n')
		x.rfiles[name] = lr
	}
	if lr == nil {
		return
	}
	line, err := lr.next()
	if err != nil {
		return
	}
	if line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	x.appendQ = append(x.appendQ, sedAppend{text: append([]byte(nil), line...)})
}

func (x *sedExec) substitute(c *sedCmd) {
	re := x.regex(c.re, c.reEmpty)
	if re == nil {
		return
	}
	if len(c.repl) > 0 {
		maxRef := 0
		for _, p := range c.repl {
			maxRef = max(maxRef, p.group)
		}
		if maxRef > re.NumSubexp() {
			x.t.out.Flush()
			x.t.e.Errorf("invalid reference \\%d on `s' command's RHS", maxRef)
			x.quit, x.hasQuitCode, x.quitCode = true, true, 1
			return
		}
	}
	nth := max(c.nth, 1)
	limit := nth
	if c.global {
		limit = -1
	}
	locs, err := re.FindAllSubmatchIndex(x.ps, limit)
	if err != nil {
		x.fail(err)
		return
	}
	if len(locs) < nth {
		return
	}
	var out []byte
	last := 0
	for i, loc := range locs {
		if i+1 < nth {
			continue
		}
		out = append(out, x.ps[last:loc[0]]...)
		out = appendRepl(out, c.repl, x.ps, loc)
		last = loc[1]
		if !c.global {
			break
		}
	}
	out = append(out, x.ps[last:]...)
	x.ps = out
	x.tflag = true
	for i := 0; i < c.print; i++ {
		x.printPS()
	}
	if c.wfile != "" {
		x.wfileOut(c.wfile).line(x.ps, x.delim, true)
	}
}

// appendRepl expands a replacement with GNU case conversion.
func appendRepl(out []byte, parts []replPart, src []byte, loc []int) []byte {
	mode := byte(0)    // 'L' or 'U' until \E
	oneShot := byte(0) // 'l' or 'u' for the next character
	add := func(s []byte) {
		for _, b := range s {
			switch oneShot {
			case 'l':
				b = lower(b)
			case 'u':
				b = upper(b)
			default:
				switch mode {
				case 'L':
					b = lower(b)
				case 'U':
					b = upper(b)
				}
			}
			if oneShot != 0 {
				oneShot = 0
			}
			out = append(out, b)
		}
	}
	for _, p := range parts {
		switch {
		case p.conv == 'L' || p.conv == 'U':
			mode, oneShot = p.conv, 0
		case p.conv == 'E':
			mode, oneShot = 0, 0
		case p.conv != 0:
			oneShot = p.conv
		case p.group < 0:
			if mode == 0 && oneShot == 0 {
				out = append(out, p.lit...)
			} else {
				add([]byte(p.lit))
			}
		default:
			if 2*p.group+1 < len(loc) && loc[2*p.group] >= 0 {
				s := src[loc[2*p.group]:loc[2*p.group+1]]
				if mode == 0 && oneShot == 0 {
					out = append(out, s...)
				} else {
					add(s)
				}
			}
		}
	}
	return out
}

// listLine implements 'l': unambiguous output, wrapped at width.
func (x *sedExec) listLine(width int) {
	var b []byte
	col := 0
	emit := func(s string) {
		if width > 1 && col+len(s) > width-1 {
			b = append(b, "\\\n"...)
			col = 0
		}
		b = append(b, s...)
		col += len(s)
	}
	for _, c := range x.ps {
		switch c {
		case '\\':
			emit(`\\`)
		case 7:
			emit(`\a`)
		case 8:
			emit(`\b`)
		case 12:
			emit(`\f`)
		case '\n':
			emit(`\n`)
		case '\r':
			emit(`\r`)
		case '\t':
			emit(`\t`)
		case 11:
			emit(`\v`)
		default:
			if c < ' ' || c >= 0x7f {
				emit(fmt.Sprintf("\\%03o", c))
			} else {
				emit(string(c))
			}
		}
	}
	b = append(b, "$\n"...)
	x.out.write(b)
}
