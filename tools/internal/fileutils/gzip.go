package fileutils

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("gzip", gzipMain)
	cmd.Register("gunzip", gzipMain)
	cmd.Register("zcat", gzipMain)
}

var gzipUsage = usage{
	synopsis: "[OPTION]... [FILE]...",
	text: `Compress or uncompress FILEs (by default, compress FILES in-place).

  -c, --stdout      write on standard output, keep original files unchanged
  -d, --decompress  decompress
  -f, --force       force overwrite of output file and compress links
  -k, --keep        keep (don't delete) input files
  -l, --list        list compressed file contents
  -n, --no-name     do not save or restore the original name and timestamp
  -N, --name        save or restore the original name and timestamp
  -q, --quiet       suppress all warnings
  -r, --recursive   operate recursively on directories
  -S, --suffix=SUF  use suffix SUF on compressed files
  -t, --test        test compressed file integrity
  -v, --verbose     verbose mode
  -1, --fast        compress faster
  -9, --best        compress better

With no FILE, or when FILE is -, read standard input.
`,
	bad: 1,
}

type gzipper struct {
	e                                       *cmd.Env
	stdout, decompress, force, keep, list   bool
	noName, quiet, recursive, test, verbose bool
	level                                   int
	suffix                                  string
	status                                  int
	listedHeader                            bool
	totalIn, totalOut                       int64
	listed                                  int
	totalOverhead                           int64
}

func gzipMain(e *cmd.Env) int {
	opts, files, st, done := getopt(e, "a,ascii c,stdout d,decompress ,uncompress f,force h k,keep l,list L,license n,no-name N,name q,quiet r,recursive ,rsyncable S,suffix: ,synchronous t,test v,verbose 1,fast 2 3 4 5 6 7 8 9,best", gzipUsage)
	if done {
		return st
	}
	g := &gzipper{e: e, level: 6, suffix: ".gz"}
	switch e.Name() {
	case "gunzip":
		g.decompress = true
	case "zcat":
		g.decompress, g.stdout = true, true
	}
	for _, o := range opts {
		switch o.name {
		case "stdout":
			g.stdout = true
		case "decompress", "uncompress":
			g.decompress = true
		case "force":
			g.force = true
		case "keep":
			g.keep = true
		case "list":
			g.list = true
		case "no-name":
			g.noName = true
		case "name":
			g.noName = false
		case "quiet":
			g.quiet, g.verbose = true, false
		case "recursive":
			g.recursive = true
		case "suffix":
			g.suffix = o.val
		case "test":
			g.test, g.decompress = true, true
		case "verbose":
			g.verbose, g.quiet = true, false
		case "fast":
			g.level = 1
		case "best":
			g.level = 9
		default:
			if len(o.name) == 1 && o.name[0] >= '2' && o.name[0] <= '8' {
				g.level = int(o.name[0] - '0')
			}
		}
	}
	if g.suffix == "" {
		e.Errorf("invalid suffix ''")
		return 1
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	for _, f := range files {
		g.do(f)
	}
	if g.list && g.listed > 1 {
		g.printListTotal()
	}
	return g.status
}

// Messages always name gzip, whichever name it was called by.
// newWriter starts a gzip stream at g's level. Its header says Unix (OS 3),
// as GNU gzip's does (Go writes 255, unknown).
func (g *gzipper) newWriter(w io.Writer) *gzip.Writer {
	zw, _ := gzip.NewWriterLevel(w, g.level)
	zw.OS = 3
	return zw
}

func (g *gzipper) warn(format string, a ...any) {
	if !g.quiet {
		fmt.Fprintf(g.e.Stderr, "gzip: "+format+"\n", a...)
	}
	if g.status == 0 {
		g.status = 2
	}
}

func (g *gzipper) fail(format string, a ...any) {
	fmt.Fprintf(g.e.Stderr, "gzip: "+format+"\n", a...)
	g.status = 1
}

func (g *gzipper) do(name string) {
	if name == "-" {
		g.stream(g.e.Stdin, g.e.Stdout, "stdin")
		return
	}
	fi, err := metaLstat(name)
	if err != nil {
		g.fail("%s: %s", name, strerror(err))
		return
	}
	if fi.IsDir() {
		if !g.recursive {
			g.warn("%s is a directory -- ignored", name)
			return
		}
		ents, err := os.ReadDir(name)
		if err != nil {
			g.fail("%s: %s", name, strerror(err))
			return
		}
		for _, ent := range ents {
			g.do(joinPath(name, ent.Name()))
		}
		return
	}
	if !fi.Mode().IsRegular() && !g.stdout && !g.force {
		g.warn("%s is not a directory or a regular file - ignored", name)
		return
	}
	if g.list {
		g.listFile(name)
		return
	}
	if g.decompress {
		g.decompressFile(name, fi)
		return
	}
	g.compressFile(name, fi)
}

// stream compresses or decompresses r into w (stdin to stdout).
func (g *gzipper) stream(r io.Reader, w io.Writer, label string) {
	if g.list {
		g.fail("%s: option --list not valid with stdin", label)
		return
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	defer bw.Flush()
	if g.decompress {
		if g.test {
			w = io.Discard
			bw = bufio.NewWriter(io.Discard)
		}
		if err := g.gunzipStream(r, bw, label); err != nil {
			return
		}
		return
	}
	zw := g.newWriter(bw)
	if _, err := io.Copy(zw, r); err != nil {
		g.fail("%s: %s", label, strerror(err))
		return
	}
	zw.Close()
}

// gunzipStream decompresses every gzip member in r (concatenated members
// decompress to the concatenation, as with GNU gzip).
func (g *gzipper) gunzipStream(r io.Reader, w io.Writer, label string) error {
	br := bufio.NewReaderSize(r, 64<<10)
	zr, err := gzip.NewReader(br)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		fmt.Fprintf(g.e.Stderr, "\ngzip: %s: not in gzip format\n", label)
		g.status = 1
		return err
	}
	if _, err := io.Copy(w, zr); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			g.fail("%s: unexpected end of file", label)
		} else if errors.Is(err, gzip.ErrChecksum) {
			g.fail("%s: invalid compressed data--crc error", label)
		} else {
			g.fail("%s: invalid compressed data--format violated", label)
		}
		return err
	}
	return nil
}

