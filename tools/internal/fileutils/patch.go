package fileutils

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("patch", patchMain) }

var patchUsage = usage{
	synopsis: "[OPTION]... [ORIGFILE [PATCHFILE]]",
	text: `Apply a unified diff to files.

  -p NUM  --strip=NUM            Strip NUM leading components from file names.
  -i PATCHFILE  --input=PATCHFILE  Read patch from PATCHFILE instead of stdin.
  -R  --reverse                  Assume patches were created with old and new files swapped.
  -N  --forward                  Ignore patches that seem to be reversed or already applied.
  --dry-run                      Do not actually change any files; just print what would happen.
  -F LINES  --fuzz LINES         Set the fuzz factor to LINES for inexact matching (default 2).
  -o FILE  --output=FILE         Output patched files to FILE.
  -d DIR  --directory=DIR        Change the working directory to DIR first.
  -E  --remove-empty-files       Remove output files that are empty after patching.
  -s  --quiet  --silent          Work silently unless an error occurs.
  -f  --force  -t  --batch       Do not ask any questions.
  --no-backup-if-mismatch        Do not back up files that do not match exactly.
  -b  --backup                   Back up the original contents of each file.
`,
	bad: 2,
}

type patchLine struct {
	kind  byte // ' ', '-', '+'
	text  string
	noEOL bool
}

type patchHunk struct {
	oldStart, oldLen, newStart, newLen int
	lines                              []patchLine
	header                             string
}

type filePatch struct {
	oldName, newName string
	header           []string // the lines before the first hunk, for messages
	headerLine       int      // input line number of the first hunk
	oldStamp         string   // what followed the names (a tab and a date)
	newStamp         string
	hunks            []*patchHunk
}

func patchMain(e *cmd.Env) int {
	opts, operands, st, done := getopt(e, "p,strip: i,input: R,reverse N,forward ,dry-run F,fuzz: o,output: d,directory: E,remove-empty-files s,quiet ,silent f,force t,batch ,no-backup-if-mismatch ,backup-if-mismatch b,backup u,unified c,context l,ignore-whitespace ,verbose ,posix z,suffix: B,prefix: r,reject-file: V,version-control: ,binary ,follow-symlinks ,read-only: ,merge? Z,set-utc T,set-time ,quoting-style:", patchUsage)
	if done {
		return st
	}
	p := &patcher{e: e, strip: -1, fuzz: 2, backupMismatch: true}
	input := ""
	for _, o := range opts {
		switch o.name {
		case "strip":
			n, err := strconv.Atoi(o.val)
			if err != nil || n < 0 {
				e.Errorf("strip count %s is not a number", o.val)
				return 2
			}
			p.strip = n
		case "input":
			input = o.val
		case "reverse":
			p.reverse = true
		case "forward":
			p.forward = true
		case "dry-run":
			p.dryRun = true
		case "fuzz":
			n, err := strconv.Atoi(o.val)
			if err != nil || n < 0 {
				e.Errorf("fuzz factor %s is not a number", o.val)
				return 2
			}
			p.fuzz = n
		case "output":
			p.output = o.val
		case "directory":
			if err := os.Chdir(o.val); err != nil {
				e.Errorf("Can't change to directory %s : %s", quote(o.val), strerror(err))
				return 2
			}
		case "remove-empty-files":
			p.removeEmpty = true
		case "quiet", "silent":
			p.quiet = true
		case "force", "batch":
			p.force = true
		case "no-backup-if-mismatch":
			p.backupMismatch = false
		case "backup-if-mismatch":
			p.backupMismatch = true
		case "backup":
			p.backup = true
		case "reject-file":
			p.rejectFile = o.val
		}
	}
	var target string
	switch len(operands) {
	case 0:
	case 1:
		target = operands[0]
	case 2:
		target, input = operands[0], operands[1]
	default:
		return usageErr(e, patchUsage, "extra operand %s", quote(operands[2]))
	}
	var data []byte
	var err error
	if input == "" || input == "-" {
		data, err = io.ReadAll(e.Stdin)
	} else {
		data, err = os.ReadFile(input)
	}
	if err != nil {
		e.Errorf("Can't open patch file %s : %s", input, strerror(err))
		return 2
	}
	files := parsePatch(data)
	p.out = newOut(e)
	defer p.out.Flush()
	if len(files) == 0 {
		if len(bytes.TrimSpace(data)) == 0 {
			e.Errorf("**** Only garbage was found in the patch input.")
			return 2
		}
		p.out.Flush()
		e.Errorf("**** Only garbage was found in the patch input.")
		return 2
	}
	for _, fp := range files {
		p.apply(fp, target)
	}
	return p.status
}

