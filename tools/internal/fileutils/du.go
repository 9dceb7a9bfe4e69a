package fileutils

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("du", duMain)
	cmd.Register("df", dfMain)
}

var duUsage = usage{
	synopsis: "[OPTION]... [FILE]...",
	text: `Summarize device usage of the set of FILEs, recursively for directories.

  -a, --all             write counts for all files, not just directories
      --apparent-size   print apparent sizes rather than device usage
  -B, --block-size=SIZE scale sizes by SIZE before printing them
  -b, --bytes           equivalent to '--apparent-size --block-size=1'
  -c, --total           produce a grand total
  -d, --max-depth=N     print the total for a directory only if it is N or fewer levels below the command line argument
  -h, --human-readable  print sizes in human readable format (e.g., 1K 234M 2G)
      --inodes          list inode usage information instead of block usage
  -k                    like --block-size=1K
  -L, --dereference     dereference all symbolic links
  -m                    like --block-size=1M
  -s, --summarize       display only a total for each argument
      --si              like -h, but use powers of 1000 not 1024
      --exclude=PATTERN exclude files that match PATTERN
  -0, --null            end each output line with NUL, not newline
`,
	bad: 1,
}

type duState struct {
	e                                          *cmd.Env
	out                                        *bufio.Writer
	all, apparent, human, si, summarize, deref bool
	inodes                                     bool
	blockSize                                  int64
	maxDepth                                   int
	exclude                                    []string
	seen                                       map[[2]uint64]bool
	status                                     int
	delim                                      byte
}

func duMain(e *cmd.Env) int {
	opts, files, st, done := getopt(e, "0,null a,all ,apparent-size B,block-size: b,bytes c,total d,max-depth: D H h,human-readable ,inodes k L,dereference l,count-links m P,no-dereference S,separate-dirs ,si s,summarize t,threshold: ,time? X,exclude-from: ,exclude: x,one-file-system", duUsage)
	if done {
		return st
	}
	d := &duState{e: e, blockSize: 1024, maxDepth: -1, seen: map[[2]uint64]bool{}, delim: '\n'}
	for _, o := range opts {
		switch o.name {
		case "null":
			d.delim = 0
		case "all":
			d.all = true
		case "apparent-size":
			d.apparent = true
		case "block-size":
			n, err := parseSize(o.val)
			if err != nil || n <= 0 {
				e.Errorf("invalid --block-size argument %s", quote(o.val))
				return 1
			}
			d.blockSize, d.human = n, false
		case "bytes":
			d.apparent, d.blockSize, d.human = true, 1, false
		case "total":
		case "max-depth":
			n, err := strconv.Atoi(o.val)
			if err != nil || n < 0 {
				return usageErr(e, duUsage, "invalid maximum depth %s", quote(o.val))
			}
			d.maxDepth = n
		case "human-readable":
			d.human, d.si = true, false
		case "si":
			d.human, d.si = true, true
		case "inodes":
			d.inodes = true
		case "k":
			d.blockSize, d.human = 1024, false
		case "m":
			d.blockSize, d.human = 1<<20, false
		case "dereference":
			d.deref = true
		case "summarize":
			d.summarize = true
		case "exclude":
			d.exclude = append(d.exclude, o.val)
		}
	}
	if d.summarize && d.maxDepth > 0 {
		return usageErr(e, duUsage, "warning: summarizing conflicts with --max-depth=%d", d.maxDepth)
	}
	if d.summarize {
		d.maxDepth = 0
	}
	if d.all && d.summarize {
		return usageErr(e, duUsage, "cannot both summarize and show all entries")
	}
	if len(files) == 0 {
		files = []string{"."}
	}
	d.out = newOut(e)
	defer d.out.Flush()
	var total int64
	for _, f := range files {
		total += d.walk(f, 0, true)
	}
	if has(opts, "total") {
		d.print(total, "total")
	}
	return d.status
}

// size is what one file contributes, in bytes (or inodes).
func (d *duState) size(fi fs.FileInfo) int64 {
	if d.inodes {
		return 1
	}
	if d.apparent {
		return fi.Size()
	}
	return sysStat(fi).blocks * 512
}

