package fileutils

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("diff", diffMain) }

var diffUsage = usage{
	synopsis: "[OPTION]... FILES",
	text: `Compare FILES line by line.

  -q, --brief                   report only when files differ
  -s, --report-identical-files  report when two files are the same
  -c, -C NUM, --context[=NUM]   output NUM (default 3) lines of copied context
  -u, -U NUM, --unified[=NUM]   output NUM (default 3) lines of unified context
  -e, --ed                      output an ed script
  -y, --side-by-side            output in two columns
  -W, --width=NUM               output at most NUM (default 130) print columns
      --suppress-common-lines   do not output common lines
  -r, --recursive               recursively compare any subdirectories found
  -N, --new-file                treat absent files as empty
  -i, --ignore-case             ignore case differences in file contents
  -E, --ignore-tab-expansion    ignore changes due to tab expansion
  -Z, --ignore-trailing-space   ignore white space at line end
  -b, --ignore-space-change     ignore changes in the amount of white space
  -w, --ignore-all-space        ignore all white space
  -B, --ignore-blank-lines      ignore changes where lines are all blank
  -a, --text                    treat all files as text
      --strip-trailing-cr       strip trailing carriage return on input
      --label LABEL             use LABEL instead of file name and timestamp
  -x, --exclude=PAT             exclude files that match PAT
      --no-dereference          don't follow symbolic links
      --color[=WHEN]            accepted; output is never colored
  -d, --minimal                 try hard to find a smaller set of changes

Exit status is 0 if inputs are the same, 1 if different, 2 if trouble.
`,
	bad:     2,
	tryName: true,
}

type differ struct {
	e                                    *cmd.Env
	out                                  *bufio.Writer
	format                               byte // 'n' normal, 'u' unified, 'c' context, 'q' brief, 'e' ed
	context                              int
	ignoreCase, ignoreAll, ignoreChange  bool
	ignoreTrailing, ignoreBlank, stripCR bool
	ignoreTab                            bool
	recursive, newFile, reportSame, text bool
	minimal                              bool
	labels                               []string
	width                                int  // -W, side-by-side page width
	suppressCommon, expandTabs           bool // side-by-side options
	exclude                              []string
	status                               int
	cmdline                              string
}

func diffMain(e *cmd.Env) int {
	// -NUM is an obsolete spelling of context length; accept it.
	opts, operands, st, done := getopt(e, "a,text b,ignore-space-change B,ignore-blank-lines c C: ,context? d,minimal e,ed E,ignore-tab-expansion i,ignore-case ,label: N,new-file ,no-dereference q,brief r,recursive s,report-identical-files ,strip-trailing-cr t,expand-tabs T,initial-tab u U: ,unified? w,ignore-all-space x,exclude: y,side-by-side Z,ignore-trailing-space ,color? p,show-c-function ,normal ,suppress-common-lines W,width: ,speed-large-files H ,horizon-lines: ,ignore-file-name-case ,no-ignore-file-name-case", diffUsage)
	if done {
		return st
	}
	d := &differ{e: e, format: 'n', context: 3, width: 130}
	setCtx := func(v string) bool {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			usageErr(e, diffUsage, "invalid context length %s", quote(v))
			return false
		}
		d.context = n
		return true
	}
	for _, o := range opts {
		switch o.name {
		case "text":
			d.text = true
		case "ignore-space-change":
			d.ignoreChange = true
		case "ignore-blank-lines":
			d.ignoreBlank = true
		case "c":
			d.format = 'c'
		case "C":
			d.format = 'c'
			if !setCtx(o.val) {
				return 2
			}
		case "context":
			d.format = 'c'
			if o.has && !setCtx(o.val) {
				return 2
			}
		case "u":
			d.format = 'u'
		case "U":
			d.format = 'u'
			if !setCtx(o.val) {
				return 2
			}
		case "unified":
			d.format = 'u'
			if o.has && !setCtx(o.val) {
				return 2
			}
		case "minimal":
			d.minimal = true
		case "ed":
			d.format = 'e'
		case "ignore-tab-expansion":
			d.ignoreTab = true
		case "ignore-case":
			d.ignoreCase = true
		case "label":
			d.labels = append(d.labels, o.val)
		case "new-file":
			d.newFile = true
		case "brief":
			d.format = 'q'
		case "recursive":
			d.recursive = true
		case "report-identical-files":
			d.reportSame = true
		case "strip-trailing-cr":
			d.stripCR = true
		case "ignore-all-space":
			d.ignoreAll = true
		case "exclude":
			d.exclude = append(d.exclude, o.val)
		case "side-by-side":
			d.format = 'y'
		case "width":
			n, err := strconv.Atoi(o.val)
			if err != nil || n <= 0 {
				return usageErr(e, diffUsage, "invalid width %s", quote(o.val))
			}
			d.width = n
		case "suppress-common-lines":
			d.suppressCommon = true
		case "expand-tabs":
			d.expandTabs = true
		case "ignore-trailing-space":
			d.ignoreTrailing = true
		case "normal":
			d.format = 'n'
		}
	}
	if d.format == 'q' {
		// -q wins over the output formats.
	}
	switch len(operands) {
	case 0:
		return usageErr(e, diffUsage, "missing operand after '%s'", e.Name())
	case 1:
		return usageErr(e, diffUsage, "missing operand after %s", quote(operands[0]))
	case 2:
	default:
		return usageErr(e, diffUsage, "extra operand %s", quote(operands[2]))
	}
	var flags []string
	for _, a := range e.Args[1:] {
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
		}
	}
	d.cmdline = strings.Join(append([]string{"diff"}, flags...), " ")
	d.out = newOut(e)
	defer d.out.Flush()
	a, b := operands[0], operands[1]
	d.compareTop(a, b)
	return d.status
}