// parsePatch splits a unified diff into per-file patches. Lines that are
// not part of a header or a hunk ("diff --git", "index", mode lines,
// prose) are skipped.
func parsePatch(data []byte) []*filePatch {
	var files []*filePatch
	lines := strings.SplitAfter(string(data), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	var pending []string
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], "\n")
		if strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ") {
			fp := &filePatch{
				oldName: headerName(l[4:]),
				newName: headerName(strings.TrimRight(lines[i+1], "\n")[4:]),
				header:  append(pending, l, strings.TrimRight(lines[i+1], "\n")),
			}
			pending = nil
			i += 2
			fp.headerLine = i + 1
			fp.oldStamp = headerStamp(l[4:])
			fp.newStamp = headerStamp(strings.TrimRight(lines[i-1], "\n")[4:])
			for i < len(lines) && strings.HasPrefix(lines[i], "@@ ") {
				h, next, ok := parseHunk(lines, i)
				if !ok {
					break
				}
				fp.hunks = append(fp.hunks, h)
				i = next
			}
			i--
			files = append(files, fp)
			continue
		}
		pending = append(pending, l)
		if len(pending) > 20 {
			pending = pending[1:]
		}
	}
	return files
}

func headerStamp(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		return s[i:]
	}
	return ""
}

func headerName(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimRight(s, " ")
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	return s
}

