package fileutils

import (
	"bufio"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
	"github.com/wasmbox/wasmbox/tools/internal/timefmt"
)

func init() { cmd.Register("ls", lsMain, "dir", "vdir") }

var lsUsage = usage{
	synopsis: "[OPTION]... [FILE]...",
	text: `List information about the FILEs (the current directory by default).
Sort entries alphabetically if none of -cftuvSUX nor --sort is specified.

  -a, --all                  do not ignore entries starting with .
  -A, --almost-all           do not list implied . and ..
  -c                         with -lt: sort by, and show, ctime
  -d, --directory            list directories themselves, not their contents
  -F, --classify             append indicator (one of */=>@|) to entries
      --full-time            like -l --time-style=full-iso
  -g                         like -l, but do not list owner
      --group-directories-first  group directories before files
  -G, --no-group             in a long listing, don't print group names
  -h, --human-readable       with -l and -s, print sizes like 1K 234M 2G etc.
  -i, --inode                print the index number of each file
  -l                         use a long listing format
  -n, --numeric-uid-gid      like -l, but list numeric user and group IDs
  -o                         like -l, but do not list group information
  -p                         append / indicator to directories
  -r, --reverse              reverse order while sorting
  -R, --recursive            list subdirectories recursively
  -s, --size                 print the allocated size of each file, in blocks
  -S                         sort by file size, largest first
      --sort=WORD            sort by WORD instead of name: none (-U), size (-S), time (-t), version (-v), extension (-X)
      --time-style=STYLE     full-iso, long-iso, iso, locale, or +FORMAT
  -t                         sort by time, newest first
  -u                         with -lt: sort by, and show, access time
  -U                         do not sort; list entries in directory order
  -v                         natural sort of (version) numbers within text
  -X                         sort alphabetically by entry extension
  -1                         list one file per line
      --color[=WHEN]         accepted; output is never colored
`,
	bad: 2,
}

type lsEnt struct {
	name   string // as shown
	path   string // to stat and recurse
	fi     fs.FileInfo
	sx     statx
	target string // symlink target
	tfi    fs.FileInfo
}

type lsState struct {
	e                                           *cmd.Env
	out                                         *bufio.Writer
	all, almost, dirSelf, recursive, long       bool
	human, si, inode, numeric, noOwner, noGroup bool
	size, reverse, dirsFirst, slash, deref      bool
	derefArgs                                   bool
	classify                                    int // 0 none, 1 -F, 2 --file-type
	sortBy                                      string
	timeKind                                    string // mtime, atime, ctime
	timeStyle                                   string
	comma                                       bool
	zero                                        bool
	names                                       idNames
	now                                         time.Time
	status                                      int
	printedAny                                  bool
	ignore                                      []string
}