func (g *gzipper) compressFile(name string, fi os.FileInfo) {
	if strings.HasSuffix(name, g.suffix) && !g.stdout && !g.force {
		if !g.quiet {
			fmt.Fprintf(g.e.Stderr, "gzip: %s already has %s suffix -- unchanged\n", name, g.suffix)
		}
		return
	}
	in, err := os.Open(name)
	if err != nil {
		g.fail("%s: %s", name, strerror(err))
		return
	}
	defer in.Close()
	if g.stdout {
		bw := bufio.NewWriterSize(g.e.Stdout, 64<<10)
		zw := g.newWriter(bw)
		if !g.noName {
			zw.Name = filepath.Base(name)
			zw.ModTime = fi.ModTime()
		}
		io.Copy(zw, in)
		zw.Close()
		bw.Flush()
		return
	}
	outName := name + g.suffix
	if _, err := metaLstat(outName); err == nil && !g.force {
		g.warn("%s already exists;\tnot overwritten", outName)
		return
	}
	out, err := os.OpenFile(outName, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		g.fail("%s: %s", outName, strerror(err))
		return
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	zw := g.newWriter(bw)
	if !g.noName {
		zw.Name = filepath.Base(name)
		zw.ModTime = fi.ModTime()
	}
	cw := &countWriter{w: zw}
	_, err = io.Copy(cw, in)
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(outName)
		g.fail("%s: %s", outName, strerror(err))
		return
	}
	os.Chtimes(outName, fi.ModTime(), fi.ModTime())
	// Like GNU gzip, the output keeps the input's mode (and owner).
	preserveMeta(outName, fi, true)
	if g.verbose {
		outFi, _ := metaStat(outName)
		var ratio float64
		if cw.n > 0 && outFi != nil {
			ratio = 100 - float64(outFi.Size()-gzipOverhead(name, g.noName))*100/float64(cw.n)
		}
		fmt.Fprintf(g.e.Stderr, "%s:\t%5.1f%% -- replaced with %s\n", name, ratio, outName)
	}
	if !g.keep {
		os.Remove(name)
	}
}

// gzipOverhead is the size of the gzip header and trailer around the
// deflate data, which GNU leaves out of its ratios.
func gzipOverhead(name string, noName bool) int64 {
	n := int64(18)
	if !noName {
		n += int64(len(filepath.Base(name))) + 1
	}
	return n
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (g *gzipper) stripSuffix(name string) (string, bool) {
	for _, s := range []string{g.suffix, ".gz", "-gz", ".z", "-z", "_z", ".Z"} {
		if strings.HasSuffix(name, s) && len(name) > len(s) {
			return name[:len(name)-len(s)], true
		}
	}
	for _, s := range []string{".tgz", ".taz"} {
		if strings.HasSuffix(name, s) && len(name) > len(s) {
			return name[:len(name)-len(s)] + ".tar", true
		}
	}
	return "", false
}

func (g *gzipper) decompressFile(name string, fi os.FileInfo) {
	outName, ok := g.stripSuffix(name)
	if !ok && !g.stdout && !g.test {
		g.warn("%s: unknown suffix -- ignored", name)
		return
	}
	in, err := os.Open(name)
	if err != nil {
		g.fail("%s: %s", name, strerror(err))
		return
	}
	defer in.Close()
	if g.stdout || g.test {
		var w io.Writer = g.e.Stdout
		if g.test {
			w = io.Discard
		}
		bw := bufio.NewWriterSize(w, 64<<10)
		err := g.gunzipStream(in, bw, name)
		bw.Flush()
		if err == nil && g.test && g.verbose {
			fmt.Fprintf(g.e.Stderr, "%s:\t OK\n", name)
		}
		return
	}
	if _, err := metaLstat(outName); err == nil && !g.force {
		g.warn("%s already exists;\tnot overwritten", outName)
		return
	}
	out, err := os.OpenFile(outName, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		g.fail("%s: %s", outName, strerror(err))
		return
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	err = g.gunzipStream(in, bw, name)
	if err == nil {
		err = bw.Flush()
	}
	out.Close()
	if err != nil {
		os.Remove(outName)
		return
	}
	os.Chtimes(outName, fi.ModTime(), fi.ModTime())
	// Like GNU gzip, the output keeps the input's mode (and owner).
	preserveMeta(outName, fi, true)
	if g.verbose {
		fmt.Fprintf(g.e.Stderr, "%s:\t -- replaced with %s\n", name, outName)
	}
	if !g.keep {
		os.Remove(name)
	}
}

func (g *gzipper) listFile(name string) {
	f, err := os.Open(name)
	if err != nil {
		g.fail("%s: %s", name, strerror(err))
		return
	}
	defer f.Close()
	fi, _ := f.Stat()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		fmt.Fprintf(g.e.Stderr, "\ngzip: %s: not in gzip format\n", name)
		g.status = 1
		return
	}
	n, err := io.Copy(io.Discard, zr)
	if err != nil {
		g.fail("%s: invalid compressed data--format violated", name)
		return
	}
	if !g.listedHeader {
		fmt.Fprintln(g.e.Stdout, "         compressed        uncompressed  ratio uncompressed_name")
		g.listedHeader = true
	}
	uname, ok := g.stripSuffix(name)
	if !ok {
		uname = name
	}
	comp := fi.Size()
	overhead := int64(18)
	if zr.Name != "" {
		overhead += int64(len(zr.Name)) + 1
	}
	fmt.Fprintf(g.e.Stdout, "%19d %19d %s %s\n", comp, n, gzipRatio(comp-overhead, n), uname)
	g.totalOverhead += overhead
	g.totalIn += comp
	g.totalOut += n
	g.listed++
}

func gzipRatio(comp, orig int64) string {
	if orig == 0 {
		return "  0.0%"
	}
	r := 100 - float64(comp)*100/float64(orig)
	return fmt.Sprintf("%5.1f%%", r)
}

func (g *gzipper) printListTotal() {
	fmt.Fprintf(g.e.Stdout, "%19d %19d %s (totals)\n", g.totalIn, g.totalOut, gzipRatio(g.totalIn-g.totalOverhead, g.totalOut))
}