func (d *differ) trouble(format string, a ...any) {
	d.out.Flush()
	d.e.Errorf(format, a...)
	d.status = 2
}

func (d *differ) setDiffer() {
	if d.status == 0 {
		d.status = 1
	}
}

func statOrStdin(name string) (fs.FileInfo, error) {
	if name == "-" {
		return nil, nil
	}
	return os.Stat(name)
}

func (d *differ) compareTop(a, b string) {
	fa, errA := statOrStdin(a)
	fb, errB := statOrStdin(b)
	if errA != nil && !(d.newFile && os.IsNotExist(errA) && errB == nil) {
		d.trouble("%s: %s", a, strerror(errA))
		if errB != nil && !d.newFile {
			d.trouble("%s: %s", b, strerror(errB))
		}
		return
	}
	if errB != nil && !(d.newFile && os.IsNotExist(errB) && errA == nil) {
		d.trouble("%s: %s", b, strerror(errB))
		return
	}
	aDir := fa != nil && fa.IsDir()
	bDir := fb != nil && fb.IsDir()
	switch {
	case aDir && bDir:
		d.compareDirs(a, b)
	case aDir && b != "-":
		d.compareFiles(joinPath(a, filepath.Base(b)), b, true)
	case bDir && a != "-":
		d.compareFiles(a, joinPath(b, filepath.Base(a)), true)
	case aDir || bDir:
		d.trouble("cannot compare '-' to a directory")
	default:
		d.compareFiles(a, b, true)
	}
}

func (d *differ) excluded(name string) bool {
	for _, p := range d.exclude {
		if fnmatch(p, name, false) {
			return true
		}
	}
	return false
}

