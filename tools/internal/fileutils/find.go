package fileutils

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
	"github.com/wasmbox/wasmbox/tools/internal/timefmt"
)

func init() { cmd.Register("find", findMain) }

const findHelp = `Usage: find [-H] [-L] [-P] [starting-point...] [expression]

Default path is the current directory; default expression is -print.
Expression may consist of: operators, options, tests, and actions.

Operators (decreasing precedence; -and is implicit where no others are given):
      ( EXPR )   ! EXPR   -not EXPR   EXPR1 -a EXPR2   EXPR1 -and EXPR2
      EXPR1 -o EXPR2   EXPR1 -or EXPR2   EXPR1 , EXPR2

Positional options (always true):
      -daystart -follow -nowarn -regextype -warn

Normal options (always true, specified before other expressions):
      -depth -files0-from FILE -maxdepth LEVELS -mindepth LEVELS
       -mount -noleaf -xdev -ignore_readdir_race -noignore_readdir_race

Tests (N can be +N or -N or N):
      -amin N -anewer FILE -atime N -cmin N -cnewer FILE -ctime N
      -empty -false -gid N -group NAME -ilname PATTERN -iname PATTERN
      -inum N -ipath PATTERN -iregex PATTERN -links N -lname PATTERN
      -mmin N -mtime N -name PATTERN -newer FILE -newerXY REF
      -nouser -nogroup -path PATTERN -perm [-/]MODE -regex PATTERN
      -readable -writable -executable -wholename PATTERN -size N[bcwkMG]
      -true -type [bcdpflsD] -uid N -used N -user NAME -xtype [bcdpfls]

Actions:
      -delete -print0 -printf FORMAT -print -ls -prune -quit
      -exec COMMAND ; -exec COMMAND {} + -ok COMMAND ;
      -execdir COMMAND ; -execdir COMMAND {} + -okdir COMMAND ;
`

// findFile is what the expression is evaluated against.
type findFile struct {
	path  string // as printed
	start string // the starting point it was found under
	depth int
	fi    fs.FileInfo // lstat (or stat with -L)
	sx    *statx
	prune bool
	dent  direntInfo // fi's storage when it is the directory entry's
}

func (f *findFile) stat() *statx {
	if f.sx == nil {
		s := sysStat(f.fi)
		f.sx = &s
	}
	return f.sx
}

type findNode interface {
	eval(f *findFile) bool
}

type (
	findAnd   struct{ a, b findNode }
	findOr    struct{ a, b findNode }
	findNot   struct{ a findNode }
	findComma struct{ a, b findNode }
	findFunc  func(f *findFile) bool
)

func (n findAnd) eval(f *findFile) bool   { return n.a.eval(f) && n.b.eval(f) }
func (n findOr) eval(f *findFile) bool    { return n.a.eval(f) || n.b.eval(f) }
func (n findNot) eval(f *findFile) bool   { return !n.a.eval(f) }
func (n findComma) eval(f *findFile) bool { n.a.eval(f); return n.b.eval(f) }
func (n findFunc) eval(f *findFile) bool  { return n(f) }

type finder struct {
	e                  *cmd.Env
	out                *bufio.Writer
	args               []string
	pos                int
	follow, followArgs bool
	depthFirst         bool
	maxDepth, minDepth int
	hasAction          bool
	quit               bool
	status             int
	now                time.Time
	daystart           bool
	names              idNames
	batches            []*execBatch
	in                 *bufio.Reader
	// needMeta: a predicate or action shows or tests permission bits or
	// owners, so the walk asks the sandbox host for them (cmd.Lstat)
	// instead of taking WASI's stat alone.
	needMeta bool
	// needStat: some primary looks at more than the name, the path and
	// the type; otherwise the entries that a directory listing gives a
	// type for are not lstat'ed, as GNU find does with d_type (a WASI
	// round trip per file).
	needStat bool
}

// direntInfo is the FileInfo of an entry known from its directory's
// listing only: its name and type, when no primary needs more.
type direntInfo struct {
	name string
	typ  fs.FileMode
}

func (d direntInfo) Name() string       { return d.name }
func (d direntInfo) Size() int64        { return 0 }
func (d direntInfo) Mode() fs.FileMode  { return d.typ }
func (d direntInfo) ModTime() time.Time { return time.Time{} }
func (d direntInfo) IsDir() bool        { return d.typ.IsDir() }
func (d direntInfo) Sys() any           { return nil }

// errFind is a parse error already worded for the user.
type errFind struct{ msg string }

func (e *errFind) Error() string { return e.msg }

func findErr(format string, a ...any) error { return &errFind{fmt.Sprintf(format, a...)} }