func parseHunk(lines []string, i int) (*patchHunk, int, bool) {
	l := strings.TrimRight(lines[i], "\n")
	rest := strings.TrimPrefix(l, "@@ -")
	end := strings.Index(rest, " @@")
	if end < 0 {
		return nil, i, false
	}
	ranges := strings.Fields(rest[:end])
	if len(ranges) != 2 || !strings.HasPrefix(ranges[1], "+") {
		return nil, i, false
	}
	parse := func(r string) (int, int, bool) {
		a, b, has := strings.Cut(r, ",")
		start, err := strconv.Atoi(a)
		if err != nil {
			return 0, 0, false
		}
		n := 1
		if has {
			if n, err = strconv.Atoi(b); err != nil {
				return 0, 0, false
			}
		}
		return start, n, true
	}
	h := &patchHunk{header: l}
	var ok1, ok2 bool
	h.oldStart, h.oldLen, ok1 = parse(ranges[0])
	h.newStart, h.newLen, ok2 = parse(strings.TrimPrefix(ranges[1], "+"))
	if !ok1 || !ok2 {
		return nil, i, false
	}
	i++
	oldSeen, newSeen := 0, 0
	for i < len(lines) && (oldSeen < h.oldLen || newSeen < h.newLen) {
		raw := lines[i]
		text := strings.TrimSuffix(raw, "\n")
		if text == "" {
			// A blank line in a hand-edited patch stands for an empty context line.
			text = " "
		}
		kind := text[0]
		switch kind {
		case ' ':
			oldSeen++
			newSeen++
		case '-':
			oldSeen++
		case '+':
			newSeen++
		case '\\':
			if n := len(h.lines); n > 0 {
				h.lines[n-1].noEOL = true
			}
			i++
			continue
		default:
			return h, i, true
		}
		h.lines = append(h.lines, patchLine{kind: kind, text: text[1:]})
		i++
	}
	if i < len(lines) && strings.HasPrefix(lines[i], `\`) {
		if n := len(h.lines); n > 0 {
			h.lines[n-1].noEOL = true
		}
		i++
	}
	return h, i, true
}

type patcher struct {
	e                                     *cmd.Env
	out                                   *bufio.Writer
	strip, fuzz                           int
	reverse, forward, dryRun, removeEmpty bool
	quiet, force, backupMismatch, backup  bool
	output, rejectFile                    string
	status                                int
}

func stripPath(name string, n int) (string, bool) {
	if n < 0 {
		return filepath.Base(name), true
	}
	s := name
	for i := 0; i < n; i++ {
		k := strings.IndexByte(s, '/')
		if k < 0 {
			return "", false
		}
		s = s[k+1:]
		for strings.HasPrefix(s, "/") {
			s = s[1:]
		}
	}
	return s, s != ""
}

func (p *patcher) say(format string, a ...any) {
	if !p.quiet {
		fmt.Fprintf(p.out, format, a...)
	}
}

// fileLines is a file's content as lines, with its final-newline state.
type fileLines struct {
	lines []string
	noEOL bool
}

func splitFile(data []byte) fileLines {
	if len(data) == 0 {
		return fileLines{}
	}
	s := string(data)
	fl := fileLines{}
	if !strings.HasSuffix(s, "\n") {
		fl.noEOL = true
	} else {
		s = s[:len(s)-1]
	}
	fl.lines = strings.Split(s, "\n")
	return fl
}

func (fl fileLines) bytes() []byte {
	if len(fl.lines) == 0 {
		return nil
	}
	s := strings.Join(fl.lines, "\n")
	if !fl.noEOL {
		s += "\n"
	}
	return []byte(s)
}

func (p *patcher) apply(fp *filePatch, target string) {
	oldName, newName := fp.oldName, fp.newName
	if p.reverse {
		oldName, newName = newName, oldName
	}
	creating := oldName == "/dev/null"
	deleting := newName == "/dev/null"
	name := target
	if name == "" {
		var candidates []string
		for _, n := range []string{oldName, newName} {
			if n == "/dev/null" {
				continue
			}
			if s, ok := stripPath(n, p.strip); ok {
				candidates = append(candidates, s)
			}
		}
		for _, c := range candidates {
			if _, err := metaStat(c); err == nil {
				name = c
				break
			}
		}
		if name == "" && creating && len(candidates) > 0 {
			name = candidates[0]
		}
		if name == "" {
			p.cantFind(fp)
			return
		}
	}
	var orig []byte
	if !creating || fileExists(name) {
		data, err := os.ReadFile(name)
		if err != nil && !creating {
			p.out.Flush()
			p.e.Errorf("can't open %s: %s", name, strerror(err))
			p.status = 2
			return
		}
		orig = data
	}
	verb := "patching"
	if p.dryRun {
		verb = "checking"
	}
	kind := "file"
	if p.output != "" {
		p.say("%s %s %s (read from %s)\n", verb, kind, quoteIf(p.output), quoteIf(name))
	} else {
		p.say("%s %s %s\n", verb, kind, quoteIf(name))
	}
	fl := splitFile(orig)
	hunks := fp.hunks
	if p.reverse {
		hunks = reverseHunks(hunks)
	}
	var failed []*patchHunk
	mismatch := false
	offset := 0
	ignored := false
	for i, h := range hunks {
		pos, fuzz, ok := locate(fl, h, offset, p.fuzz)
		if !ok && i == 0 && !p.force {
			// A patch that applies backwards was probably applied already.
			rh := reverseHunks([]*patchHunk{h})[0]
			if _, _, rok := locate(fl, rh, offset, 0); rok && len(h.lines) > 0 && !(creating && len(fl.lines) == 0) {
				what := "Reversed (or previously applied) patch detected!"
				q := "Assume -R?"
				if p.reverse {
					what, q = "Unreversed patch detected!", "Ignore -R?"
				}
				if p.forward {
					p.say("%s  Skipping patch.\n", what)
				} else {
					p.say("%s  %s [n] \nApply anyway? [n] \nSkipping patch.\n", what, q)
				}
				ignored = true
				failed = hunks
				break
			}
		}
		if !ok {
			p.say("Hunk #%d FAILED at %d.\n", i+1, h.oldStart+offset)
			failed = append(failed, h)
			continue
		}
		applied := applyHunk(fl, h, pos, fuzz)
		expected := h.oldStart - 1
		if h.oldLen == 0 {
			expected = h.oldStart
		}
		delta := pos - expected
		msg := ""
		if fuzz > 0 {
			msg = fmt.Sprintf(" with fuzz %d", fuzz)
		}
		if delta != 0 {
			plural := "s"
			if delta == 1 || delta == -1 {
				plural = ""
			}
			msg += fmt.Sprintf(" (offset %d line%s)", delta, plural)
		}
		if msg != "" {
			mismatch = true
			p.say("Hunk #%d succeeded at %d%s.\n", i+1, pos+1, msg)
		}
		offset = delta
		fl = applied
	}
	if len(failed) > 0 {
		total := len(hunks)
		noun := "hunk"
		if total != 1 {
			noun = "hunks"
		}
		rej := name + ".rej"
		if p.rejectFile != "" {
			rej = p.rejectFile
		}
		state := "FAILED"
		if ignored {
			state = "ignored"
		}
		if p.dryRun {
			p.say("%d out of %d %s %s\n", len(failed), total, noun, state)
		} else {
			p.say("%d out of %d %s %s -- saving rejects to file %s\n", len(failed), total, noun, state, quoteIf(rej))
			p.writeRejects(rej, name, fp, failed)
		}
		p.status = max(p.status, 1)
		if ignored {
			return
		}
	}
	if p.dryRun {
		return
	}
	if (p.backup || mismatch && p.backupMismatch) && orig != nil {
		bak := name + ".orig"
		if !fileExists(bak) {
			os.WriteFile(bak, orig, 0o644)
		}
	}
	outName := name
	if p.output != "" {
		outName = p.output
	}
	result := fl.bytes()
	if (deleting || p.removeEmpty) && len(result) == 0 && p.output == "" {
		if err := os.Remove(name); err != nil && !os.IsNotExist(err) {
			p.out.Flush()
			p.e.Errorf("can't remove %s: %s", name, strerror(err))
			p.status = 2
		}
		return
	}
	if creating {
		if dir := filepath.Dir(outName); dir != "." {
			os.MkdirAll(dir, 0o755)
		}
	}
	perm := os.FileMode(0o644)
	if fi, err := metaStat(outName); err == nil {
		perm = fi.Mode().Perm()
	}
	if err := os.WriteFile(outName, result, perm); err != nil {
		p.out.Flush()
		p.e.Errorf("can't create %s: %s", outName, strerror(err))
		p.status = 2
	}
}

func fileExists(name string) bool {
	_, err := metaStat(name)
	return err == nil
}

func (p *patcher) cantFind(fp *filePatch) {
	p.say("can't find file to patch at input line %d\n", fp.headerLine)
	if p.strip >= 0 {
		p.say("Perhaps you used the wrong -p or --strip option?\n")
	} else {
		p.say("Perhaps you should have used the -p or --strip option?\n")
	}
	p.say("The text leading up to this was:\n--------------------------\n")
	for _, l := range fp.header {
		p.say("|%s\n", l)
	}
	p.say("--------------------------\n")
	if p.force {
		p.say("No file to patch.  Skipping patch.\n")
	} else {
		p.say("File to patch: \nSkip this patch? [y] \nSkipping patch.\n")
	}
	n := len(fp.hunks)
	noun := "hunk"
	if n != 1 {
		noun = "hunks"
	}
	p.say("%d out of %d %s ignored\n", n, n, noun)
	p.status = max(p.status, 1)
}

func reverseHunks(hs []*patchHunk) []*patchHunk {
	out := make([]*patchHunk, len(hs))
	for i, h := range hs {
		r := &patchHunk{oldStart: h.newStart, oldLen: h.newLen, newStart: h.oldStart, newLen: h.oldLen, header: h.header}
		for _, l := range h.lines {
			switch l.kind {
			case '-':
				l.kind = '+'
			case '+':
				l.kind = '-'
			}
			r.lines = append(r.lines, l)
		}
		out[i] = r
	}
	return out
}

// hunkSides returns the old and new text of a hunk, dropping fuzz context
// lines from each end.
func hunkSides(h *patchHunk, fuzz int) (old, new []patchLine, skipFront int) {
	lines := h.lines
	front := 0
	for front < len(lines) && lines[front].kind == ' ' {
		front++
	}
	back := 0
	for back < len(lines)-front && lines[len(lines)-1-back].kind == ' ' {
		back++
	}
	cutF, cutB := min(fuzz, front), min(fuzz, back)
	lines = lines[cutF : len(lines)-cutB]
	for _, l := range lines {
		if l.kind != '+' {
			old = append(old, l)
		}
		if l.kind != '-' {
			new = append(new, l)
		}
	}
	return old, new, cutF
}

// locate finds where a hunk applies: the line index of its old text, and
// the fuzz used. It searches outward from the expected place, as patch does.
func locate(fl fileLines, h *patchHunk, offset, maxFuzz int) (int, int, bool) {
	for fuzz := 0; fuzz <= maxFuzz; fuzz++ {
		old, _, cutF := hunkSides(h, fuzz)
		if fuzz > 0 {
			if f, _, _ := hunkSides(h, fuzz-1); len(f) == len(old) {
				break
			}
		}
		guess := h.oldStart - 1 + offset + cutF
		if h.oldLen == 0 {
			guess = h.oldStart + offset
		}
		maxPos := len(fl.lines) - len(old)
		for d := 0; ; d++ {
			tried := false
			for _, pos := range []int{guess + d, guess - d} {
				if d == 0 && pos != guess {
					continue
				}
				if pos < 0 || pos > maxPos {
					continue
				}
				tried = true
				if matchAt(fl, old, pos) {
					return pos - cutF, fuzz, true
				}
				if d == 0 {
					break
				}
			}
			if !tried && (guess+d > maxPos && guess-d < 0) {
				break
			}
		}
	}
	return 0, 0, false
}

func matchAt(fl fileLines, old []patchLine, pos int) bool {
	for k, l := range old {
		i := pos + k
		if i >= len(fl.lines) || fl.lines[i] != l.text {
			return false
		}
	}
	return true
}

// applyHunk replaces the hunk's old text at pos (the index where the full,
// unfuzzed old text would start) with its new text.
func applyHunk(fl fileLines, h *patchHunk, pos, fuzz int) fileLines {
	old, new, cutF := hunkSides(h, fuzz)
	start := pos + cutF
	out := fileLines{noEOL: fl.noEOL}
	out.lines = append(out.lines, fl.lines[:start]...)
	for _, l := range new {
		out.lines = append(out.lines, l.text)
	}
	end := start + len(old)
	out.lines = append(out.lines, fl.lines[end:]...)
	if end == len(fl.lines) {
		// The hunk reaches the end of the file: it decides the final newline.
		out.noEOL = len(new) > 0 && new[len(new)-1].noEOL
	}
	return out
}

func (p *patcher) writeRejects(rej, name string, fp *filePatch, hs []*patchHunk) {
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s%s\n+++ %s%s\n", name, fp.oldStamp, name, fp.newStamp)
	for _, h := range hs {
		b.WriteString(h.header + "\n")
		for _, l := range h.lines {
			b.WriteByte(l.kind)
			b.WriteString(l.text + "\n")
			if l.noEOL {
				b.WriteString("\\ No newline at end of file\n")
			}
		}
	}
	os.WriteFile(rej, []byte(b.String()), 0o644)
}