func (d *differ) compareDirs(a, b string) {
	namesA, errA := dirNames(a)
	if errA != nil {
		d.trouble("%s: %s", a, strerror(errA))
		return
	}
	namesB, errB := dirNames(b)
	if errB != nil {
		d.trouble("%s: %s", b, strerror(errB))
		return
	}
	all := map[string]bool{}
	for _, n := range namesA {
		all[n] = true
	}
	for _, n := range namesB {
		all[n] = true
	}
	inA := map[string]bool{}
	for _, n := range namesA {
		inA[n] = true
	}
	inB := map[string]bool{}
	for _, n := range namesB {
		inB[n] = true
	}
	var names []string
	for n := range all {
		if !d.excluded(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		pa, pb := joinPath(a, n), joinPath(b, n)
		if !inA[n] || !inB[n] {
			if d.newFile {
				other := pb
				if !inA[n] {
					other = pa
				}
				fi, err := os.Stat(map[bool]string{true: pb, false: pa}[!inA[n]])
				_ = other
				if err == nil && fi.IsDir() {
					if d.recursive {
						d.compareNewDir(pa, pb, !inA[n])
					} else {
						d.onlyIn(a, b, n, inA[n])
					}
					continue
				}
				d.compareFiles(pa, pb, false)
				continue
			}
			d.onlyIn(a, b, n, inA[n])
			continue
		}
		fa, err1 := os.Stat(pa)
		fb, err2 := os.Stat(pb)
		if err1 != nil || err2 != nil {
			if err1 != nil {
				d.trouble("%s: %s", pa, strerror(err1))
			}
			if err2 != nil {
				d.trouble("%s: %s", pb, strerror(err2))
			}
			continue
		}
		switch {
		case fa.IsDir() && fb.IsDir():
			if d.recursive {
				d.compareDirs(pa, pb)
			} else {
				d.out.WriteString("Common subdirectories: " + pa + " and " + pb + "\n")
			}
		case fa.IsDir() != fb.IsDir():
			kind := func(fi fs.FileInfo) string {
				if fi.IsDir() {
					return "directory"
				}
				if fi.Size() == 0 {
					return "regular empty file"
				}
				return "regular file"
			}
			d.out.WriteString("File " + pa + " is a " + kind(fa) + " while file " + pb + " is a " + kind(fb) + "\n")
			d.setDiffer()
		default:
			d.compareFiles(pa, pb, false)
		}
	}
}

// compareNewDir handles -N -r for a directory present on one side only.
func (d *differ) compareNewDir(pa, pb string, missingA bool) {
	src := pb
	if !missingA {
		src = pa
	}
	names, err := dirNames(src)
	if err != nil {
		d.trouble("%s: %s", src, strerror(err))
		return
	}
	sort.Strings(names)
	for _, n := range names {
		ca, cb := joinPath(pa, n), joinPath(pb, n)
		if fi, err := os.Stat(joinPath(src, n)); err == nil && fi.IsDir() {
			d.compareNewDir(ca, cb, missingA)
			continue
		}
		d.compareFiles(ca, cb, false)
	}
}

func (d *differ) onlyIn(a, b, n string, inA bool) {
	dir := b
	if inA {
		dir = a
	}
	d.out.WriteString("Only in " + dir + ": " + n + "\n")
	d.setDiffer()
}

func dirNames(p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

type diffFile struct {
	name  string
	lines [][]byte // without the newline
	noEOL bool     // the last line has no newline
	mtime time.Time
	data  []byte
}

func (d *differ) readFile(name string) (*diffFile, error) {
	f := &diffFile{name: name}
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(d.e.Stdin)
		f.mtime = time.Now()
	} else {
		var fi fs.FileInfo
		fi, err = os.Stat(name)
		if err != nil {
			if d.newFile && os.IsNotExist(err) {
				f.mtime = time.Unix(0, 0)
				return f, nil
			}
			return nil, err
		}
		if fi.IsDir() {
			return nil, &fs.PathError{Op: "read", Path: name, Err: errIsDir}
		}
		f.mtime = fi.ModTime()
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, err
	}
	f.data = data
	if len(data) > 0 {
		if data[len(data)-1] != '\n' {
			f.noEOL = true
		} else {
			data = data[:len(data)-1]
		}
		f.lines = bytes.Split(data, []byte("\n"))
	}
	return f, nil
}

var errIsDir = errors.New("Is a directory")

func isBinary(b []byte) bool {
	if len(b) > 8192 {
		b = b[:8192]
	}
	return bytes.IndexByte(b, 0) >= 0
}

// key is the comparison form of a line under the ignore options.
func (d *differ) key(l []byte) string {
	if d.stripCR && len(l) > 0 && l[len(l)-1] == '\r' {
		l = l[:len(l)-1]
	}
	if !(d.ignoreCase || d.ignoreAll || d.ignoreChange || d.ignoreTrailing || d.ignoreTab) {
		return string(l)
	}
	s := string(l)
	if d.ignoreCase {
		s = strings.ToLower(s)
	}
	switch {
	case d.ignoreAll:
		s = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\v' || r == '\f' || r == '\r' {
				return -1
			}
			return r
		}, s)
	case d.ignoreChange:
		var b strings.Builder
		space := false
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' {
				space = true
				continue
			}
			if space {
				b.WriteByte(' ')
				space = false
			}
			b.WriteByte(c)
		}
		s = b.String()
	case d.ignoreTrailing:
		s = strings.TrimRight(s, " \t\v\f\r")
	}
	return s
}