func findMain(e *cmd.Env) int {
	f := &finder{e: e, maxDepth: -1, now: time.Now()}
	args := e.Args[1:]
	// Leading -H -L -P options.
	for len(args) > 0 {
		switch args[0] {
		case "-H":
			f.followArgs, f.follow = true, false
		case "-L":
			f.follow = true
		case "-P":
			f.follow, f.followArgs = false, false
		case "--help":
			fmt.Fprint(e.Stdout, findHelp)
			return 0
		case "--version":
			fmt.Fprintf(e.Stdout, "find %s\n", version)
			return 0
		case "-D", "-O":
			if len(args) > 1 {
				args = args[1:]
			}
		default:
			goto paths
		}
		args = args[1:]
	}
paths:
	var starts []string
	for len(args) > 0 {
		a := args[0]
		if len(a) > 1 && a[0] == '-' || a == "(" || a == "!" {
			break
		}
		starts = append(starts, a)
		args = args[1:]
	}
	if len(starts) == 0 {
		starts = []string{"."}
	}
	f.args = args
	var expr findNode
	if len(args) > 0 {
		var err error
		expr, err = f.parseExpr()
		if err == nil && f.pos < len(f.args) {
			if f.args[f.pos] == ")" {
				err = findErr("you have too many ')'")
			} else {
				err = findErr("paths must precede expression: `%s'", f.args[f.pos])
			}
		}
		if err != nil {
			e.Errorf("%s", err.Error())
			return 1
		}
	}
	if expr == nil {
		expr = findFunc(func(*findFile) bool { return true })
	}
	if !f.hasAction {
		inner, print := expr, f.print("\n")
		expr = findAnd{inner, findFunc(func(ff *findFile) bool { return !f.quit && print(ff) })}
	}
	f.out = newOut(e)
	defer f.out.Flush()
	for _, s := range starts {
		if f.quit {
			break
		}
		f.walk(s, s, 0, expr, nil)
	}
	f.out.Flush()
	for _, b := range f.batches {
		b.flush(f)
	}
	return f.status
}

func (f *finder) errorf(format string, a ...any) {
	f.out.Flush()
	f.e.Errorf(format, a...)
	f.status = 1
}

// walk visits path and what is under it. ent, when not nil, is path's
// entry in its directory's listing.
func (f *finder) walk(path, start string, depth int, expr findNode, ent fs.DirEntry) {
	var fi fs.FileInfo
	var err error
	stat, lstat := os.Stat, os.Lstat
	if f.needMeta {
		stat, lstat = metaStat, metaLstat
	}
	ff := &findFile{path: path, start: start, depth: depth}
	if ent != nil && !f.needStat && !f.follow {
		// The entry's name and type, held in ff itself: no allocation
		// of its own (per-entry allocation is most of find in wasm).
		ff.dent = direntInfo{name: ent.Name(), typ: ent.Type()}
		fi = &ff.dent
	} else if f.follow || depth == 0 && f.followArgs {
		fi, err = stat(path)
		if err != nil {
			fi, err = lstat(path)
		}
	} else {
		fi, err = lstat(path)
	}
	if err != nil {
		f.errorf("%s: %s", quote(path), strerror(err))
		return
	}
	ff.fi = fi
	inRange := depth >= f.minDepth && (f.maxDepth < 0 || depth <= f.maxDepth)
	if !f.depthFirst && inRange {
		expr.eval(ff)
		if f.quit {
			return
		}
	}
	if fi.IsDir() && !ff.prune && (f.maxDepth < 0 || depth < f.maxDepth) {
		// With needStat every entry is lstat'ed by walk: only the names
		// are read (ReadDir would lstat the entries of unknown type).
		dir, err := os.Open(path)
		var names []string
		var ents []fs.DirEntry
		if err == nil {
			if f.needStat || f.follow {
				names, err = dir.Readdirnames(-1)
			} else {
				ents, err = dir.ReadDir(-1)
			}
			dir.Close()
		}
		if err != nil {
			f.errorf("%s: %s", quote(path), strerror(err))
		}
		sort.Strings(names)
		for _, n := range names {
			if f.quit {
				return
			}
			f.walk(joinPath(path, n), start, depth+1, expr, nil)
		}
		slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, d := range ents {
			if f.quit {
				return
			}
			f.walk(joinPath(path, d.Name()), start, depth+1, expr, d)
		}
	}
	if f.depthFirst && inRange && !f.quit {
		expr.eval(ff)
	}
}

// Expression parsing, by precedence: "," < -o < -a < ! < primary.

func (f *finder) peek() (string, bool) {
	if f.pos < len(f.args) {
		return f.args[f.pos], true
	}
	return "", false
}

func (f *finder) parseExpr() (findNode, error) {
	n, err := f.parseOr()
	if err != nil {
		return nil, err
	}
	for {
		t, ok := f.peek()
		if !ok || t != "," {
			return n, nil
		}
		f.pos++
		m, err := f.parseOr()
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, findErr("invalid expression; you have used a binary operator ',' with nothing after it.")
		}
		n = findComma{n, m}
	}
}