func lsMain(e *cmd.Env) int {
	opts, operands, st, done := getopt(e, "a,all A,almost-all b,escape B,ignore-backups c C ,color? d,directory D,dired f F,classify? ,file-type ,format: ,full-time g ,group-directories-first G,no-group h,human-readable ,si H,dereference-command-line ,dereference-command-line-symlink-to-dir ,hide: ,hyperlink? ,indicator-style: i,inode I,ignore: k,kibibytes l L,dereference m n,numeric-uid-gid N,literal o p q,hide-control-chars ,show-control-chars Q,quote-name ,quoting-style: r,reverse R,recursive s,size S ,sort: ,time: ,time-style: t T,tabsize: u U v w,width: x X Z,context z,zero 1", lsUsage)
	if done {
		return st
	}
	l := &lsState{e: e, sortBy: "name", timeKind: "mtime", now: time.Now(), derefArgs: true}
	timeSortExplicit := false
	for _, o := range opts {
		switch o.name {
		case "all":
			l.all, l.almost = true, false
		case "almost-all":
			l.almost = !l.all
		case "c":
			l.timeKind = "ctime"
		case "u":
			l.timeKind = "atime"
		case "directory":
			l.dirSelf = true
		case "f":
			l.all, l.sortBy = true, "none"
		case "classify":
			if o.val == "" || o.val == "always" || o.val == "yes" || o.val == "force" {
				l.classify = 1
			}
		case "file-type":
			l.classify = 2
		case "full-time":
			l.long, l.timeStyle = true, "full-iso"
		case "g":
			l.long, l.noOwner = true, true
		case "group-directories-first":
			l.dirsFirst = true
		case "no-group":
			l.noGroup = true
		case "human-readable":
			l.human = true
		case "si":
			l.human, l.si = true, true
		case "inode":
			l.inode = true
		case "ignore", "hide":
			l.ignore = append(l.ignore, o.val)
		case "dereference":
			l.deref = true
		case "l":
			l.long = true
		case "m":
			l.comma = true
		case "numeric-uid-gid":
			l.long, l.numeric = true, true
		case "o":
			l.long, l.noGroup = true, true
		case "p":
			l.slash = true
		case "reverse":
			l.reverse = true
		case "recursive":
			l.recursive = true
		case "size":
			l.size = true
		case "S":
			l.sortBy = "size"
		case "sort":
			switch o.val {
			case "none", "size", "time", "version", "extension", "width":
				l.sortBy = o.val
			default:
				return badArg(e, o.val, "--sort", "none", "time", "size", "extension", "version", "width")
			}
		case "time":
			switch o.val {
			case "atime", "access", "use":
				l.timeKind = "atime"
			case "ctime", "status":
				l.timeKind = "ctime"
			case "mtime", "modification":
				l.timeKind = "mtime"
			case "birth", "creation":
				l.timeKind = "mtime"
			default:
				return badArg(e, o.val, "--time", "atime|access|use", "ctime|status", "birth|creation")
			}
			timeSortExplicit = true
		case "time-style":
			l.timeStyle = strings.TrimPrefix(o.val, "posix-")
		case "t":
			l.sortBy = "time"
		case "U":
			l.sortBy = "none"
		case "v":
			l.sortBy = "version"
		case "X":
			l.sortBy = "extension"
		case "zero":
			l.zero = true
		case "1", "C", "x":
			l.comma = false
		case "format":
			switch o.val {
			case "long", "verbose":
				l.long = true
			case "commas":
				l.comma = true
			}
		case "indicator-style":
			switch o.val {
			case "classify":
				l.classify = 1
			case "file-type":
				l.classify = 2
			case "slash":
				l.slash = true
			}
		}
	}
	if (l.timeKind != "mtime" || timeSortExplicit) && !l.long && l.sortBy == "name" {
		l.sortBy = "time"
	}
	if l.long || l.classify != 0 || l.dirSelf {
		l.derefArgs = false
		if has(opts, "dereference-command-line", "dereference-command-line-symlink-to-dir") {
			l.derefArgs = true
		}
	}
	if l.deref {
		l.derefArgs = true
	}
	l.out = newOut(e)
	defer l.out.Flush()
	if len(operands) == 0 {
		operands = []string{"."}
	}
	var files, dirs []*lsEnt
	for _, op := range operands {
		ent, err := l.stat(op, op, true)
		if err != nil {
			l.out.Flush()
			e.Errorf("cannot access %s: %s", quote(op), strerror(err))
			l.status = 2
			continue
		}
		if ent.fi.IsDir() && !l.dirSelf {
			dirs = append(dirs, ent)
		} else {
			files = append(files, ent)
		}
	}
	l.sort(files)
	l.sort(dirs)
	if len(files) > 0 {
		l.list(files, false)
		l.printedAny = true
	}
	showHeader := len(operands) > 1 || l.recursive
	for _, d := range dirs {
		l.listDir(d.path, d.name, showHeader)
	}
	return l.status
}

// stat builds an entry; top marks a command-line operand.
func (l *lsState) stat(path, name string, top bool) (*lsEnt, error) {
	var fi fs.FileInfo
	var err error
	// Only -l and -F show permission bits or owners (the * of an
	// executable): other listings skip the host's metadata call.
	stat, lstat := os.Stat, os.Lstat
	if l.long || l.classify == 1 {
		stat, lstat = metaStat, metaLstat
	}
	if l.deref || (top && l.derefArgs) {
		fi, err = stat(path)
		if err != nil {
			if lfi, lerr := lstat(path); lerr == nil && !l.deref {
				fi, err = lfi, nil
			}
		}
	} else {
		fi, err = lstat(path)
	}
	if err != nil {
		return nil, err
	}
	ent := &lsEnt{name: name, path: path, fi: fi, sx: sysStat(fi)}
	if fi.Mode()&fs.ModeSymlink != 0 {
		ent.target, _ = os.Readlink(path)
		ent.tfi, _ = stat(path)
	}
	return ent, nil
}