func (d *duState) walk(path string, depth int, top bool) int64 {
	var fi fs.FileInfo
	var err error
	if d.deref {
		fi, err = os.Stat(path)
	} else {
		fi, err = os.Lstat(path)
	}
	if err != nil {
		d.out.Flush()
		d.e.Errorf("cannot access %s: %s", quote(path), strerror(err))
		d.status = 1
		return 0
	}
	if !top && d.excluded(path) {
		return 0
	}
	sx := sysStat(fi)
	if !fi.IsDir() && sx.nlink > 1 {
		key := [2]uint64{sx.dev, sx.ino}
		if d.seen[key] {
			return 0
		}
		d.seen[key] = true
	}
	n := d.size(fi)
	if fi.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			d.out.Flush()
			d.e.Errorf("cannot read directory %s: %s", quote(path), strerror(err))
			d.status = 1
		}
		names := make([]string, 0, len(ents))
		for _, ent := range ents {
			names = append(names, ent.Name())
		}
		sort.Strings(names)
		for _, name := range names {
			n += d.walk(joinPath(path, name), depth+1, false)
		}
		if d.maxDepth < 0 || depth <= d.maxDepth {
			d.print(n, path)
		}
		return n
	}
	if top || d.all && (d.maxDepth < 0 || depth <= d.maxDepth) {
		d.print(n, path)
	}
	return n
}

func (d *duState) excluded(path string) bool {
	base := path[strings.LastIndexByte(path, '/')+1:]
	for _, p := range d.exclude {
		if fnmatch(p, base, false) || fnmatch(p, path, false) {
			return true
		}
	}
	return false
}

func (d *duState) print(n int64, name string) {
	var s string
	switch {
	case d.inodes:
		s = strconv.FormatInt(n, 10)
	case d.human && d.si:
		s = humanUnits(n, 1000, true)
	case d.human:
		s = humanSize(n)
	default:
		s = strconv.FormatInt((n+d.blockSize-1)/d.blockSize, 10)
	}
	d.out.WriteString(s)
	d.out.WriteByte('\t')
	d.out.WriteString(name)
	d.out.WriteByte(d.delim)
}

// parseSize parses sizes like "10", "4K", "1M", "2KB", "1MiB" (powers of
// 1024, or of 1000 with a "B" suffix as GNU does).
func parseSize(s string) (int64, error) {
	if s == "" {
		return 0, errBadMode
	}
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	num := int64(1)
	if i > 0 {
		v, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil {
			return 0, err
		}
		num = v
	}
	suf := s[i:]
	if suf == "" {
		return num, nil
	}
	base := int64(1024)
	switch {
	case strings.HasSuffix(suf, "iB") && len(suf) == 3:
		suf = suf[:1]
	case strings.HasSuffix(suf, "B") && len(suf) == 2:
		suf, base = suf[:1], 1000
	}
	if len(suf) != 1 {
		if suf == "b" {
			return num * 512, nil
		}
		return 0, errBadMode
	}
	exp := strings.IndexByte("KMGTPEZY", upper(suf[0]))
	if suf[0] == 'b' {
		return num * 512, nil
	}
	if suf[0] == 'c' {
		return num, nil
	}
	if suf[0] == 'w' {
		return num * 2, nil
	}
	if exp < 0 || suf[0] != 'k' && suf[0] != 'K' && suf[0] >= 'a' {
		return 0, errBadMode
	}
	for ; exp >= 0; exp-- {
		if num > (1<<62)/base {
			return 0, errBadMode
		}
		num *= base
	}
	return num, nil
}

var dfUsage = usage{
	synopsis: "[OPTION]... [FILE]...",
	text: `Show information about the file system on which each FILE resides,
or all file systems by default.

In the sandbox there is one file system, the virtual filesystem of the
sandbox, mounted on /. Its size is the sandbox quota (WASMBOX_STATFS, set by
the executor: "TOTAL_BYTES USED_BYTES TOTAL_FILES USED_FILES"); without it
df counts the bytes in use by walking the tree and reports the default
quota of 256 MiB.

  -a, --all             include pseudo, duplicate, inaccessible file systems
  -B, --block-size=SIZE scale sizes by SIZE before printing them
  -h, --human-readable  print sizes in powers of 1024 (e.g., 1023M)
  -H, --si              print sizes in powers of 1000 (e.g., 1.1G)
  -i, --inodes          list inode information instead of block usage
  -k                    like --block-size=1K
  -P, --portability     use the POSIX output format
  -T, --print-type      print file system type
`,
	bad: 1,
}

// defaultQuota is the byte quota of the default sandbox filesystem.
const defaultQuota = 256 << 20

// defaultFiles is its inode quota.
const defaultFiles = 10000

func dfMain(e *cmd.Env) int {
	opts, files, st, done := getopt(e, "a,all B,block-size: h,human-readable H,si i,inodes k l,local ,output? P,portability ,total t,type: T,print-type x,exclude-type: v ,sync ,no-sync", dfUsage)
	if done {
		return st
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			e.Errorf("%s: %s", quoteIf(f), strerror(err))
			return 1
		}
	}
	total, used, ftotal, fused := statfs()
	human, si := has(opts, "human-readable"), has(opts, "si")
	bs := int64(1024)
	if v, ok := last(opts, "block-size"); ok {
		n, err := parseSize(v)
		if err != nil || n <= 0 {
			e.Errorf("invalid --block-size argument %s", quote(v))
			return 1
		}
		bs = n
	}
	avail := max(total-used, 0)
	typ := has(opts, "print-type")
	out := newOut(e)
	defer out.Flush()
	pct := func(u, t int64) string {
		if t == 0 {
			return "-"
		}
		return strconv.FormatInt((u*100+t-1)/t, 10) + "%"
	}
	fmtN := func(n int64) string {
		switch {
		case human:
			return humanSize(n)
		case si:
			return humanUnits(n, 1000, true)
		}
		return strconv.FormatInt((n+bs-1)/bs, 10)
	}
	var cols []string
	if has(opts, "inodes") {
		cols = []string{"Filesystem", "Inodes", "IUsed", "IFree", "IUse%", "Mounted on"}
		cols2 := []string{"wasmbox", strconv.FormatInt(ftotal, 10), strconv.FormatInt(fused, 10), strconv.FormatInt(max(ftotal-fused, 0), 10), pct(fused, ftotal), "/"}
		dfPrint(out, cols, cols2, typ)
		return 0
	}
	sizeHdr := "1K-blocks"
	switch {
	case human || si:
		sizeHdr = "Size"
	case bs != 1024:
		sizeHdr = humanBlock(bs) + "-blocks"
	}
	availHdr, useHdr := "Available", "Use%"
	if has(opts, "portability") {
		useHdr = "Capacity"
		if !human && !si {
			sizeHdr = strconv.FormatInt(bs, 10) + "-blocks"
		}
	} else if human || si {
		availHdr = "Avail"
	}
	cols = []string{"Filesystem", sizeHdr, "Used", availHdr, useHdr, "Mounted on"}
	dfPrint(out, cols, []string{"wasmbox", fmtN(total), fmtN(used), fmtN(avail), pct(used, used+avail), "/"}, typ)
	return 0
}

func humanBlock(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"E", 1 << 60}, {"P", 1 << 50}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n%u.v == 0 {
			return strconv.FormatInt(n/u.v, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// dfPrint lays out the header and the row the way GNU df aligns them: the
// first column left-aligned, numbers right-aligned, the mount point last.
func dfPrint(out *bufio.Writer, hdr, row []string, typ bool) {
	if typ {
		hdr = append(hdr[:1], append([]string{"Type"}, hdr[1:]...)...)
		row = append(row[:1], append([]string{"wasmbox"}, row[1:]...)...)
	}
	for _, r := range [][]string{hdr, row} {
		for i, c := range r {
			w := max(len(hdr[i]), len(row[i]))
			if i < len(r)-2 && i > 0 && !(typ && i == 1) {
				w = max(w, 5) // GNU's minimum width of the number columns
			}
			switch {
			case i == 0:
				w = max(w, 14)
				fmt.Fprintf(out, "%-*s", w, c)
			case i == len(r)-1:
				out.WriteString(" " + c)
			case typ && i == 1:
				fmt.Fprintf(out, " %-*s", w, c)
			default:
				fmt.Fprintf(out, " %*s", w, c)
			}
		}
		out.WriteByte('\n')
	}
}

// statfs reports the sandbox filesystem's size and use. The executor passes
// the quota and the usage in WASMBOX_STATFS; without it the tree is walked.
func statfs() (total, used, files, filesUsed int64) {
	if v := os.Getenv("WASMBOX_STATFS"); v != "" {
		f := strings.Fields(v)
		if len(f) == 4 {
			var n [4]int64
			ok := true
			for i := range f {
				x, err := strconv.ParseInt(f[i], 10, 64)
				if err != nil || x < 0 {
					ok = false
				}
				n[i] = x
			}
			if ok {
				return n[0], n[1], n[2], n[3]
			}
		}
	}
	var walk func(string)
	walk = func(p string) {
		ents, err := os.ReadDir(p)
		if err != nil {
			return
		}
		for _, ent := range ents {
			filesUsed++
			child := joinPath(p, ent.Name())
			if strings.HasPrefix(child, "/proc") || strings.HasPrefix(child, "/dev") {
				continue
			}
			if ent.IsDir() {
				walk(child)
				continue
			}
			if fi, err := ent.Info(); err == nil && (fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0) {
				used += fi.Size()
			}
		}
	}
	walk("/")
	return defaultQuota, used, defaultFiles, filesUsed + 1
}
