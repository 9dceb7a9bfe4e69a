package morecmds

import (
	"bufio"
	"bytes"
	stdbzip2 "compress/bzip2"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	dsbzip2 "github.com/dsnet/compress/bzip2"
	"github.com/ulikunitz/xz"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// The xz and bzip2 families. Decompression of bzip2 is Go's compress/bzip2;
// bzip2 compression is github.com/dsnet/compress/bzip2 and xz both ways is
// github.com/ulikunitz/xz (pure Go; the standard library has neither).
// Their compressed bytes differ from xz-utils' and bzip2's (other
// encoders), but either side decompresses the other's files.
func init() {
	for _, n := range []string{"xz", "unxz", "xzcat"} {
		cmd.Register(n, func(e *cmd.Env) int { return compressMain(e, &xzFamily) })
	}
	for _, n := range []string{"bzip2", "bunzip2", "bzcat"} {
		cmd.Register(n, func(e *cmd.Env) int { return compressMain(e, &bzip2Family) })
	}
}

// family describes one compressor's format and how its tool talks.
type family struct {
	prog     string // the name in messages ("xz", "bzip2": bzip2's messages use the called name)
	magic    string
	suffixes [][2]string // compressed suffix -> decompressed suffix
	newRead  func(r io.Reader) (io.Reader, error)
	newWrite func(w io.Writer, level int) (io.WriteCloser, error)
	isXZ     bool
}

var xzFamily = family{
	prog: "xz", magic: "\xfd7zXZ\x00", isXZ: true,
	suffixes: [][2]string{{".xz", ""}, {".txz", ".tar"}},
	newRead:  func(r io.Reader) (io.Reader, error) { return xz.NewReader(r) },
	newWrite: func(w io.Writer, level int) (io.WriteCloser, error) {
		c := xz.WriterConfig{DictCap: min(1<<20<<max(level-1, 0), 64<<20)}
		return c.NewWriter(w)
	},
}

var bzip2Family = family{
	prog: "bzip2", magic: "BZh",
	suffixes: [][2]string{{".bz2", ""}, {".bz", ""}, {".tbz2", ".tar"}, {".tbz", ".tar"}},
	newRead:  func(r io.Reader) (io.Reader, error) { return stdbzip2.NewReader(r), nil },
	newWrite: func(w io.Writer, level int) (io.WriteCloser, error) {
		return dsbzip2.NewWriter(w, &dsbzip2.WriterConfig{Level: level})
	},
}

type compressor struct {
	e                           *cmd.Env
	f                           *family
	decompress, stdout, keep    bool
	force, test, quiet, verbose bool
	level                       int
	outLabel                    string // bzip2: the output's name in messages
	status                      int
}

func (c *compressor) name() string { return c.e.Name() }

// fail reports an error (status 1); warn a warning (xz: status 2).
func (c *compressor) fail(format string, a ...any) {
	fmt.Fprintf(c.e.Stderr, "%s: %s\n", c.name(), fmt.Sprintf(format, a...))
	c.status = max(c.status, 1)
	if !c.f.isXZ {
		c.status = 1
	}
}

func (c *compressor) warn(format string, a ...any) {
	if !c.quiet {
		fmt.Fprintf(c.e.Stderr, "%s: %s\n", c.name(), fmt.Sprintf(format, a...))
	}
	if c.status == 0 {
		c.status = 2
	}
}

func compressMain(e *cmd.Env, f *family) int {
	c := &compressor{e: e, f: f, level: 6}
	if !f.isXZ {
		c.level = 9
	}
	switch e.Name() {
	case "unxz", "bunzip2":
		c.decompress = true
	case "xzcat", "bzcat":
		c.decompress, c.stdout = true, true
	}
	spec := []cmd.Option{{Short: 'd', Long: "decompress"}, {Short: 'z', Long: "compress"}, {Short: 'c', Long: "stdout"},
		{Short: 'k', Long: "keep"}, {Short: 'f', Long: "force"}, {Short: 't', Long: "test"}, {Short: 'q', Long: "quiet"},
		{Short: 'v', Long: "verbose"}, {Short: 'e', Long: "extreme"}, {Short: 's', Long: "small"}, {Short: 'T', Long: "threads", Arg: cmd.RequiredArg},
		{Long: "fast"}, {Long: "best"}, {Short: 'h', Long: "help"}, {Short: 'V', Long: "version"}, {Long: "to-stdout"}, {Long: "uncompress"}}
	for d := byte('0'); d <= '9'; d++ {
		spec = append(spec, cmd.Option{Short: d})
	}
	opts, files, err := cmd.Getopt(e.Args[1:], spec, false)
	if err != nil {
		if f.isXZ {
			e.Errorf("%s", err)
			fmt.Fprintf(e.Stderr, "%s: Try `%s --help' for more information.\n", e.Name(), e.Name())
			return 1
		}
		bad := "-" + strings.TrimSuffix(strings.TrimPrefix(err.Error(), "invalid option -- '"), "'")
		if strings.HasPrefix(err.Error(), "unrecognized option '") {
			bad = strings.TrimSuffix(strings.TrimPrefix(err.Error(), "unrecognized option '"), "'")
		}
		fmt.Fprintf(e.Stderr, "%s: Bad flag `%s'\n", e.Name(), bad)
		return 1
	}
	for _, o := range opts {
		switch o.Name {
		case "decompress", "uncompress":
			c.decompress = true
		case "compress":
			c.decompress = false
		case "stdout", "to-stdout":
			c.stdout = true
		case "keep":
			c.keep = true
		case "force":
			c.force = true
		case "test":
			c.test, c.decompress = true, true
		case "quiet":
			c.quiet = true
		case "verbose":
			c.verbose = true
		case "fast":
			c.level = 1
		case "best":
			c.level = 9
		case "help":
			fmt.Fprintf(e.Stdout, "Usage: %s [OPTION]... [FILE]...\n", e.Name())
			return 0
		case "version":
			fmt.Fprintf(e.Stdout, "%s %s\n", e.Name(), version)
			return 0
		default:
			if len(o.Name) == 1 && o.Name[0] >= '0' && o.Name[0] <= '9' {
				c.level = max(int(o.Name[0]-'0'), 1)
			}
		}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	for _, name := range files {
		c.do(name)
	}
	return c.status
}

// errorText is the message of a decompression failure, in the tool's words.
func (c *compressor) errorText(err error) string {
	unexpected := errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
	if c.f.isXZ {
		if unexpected {
			return "Unexpected end of input"
		}
		return "Compressed data is corrupt"
	}
	if unexpected {
		return "Compressed file ends unexpectedly;\n\tperhaps it is corrupted?  *Possible* reason follows.\n" + c.name() + ": Success"
	}
	return "Data integrity error when decompressing."
}

// run compresses or decompresses r into w; label names the input in messages.
func (c *compressor) run(r io.Reader, w io.Writer, label string) bool {
	if !c.decompress {
		zw, err := c.f.newWrite(w, c.level)
		if err == nil {
			if _, err = io.Copy(zw, r); err == nil {
				err = zw.Close()
			}
		}
		if err != nil {
			c.fail("%s: %s", label, strerror(err))
			return false
		}
		return true
	}
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(len(c.f.magic))
	if string(head) != c.f.magic {
		if c.f.isXZ {
			c.fail("%s: File format not recognized", label)
		} else {
			fmt.Fprintf(c.e.Stderr, "%s: %s is not a bzip2 file.\n", c.name(), label)
			c.status = max(c.status, 2)
		}
		return false
	}
	zr, err := c.f.newRead(br)
	if err == nil {
		// A plain writer: bufio.Writer.ReadFrom would keep a read error.
		_, err = io.Copy(struct{ io.Writer }{w}, zr)
	}
	if err != nil {
		if c.f.isXZ {
			c.fail("%s: %s", label, c.errorText(err))
			return false
		}
		c.status = max(c.status, 2)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			fmt.Fprintf(c.e.Stderr, "\n%s: Compressed file ends unexpectedly;\n\tperhaps it is corrupted?  *Possible* reason follows.\n%s: Success\n\tInput file = %s, output file = %s\n\n"+
				"It is possible that the compressed file(s) have become corrupted.\nYou can use the -tvv option to test integrity of such files.\n\n"+
				"You can use the `bzip2recover' program to attempt to recover\ndata from undamaged sections of corrupted files.\n\n", c.name(), c.name(), label, c.outLabel)
		} else {
			fmt.Fprintf(c.e.Stderr, "\n%s: Data integrity error when decompressing.\n\tInput file = %s, output file = %s\n\n"+
				"It is possible that the compressed file(s) have become corrupted.\nYou can use the -tvv option to test integrity of such files.\n\n"+
				"You can use the `bzip2recover' program to attempt to recover\ndata from undamaged sections of corrupted files.\n\n", c.name(), label, c.outLabel)
		}
		return false
	}
	return true
}

func (c *compressor) do(name string) {
	if name == "-" {
		w := bufio.NewWriter(c.e.Stdout)
		var out io.Writer = w
		if c.test {
			out = io.Discard
		}
		label := "(stdin)"
		c.outLabel = "(stdout)"
		c.run(c.e.Stdin, out, label)
		if err := w.Flush(); err != nil {
			c.fail("%s", strerror(err))
		}
		return
	}
	fi, err := os.Stat(name)
	if err != nil {
		if c.f.isXZ {
			c.fail("%s: %s", name, strerror(err))
		} else {
			c.fail("Can't open input file %s: %s.", name, strerror(err))
		}
		return
	}
	if fi.IsDir() {
		if c.f.isXZ {
			c.warn("%s: Is a directory, skipping", name)
		} else {
			fmt.Fprintf(c.e.Stderr, "%s: Input file %s is a directory.\n", c.name(), name)
			c.status = 1
		}
		return
	}
	// Decide the output name.
	var outName string
	if !c.stdout && !c.test {
		if c.decompress {
			found := false
			for _, s := range c.f.suffixes {
				if base, ok := strings.CutSuffix(name, s[0]); ok && base != "" {
					outName, found = base+s[1], true
					break
				}
			}
			if !found {
				if c.f.isXZ {
					if head, err := readHead(name, len(c.f.magic)); err == nil && head != c.f.magic {
						c.fail("%s: File format not recognized", name)
						return
					}
					c.warn("%s: Filename has an unknown suffix, skipping", name)
					return
				}
				outName = name + ".out"
				fmt.Fprintf(c.e.Stderr, "%s: Can't guess original name for %s -- using %s\n", c.name(), name, outName)
			}
		} else {
			for _, s := range c.f.suffixes {
				if strings.HasSuffix(name, s[0]) {
					if c.f.isXZ {
						c.warn("%s: File already has `%s' suffix, skipping", name, s[0])
					} else {
						fmt.Fprintf(c.e.Stderr, "%s: Input file %s already has %s suffix.\n", c.name(), name, s[0])
						c.status = 1
					}
					return
				}
			}
			outName = name + c.f.suffixes[0][0]
		}
	}
	in, err := os.Open(name)
	if err != nil {
		if c.f.isXZ {
			c.fail("%s: %s", name, strerror(err))
		} else {
			c.fail("Can't open input file %s: %s.", name, strerror(err))
		}
		return
	}
	defer in.Close()
	c.outLabel = outName
	if c.stdout || c.test {
		c.outLabel = "(stdout)"
		w := bufio.NewWriter(c.e.Stdout)
		var out io.Writer = w
		if c.test {
			out = io.Discard
		}
		c.run(in, out, name)
		if err := w.Flush(); err != nil {
			c.fail("%s", strerror(err))
		}
		return
	}
	if _, err := os.Lstat(outName); err == nil && !c.force {
		if c.f.isXZ {
			c.fail("%s: File exists", outName)
		} else {
			fmt.Fprintf(c.e.Stderr, "%s: Output file %s already exists.\n", c.name(), outName)
			c.status = 1
		}
		return
	}
	// Decompress into memory first when the magic may be wrong, so that a
	// failure leaves no output file behind.
	var buf bytes.Buffer
	if !c.run(in, &buf, name) {
		return
	}
	if err := os.WriteFile(outName, buf.Bytes(), fi.Mode().Perm()); err != nil {
		c.fail("%s: %s", outName, strerror(err))
		return
	}
	os.Chmod(outName, fi.Mode().Perm())
	os.Chtimes(outName, fi.ModTime(), fi.ModTime())
	if c.verbose {
		fmt.Fprintf(c.e.Stderr, "%s: %s -> %s\n", c.name(), name, outName)
	}
	if !c.keep {
		in.Close()
		os.Remove(name)
	}
}

// readHead returns the first n bytes of a file (fewer if it is shorter).
func readHead(name string, n int) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, n)
	k, _ := io.ReadFull(f, b)
	return string(b[:k]), nil
}