func (l *lsState) listDir(path, name string, header bool) {
	f, err := os.Open(path)
	var names []string
	if err == nil {
		names, err = f.Readdirnames(-1)
		f.Close()
	}
	if err != nil {
		l.out.Flush()
		l.e.Errorf("cannot open directory %s: %s", quote(name), strerror(err))
		l.status = 2
		return
	}
	if header {
		if l.printedAny {
			l.out.WriteByte('\n')
		}
		l.out.WriteString(name + ":\n")
	}
	l.printedAny = true
	var ents []*lsEnt
	if l.all {
		for _, n := range []string{".", ".."} {
			if ent, err := l.stat(joinPath(path, n), n, false); err == nil {
				ents = append(ents, ent)
			}
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, ".") && !l.all && !l.almost {
			continue
		}
		if l.ignored(n) {
			continue
		}
		ent, err := l.stat(joinPath(path, n), n, false)
		if err != nil {
			l.out.Flush()
			l.e.Errorf("cannot access %s: %s", quote(joinPath(name, n)), strerror(err))
			l.status = 1
			continue
		}
		ents = append(ents, ent)
	}
	l.sort(ents)
	l.list(ents, true)
	if !l.recursive {
		return
	}
	for _, ent := range ents {
		if ent.fi.IsDir() && ent.name != "." && ent.name != ".." {
			l.listDir(ent.path, joinPath(name, ent.name), true)
		}
	}
}

func (l *lsState) ignored(n string) bool {
	for _, pat := range l.ignore {
		if ok, _ := pathMatch(pat, n); ok {
			return true
		}
	}
	return false
}

func (l *lsState) sort(ents []*lsEnt) {
	if l.sortBy == "none" {
		if l.reverse {
			for i, j := 0, len(ents)-1; i < j; i, j = i+1, j-1 {
				ents[i], ents[j] = ents[j], ents[i]
			}
		}
		return
	}
	cmpName := func(a, b *lsEnt) int { return strings.Compare(a.name, b.name) }
	var cmp func(a, b *lsEnt) int
	switch l.sortBy {
	case "size":
		cmp = func(a, b *lsEnt) int {
			if a.fi.Size() != b.fi.Size() {
				if a.fi.Size() > b.fi.Size() {
					return -1
				}
				return 1
			}
			return cmpName(a, b)
		}
	case "time":
		cmp = func(a, b *lsEnt) int {
			ta, tb := l.timeOf(a), l.timeOf(b)
			if !ta.Equal(tb) {
				if ta.After(tb) {
					return -1
				}
				return 1
			}
			return cmpName(a, b)
		}
	case "extension":
		cmp = func(a, b *lsEnt) int {
			if c := strings.Compare(ext(a.name), ext(b.name)); c != 0 {
				return c
			}
			return cmpName(a, b)
		}
	case "version":
		cmp = func(a, b *lsEnt) int { return versionCompare(a.name, b.name) }
	default:
		cmp = cmpName
	}
	less := func(i, j int) bool {
		a, b := ents[i], ents[j]
		if l.dirsFirst {
			da, db := l.isDir(a), l.isDir(b)
			if da != db {
				return da
			}
		}
		c := cmp(a, b)
		if l.reverse {
			return c > 0
		}
		return c < 0
	}
	sort.SliceStable(ents, less)
}

func (l *lsState) isDir(e *lsEnt) bool {
	return e.fi.IsDir() || e.tfi != nil && e.tfi.IsDir()
}

func ext(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return ""
	}
	return name[i:]
}