func (d *differ) compareFiles(a, b string, top bool) {
	fa, err := d.readFile(a)
	if err != nil {
		d.trouble("%s: %s", a, strerror(err))
		return
	}
	fb, err := d.readFile(b)
	if err != nil {
		d.trouble("%s: %s", b, strerror(err))
		return
	}
	if d.format == 'e' {
		// An ed script cannot express a missing final newline.
		defer func() {
			for _, f := range []*diffFile{fa, fb} {
				if f.noEOL {
					d.trouble("%s: No newline at end of file", f.name)
					return
				}
			}
		}()
	}
	if bytes.Equal(fa.data, fb.data) && d.format == 'y' && !d.reportSame {
		d.sideBySide(nil, fa, fb)
		return
	}
	if bytes.Equal(fa.data, fb.data) {
		if d.reportSame {
			d.out.WriteString("Files " + a + " and " + b + " are identical\n")
		}
		return
	}
	if !d.text && (isBinary(fa.data) || isBinary(fb.data)) {
		d.out.WriteString("Binary files " + a + " and " + b + " differ\n")
		d.setDiffer()
		return
	}
	classes := map[string]int{}
	// An incomplete last line equals only another incomplete last line,
	// unless white space is ignored (or for ed scripts, which cannot tell).
	markEOL := !(d.ignoreAll || d.ignoreChange || d.ignoreTrailing) && d.format != 'e'
	eq := func(f *diffFile) []int {
		out := make([]int, len(f.lines))
		for i, l := range f.lines {
			k := d.key(l)
			if markEOL && i == len(f.lines)-1 && f.noEOL {
				k += "\x00noeol"
			}
			id, ok := classes[k]
			if !ok {
				id = len(classes) + 1
				classes[k] = id
			}
			out[i] = id
		}
		return out
	}
	eqA, eqB := eq(fa), eq(fb)
	horizon := 0
	if d.format == 'u' || d.format == 'c' {
		horizon = d.context
	}
	rawIDs := map[string]int{}
	raw := func(f *diffFile) []int {
		out := make([]int, len(f.lines))
		for i, l := range f.lines {
			k := string(l)
			if i == len(f.lines)-1 && f.noEOL && d.format != 'e' {
				k += "\x00noeol"
			}
			id, ok := rawIDs[k]
			if !ok {
				id = len(rawIDs) + 1
				rawIDs[k] = id
			}
			out[i] = id
		}
		return out
	}
	ca, cb := computeDiff(eqA, eqB, raw(fa), raw(fb), d.minimal, horizon)
	hunks := buildHunks(ca, cb)
	if d.ignoreBlank {
		hunks = d.dropBlank(hunks, fa, fb)
	}
	if len(hunks) == 0 {
		if d.format == 'y' {
			d.sideBySide(nil, fa, fb)
			return
		}
		if d.reportSame {
			d.out.WriteString("Files " + a + " and " + b + " are identical\n")
		}
		return
	}
	d.setDiffer()
	if d.format == 'q' {
		d.out.WriteString("Files " + a + " and " + b + " differ\n")
		return
	}
	if !top {
		d.out.WriteString(d.cmdline + " " + a + " " + b + "\n")
	}
	switch d.format {
	case 'n':
		d.normal(hunks, fa, fb)
	case 'u':
		d.unified(hunks, fa, fb)
	case 'c':
		d.contextFmt(hunks, fa, fb)
	case 'e':
		d.edScript(hunks, fa, fb)
	case 'y':
		d.sideBySide(hunks, fa, fb)
	}
}