func (f *finder) parseOr() (findNode, error) {
	n, err := f.parseAnd()
	if err != nil {
		return nil, err
	}
	for {
		t, ok := f.peek()
		if !ok || t != "-o" && t != "-or" {
			return n, nil
		}
		if n == nil {
			return nil, findErr("invalid expression; you have used a binary operator '%s' with nothing before it.", t)
		}
		f.pos++
		m, err := f.parseAnd()
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, findErr("invalid expression; you have used a binary operator '%s' with nothing after it.", t)
		}
		n = findOr{n, m}
	}
}

func (f *finder) parseAnd() (findNode, error) {
	n, err := f.parseNot()
	if err != nil {
		return nil, err
	}
	for {
		t, ok := f.peek()
		if !ok || t == "-o" || t == "-or" || t == "," || t == ")" {
			return n, nil
		}
		explicit := t == "-a" || t == "-and"
		if explicit {
			if n == nil {
				return nil, findErr("invalid expression; you have used a binary operator '%s' with nothing before it.", t)
			}
			f.pos++
		}
		m, err := f.parseNot()
		if err != nil {
			return nil, err
		}
		if m == nil {
			if explicit {
				return nil, findErr("invalid expression; you have used a binary operator '%s' with nothing after it.", t)
			}
			return n, nil
		}
		if n == nil {
			n = m
		} else {
			n = findAnd{n, m}
		}
	}
}

func (f *finder) parseNot() (findNode, error) {
	t, ok := f.peek()
	if !ok {
		return nil, nil
	}
	if t == "!" || t == "-not" {
		f.pos++
		n, err := f.parseNot()
		if err != nil {
			return nil, err
		}
		if n == nil {
			return nil, findErr("expected an expression after '%s'", t)
		}
		return findNot{n}, nil
	}
	return f.parsePrimary()
}

func (f *finder) arg(pred string) (string, error) {
	if f.pos >= len(f.args) {
		return "", findErr("missing argument to `%s'", pred)
	}
	a := f.args[f.pos]
	f.pos++
	return a, nil
}

