package fileutils

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("zip", zipMain)
	cmd.Register("unzip", unzipMain)
}

const zipHelp = `Usage: zip [-options] zipfile list
  The default action is to add or replace zipfile entries from list.
  -r   recurse into directories     -j   junk (don't record) directory names
  -q   quiet operation              -d   delete entries in zipfile
  -0   store only                   -1   compress faster   -9   compress better
  -D   do not add directory entries -m   move into zipfile (delete OS files)
  -x   exclude the following names  -u   update: only changed or new files
`

type zipEntry struct {
	hdr  zip.FileHeader
	data []byte // compressed (or stored) bytes
	raw  bool
	src  *zip.File
}

func zipMain(e *cmd.Env) int {
	args := e.Args[1:]
	var recurse, quiet, junk, del, noDirs, move, update bool
	level := 6
	var operands, excludes []string
	inExclude := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if inExclude && !strings.HasPrefix(a, "-") {
			excludes = append(excludes, a)
			continue
		}
		inExclude = false
		switch {
		case a == "--help" || a == "-h":
			fmt.Fprint(e.Stdout, zipHelp)
			return 0
		case a == "--version" || a == "-v" && len(args) == 1:
			fmt.Fprintf(e.Stdout, "zip %s\n", version)
			return 0
		case a == "--recurse-paths":
			recurse = true
		case a == "--quiet":
			quiet = true
		case a == "--junk-paths":
			junk = true
		case a == "--delete":
			del = true
		case a == "--exclude":
			inExclude = true
		case len(a) > 1 && a[0] == '-' && a[1] != '-':
			for _, c := range a[1:] {
				switch {
				case c == 'r' || c == 'R':
					recurse = true
				case c == 'q':
					quiet = true
				case c == 'j':
					junk = true
				case c == 'd':
					del = true
				case c == 'D':
					noDirs = true
				case c == 'm':
					move = true
				case c == 'u' || c == 'f':
					update = true
				case c == 'x':
					inExclude = true
				case c >= '0' && c <= '9':
					level = int(c - '0')
				case c == 'v' || c == 'y' || c == 'X' || c == 'o' || c == 'T' || c == 'l':
				default:
					fmt.Fprintf(e.Stderr, "\nzip error: Invalid command arguments (no such option: %c)\n", c)
					return 16
				}
			}
		default:
			operands = append(operands, a)
		}
	}
	if len(operands) == 0 {
		fmt.Fprint(e.Stdout, zipHelp)
		return 0
	}
	archive := operands[0]
	if !strings.HasSuffix(archive, ".zip") && !fileExists(archive) {
		archive += ".zip"
	}
	files := operands[1:]
	out := newOut(e)
	defer out.Flush()
	// Load the existing archive, if any.
	var entries []*zipEntry
	index := map[string]int{}
	var zr *zip.ReadCloser
	if fileExists(archive) {
		r, err := zip.OpenReader(archive)
		if err != nil {
			fmt.Fprintf(e.Stderr, "\nzip error: Zip file structure invalid (%s)\n", archive)
			return 3
		}
		zr = r
		defer zr.Close()
		for _, f := range zr.File {
			index[f.Name] = len(entries)
			entries = append(entries, &zipEntry{hdr: f.FileHeader, src: f})
		}
	}
	if del {
		deleted := 0
		for _, pat := range files {
			for i, ent := range entries {
				if ent != nil && fnmatch(pat, ent.hdr.Name, false) {
					if !quiet {
						fmt.Fprintf(out, "deleting: %s\n", ent.hdr.Name)
					}
					entries[i] = nil
					deleted++
				}
			}
		}
		if deleted == 0 {
			fmt.Fprintf(out, "\tzip warning: name not matched: %s\n\nzip error: Nothing to do! (%s)\n", strings.Join(files, " "), archive)
			return 12
		}
		return writeZip(e, archive, entries)
	}
	type src struct{ path, name string }
	var srcs []src
	status := 0
	var walk func(p string)
	excluded := func(p string) bool {
		for _, x := range excludes {
			if fnmatch(x, p, false) {
				return true
			}
		}
		return false
	}
	walk = func(p string) {
		fi, err := metaLstat(p)
		if err != nil {
			fmt.Fprintf(out, "\tzip warning: name not matched: %s\n", p)
			status = 12
			return
		}
		name := strings.TrimPrefix(path.Clean(p), "/")
		if junk {
			name = path.Base(name)
		}
		if fi.IsDir() {
			if !noDirs && !junk && !excluded(name+"/") {
				srcs = append(srcs, src{p, name + "/"})
			}
			if !recurse {
				return
			}
			ents, _ := os.ReadDir(p)
			names := make([]string, 0, len(ents))
			for _, ent := range ents {
				names = append(names, ent.Name())
			}
			sort.Strings(names)
			for _, n := range names {
				walk(joinPath(p, n))
			}
			return
		}
		if excluded(name) {
			return
		}
		srcs = append(srcs, src{p, name})
	}
	for _, f := range files {
		walk(f)
	}
	if len(srcs) == 0 {
		fmt.Fprintf(out, "\nzip error: Nothing to do! (%s)\n", archive)
		return 12
	}
	for _, s := range srcs {
		fi, err := metaStat(s.path)
		if err != nil {
			fi, err = metaLstat(s.path)
			if err != nil {
				continue
			}
		}
		verb := "adding"
		if i, ok := index[s.name]; ok {
			if update && entries[i] != nil && !fi.ModTime().Truncate(2*time.Second).After(entries[i].hdr.Modified) {
				continue
			}
			verb = "updating"
		}
		ent := &zipEntry{}
		ent.hdr.Name = s.name
		ent.hdr.Modified = fi.ModTime()
		ent.hdr.SetMode(fi.Mode())
		ent.hdr.Method = zip.Store
		var data []byte
		if !fi.IsDir() {
			data, err = os.ReadFile(s.path)
			if err != nil {
				out.Flush()
				fmt.Fprintf(e.Stderr, "\tzip warning: could not open for reading: %s\n", s.path)
				status = 18
				continue
			}
		}
		ent.hdr.UncompressedSize64 = uint64(len(data))
		ent.data = data
		pct := "stored 0%"
		if level > 0 && len(data) > 0 {
			var buf bytes.Buffer
			fw, _ := flate.NewWriter(&buf, level)
			fw.Write(data)
			fw.Close()
			if buf.Len() < len(data) {
				ent.hdr.Method = zip.Deflate
				ent.data = buf.Bytes()
				pct = fmt.Sprintf("deflated %d%%", (int64(len(data))-int64(buf.Len()))*100/int64(len(data)))
			}
		}
		ent.raw = true
		if !quiet {
			fmt.Fprintf(out, "%s: %s (%s)\n", fmt.Sprintf("%8s", verb), s.name, pct)
		}
		if i, ok := index[s.name]; ok {
			entries[i] = ent
		} else {
			index[s.name] = len(entries)
			entries = append(entries, ent)
		}
	}
	out.Flush()
	if st := writeZip(e, archive, entries); st != 0 {
		return st
	}
	if move {
		for i := len(srcs) - 1; i >= 0; i-- {
			os.Remove(srcs[i].path)
		}
	}
	return status
}