// hunk is one run of changes: lines [a0,a1) of A replaced by [b0,b1) of B.
type hunk struct{ a0, a1, b0, b1 int }

func buildHunks(ca, cb []bool) []hunk {
	var hs []hunk
	i, j := 0, 0
	for i < len(ca) || j < len(cb) {
		if i < len(ca) && ca[i] || j < len(cb) && cb[j] {
			h := hunk{a0: i, b0: j}
			for i < len(ca) && ca[i] {
				i++
			}
			for j < len(cb) && cb[j] {
				j++
			}
			h.a1, h.b1 = i, j
			hs = append(hs, h)
			continue
		}
		i++
		j++
	}
	return hs
}

func (d *differ) dropBlank(hs []hunk, fa, fb *diffFile) []hunk {
	var out []hunk
	blank := func(l []byte) bool { return len(bytes.TrimSpace(l)) == 0 || len(l) == 0 }
	for _, h := range hs {
		all := true
		for k := h.a0; k < h.a1 && all; k++ {
			all = len(fa.lines[k]) == 0 || d.ignoreAll && blank(fa.lines[k])
		}
		for k := h.b0; k < h.b1 && all; k++ {
			all = len(fb.lines[k]) == 0 || d.ignoreAll && blank(fb.lines[k])
		}
		if !all {
			out = append(out, h)
		}
	}
	return out
}

func rangeStr(a0, a1 int) string {
	// Lines a0..a1-1 (0-based) as GNU prints them, 1-based.
	switch {
	case a1-a0 == 1:
		return strconv.Itoa(a1)
	case a1 <= a0:
		return strconv.Itoa(a0)
	}
	return strconv.Itoa(a0+1) + "," + strconv.Itoa(a1)
}

func (d *differ) line(prefix string, f *diffFile, k int) {
	d.out.WriteString(prefix)
	d.out.Write(f.lines[k])
	d.out.WriteByte('\n')
	if k == len(f.lines)-1 && f.noEOL {
		d.out.WriteString("\\ No newline at end of file\n")
	}
}

func (d *differ) normal(hs []hunk, fa, fb *diffFile) {
	for _, h := range hs {
		switch {
		case h.a0 == h.a1:
			fmt.Fprintf(d.out, "%da%s\n", h.a0, rangeStr(h.b0, h.b1))
		case h.b0 == h.b1:
			fmt.Fprintf(d.out, "%sd%d\n", rangeStr(h.a0, h.a1), h.b0)
		default:
			fmt.Fprintf(d.out, "%sc%s\n", rangeStr(h.a0, h.a1), rangeStr(h.b0, h.b1))
		}
		for k := h.a0; k < h.a1; k++ {
			d.line("< ", fa, k)
		}
		if h.a0 != h.a1 && h.b0 != h.b1 {
			d.out.WriteString("---\n")
		}
		for k := h.b0; k < h.b1; k++ {
			d.line("> ", fb, k)
		}
	}
}

func (d *differ) edScript(hs []hunk, fa, fb *diffFile) {
	for i := len(hs) - 1; i >= 0; i-- {
		h := hs[i]
		switch {
		case h.a0 == h.a1:
			fmt.Fprintf(d.out, "%da\n", h.a0)
		case h.b0 == h.b1:
			fmt.Fprintf(d.out, "%sd\n", rangeStr(h.a0, h.a1))
			continue
		default:
			fmt.Fprintf(d.out, "%sc\n", rangeStr(h.a0, h.a1))
		}
		for k := h.b0; k < h.b1; k++ {
			l := fb.lines[k]
			if string(l) == "." {
				l = []byte("..")
			}
			d.out.Write(l)
			d.out.WriteByte('\n')
		}
		d.out.WriteString(".\n")
	}
}