// versionCompare orders names like "sort -V": digit runs compare as numbers.
func versionCompare(a, b string) int {
	for a != "" && b != "" {
		if isDigit(a[0]) && isDigit(b[0]) {
			i, j := 0, 0
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			na, nb := strings.TrimLeft(a[:i], "0"), strings.TrimLeft(b[:j], "0")
			if len(na) != len(nb) {
				if len(na) < len(nb) {
					return -1
				}
				return 1
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[i:], b[j:]
			continue
		}
		if a[0] != b[0] {
			if a[0] < b[0] {
				return -1
			}
			return 1
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (l *lsState) timeOf(e *lsEnt) time.Time {
	switch l.timeKind {
	case "atime":
		return e.sx.atime
	case "ctime":
		return e.sx.ctime
	}
	return e.fi.ModTime()
}

func (l *lsState) indicator(m fs.FileMode) string {
	switch {
	case m.IsDir():
		if l.classify != 0 || l.slash {
			return "/"
		}
	case l.classify == 0:
	case m&fs.ModeSymlink != 0:
		return "@"
	case m&fs.ModeNamedPipe != 0:
		return "|"
	case m&fs.ModeSocket != 0:
		return "="
	case m.IsRegular() && m&0o111 != 0 && l.classify == 1:
		return "*"
	}
	return ""
}

func (l *lsState) blocks(e *lsEnt) int64 { return (e.sx.blocks + 1) / 2 }

func (l *lsState) sizeStr(n int64) string {
	if l.human {
		if l.si {
			return humanUnits(n, 1000, true)
		}
		return humanSize(n)
	}
	return strconv.FormatInt(n, 10)
}

func (l *lsState) blockStr(kb int64) string {
	if l.human {
		return l.sizeStr(kb * 1024)
	}
	return strconv.FormatInt(kb, 10)
}

func (l *lsState) timeStr(t time.Time) string {
	switch {
	case l.timeStyle == "full-iso":
		return t.Format("2006-01-02 15:04:05.000000000 -0700")
	case l.timeStyle == "long-iso":
		return t.Format("2006-01-02 15:04")
	case l.timeStyle == "iso":
		if l.recent(t) {
			return t.Format("01-02 15:04")
		}
		return t.Format("2006-01-02 ")
	case strings.HasPrefix(l.timeStyle, "+"):
		f := l.timeStyle[1:]
		recentFmt, oldFmt, two := strings.Cut(f, "\n")
		if two && !l.recent(t) {
			return timefmt.Strftime(t, oldFmt)
		}
		return timefmt.Strftime(t, recentFmt)
	}
	if l.recent(t) {
		return t.Format("Jan _2 15:04")
	}
	return t.Format("Jan _2  2006")
}

func (l *lsState) recent(t time.Time) bool {
	const halfYear = 31556952 / 2 * time.Second
	return t.After(l.now.Add(-halfYear)) && !t.After(l.now)
}

// list prints a group of entries (one directory's, or the file operands).
func (l *lsState) list(ents []*lsEnt, isDir bool) {
	out := l.out
	delim := byte('\n')
	if l.zero {
		delim = 0
	}
	var wIno, wBlk, wLink, wUser, wGroup, wSize int
	var total int64
	for _, e := range ents {
		total += l.blocks(e)
		wIno = max(wIno, len(strconv.FormatUint(e.sx.ino, 10)))
		wBlk = max(wBlk, len(l.blockStr(l.blocks(e))))
		if l.long {
			wLink = max(wLink, len(strconv.FormatUint(e.sx.nlink, 10)))
			wUser = max(wUser, len(l.user(e)))
			wGroup = max(wGroup, len(l.group(e)))
			wSize = max(wSize, len(l.sizeStr(e.fi.Size())))
		}
	}
	if isDir && (l.long || l.size) {
		out.WriteString("total " + l.blockStr(total))
		out.WriteByte(delim)
	}
	for i, e := range ents {
		if l.comma {
			if i > 0 {
				out.WriteString(", ")
			}
			out.WriteString(e.name + l.indicator(e.fi.Mode()))
			if i == len(ents)-1 {
				out.WriteByte('\n')
			}
			continue
		}
		if l.inode {
			padLeft(out, strconv.FormatUint(e.sx.ino, 10), wIno)
			out.WriteByte(' ')
		}
		if l.size {
			padLeft(out, l.blockStr(l.blocks(e)), wBlk)
			out.WriteByte(' ')
		}
		if l.long {
			out.WriteString(modeString(e.fi.Mode()))
			out.WriteByte(' ')
			padLeft(out, strconv.FormatUint(e.sx.nlink, 10), wLink)
			out.WriteByte(' ')
			if !l.noOwner {
				padRight(out, l.user(e), wUser)
				out.WriteByte(' ')
			}
			if !l.noGroup {
				padRight(out, l.group(e), wGroup)
				out.WriteByte(' ')
			}
			padLeft(out, l.sizeStr(e.fi.Size()), wSize)
			out.WriteByte(' ')
			t := e.fi.ModTime()
			switch l.timeKind {
			case "atime":
				t = e.sx.atime
			case "ctime":
				t = e.sx.ctime
			}
			out.WriteString(l.timeStr(t))
			out.WriteByte(' ')
		}
		out.WriteString(e.name)
		if l.long && e.fi.Mode()&fs.ModeSymlink != 0 {
			out.WriteString(" -> " + e.target)
			if e.tfi != nil && l.classify != 0 {
				out.WriteString(l.indicator(e.tfi.Mode()))
			}
		} else {
			out.WriteString(l.indicator(e.fi.Mode()))
		}
		out.WriteByte(delim)
	}
}

func (l *lsState) user(e *lsEnt) string {
	if l.numeric {
		return strconv.FormatUint(uint64(e.sx.uid), 10)
	}
	return l.names.user(e.sx.uid)
}

func (l *lsState) group(e *lsEnt) string {
	if l.numeric {
		return strconv.FormatUint(uint64(e.sx.gid), 10)
	}
	return l.names.group(e.sx.gid)
}

func padLeft(w *bufio.Writer, s string, n int) {
	for i := len(s); i < n; i++ {
		w.WriteByte(' ')
	}
	w.WriteString(s)
}

func padRight(w *bufio.Writer, s string, n int) {
	w.WriteString(s)
	for i := len(s); i < n; i++ {
		w.WriteByte(' ')
	}
}