// writeZip writes the entries to a temporary file and renames it over the
// archive, so a failure never leaves a half-written archive behind.
func writeZip(e *cmd.Env, archive string, entries []*zipEntry) int {
	tmp := archive + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		fmt.Fprintf(e.Stderr, "\nzip error: Could not create output file (%s)\n", archive)
		return 15
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	zw := zip.NewWriter(bw)
	for _, ent := range entries {
		if ent == nil {
			continue
		}
		if ent.src != nil {
			if err = zw.Copy(ent.src); err != nil {
				break
			}
			continue
		}
		h := ent.hdr
		h.CompressedSize64 = uint64(len(ent.data))
		h.CRC32 = crc32Of(ent)
		// CreateRaw, unlike CreateHeader, does not derive the MS-DOS
		// date and time from Modified: without this every entry would be
		// dated 1979-11-30.
		h.SetModTime(h.Modified) //nolint:staticcheck // the MS-DOS fields are what CreateRaw writes
		var w io.Writer
		w, err = zw.CreateRaw(&h)
		if err != nil {
			break
		}
		if _, err = w.Write(ent.data); err != nil {
			break
		}
	}
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, archive)
	}
	if err != nil {
		os.Remove(tmp)
		fmt.Fprintf(e.Stderr, "\nzip error: Output file write failure (write error on zip file): %s\n", strerror(err))
		return 14
	}
	return 0
}

func crc32Of(ent *zipEntry) uint32 {
	if ent.hdr.Method == zip.Store {
		return crc32IEEE(ent.data)
	}
	fr := flate.NewReader(bytes.NewReader(ent.data))
	raw, _ := io.ReadAll(fr)
	return crc32IEEE(raw)
}