// groups merges hunks closer than 2*context into output groups.
func (d *differ) groups(hs []hunk) [][]hunk {
	var gs [][]hunk
	for _, h := range hs {
		if n := len(gs); n > 0 {
			last := gs[n-1][len(gs[n-1])-1]
			if h.a0-last.a1 <= 2*d.context {
				gs[n-1] = append(gs[n-1], h)
				continue
			}
		}
		gs = append(gs, []hunk{h})
	}
	return gs
}

func (d *differ) header(mark1, mark2 string, fa, fb *diffFile) {
	label := func(i int, f *diffFile) string {
		if i < len(d.labels) {
			return d.labels[i]
		}
		return f.name + "\t" + f.mtime.Format("2006-01-02 15:04:05.000000000 -0700")
	}
	d.out.WriteString(mark1 + " " + label(0, fa) + "\n")
	d.out.WriteString(mark2 + " " + label(1, fb) + "\n")
}

func (d *differ) unified(hs []hunk, fa, fb *diffFile) {
	d.header("---", "+++", fa, fb)
	for _, g := range d.groups(hs) {
		first, last := g[0], g[len(g)-1]
		a0 := max(first.a0-d.context, 0)
		b0 := max(first.b0-d.context, 0)
		a1 := min(last.a1+d.context, len(fa.lines))
		b1 := min(last.b1+d.context, len(fb.lines))
		fmt.Fprintf(d.out, "@@ -%s +%s @@\n", uniRange(a0, a1), uniRange(b0, b1))
		ai, bi := a0, b0
		for _, h := range g {
			for ai < h.a0 {
				d.line(" ", fa, ai)
				ai++
				bi++
			}
			for k := h.a0; k < h.a1; k++ {
				d.line("-", fa, k)
			}
			for k := h.b0; k < h.b1; k++ {
				d.line("+", fb, k)
			}
			ai, bi = h.a1, h.b1
		}
		for ai < a1 {
			d.line(" ", fa, ai)
			ai++
		}
	}
}

func uniRange(a0, a1 int) string {
	switch n := a1 - a0; n {
	case 0:
		return strconv.Itoa(a0) + ",0"
	case 1:
		return strconv.Itoa(a0 + 1)
	default:
		return strconv.Itoa(a0+1) + "," + strconv.Itoa(n)
	}
}

func ctxRange(a0, a1 int) string {
	switch {
	case a1-a0 == 0:
		return strconv.Itoa(a0)
	case a1-a0 == 1:
		return strconv.Itoa(a1)
	}
	return strconv.Itoa(a0+1) + "," + strconv.Itoa(a1)
}

// contextSide writes the "a" side of a context-diff group, lines from..to
// of f: unchanged lines with "  ", the lines of a hunk with own when only
// this side has lines in it and "! " when both do. The "b" side is the
// same walk over the hunks with their sides swapped.
func (d *differ) contextSide(g []hunk, f *diffFile, from, to int, own string) {
	i := from
	for _, h := range g {
		for ; i < h.a0; i++ {
			d.line("  ", f, i)
		}
		mark := own
		if h.b1 > h.b0 {
			mark = "! "
		}
		for ; i < h.a1; i++ {
			d.line(mark, f, i)
		}
	}
	for ; i < to; i++ {
		d.line("  ", f, i)
	}
}

func (d *differ) contextFmt(hs []hunk, fa, fb *diffFile) {
	d.header("***", "---", fa, fb)
	for _, g := range d.groups(hs) {
		first, last := g[0], g[len(g)-1]
		a0 := max(first.a0-d.context, 0)
		b0 := max(first.b0-d.context, 0)
		a1 := min(last.a1+d.context, len(fa.lines))
		b1 := min(last.b1+d.context, len(fb.lines))
		d.out.WriteString("***************\n")
		fmt.Fprintf(d.out, "*** %s ****\n", ctxRange(a0, a1))
		hasDel, hasAdd := false, false
		for _, h := range g {
			hasDel = hasDel || h.a1 > h.a0
			hasAdd = hasAdd || h.b1 > h.b0
		}
		if hasDel {
			d.contextSide(g, fa, a0, a1, "- ")
		}
		fmt.Fprintf(d.out, "--- %s ----\n", ctxRange(b0, b1))
		if hasAdd {
			mirrored := make([]hunk, len(g))
			for i, h := range g {
				mirrored[i] = hunk{a0: h.b0, a1: h.b1, b0: h.a0, b1: h.a1}
			}
			d.contextSide(mirrored, fb, b0, b1, "+ ")
		}
	}
}