func (f *finder) parsePrimary() (findNode, error) {
	t, _ := f.peek()
	switch t {
	case ")", "-o", "-or", "-a", "-and", ",":
		return nil, nil
	}
	f.pos++
	switch t {
	case "(", "-true", "-false", "-depth", "-d", "-maxdepth", "-mindepth", "-xdev", "-mount", "-noleaf", "-nowarn",
		"-warn", "-ignore_readdir_race", "-noignore_readdir_race", "-daystart", "-regextype", "-name", "-iname",
		"-path", "-wholename", "-ipath", "-iwholename", "-regex", "-iregex", "-print", "-print0", "-prune", "-quit":
	default:
		f.needStat = true
	}
	switch t {
	case "(":
		n, err := f.parseExpr()
		if err != nil {
			return nil, err
		}
		if c, ok := f.peek(); !ok || c != ")" {
			return nil, findErr("invalid expression; I was expecting to find a ')' somewhere but did not see one.")
		}
		f.pos++
		if n == nil {
			return nil, findErr("invalid expression; empty parentheses are not allowed.")
		}
		return n, nil
	case "-true":
		return findFunc(func(*findFile) bool { return true }), nil
	case "-false":
		return findFunc(func(*findFile) bool { return false }), nil
	case "-depth", "-d":
		f.depthFirst = true
		return findTrue, nil
	case "-maxdepth", "-mindepth":
		a, err := f.arg(t)
		if err != nil {
			return nil, err
		}
		n, err := strconv.Atoi(a)
		if err != nil || n < 0 {
			return nil, findErr("Expected a positive decimal integer argument to %s, but got `%s'", t, a)
		}
		if t == "-maxdepth" {
			f.maxDepth = n
		} else {
			f.minDepth = n
		}
		return findTrue, nil
	case "-xdev", "-mount", "-noleaf", "-nowarn", "-warn", "-ignore_readdir_race", "-noignore_readdir_race":
		return findTrue, nil
	case "-daystart":
		f.daystart = true
		return findTrue, nil
	case "-follow":
		f.follow = true
		return findTrue, nil
	case "-regextype":
		if _, err := f.arg(t); err != nil {
			return nil, err
		}
		return findTrue, nil
	case "-name", "-iname", "-lname", "-ilname":
		pat, err := f.arg(t)
		if err != nil {
			return nil, err
		}
		fold := t == "-iname" || t == "-ilname"
		if t == "-lname" || t == "-ilname" {
			return findFunc(func(ff *findFile) bool {
				if ff.fi.Mode()&fs.ModeSymlink == 0 {
					return false
				}
				target, err := os.Readlink(ff.path)
				return err == nil && fnmatch(pat, target, fold)
			}), nil
		}
		return findFunc(func(ff *findFile) bool {
			return fnmatch(pat, baseName(ff.path), fold)
		}), nil
	case "-path", "-wholename", "-ipath", "-iwholename":
		pat, err := f.arg(t)
		if err != nil {
			return nil, err
		}
		fold := t == "-ipath" || t == "-iwholename"
		return findFunc(func(ff *findFile) bool { return fnmatch(pat, ff.path, fold) }), nil
	case "-regex", "-iregex":
		pat, err := f.arg(t)
		if err != nil {
			return nil, err
		}
		prefix := "^(?s:"
		if t == "-iregex" {
			prefix = "^(?is:"
		}
		re, err := regexp.Compile(prefix + emacsToRE2(pat) + ")$")
		if err != nil {
			return nil, findErr("Invalid regular expression %s", quote(pat))
		}
		return findFunc(func(ff *findFile) bool { return re.MatchString(ff.path) }), nil
	case "-type", "-xtype":
		a, err := f.arg(t)
		if err != nil {
			return nil, err
		}
		want := map[byte]bool{}
		for i, p := range strings.Split(a, ",") {
			if len(p) != 1 || !strings.Contains("bcdpflsD", p) {
				if p == "" && i > 0 || len(p) > 1 {
					return nil, findErr("Must separate multiple arguments to %s using: ','", t)
				}
				return nil, findErr("Unknown argument to %s: %s", t, p)
			}
			want[p[0]] = true
		}
		xtype := t == "-xtype"
		return findFunc(func(ff *findFile) bool {
			fi := ff.fi
			if xtype {
				var other fs.FileInfo
				var err error
				if f.follow {
					other, err = metaLstat(ff.path)
				} else if fi.Mode()&fs.ModeSymlink != 0 {
					other, err = metaStat(ff.path)
				}
				if err == nil && other != nil {
					fi = other
				}
			}
			return want[typeChar(fi.Mode())]
		}), nil
	case "-size":
		a, err := f.arg(t)
		if err != nil {
			return nil, err
		}
		cmpv, num, unit, err := parseFindSize(a)
		if err != nil {
			return nil, err
		}
		return findFunc(func(ff *findFile) bool {
			sz := ff.fi.Size()
			units := (sz + unit - 1) / unit
			return cmpNum(cmpv, units, num)
		}), nil
	case "-empty":
		return findFunc(func(ff *findFile) bool {
			if ff.fi.IsDir() {
				d, err := os.Open(ff.path)
				if err != nil {
					return false
				}
				defer d.Close()
				names, _ := d.Readdirnames(1)
				return len(names) == 0
			}
			return ff.fi.Mode().IsRegular() && ff.fi.Size() == 0
		}), nil
	case "-mtime", "-atime", "-ctime", "-mmin", "-amin", "-cmin":
		a, err := f.arg(t)
		if err != nil {
			return nil, err
		}
		cmpv, num, err := parseSigned(a)
		if err != nil {
			return nil, findErr("invalid argument `%s' to `%s'", a, t)
		}
		unit := 24 * time.Hour
		if strings.HasSuffix(t, "min") {
			unit = time.Minute
		}
		kind := t[1]
		return findFunc(func(ff *findFile) bool {
			tm := fileTime(ff, kind)
			ref := f.now
			if f.daystart {
				y, m, d := ref.Date()
				ref = time.Date(y, m, d, 0, 0, 0, 0, ref.Location()).Add(24 * time.Hour)
			}
			age := ref.Sub(tm)
			if unit == time.Minute {
				// GNU compares minutes as a real number of units.
				units := float64(age) / float64(unit)
				switch cmpv {
				case '+':
					return units > float64(num)
				case '-':
					return units < float64(num)
				}
				return units > float64(num-1) && units <= float64(num)
			}
			units := int64(age / unit)
			if age < 0 {
				units = -1
			}
			return cmpNum(cmpv, units, num)
		}), nil
	case "-newer", "-anewer", "-cnewer":
		a, err := f.arg(t)
		if err != nil {
			return nil, err
		}
		ref, err := metaStat(a)
		if err != nil {
			return nil, findErr("%s: %s", quote(a), strerror(err))
		}
		rt := ref.ModTime()
		kind := byte('m')
		if t != "-newer" {
			kind = t[1]
		}
		return findFunc(func(ff *findFile) bool { return fileTime(ff, kind).After(rt) }), nil
	case "-used":
		if _, err := f.arg(t); err != nil {
			return nil, err
		}
		return findFunc(func(*findFile) bool { return false }), nil
	case "-perm":
		f.needMeta = true
		a, err := f.arg(t)
		if err != nil {
			return nil, err
		}
		mode := a
		kind := byte(0)
		if strings.HasPrefix(mode, "-") || strings.HasPrefix(mode, "/") || strings.HasPrefix(mode, "+") && len(mode) > 1 && isDigit(mode[1]) {
			kind, mode = mode[0], mode[1:]
		}
		want, err := parseMode(mode, 0, false, 0)
		if err != nil {
			return nil, findErr("invalid mode %s", quote(a))
		}
		return findFunc(func(ff *findFile) bool {
			m := unixMode(ff.fi.Mode())
			switch kind {
			case '-':
				return m&want == want
			case '/', '+':
				return want == 0 || m&want != 0
			}
			return m == want
		}), nil
	case "-user", "-group", "-uid", "-gid":
		f.needMeta = true
		a, err := f.arg(t)
		if err != nil {
			return nil, err
		}
		if t == "-uid" || t == "-gid" {
			cmpv, num, err := parseSigned(a)
			if err != nil {
				return nil, findErr("invalid argument `%s' to `%s'", a, t)
			}
			return findFunc(func(ff *findFile) bool {
				id := ff.stat().uid
				if t == "-gid" {
					id = ff.stat().gid
				}
				return cmpNum(cmpv, int64(id), num)
			}), nil
		}
		if !f.names.known(t == "-user", a) {
			if _, err := strconv.ParseUint(a, 10, 32); err != nil {
				kind := "user"
				if t == "-group" {
					kind = "group"
				}
				return nil, findErr("%s is not the name of a known %s", quote(a), kind)
			}
		}
		return findFunc(func(ff *findFile) bool {
			if t == "-user" {
				return f.names.user(ff.stat().uid) == a || strconv.FormatUint(uint64(ff.stat().uid), 10) == a
			}
			return f.names.group(ff.stat().gid) == a || strconv.FormatUint(uint64(ff.stat().gid), 10) == a
		}), nil
	case "-nouser", "-nogroup":
		f.needMeta = true
		return findFunc(func(ff *findFile) bool {
			if t == "-nouser" {
				_, err := strconv.Atoi(f.names.user(ff.stat().uid))
				return err == nil
			}
			_, err := strconv.Atoi(f.names.group(ff.stat().gid))
			return err == nil
		}), nil
	case "-links", "-inum":
		a, err := f.arg(t)
		if err != nil {
			return nil, err
		}
		cmpv, num, err := parseSigned(a)
		if err != nil {
			return nil, findErr("invalid argument `%s' to `%s'", a, t)
		}
		return findFunc(func(ff *findFile) bool {
			v := ff.stat().nlink
			if t == "-inum" {
				v = ff.stat().ino
			}
			return cmpNum(cmpv, int64(v), num)
		}), nil
	case "-samefile":
		a, err := f.arg(t)
		if err != nil {
			return nil, err
		}
		ref, err := metaLstat(a)
		if err != nil {
			return nil, findErr("%s: %s", quote(a), strerror(err))
		}
		return findFunc(func(ff *findFile) bool { return sameFile(ref, ff.fi) }), nil
	case "-readable", "-writable", "-executable":
		f.needMeta = true
		want := map[string]uint32{"-readable": 4, "-writable": 2, "-executable": 1}[t]
		return findFunc(func(ff *findFile) bool {
			fi := ff.fi
			if fi.Mode()&fs.ModeSymlink != 0 {
				// access(2) follows symbolic links.
				tfi, err := metaStat(ff.path)
				if err != nil {
					return false
				}
				fi = tfi
			}
			return canAccess(fi, want)
		}), nil
	case "-print":
		f.hasAction = true
		return findFunc(f.print("\n")), nil
	case "-print0":
		f.hasAction = true
		return findFunc(f.print("\x00")), nil
	case "-printf":
		f.needMeta = true
		f.hasAction = true
		a, err := f.arg(t)
		if err != nil {
			return nil, err
		}
		f.checkPrintf(a)
		return findFunc(func(ff *findFile) bool {
			f.out.WriteString(f.printf(a, ff))
			return true
		}), nil
	case "-ls":
		f.needMeta = true
		f.hasAction = true
		return findFunc(f.ls), nil
	case "-fprint", "-fprint0", "-fprintf", "-fls":
		return nil, findErr("%s is not supported in the sandbox; redirect -print instead", t)
	case "-prune":
		return findFunc(func(ff *findFile) bool {
			if !f.depthFirst {
				ff.prune = true
			}
			return true
		}), nil
	case "-quit":
		return findFunc(func(*findFile) bool { f.quit = true; return true }), nil
	case "-delete":
		f.hasAction, f.depthFirst = true, true
		return findFunc(f.delete), nil
	case "-exec", "-execdir", "-ok", "-okdir":
		f.hasAction = true
		return f.parseExec(t)
	}
	if strings.HasPrefix(t, "-newer") && len(t) == 8 {
		a, err := f.arg(t)
		if err != nil {
			return nil, err
		}
		x, y := t[6], t[7]
		var rt time.Time
		if y == 't' {
			rt, err = parseDate(a, f.now)
			if err != nil {
				return nil, findErr("I cannot figure out how to interpret %s as a date or time", quote(a))
			}
		} else {
			ref, err := metaStat(a)
			if err != nil {
				return nil, findErr("%s: %s", quote(a), strerror(err))
			}
			sx := sysStat(ref)
			switch y {
			case 'a':
				rt = sx.atime
			case 'c':
				rt = sx.ctime
			default:
				rt = ref.ModTime()
			}
		}
		return findFunc(func(ff *findFile) bool { return fileTime(ff, x).After(rt) }), nil
	}
	if strings.HasPrefix(t, "-") {
		return nil, findErr("unknown predicate `%s'", t)
	}
	return nil, findErr("paths must precede expression: `%s'", t)
}