const unzipHelp = `Usage: unzip [-Z] [-opts[modifiers]] file[.zip] [list] [-x xlist] [-d exdir]
  -p  extract files to pipe, no messages     -l  list files (short format)
  -t  test compressed archive data           -d  extract files into exdir
  -o  overwrite files WITHOUT prompting      -n  never overwrite existing files
  -q  quiet mode                             -j  junk paths (do not make directories)
`

func unzipMain(e *cmd.Env) int {
	args := e.Args[1:]
	var list, pipe, test, over, never, quiet, junk bool
	dest := ""
	var operands, excludes []string
	inExclude := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if inExclude && !strings.HasPrefix(a, "-") {
			excludes = append(excludes, a)
			continue
		}
		inExclude = false
		switch {
		case a == "--help" || a == "-h":
			fmt.Fprint(e.Stdout, unzipHelp)
			return 0
		case a == "-d" || a == "--exdir":
			if i+1 >= len(args) {
				fmt.Fprintln(e.Stderr, "error:  must specify directory to which to extract with -d option")
				return 10
			}
			i++
			dest = args[i]
		case strings.HasPrefix(a, "-d") && len(a) > 2:
			dest = a[2:]
		case len(a) > 1 && a[0] == '-':
			for _, c := range a[1:] {
				switch c {
				case 'l', 'v':
					list = true
				case 'p', 'c':
					pipe = true
				case 't':
					test = true
				case 'o':
					over = true
				case 'n':
					never = true
				case 'q':
					quiet = true
				case 'j':
					junk = true
				case 'x':
					inExclude = true
				case 'a', 'b', 'C', 'L', 'X', 'K', 'U', 'D', 'u', 'f':
				default:
					fmt.Fprint(e.Stderr, unzipHelp)
					return 10
				}
			}
		default:
			operands = append(operands, a)
		}
	}
	if len(operands) == 0 {
		fmt.Fprint(e.Stdout, unzipHelp)
		return 0
	}
	archive := operands[0]
	members := operands[1:]
	zr, err := zip.OpenReader(archive)
	if err != nil && !strings.HasSuffix(archive, ".zip") {
		if r2, err2 := zip.OpenReader(archive + ".zip"); err2 == nil {
			zr, err, archive = r2, nil, archive+".zip"
		}
	}
	if err != nil {
		if fileExists(archive) {
			fmt.Fprintf(e.Stderr, "  End-of-central-directory signature not found.  Either this file is not\n  a zipfile, or it constitutes one disk of a multi-part archive.  In the\n  latter case the central directory and zipfile comment will be found on\n  the last disk(s) of this archive.\nunzip:  cannot find zipfile directory in one of %s or\n        %s.zip, and cannot find %s.ZIP, period.\n", archive, archive, archive)
			return 9
		}
		fmt.Fprintf(e.Stderr, "unzip:  cannot find or open %s, %s.zip or %s.ZIP.\n", archive, archive, archive)
		return 9
	}
	defer zr.Close()
	out := newOut(e)
	defer out.Flush()
	selected := func(name string) bool {
		for _, x := range excludes {
			if fnmatch(x, name, false) {
				return false
			}
		}
		if len(members) == 0 {
			return true
		}
		for _, m := range members {
			if fnmatch(m, name, false) {
				return true
			}
		}
		return false
	}
	matched := map[string]bool{}
	for _, f := range zr.File {
		for _, m := range members {
			if fnmatch(m, f.Name, false) {
				matched[m] = true
			}
		}
	}
	status := 0
	if list {
		fmt.Fprintf(out, "Archive:  %s\n", archive)
		out.WriteString("  Length      Date    Time    Name\n---------  ---------- -----   ----\n")
		var total uint64
		n := 0
		for _, f := range zr.File {
			if !selected(f.Name) {
				continue
			}
			fmt.Fprintf(out, "%9d  %s   %s\n", f.UncompressedSize64, f.Modified.Format("2006-01-02 15:04"), f.Name)
			total += f.UncompressedSize64
			n++
		}
		plural := "s"
		if n == 1 {
			plural = ""
		}
		fmt.Fprintf(out, "---------                     -------\n%9d                     %d file%s\n", total, n, plural)
	} else {
		if !quiet && !pipe {
			fmt.Fprintf(out, "Archive:  %s\n", archive)
		}
		in := bufio.NewReader(e.Stdin)
		all, none := over, never
		for _, f := range zr.File {
			if !selected(f.Name) {
				continue
			}
			if test {
				rc, err := f.Open()
				if err == nil {
					_, err = io.Copy(io.Discard, rc)
					rc.Close()
				}
				if !quiet {
					if err != nil {
						fmt.Fprintf(out, "    testing: %-22s   bad CRC\n", f.Name)
						status = 2
					} else {
						fmt.Fprintf(out, "    testing: %-22s   OK\n", f.Name)
					}
				}
				continue
			}
			if pipe {
				if f.FileInfo().IsDir() {
					continue
				}
				rc, err := f.Open()
				if err != nil {
					status = 2
					continue
				}
				io.Copy(out, rc)
				rc.Close()
				continue
			}
			name, warn := safeZipName(f.Name)
			if warn != "" {
				if !quiet {
					fmt.Fprintf(out, "%s\n", warn)
				}
				status = max(status, 1)
			}
			if name == "" {
				continue
			}
			if junk {
				if f.FileInfo().IsDir() {
					continue
				}
				name = path.Base(name)
			}
			target := name
			if dest != "" {
				target = joinPath(dest, name)
			}
			if f.FileInfo().IsDir() {
				if !quiet {
					fmt.Fprintf(out, "   creating: %s\n", target)
				}
				os.MkdirAll(target, 0o755)
				continue
			}
			if _, err := metaLstat(target); err == nil {
				if none {
					continue
				}
				if !all {
					out.Flush()
					fmt.Fprintf(e.Stderr, "replace %s? [y]es, [n]o, [A]ll, [N]one, [r]ename: ", target)
					line, err := in.ReadString('\n')
					line = strings.TrimSpace(line)
					if err != nil && line == "" {
						fmt.Fprintf(e.Stderr, " NULL\n(EOF or read error, treating as \"[N]one\" ...)\n")
						none = true
						status = max(status, 1)
						continue
					}
					switch {
					case line == "A":
						all = true
					case line == "N":
						none = true
						continue
					case strings.HasPrefix(line, "y") || strings.HasPrefix(line, "Y"):
					case strings.HasPrefix(line, "r"):
						fmt.Fprintf(e.Stderr, "new name: ")
						nn, _ := in.ReadString('\n')
						nn = strings.TrimSpace(nn)
						if nn == "" {
							continue
						}
						target = nn
					default:
						continue
					}
				}
			}
			if dir := path.Dir(target); dir != "." {
				os.MkdirAll(dir, 0o755)
			}
			if !quiet {
				verb := "inflat"
				if f.Method == zip.Store {
					verb = "extract"
				}
				fmt.Fprintf(out, "%8sing: %-22s  \n", verb, target)
			}
			if err := extractZipFile(f, target); err != nil {
				out.Flush()
				fmt.Fprintf(e.Stderr, "error:  cannot create %s\n        %s\n", target, strerror(err))
				status = 50
			}
		}
	}
	if test && !quiet && status == 0 {
		fmt.Fprintf(out, "No errors detected in compressed data of %s.\n", archive)
	}
	for _, m := range members {
		if !matched[m] {
			out.Flush()
			fmt.Fprintf(e.Stderr, "caution: filename not matched:  %s\n", m)
			status = 11
		}
	}
	return status
}

// safeZipName strips absolute paths and ".." components, as unzip does, so
// an archive cannot write outside the extraction directory.
func safeZipName(name string) (string, string) {
	warn := ""
	if strings.HasPrefix(name, "/") {
		warn = "warning:  stripped absolute path spec from " + name
		name = strings.TrimLeft(name, "/")
	}
	parts := strings.Split(name, "/")
	var kept []string
	dotdot := false
	for _, p := range parts {
		if p == ".." {
			dotdot = true
			continue
		}
		kept = append(kept, p)
	}
	if dotdot {
		warn = "warning:  skipped \"../\" path component(s) in " + name
	}
	return strings.Join(kept, "/"), warn
}

func extractZipFile(f *zip.File, target string) error {
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	mode := f.Mode().Perm()
	if mode == 0 {
		mode = 0o644
	}
	if f.Mode()&fs.ModeSymlink != 0 {
		data, err := io.ReadAll(rc)
		if err != nil {
			return err
		}
		os.Remove(target)
		return os.Symlink(string(data), target)
	}
	os.Remove(target)
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, rc)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// The stored permissions, which WASI cannot set by itself.
		chmodBits(target, uint32(mode))
		os.Chtimes(target, f.Modified, f.Modified)
	}
	return err
}

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }
