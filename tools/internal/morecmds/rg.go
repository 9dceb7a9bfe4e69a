package morecmds

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("rg", rgMain) }

// rgTypes is a small part of ripgrep's file type table (-t, -T).
var rgTypes = map[string][]string{
	"c": {"*.c", "*.h"}, "cpp": {"*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.h", "*.hxx"}, "css": {"*.css"},
	"go": {"*.go"}, "html": {"*.htm", "*.html"}, "java": {"*.java"}, "js": {"*.js", "*.jsx", "*.mjs", "*.cjs"},
	"json": {"*.json"}, "md": {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
	"markdown": {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
	"py":       {"*.py", "*.pyi"}, "python": {"*.py", "*.pyi"}, "rust": {"*.rs"}, "sh": {"*.sh", "*.bash", "*.zsh"},
	"toml": {"*.toml"}, "ts": {"*.ts", "*.tsx", "*.cts", "*.mts"}, "txt": {"*.txt"}, "yaml": {"*.yaml", "*.yml"},
	"xml": {"*.xml"}, "sql": {"*.sql"}, "ruby": {"*.rb"}, "php": {"*.php"},
}

type rgOpts struct {
	re                                    *regexp.Regexp
	invert, count, countMatches, only     bool
	filesWith, filesWithout, quiet, files bool
	lineNum, withName, column, vimgrep    bool
	heading, null                         bool
	hidden, noIgnore, noIgnoreVCS, follow bool
	binary                                bool
	after, before                         int
	maxCount                              int
	maxDepth                              int
	globs                                 []rgGlob
	types, notTypes                       []string
	sortPath                              bool
}

type rgGlob struct {
	neg bool
	re  *regexp.Regexp
	dir bool // matches directories only
	any bool // no slash: matches the base name at any depth
}

// globRegexp translates a gitignore-style glob into a regexp over a
// slash-separated path.
func globRegexp(g string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch c {
		case '*':
			if i+1 < len(g) && g[i+1] == '*' {
				i++
				if i+1 < len(g) && g[i+1] == '/' {
					i++
					b.WriteString("(?:.*/)?")
				} else {
					b.WriteString(".*")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(g[i+1:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			cls := g[i+1 : i+1+j]
			if strings.HasPrefix(cls, "!") {
				cls = "^" + cls[1:]
			}
			b.WriteString("[" + cls + "]")
			i += j + 1
		case '{':
			j := strings.IndexByte(g[i+1:], '}')
			if j < 0 {
				b.WriteString(`\{`)
				continue
			}
			alts := strings.Split(g[i+1:i+1+j], ",")
			for k := range alts {
				alts[k] = regexp.QuoteMeta(alts[k])
			}
			b.WriteString("(?:" + strings.Join(alts, "|") + ")")
			i += j + 1
		case '\\':
			if i+1 < len(g) {
				i++
				b.WriteString(regexp.QuoteMeta(string(g[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return regexp.MustCompile(`^\b$`) // matches nothing
	}
	return re
}

func parseGlob(g string) rgGlob {
	var r rgGlob
	if strings.HasPrefix(g, "!") {
		r.neg, g = true, g[1:]
	}
	if strings.HasSuffix(g, "/") {
		r.dir, g = true, strings.TrimSuffix(g, "/")
	}
	r.any = !strings.Contains(g, "/")
	g = strings.TrimPrefix(g, "/")
	r.re = globRegexp(g)
	return r
}

func (g *rgGlob) match(rel string, isDir bool) bool {
	if g.dir && !isDir {
		return false
	}
	if g.any {
		return g.re.MatchString(path.Base(rel))
	}
	return g.re.MatchString(rel)
}

// ignoreFile is the rules of one .gitignore/.ignore/.rgignore, relative
// to its directory.
type ignoreFile struct {
	dir   string
	rules []rgGlob
}

// ignored reports whether rules (outermost first) ignore p; later and
// deeper rules win, "!" re-includes.
func ignored(stack []ignoreFile, p string, isDir bool) bool {
	res := false
	for _, f := range stack {
		rel := p
		if f.dir != "" {
			var ok bool
			if rel, ok = strings.CutPrefix(p, f.dir+"/"); !ok {
				continue
			}
		}
		for i := range f.rules {
			if f.rules[i].match(rel, isDir) {
				res = !f.rules[i].neg
			}
		}
	}
	return res
}

func readIgnore(name, dir string) (ignoreFile, bool) {
	data, err := os.ReadFile(name)
	if err != nil {
		return ignoreFile{}, false
	}
	f := ignoreFile{dir: dir}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimRight(line, " ")
		f.rules = append(f.rules, parseGlob(line))
	}
	return f, true
}

// inGitRepo reports whether dir or an ancestor holds .git.
func inGitRepo(dir string) bool {
	abs := dir
	if !path.IsAbs(abs) {
		wd, err := os.Getwd()
		if err != nil {
			return false
		}
		abs = path.Join(wd, dir)
	}
	for d := path.Clean(abs); ; d = path.Dir(d) {
		if _, err := os.Lstat(path.Join(d, ".git")); err == nil {
			return true
		}
		if d == "/" || d == "." {
			return false
		}
	}
}

func rgMain(e *cmd.Env) int {
	spec := []cmd.Option{
		{Short: 'e', Long: "regexp", Arg: cmd.RequiredArg}, {Short: 'f', Long: "file", Arg: cmd.RequiredArg},
		{Short: 'i', Long: "ignore-case"}, {Short: 's', Long: "case-sensitive"}, {Short: 'S', Long: "smart-case"},
		{Short: 'w', Long: "word-regexp"}, {Short: 'x', Long: "line-regexp"}, {Short: 'v', Long: "invert-match"},
		{Short: 'F', Long: "fixed-strings"}, {Short: 'c', Long: "count"}, {Long: "count-matches"},
		{Short: 'l', Long: "files-with-matches"}, {Long: "files-without-match"}, {Short: 'o', Long: "only-matching"},
		{Short: 'q', Long: "quiet"}, {Short: 'n', Long: "line-number"}, {Short: 'N', Long: "no-line-number"},
		{Short: 'H', Long: "with-filename"}, {Short: 'I', Long: "no-filename"}, {Long: "column"}, {Long: "vimgrep"},
		{Long: "heading"}, {Long: "no-heading"}, {Short: '0', Long: "null"},
		{Short: 'A', Long: "after-context", Arg: cmd.RequiredArg}, {Short: 'B', Long: "before-context", Arg: cmd.RequiredArg},
		{Short: 'C', Long: "context", Arg: cmd.RequiredArg}, {Short: 'm', Long: "max-count", Arg: cmd.RequiredArg},
		{Short: 'd', Long: "max-depth", Arg: cmd.RequiredArg}, {Short: 'g', Long: "glob", Arg: cmd.RequiredArg},
		{Long: "iglob", Arg: cmd.RequiredArg},
		{Short: 't', Long: "type", Arg: cmd.RequiredArg}, {Short: 'T', Long: "type-not", Arg: cmd.RequiredArg},
		{Short: '.', Long: "hidden"}, {Long: "no-ignore"}, {Long: "no-ignore-vcs"}, {Short: 'u', Long: "unrestricted"},
		{Short: 'L', Long: "follow"}, {Short: 'a', Long: "text"}, {Long: "files"}, {Long: "sort", Arg: cmd.RequiredArg},
		{Long: "color", Arg: cmd.RequiredArg}, {Long: "colors", Arg: cmd.RequiredArg}, {Short: 'j', Long: "threads", Arg: cmd.RequiredArg},
		{Short: 'p', Long: "pretty"}, {Long: "type-list"}, {Short: 'h', Long: "help"}, {Short: 'V', Long: "version"},
	}
	opts, ops, err := cmd.Getopt(e.Args[1:], spec, false)
	if err != nil {
		fmt.Fprintf(e.Stderr, "error: %s\n", err)
		return 2
	}
	o := rgOpts{maxCount: -1, maxDepth: -1}
	var patterns []string
	havePattern := false
	caseMode := "sensitive"
	var fixed, word, line bool
	unrestricted := 0
	nameSet := false
	num := func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fmt.Fprintf(e.Stderr, "error: invalid value '%s': invalid digit found in string\n", v)
			return 0, false
		}
		return n, true
	}
	for _, op := range opts {
		var ok = true
		switch op.Name {
		case "regexp":
			patterns, havePattern = append(patterns, op.Value), true
		case "file":
			data, err := readAll(e, op.Value)
			if err != nil {
				fmt.Fprintf(e.Stderr, "%s: %s\n", op.Value, rgErr(err))
				return 2
			}
			for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
				patterns = append(patterns, strings.TrimSuffix(l, "\r"))
			}
			havePattern = true
		case "ignore-case":
			caseMode = "insensitive"
		case "case-sensitive":
			caseMode = "sensitive"
		case "smart-case":
			caseMode = "smart"
		case "word-regexp":
			word = true
		case "line-regexp":
			line = true
		case "invert-match":
			o.invert = true
		case "fixed-strings":
			fixed = true
		case "count":
			o.count = true
		case "count-matches":
			o.countMatches = true
		case "files-with-matches":
			o.filesWith = true
		case "files-without-match":
			o.filesWithout = true
		case "only-matching":
			o.only = true
		case "quiet":
			o.quiet = true
		case "line-number":
			o.lineNum = true
		case "no-line-number":
			o.lineNum = false
		case "with-filename":
			o.withName, nameSet = true, true
		case "no-filename":
			o.withName, nameSet = false, true
		case "column":
			o.column, o.lineNum = true, true
		case "vimgrep":
			o.vimgrep = true
		case "heading", "pretty":
			o.heading = true
		case "no-heading":
			o.heading = false
		case "null":
			o.null = true
		case "after-context":
			o.after, ok = num(op.Value)
		case "before-context":
			o.before, ok = num(op.Value)
		case "context":
			o.after, ok = num(op.Value)
			o.before = o.after
		case "max-count":
			o.maxCount, ok = num(op.Value)
		case "max-depth":
			o.maxDepth, ok = num(op.Value)
		case "glob":
			o.globs = append(o.globs, parseGlob(op.Value))
		case "iglob":
			g := parseGlob(op.Value)
			g.re = regexp.MustCompile("(?i)" + g.re.String())
			o.globs = append(o.globs, g)
		case "type", "type-not":
			if _, known := rgTypes[op.Value]; !known {
				fmt.Fprintf(e.Stderr, "error parsing flag -%s: unrecognized file type: %s\n", map[string]string{"type": "t", "type-not": "T"}[op.Name], op.Value)
				return 2
			}
			if op.Name == "type" {
				o.types = append(o.types, op.Value)
			} else {
				o.notTypes = append(o.notTypes, op.Value)
			}
		case "hidden":
			o.hidden = true
		case "no-ignore":
			o.noIgnore = true
		case "no-ignore-vcs":
			o.noIgnoreVCS = true
		case "unrestricted":
			unrestricted++
		case "follow":
			o.follow = true
		case "text":
			o.binary = true
		case "files":
			o.files = true
		case "sort":
			if op.Value != "path" && op.Value != "none" {
				fmt.Fprintf(e.Stderr, "error: sorting by %s is not supported\n", op.Value)
				return 2
			}
			o.sortPath = op.Value == "path"
		case "type-list":
			names := make([]string, 0, len(rgTypes))
			for n := range rgTypes {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				fmt.Fprintf(e.Stdout, "%s: %s\n", n, strings.Join(rgTypes[n], ", "))
			}
			return 0
		case "help":
			fmt.Fprintln(e.Stdout, "USAGE:\n    rg [OPTIONS] PATTERN [PATH ...]")
			return 0
		case "version":
			fmt.Fprintf(e.Stdout, "ripgrep 13.0.0 %s\n", version)
			return 0
		}
		if !ok {
			return 2
		}
	}
	if unrestricted >= 1 {
		o.noIgnore = true
	}
	if unrestricted >= 2 {
		o.hidden = true
	}
	if unrestricted >= 3 {
		o.binary = true
	}
	if !havePattern && !o.files {
		if len(ops) == 0 {
			fmt.Fprint(e.Stderr, "error: The following required arguments were not provided:\n    <PATTERN>\n\nUSAGE:\n    \n    rg [OPTIONS] PATTERN [PATH ...]\n    rg [OPTIONS] -e PATTERN ... [PATH ...]\n    rg [OPTIONS] -f PATTERNFILE ... [PATH ...]\n    rg [OPTIONS] --files [PATH ...]\n    rg [OPTIONS] --type-list\n    command | rg [OPTIONS] PATTERN\n    rg [OPTIONS] --help\n    rg [OPTIONS] --version\n\nFor more information try --help\n\n")
			return 2
		}
		patterns, ops = []string{ops[0]}, ops[1:]
	}
	if !o.files {
		alts := make([]string, len(patterns))
		upper := false
		for i, p := range patterns {
			if strings.ToLower(p) != p {
				upper = true
			}
			if fixed {
				p = regexp.QuoteMeta(p)
			}
			alts[i] = "(?:" + p + ")"
		}
		expr := strings.Join(alts, "|")
		if word {
			expr = `(?:^|\b)(?:` + expr + `)(?:$|\b)`
		}
		if line {
			expr = "^(?:" + expr + ")$"
		}
		if caseMode == "insensitive" || caseMode == "smart" && !upper {
			expr = "(?i)" + expr
		}
		re, err := regexp.Compile("(?m)" + expr)
		if err != nil {
			fmt.Fprintf(e.Stderr, "regex parse error:\n    %s\nerror: %s\n", strings.Join(patterns, "|"), strings.TrimPrefix(err.Error(), "error parsing regexp: "))
			return 2
		}
		o.re = re
	}
	s := &rgSearch{e: e, o: &o, out: bufio.NewWriter(e.Stdout)}
	useStdin := false
	var stdinData []byte
	var stdinErr error
	if len(ops) == 0 {
		stdinData, useStdin, stdinErr = rgStdin(e)
		if !useStdin {
			ops = []string{""} // the working directory, shown without "./"
		}
	}
	if !nameSet {
		o.withName = !useStdin && (len(ops) > 1 || isDirOperand(ops[0]))
	}
	if o.vimgrep {
		o.withName, o.lineNum, o.column = true, true, true
	}
	if useStdin {
		if o.files {
			return flush(e, s.out, 1)
		}
		if stdinErr != nil {
			fmt.Fprintf(e.Stderr, "<stdin>: %s\n", rgErr(stdinErr))
			return 2
		}
		s.searchData("<stdin>", stdinData, true)
	} else {
		for _, p := range ops {
			s.walkRoot(p)
		}
	}
	status := 1
	if s.matched {
		status = 0
	}
	if s.errors {
		status = 2
		if s.matched && o.quiet {
			status = 0
		}
	}
	return flush(e, s.out, status)
}

// rgStdin decides whether rg without a path searches standard input, and
// returns its content when it does. ripgrep searches stdin when it is a
// pipe or a file; a terminal or /dev/null makes it search the working
// directory. A wasmbox stream has no such type (WASI says "unknown"), so
// there (GOOS wasip1) stdin is read: data means a pipe fed rg, an empty stream means
// nothing did, and the working directory is searched.
func rgStdin(e *cmd.Env) ([]byte, bool, error) {
	if f, ok := e.Stdin.(*os.File); ok && runtime.GOOS != "wasip1" {
		fi, err := f.Stat()
		if err != nil {
			return nil, false, nil
		}
		switch m := fi.Mode(); {
		case m&os.ModeNamedPipe != 0 || m.IsRegular():
			data, err := io.ReadAll(f)
			return data, true, err
		default:
			return nil, false, nil
		}
	}
	if e.Stdin == nil {
		return nil, false, nil
	}
	data, err := io.ReadAll(e.Stdin)
	return data, len(data) > 0 || err != nil, err
}

func isDirOperand(p string) bool {
	if p == "" {
		return true
	}
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// rgErr renders an I/O error as ripgrep does ("... (os error 2)").
func rgErr(err error) string {
	msg := strerror(err)
	codes := map[string]int{"No such file or directory": 2, "Permission denied": 13, "Is a directory": 21, "Not a directory": 20}
	if c, ok := codes[msg]; ok {
		return fmt.Sprintf("%s (os error %d)", msg, c)
	}
	return msg
}

type rgSearch struct {
	e       *cmd.Env
	o       *rgOpts
	out     *bufio.Writer
	matched bool
	errors  bool
	printed bool // some file's lines were printed (for "--" separators)
}

func (s *rgSearch) walkRoot(root string) {
	if root == "-" {
		data, err := io.ReadAll(s.e.Stdin)
		if err != nil {
			s.errors = true
			fmt.Fprintf(s.e.Stderr, "<stdin>: %s\n", rgErr(err))
			return
		}
		s.searchData("<stdin>", data, true)
		return
	}
	display := root
	fsPath := root
	if root == "" {
		fsPath = "."
	}
	fi, err := os.Stat(fsPath)
	if err != nil {
		s.errors = true
		s.out.Flush()
		fmt.Fprintf(s.e.Stderr, "%s: %s\n", root, rgErr(err))
		return
	}
	if !fi.IsDir() {
		s.file(fsPath, display, true)
		return
	}
	var stack []ignoreFile
	git := inGitRepo(fsPath)
	s.walkDir(fsPath, display, "", 0, stack, git)
}

func joinDisplay(dir, name string) string {
	if dir == "" {
		return name
	}
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

func (s *rgSearch) walkDir(fsDir, display, rel string, depth int, stack []ignoreFile, git bool) {
	if s.o.maxDepth >= 0 && depth >= s.o.maxDepth {
		return
	}
	if !s.o.noIgnore {
		names := []string{".ignore", ".rgignore"}
		if git && !s.o.noIgnoreVCS {
			names = []string{".gitignore", ".ignore", ".rgignore"}
		}
		for _, n := range names {
			if f, ok := readIgnore(path.Join(fsDir, n), rel); ok {
				stack = append(stack[:len(stack):len(stack)], f)
			}
		}
	}
	ents, err := os.ReadDir(fsDir)
	if err != nil {
		s.errors = true
		s.out.Flush()
		fmt.Fprintf(s.e.Stderr, "%s: %s\n", display, rgErr(err))
		return
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, ent := range ents {
		name := ent.Name()
		if name == ".git" {
			continue
		}
		if strings.HasPrefix(name, ".") && !s.o.hidden {
			continue
		}
		fsPath := path.Join(fsDir, name)
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		isDir := ent.IsDir()
		if ent.Type()&os.ModeSymlink != 0 {
			if !s.o.follow {
				continue
			}
			fi, err := os.Stat(fsPath)
			if err != nil {
				continue
			}
			isDir = fi.IsDir()
		} else if !isDir && !ent.Type().IsRegular() {
			continue
		}
		if !s.o.noIgnore && ignored(stack, childRel, isDir) {
			continue
		}
		if !s.globOK(childRel, isDir) {
			continue
		}
		if isDir {
			s.walkDir(fsPath, joinDisplay(display, name), childRel, depth+1, stack, git)
			continue
		}
		if !s.typeOK(name) {
			continue
		}
		s.file(fsPath, joinDisplay(display, name), false)
	}
}

func (s *rgSearch) globOK(rel string, isDir bool) bool {
	if len(s.o.globs) == 0 {
		return true
	}
	positive, matchedPos := false, false
	res := true
	for i := range s.o.globs {
		g := &s.o.globs[i]
		if !g.neg {
			positive = true
		}
		if g.match(rel, isDir) {
			if g.neg {
				res = false
			} else {
				matchedPos, res = true, true
			}
		}
	}
	if isDir {
		return res || !matchedPos && positive
	}
	if positive && !matchedPos {
		return false
	}
	return res
}

func (s *rgSearch) typeOK(name string) bool {
	match := func(types []string) bool {
		for _, t := range types {
			for _, g := range rgTypes[t] {
				if ok, _ := path.Match(g, name); ok {
					return true
				}
			}
		}
		return false
	}
	if len(s.o.types) > 0 && !match(s.o.types) {
		return false
	}
	return len(s.o.notTypes) == 0 || !match(s.o.notTypes)
}

func (s *rgSearch) file(fsPath, display string, explicit bool) {
	if s.o.files {
		s.matched = true
		s.out.WriteString(display)
		s.end()
		return
	}
	data, err := os.ReadFile(fsPath)
	if err != nil {
		s.errors = true
		s.out.Flush()
		fmt.Fprintf(s.e.Stderr, "%s: %s\n", display, rgErr(err))
		return
	}
	s.searchData(display, data, explicit)
}

// end terminates a path-only line (-l, --files): newline or NUL.
func (s *rgSearch) end() {
	if s.o.null {
		s.out.WriteByte(0)
	} else {
		s.out.WriteByte('\n')
	}
}

func (s *rgSearch) prefix(name string, lineNo int, col int, sep byte) {
	if s.o.withName {
		s.out.WriteString(name)
		if s.o.null {
			s.out.WriteByte(0)
		} else {
			s.out.WriteByte(sep)
		}
	}
	if s.o.lineNum {
		s.out.WriteString(strconv.Itoa(lineNo))
		s.out.WriteByte(sep)
	}
	if s.o.column && col > 0 {
		s.out.WriteString(strconv.Itoa(col))
		s.out.WriteByte(sep)
	}
}

func (s *rgSearch) searchData(name string, data []byte, explicit bool) {
	o := s.o
	binaryAt := -1
	if !o.binary {
		binaryAt = bytes.IndexByte(data, 0)
	}
	if binaryAt >= 0 && !explicit {
		return
	}
	// Split into lines (without the newline).
	var lines [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			lines = append(lines, data)
			break
		}
		lines = append(lines, data[:i])
		data = data[i+1:]
	}
	var hits []int
	matchCount := 0
	for i, l := range lines {
		m := o.re.Match(l)
		if m != o.invert {
			if o.maxCount >= 0 && len(hits) >= o.maxCount {
				break
			}
			hits = append(hits, i)
			if o.countMatches && !o.invert {
				matchCount += len(o.re.FindAllIndex(l, -1))
			} else {
				matchCount++
			}
		}
	}
	if len(hits) > 0 {
		s.matched = true
	}
	switch {
	case o.quiet:
		return
	case o.filesWithout:
		if len(hits) == 0 {
			s.out.WriteString(name)
			s.end()
		}
		return
	case len(hits) == 0:
		return
	case binaryAt >= 0:
		if o.withName {
			s.out.WriteString(name + ": ")
		}
		fmt.Fprintf(s.out, "binary file matches (found \"\\0\" byte around offset %d)\n", binaryAt)
		return
	case o.filesWith:
		s.out.WriteString(name)
		s.end()
		return
	case o.count || o.countMatches:
		if o.withName {
			s.out.WriteString(name)
			if o.null {
				s.out.WriteByte(0)
			} else {
				s.out.WriteByte(':')
			}
		}
		fmt.Fprintf(s.out, "%d\n", matchCount)
		return
	}
	if o.heading && o.withName {
		if s.printed {
			s.out.WriteByte('\n')
		}
		s.out.WriteString(name + "\n")
		saved := o.withName
		o.withName = false
		defer func() { o.withName = saved }()
	}
	// The lines to print: the hits and their context.
	isHit := make(map[int]bool, len(hits))
	show := map[int]bool{}
	for _, h := range hits {
		isHit[h] = true
		for i := max(h-o.before, 0); i <= min(h+o.after, len(lines)-1); i++ {
			show[i] = true
		}
	}
	ctx := o.before > 0 || o.after > 0
	prev := -1
	for i := range lines {
		if !show[i] {
			continue
		}
		if ctx && ((prev >= 0 && i > prev+1) || (prev < 0 && s.printed && !o.heading)) {
			s.out.WriteString("--\n")
		}
		if isHit[i] {
			s.printMatch(name, i, lines[i])
		} else {
			s.printLine(name, i, lines[i], '-')
		}
		prev = i
	}
	s.printed = true
}

func (s *rgSearch) printLine(name string, i int, l []byte, sep byte) {
	s.prefix(name, i+1, 0, sep)
	s.out.Write(l)
	s.out.WriteByte('\n')
}

func (s *rgSearch) printMatch(name string, i int, l []byte) {
	o := s.o
	if o.invert {
		s.printLine(name, i, l, ':')
		return
	}
	locs := o.re.FindAllIndex(l, -1)
	switch {
	case o.only:
		for _, m := range locs {
			s.prefix(name, i+1, m[0]+1, ':')
			s.out.Write(l[m[0]:m[1]])
			s.out.WriteByte('\n')
		}
	case o.vimgrep:
		for _, m := range locs {
			s.prefix(name, i+1, m[0]+1, ':')
			s.out.Write(l)
			s.out.WriteByte('\n')
		}
	default:
		col := 0
		if len(locs) > 0 {
			col = locs[0][0] + 1
		}
		s.prefix(name, i+1, col, ':')
		s.out.Write(l)
		s.out.WriteByte('\n')
	}
}
