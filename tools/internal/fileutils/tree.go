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

func init() { cmd.Register("tree", treeMain) }

var treeUsage = usage{
	synopsis: "[-adfFrt] [-L level] [-I pattern] [-P pattern] [--noreport] [--] [directory ...]",
	text: `List contents of directories in a tree-like format.

  -a            All files are listed.
  -d            List directories only.
  -f            Print the full path prefix for each file.
  -F            Appends '/', '@', '|' or '=' as per ls -F.
  -L level      Descend only level directories deep.
  -I pattern    Do not list files that match the given pattern (| separates patterns).
  -P pattern    List only those files that match the pattern given.
  -r            Reverse the order of the sort.
  -t            Sort files by last modification time.
  --dirsfirst   List directories before files.
  --noreport    Turn off file/directory count at end of tree listing.
  -i            Don't print indentation lines.
  -s            Print the size in bytes of each file.
  -h            Print the size in a more human readable way.
`,
	bad: 1,
}

type treeState struct {
	out                                     *bufio.Writer
	all, dirsOnly, full, classify, noIndent bool
	reverse, byTime, dirsFirst, size, human bool
	maxLevel                                int
	ignore, only                            []string
	dirs, files                             int
}

func treeMain(e *cmd.Env) int {
	opts, roots, st, done := getopt(e, "a d f F L: I: P: r t ,dirsfirst ,noreport i s h l ,charset: n C", treeUsage)
	if done {
		return st
	}
	t := &treeState{maxLevel: -1}
	for _, o := range opts {
		switch o.name {
		case "a":
			t.all = true
		case "d":
			t.dirsOnly = true
		case "f":
			t.full = true
		case "F":
			t.classify = true
		case "L":
			n, err := strconv.Atoi(o.val)
			if err != nil || n < 1 {
				fmt.Fprintln(e.Stderr, "tree: Invalid level, must be greater than 0.")
				return 1
			}
			t.maxLevel = n
		case "I":
			t.ignore = append(t.ignore, strings.Split(o.val, "|")...)
		case "P":
			t.only = append(t.only, strings.Split(o.val, "|")...)
		case "r":
			t.reverse = true
		case "t":
			t.byTime = true
		case "dirsfirst":
			t.dirsFirst = true
		case "i":
			t.noIndent = true
		case "s":
			t.size = true
		case "h":
			t.size, t.human = true, true
		}
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	t.out = newOut(e)
	defer t.out.Flush()
	status := 0
	for _, r := range roots {
		fi, err := metaStat(r)
		if err != nil || !fi.IsDir() {
			if err == nil {
				t.out.WriteString(r + "  [error opening dir]\n")
			} else {
				t.out.WriteString(r + " [error opening dir]\n")
			}
			status = 2
			continue
		}
		t.out.WriteString(r + "\n")
		t.walk(r, "", 1)
	}
	if !has(opts, "noreport") {
		t.out.WriteByte('\n')
		if t.dirsOnly {
			fmt.Fprintf(t.out, "%d %s\n", t.dirs, plural(t.dirs, "directory", "directories"))
		} else {
			fmt.Fprintf(t.out, "%d %s, %d %s\n", t.dirs, plural(t.dirs, "directory", "directories"), t.files, plural(t.files, "file", "files"))
		}
	}
	return status
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

type treeEnt struct {
	name string
	fi   fs.FileInfo
	dir  bool // a directory, or a symlink to one
}

func (t *treeState) walk(path, prefix string, level int) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	var ents []treeEnt
	for _, n := range names {
		if !t.all && strings.HasPrefix(n, ".") {
			continue
		}
		fi, err := metaLstat(joinPath(path, n))
		if err != nil {
			continue
		}
		isDir := fi.IsDir()
		if fi.Mode()&fs.ModeSymlink != 0 {
			if tfi, err := metaStat(joinPath(path, n)); err == nil && tfi.IsDir() {
				isDir = true
			}
		}
		if t.dirsOnly && !isDir {
			continue
		}
		if t.matches(t.ignore, n) {
			continue
		}
		if len(t.only) > 0 && !isDir && !t.matches(t.only, n) {
			continue
		}
		ents = append(ents, treeEnt{n, fi, isDir})
	}
	sort.SliceStable(ents, func(i, j int) bool {
		a, b := ents[i], ents[j]
		if t.dirsFirst && a.dir != b.dir {
			return a.dir
		}
		less := a.name < b.name
		if t.byTime && !a.fi.ModTime().Equal(b.fi.ModTime()) {
			less = a.fi.ModTime().Before(b.fi.ModTime())
		}
		if t.reverse {
			return !less
		}
		return less
	})
	for i, ent := range ents {
		lastEnt := i == len(ents)-1
		if !t.noIndent {
			t.out.WriteString(prefix)
			if lastEnt {
				t.out.WriteString("└── ")
			} else {
				t.out.WriteString("├── ")
			}
		}
		child := joinPath(path, ent.name)
		if t.size {
			sz := strconv.FormatInt(ent.fi.Size(), 10)
			if t.human {
				sz = humanTree(ent.fi.Size())
			}
			fmt.Fprintf(t.out, "[%*s]  ", max(len(sz), 11), sz)
		}
		if t.full {
			t.out.WriteString(child)
		} else {
			t.out.WriteString(ent.name)
		}
		isLink := ent.fi.Mode()&fs.ModeSymlink != 0
		if isLink {
			target, _ := os.Readlink(child)
			t.out.WriteString(" -> " + target)
		}
		if t.classify {
			switch {
			case isLink:
			case ent.fi.IsDir():
				t.out.WriteByte('/')
			case ent.fi.Mode()&fs.ModeNamedPipe != 0:
				t.out.WriteByte('|')
			case ent.fi.Mode()&fs.ModeSocket != 0:
				t.out.WriteByte('=')
			case ent.fi.Mode()&0o111 != 0:
				t.out.WriteByte('*')
			}
		}
		t.out.WriteByte('\n')
		if ent.dir {
			t.dirs++
			if !isLink && (t.maxLevel < 0 || level < t.maxLevel) {
				next := prefix + "│   "
				if lastEnt {
					next = prefix + "    "
				}
				t.walk(child, next, level+1)
			}
		} else {
			t.files++
		}
	}
}

func (t *treeState) matches(pats []string, name string) bool {
	for _, p := range pats {
		if fnmatch(p, name, false) {
			return true
		}
	}
	return false
}

// humanTree is tree -h's size: one decimal below 10, units K M G.
func humanTree(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10)
	}
	v := float64(n)
	units := "KMGTPE"
	i := -1
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64) + string(units[i])
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + string(units[i])
}