// sideBySide prints diff -y output, column for column as GNU diff does
// (diffutils side.c): the left half, a separator (space, '|', '<' or
// '>'), and the right half, with tabs used to reach the columns.
func (d *differ) sideBySide(hs []hunk, fa, fb *diffFile) {
	tab := 8
	t := tab
	if d.expandTabs {
		t = 1
	}
	off := (d.width + t + 3) / (2 * t) * t
	half := max(0, min(off-3, d.width-off))
	c2o := d.width
	if half > 0 {
		c2o = off
	}
	tabFromTo := func(from, to int) int {
		if !d.expandTabs {
			for tb := from + tab - from%tab; tb <= to; tb += tab {
				d.out.WriteByte('\t')
				from = tb
			}
		}
		for ; from < to; from++ {
			d.out.WriteByte(' ')
		}
		return to
	}
	halfLine := func(line []byte, bound int) int {
		in, out := 0, 0
		for _, c := range line {
			switch {
			case c == '\t':
				spaces := tab - in%tab
				if in == out {
					stop := out + spaces
					if d.expandTabs {
						stop = min(stop, bound)
						for ; out < stop; out++ {
							d.out.WriteByte(' ')
						}
					} else if stop < bound {
						out = stop
						d.out.WriteByte(c)
					}
				}
				in += spaces
			case c == '\r':
				d.out.WriteByte(c)
				in, out = 0, 0
			case c == '\f' || c == '\v':
				if in < bound {
					d.out.WriteByte(c)
				}
			case c >= 32 && c < 127 || c >= 128:
				if in < bound {
					in++
					out = in
					d.out.WriteByte(c)
				} else {
					in++
				}
			default:
				d.out.WriteByte(c)
			}
		}
		return out
	}
	// nlA and nlB tell whether a line of A or B ends with a newline.
	nlA := func(k int) bool { return k < len(fa.lines)-1 || !fa.noEOL }
	nlB := func(k int) bool { return k < len(fb.lines)-1 || !fb.noEOL }
	line := func(ka int, sep byte, kb int) {
		col := 0
		newline := false
		if ka >= 0 {
			newline = nlA(ka)
			col = halfLine(fa.lines[ka], half)
		}
		if sep != ' ' {
			col = tabFromTo(col, (half+c2o-1)/2) + 1
			if sep == '|' && newline != nlB(kb) {
				if newline {
					sep = '/'
				} else {
					sep = '\\'
				}
			}
			d.out.WriteByte(sep)
		}
		if kb >= 0 {
			newline = newline || nlB(kb)
			if len(fb.lines[kb]) > 0 {
				col = tabFromTo(col, c2o)
				halfLine(fb.lines[kb], half)
			}
		}
		if newline {
			d.out.WriteByte('\n')
		}
	}
	ai, bi := 0, 0
	common := func(toA int) {
		for ; ai < toA; ai, bi = ai+1, bi+1 {
			if !d.suppressCommon {
				line(ai, ' ', bi)
			}
		}
	}
	for _, h := range hs {
		common(h.a0)
		na, nb := h.a1-h.a0, h.b1-h.b0
		for k := 0; k < max(na, nb); k++ {
			switch {
			case k < na && k < nb:
				line(h.a0+k, '|', h.b0+k)
			case k < na:
				line(h.a0+k, '<', -1)
			default:
				line(-1, '>', h.b0+k)
			}
		}
		ai, bi = h.a1, h.b1
	}
	common(len(fa.lines))
}