var findTrue = findFunc(func(*findFile) bool { return true })

func baseName(p string) string {
	if p == "/" {
		return "/"
	}
	p = strings.TrimRight(p, "/")
	if p == "" {
		return "/"
	}
	return p[strings.LastIndexByte(p, '/')+1:]
}

func fileTime(ff *findFile, kind byte) time.Time {
	switch kind {
	case 'a':
		return ff.stat().atime
	case 'c':
		return ff.stat().ctime
	}
	return ff.fi.ModTime()
}

func typeChar(m fs.FileMode) byte {
	switch {
	case m.IsDir():
		return 'd'
	case m&fs.ModeSymlink != 0:
		return 'l'
	case m&fs.ModeNamedPipe != 0:
		return 'p'
	case m&fs.ModeSocket != 0:
		return 's'
	case m&fs.ModeCharDevice != 0:
		return 'c'
	case m&fs.ModeDevice != 0:
		return 'b'
	}
	return 'f'
}

// parseSigned parses find's numeric arguments: "+N", "-N" or "N".
func parseSigned(a string) (byte, int64, error) {
	var c byte = '='
	if strings.HasPrefix(a, "+") || strings.HasPrefix(a, "-") {
		c, a = a[0], a[1:]
	}
	n, err := strconv.ParseInt(a, 10, 64)
	if err != nil || n < 0 || a == "" || !isDigit(a[0]) {
		return 0, 0, errors.New("bad number")
	}
	return c, n, nil
}

func cmpNum(c byte, v, n int64) bool {
	switch c {
	case '+':
		return v > n
	case '-':
		return v < n
	}
	return v == n
}

func parseFindSize(a string) (byte, int64, int64, error) {
	s := a
	unit := int64(512)
	if s != "" {
		switch last := s[len(s)-1]; {
		case isDigit(last):
		default:
			u := strings.IndexByte("bcwkMG", last)
			if u < 0 {
				return 0, 0, 0, findErr("invalid -size type `%c'", last)
			}
			unit = []int64{512, 1, 2, 1024, 1 << 20, 1 << 30}[u]
			s = s[:len(s)-1]
		}
	}
	c, n, err := parseSigned(s)
	if err != nil {
		return 0, 0, 0, findErr("invalid argument `%s' to `-size'", a)
	}
	return c, n, unit, nil
}

// emacsToRE2 converts find's default (emacs) regex syntax to RE2: in
// emacs syntax \( \) \| \{ \} are the operators and ( ) | { } literals.
func emacsToRE2(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\\' && i+1 < len(p) {
			i++
			switch p[i] {
			case '(', ')', '|', '{', '}':
				b.WriteByte(p[i])
			default:
				b.WriteByte('\\')
				b.WriteByte(p[i])
			}
			continue
		}
		switch c {
		case '(', ')', '|', '{', '}':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

func (f *finder) print(delim string) func(*findFile) bool {
	return func(ff *findFile) bool {
		f.out.WriteString(ff.path)
		f.out.WriteString(delim)
		return true
	}
}

func (f *finder) ls(ff *findFile) bool {
	sx := ff.stat()
	line := fmt.Sprintf("%9d %6d %s %3d %-8s %-8s %8d %s %s", sx.ino, (sx.blocks+1)/2, modeString(ff.fi.Mode()),
		sx.nlink, f.names.user(sx.uid), f.names.group(sx.gid), ff.fi.Size(), lsTime(ff.fi.ModTime(), f.now), ff.path)
	if ff.fi.Mode()&fs.ModeSymlink != 0 {
		if t, err := os.Readlink(ff.path); err == nil {
			line += " -> " + t
		}
	}
	f.out.WriteString(line + "\n")
	return true
}

func lsTime(t, now time.Time) string {
	const halfYear = 31556952 / 2 * time.Second
	if t.After(now.Add(-halfYear)) && !t.After(now) {
		return t.Format("Jan _2 15:04")
	}
	return t.Format("Jan _2  2006")
}

func (f *finder) delete(ff *findFile) bool {
	if ff.path == "." {
		return true
	}
	var err error
	if ff.fi.IsDir() {
		err = syscall.Rmdir(ff.path)
		if isErrno(err, syscall.EEXIST) {
			err = syscall.ENOTEMPTY
		}
	} else {
		err = syscall.Unlink(ff.path)
	}
	if err != nil {
		f.errorf("cannot delete %s: %s", quote(ff.path), strerror(err))
		return false
	}
	return true
}

// findTimeFrac renders seconds with find's ten-digit fraction.
func findTimeFrac(t time.Time) string {
	return fmt.Sprintf("%09d0", t.Nanosecond())
}

func (f *finder) printf(format string, ff *findFile) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c == '\\' && i+1 < len(format) {
			i++
			switch format[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '0':
				b.WriteByte(0)
			case '\\':
				b.WriteByte('\\')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'r':
				b.WriteByte('\r')
			case 'v':
				b.WriteByte('\v')
			case 'c':
				return b.String()
			default:
				b.WriteByte('\\')
				b.WriteByte(format[i])
			}
			continue
		}
		if c != '%' || i+1 >= len(format) {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("-+ #0", format[j]) >= 0 {
			j++
		}
		for j < len(format) && (isDigit(format[j]) || format[j] == '.') {
			j++
		}
		if j >= len(format) {
			b.WriteString(format[i:])
			break
		}
		spec := format[i+1 : j]
		verb := format[j]
		i = j
		var s string
		numeric := false
		sx := ff.stat
		switch verb {
		case '%':
			b.WriteByte('%')
			continue
		case 'p':
			s = ff.path
		case 'f':
			s = baseName(ff.path)
		case 'h':
			p := strings.TrimRight(ff.path, "/")
			if k := strings.LastIndexByte(p, '/'); k > 0 {
				s = p[:k]
			} else if k == 0 {
				s = "/"
			} else {
				s = "."
			}
		case 'P':
			s = strings.TrimPrefix(strings.TrimPrefix(ff.path, ff.start), "/")
		case 'H':
			s = ff.start
		case 's':
			s, numeric = strconv.FormatInt(ff.fi.Size(), 10), true
		case 'd':
			s, numeric = strconv.Itoa(ff.depth), true
		case 'm':
			s = strconv.FormatUint(uint64(unixMode(ff.fi.Mode())), 8)
		case 'M':
			s = modeString(ff.fi.Mode())
		case 'y':
			s = string(typeChar(ff.fi.Mode()))
		case 'Y':
			m := ff.fi.Mode()
			if m&fs.ModeSymlink != 0 {
				if tfi, err := metaStat(ff.path); err == nil {
					m = tfi.Mode()
				} else {
					s = "N"
					break
				}
			}
			s = string(typeChar(m))
		case 'k':
			s, numeric = strconv.FormatInt((sx().blocks+1)/2, 10), true
		case 'b':
			s, numeric = strconv.FormatInt(sx().blocks, 10), true
		case 'n':
			s, numeric = strconv.FormatUint(sx().nlink, 10), true
		case 'i':
			s, numeric = strconv.FormatUint(sx().ino, 10), true
		case 'u':
			s = f.names.user(sx().uid)
		case 'U':
			s, numeric = strconv.FormatUint(uint64(sx().uid), 10), true
		case 'g':
			s = f.names.group(sx().gid)
		case 'G':
			s, numeric = strconv.FormatUint(uint64(sx().gid), 10), true
		case 'l':
			if ff.fi.Mode()&fs.ModeSymlink != 0 {
				s, _ = os.Readlink(ff.path)
			}
		case 'D':
			s = strconv.FormatUint(sx().dev, 10)
		case 'a', 'c', 't':
			kind := map[byte]byte{'a': 'a', 'c': 'c', 't': 'm'}[verb]
			tm := fileTime(ff, kind)
			s = tm.Format("Mon Jan _2 15:04:05.") + findTimeFrac(tm) + tm.Format(" 2006")
		case 'A', 'C', 'T':
			if i+1 >= len(format) {
				b.WriteString("%" + string(verb))
				continue
			}
			i++
			k := format[i]
			kind := map[byte]byte{'A': 'a', 'C': 'c', 'T': 'm'}[verb]
			tm := fileTime(ff, kind)
			switch k {
			case '@':
				s = strconv.FormatInt(tm.Unix(), 10) + "." + findTimeFrac(tm)
			case '+':
				s = tm.Format("2006-01-02+15:04:05.") + findTimeFrac(tm)
			case 'T':
				s = tm.Format("15:04:05.") + findTimeFrac(tm)
			case 'S':
				s = tm.Format("05.") + findTimeFrac(tm)
			case 'k':
				s = tm.Format("15")
				s = strings.TrimPrefix(s, "0")
				if len(s) == 1 {
					s = " " + s
				}
			default:
				s = timefmt.Strftime(tm, "%"+string(k))
			}
		default:
			b.WriteString(format[i-len(spec)-1 : i+1])
			continue
		}
		if spec == "" {
			b.WriteString(s)
		} else if numeric {
			n, _ := strconv.ParseInt(s, 10, 64)
			fmt.Fprintf(&b, "%"+spec+"d", n)
		} else {
			fmt.Fprintf(&b, "%"+spec+"s", s)
		}
	}
	return b.String()
}

// checkPrintf warns once about each unknown -printf directive, as GNU find
// does while parsing.
func (f *finder) checkPrintf(format string) {
	for i := 0; i < len(format); i++ {
		if format[i] == '\\' {
			i++
			continue
		}
		if format[i] != '%' {
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("-+ #0123456789.", format[j]) >= 0 {
			j++
		}
		if j >= len(format) {
			return
		}
		if strings.IndexByte("%pfhPHsdmMyYkbniuUgGlDactACT", format[j]) < 0 {
			f.e.Errorf("warning: unrecognized format directive `%%%c'", format[j])
		}
		if strings.IndexByte("ACT", format[j]) >= 0 {
			j++
		}
		i = j
	}
}

// execBatch collects the files of one "-exec ... {} +".
type execBatch struct {
	argv  []string
	dir   string
	files []string
	size  int
}

const execBatchMax = 64 << 10 // bytes of arguments per child, like ARG_MAX/2

func (b *execBatch) flush(f *finder) {
	if len(b.files) == 0 {
		return
	}
	argv := append(append([]string{}, b.argv...), b.files...)
	b.files, b.size = nil, 0
	if st, err := f.spawn(argv, b.dir, false); err != nil || st != 0 {
		f.status = 1
	}
}

func (f *finder) spawn(argv []string, dir string, stdinNull bool) (int, error) {
	f.out.Flush()
	st, err := f.e.Spawn(cmd.SpawnRequest{Argv: argv, Dir: dir, StdinNull: stdinNull})
	if err != nil {
		switch {
		case errors.Is(err, cmd.ErrNotFound):
			f.e.Errorf("%s: No such file or directory", quote(argv[0]))
		case errors.Is(err, cmd.ErrDenied):
			f.e.Errorf("%s: Permission denied", quote(argv[0]))
		default:
			f.e.Errorf("%s: %s", quote(argv[0]), err)
			f.status = 1
		}
		return 1, err
	}
	return st, nil
}

func (f *finder) parseExec(pred string) (findNode, error) {
	var argv []string
	plus := false
	for {
		if f.pos >= len(f.args) {
			return nil, findErr("missing argument to `%s'", pred)
		}
		a := f.args[f.pos]
		f.pos++
		if a == ";" {
			break
		}
		if a == "+" && len(argv) > 0 && argv[len(argv)-1] == "{}" && (pred == "-exec" || pred == "-execdir") {
			plus = true
			argv = argv[:len(argv)-1]
			break
		}
		argv = append(argv, a)
	}
	if len(argv) == 0 {
		return nil, findErr("missing argument to `%s'", pred)
	}
	inDir := pred == "-execdir" || pred == "-okdir"
	ask := pred == "-ok" || pred == "-okdir"
	if plus {
		batches := map[string]*execBatch{}
		return findFunc(func(ff *findFile) bool {
			name, dir := ff.path, ""
			if inDir {
				name, dir = f.dirAndName(ff)
			}
			b := batches[dir]
			if b == nil {
				b = &execBatch{argv: argv, dir: dir}
				batches[dir] = b
				f.batches = append(f.batches, b)
			}
			b.files = append(b.files, name)
			b.size += len(name) + 1
			if b.size > execBatchMax {
				b.flush(f)
			}
			return true
		}), nil
	}
	return findFunc(func(ff *findFile) bool {
		name, dir := ff.path, ""
		if inDir {
			name, dir = f.dirAndName(ff)
		}
		args := make([]string, len(argv))
		for i, a := range argv {
			args[i] = strings.ReplaceAll(a, "{}", name)
		}
		if ask {
			f.out.Flush()
			fmt.Fprintf(f.e.Stderr, "< %s ... %s > ? ", args[0], name)
			if f.in == nil {
				f.in = bufio.NewReader(f.e.Stdin)
			}
			line, _ := f.in.ReadString('\n')
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "y") && !strings.HasPrefix(line, "Y") {
				return false
			}
		}
		st, err := f.spawn(args, dir, ask)
		return err == nil && st == 0
	}), nil
}

// dirAndName gives -execdir's "./NAME" and the absolute directory to run in.
func (f *finder) dirAndName(ff *findFile) (string, string) {
	dir := filepath.Dir(ff.path)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return "./" + baseName(ff.path), dir
}
