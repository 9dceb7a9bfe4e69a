package morecmds

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("cmp", cmpMain) }

// diffUsage prints a diffutils-style usage error: both lines carry the
// program name.
func diffUsage(e *cmd.Env, msg string) int {
	if msg != "" {
		e.Errorf("%s", msg)
	}
	e.Errorf("Try '%s --help' for more information.", e.Name())
	return 2
}

// parseSkip parses a cmp skip or limit: a count with an optional
// multiplier suffix (kB=1000, K=KiB=1024, MB, M, ...).
func parseSkip(s string) (int64, bool) {
	n, ok := parseSuffixed(s)
	return n, ok && n >= 0
}

// parseSuffixed parses DIGITS[SUFFIX] with GNU's multipliers (b=512,
// c=1, w=2, K/KiB=1024, kB/KB=1000, and so on up to E).
func parseSuffixed(s string) (int64, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, false
	}
	m, ok := sizeSuffix(s[i:])
	if !ok {
		return 0, false
	}
	if m != 1 && n > math.MaxInt64/m {
		return math.MaxInt64, true
	}
	return n * m, true
}

func sizeSuffix(suf string) (int64, bool) {
	switch suf {
	case "":
		return 1, true
	case "c":
		return 1, true
	case "w":
		return 2, true
	case "b":
		return 512, true
	}
	units := "KMGTPEZY"
	i := strings.IndexByte(units, suf[0])
	if suf[0] == 'k' {
		i = 0
	}
	if i < 0 || i > 5 {
		return 0, false
	}
	base := int64(1024)
	switch suf[1:] {
	case "", "iB":
	case "B":
		base = 1000
	default:
		return 0, false
	}
	m := int64(1)
	for j := 0; j <= i; j++ {
		m *= base
	}
	return m, true
}

// printChar renders c as cmp -b (and cat -v) do: ^X, M-X, M-^X.
func printChar(c byte) string {
	s := ""
	if c >= 128 {
		s = "M-"
		c -= 128
	}
	switch {
	case c < 32:
		return s + "^" + string(rune(c+64))
	case c == 127:
		return s + "^?"
	}
	return s + string(rune(c))
}

func cmpMain(e *cmd.Env) int {
	spec := []cmd.Option{
		{Short: 'b', Long: "print-bytes"}, {Short: 'i', Long: "ignore-initial", Arg: cmd.RequiredArg},
		{Short: 'l', Long: "verbose"}, {Short: 'n', Long: "bytes", Arg: cmd.RequiredArg},
		{Short: 's', Long: "quiet"}, {Long: "silent"},
	}
	opts, ops, err := cmd.Getopt(e.Args[1:], append(spec, helpOpts...), false)
	if err != nil {
		return diffUsage(e, err.Error())
	}
	var printBytes, verbose, silent bool
	var skip [2]int64
	limit := int64(-1)
	for _, o := range opts {
		switch o.Name {
		case "help":
			fmt.Fprintln(e.Stdout, "Usage: cmp [OPTION]... FILE1 [FILE2 [SKIP1 [SKIP2]]]")
			return 0
		case "version":
			fmt.Fprintf(e.Stdout, "cmp %s\n", version)
			return 0
		case "print-bytes":
			printBytes = true
		case "verbose":
			verbose = true
		case "quiet", "silent":
			silent = true
		case "bytes":
			n, ok := parseSkip(o.Value)
			if !ok {
				return diffUsage(e, fmt.Sprintf("invalid --bytes value %s", quote(o.Value)))
			}
			if limit < 0 || n < limit {
				limit = n
			}
		case "ignore-initial":
			a, b, two := strings.Cut(o.Value, ":")
			n1, ok1 := parseSkip(a)
			n2, ok2 := n1, true
			if two {
				n2, ok2 = parseSkip(b)
			}
			if !ok1 || !ok2 {
				return diffUsage(e, fmt.Sprintf("invalid --ignore-initial value %s", quote(o.Value)))
			}
			skip = [2]int64{n1, n2}
		}
	}
	if verbose && silent {
		return diffUsage(e, "options -l and -s are incompatible")
	}
	switch {
	case len(ops) == 0:
		return diffUsage(e, fmt.Sprintf("missing operand after %s", quote(e.Name())))
	case len(ops) > 4:
		return diffUsage(e, fmt.Sprintf("extra operand %s", quote(ops[4])))
	}
	names := [2]string{ops[0], "-"}
	if len(ops) > 1 {
		names[1] = ops[1]
	}
	for i := 2; i < len(ops); i++ {
		n, ok := parseSkip(ops[i])
		if !ok {
			return diffUsage(e, fmt.Sprintf("invalid --ignore-initial value %s", quote(ops[i])))
		}
		skip[i-2] = n
	}
	var rd [2]*bufio.Reader
	var sizes [2]int64
	for i, n := range names {
		r, closeFn, err := openIn(e, n)
		if err != nil {
			e.Errorf("%s: %s", n, strerror(err))
			return 2
		}
		defer closeFn()
		sizes[i] = -1
		if f, ok := r.(*os.File); ok && n != "-" {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				sizes[i] = max(fi.Size()-skip[i], 0)
			}
		}
		rd[i] = bufio.NewReaderSize(r, 64<<10)
		if skip[i] > 0 {
			if _, err := io.CopyN(io.Discard, rd[i], skip[i]); err != nil && err != io.EOF {
				e.Errorf("%s: %s", n, strerror(err))
				return 2
			}
		}
	}
	if names[0] == names[1] && skip[0] == skip[1] && names[0] != "-" {
		return 0
	}
	out := bufio.NewWriter(e.Stdout)
	width := 1
	if verbose {
		maxN := int64(math.MaxInt64)
		if limit >= 0 {
			maxN = limit
		}
		for _, s := range sizes {
			if s >= 0 && s < maxN {
				maxN = s
			}
		}
		for maxN /= 10; maxN != 0; maxN /= 10 {
			width++
		}
	}
	var pos, line int64 = 0, 1
	var lastNL bool
	status := 0
	for limit < 0 || pos < limit {
		c0, err0 := rd[0].ReadByte()
		c1, err1 := rd[1].ReadByte()
		for i, err := range []error{err0, err1} {
			if err != nil && !errors.Is(err, io.EOF) {
				flush(e, out, 0)
				e.Errorf("%s: %s", names[i], strerror(err))
				return 2
			}
		}
		if err0 != nil || err1 != nil {
			if err0 != nil && err1 != nil {
				break
			}
			short := names[0]
			if err0 == nil {
				short = names[1]
			}
			flush(e, out, 0)
			if !silent {
				switch {
				case pos == 0:
					e.Errorf("EOF on %s which is empty", short)
				case verbose:
					e.Errorf("EOF on %s after byte %d", short, pos)
				case lastNL:
					e.Errorf("EOF on %s after byte %d, line %d", short, pos, line-1)
				default:
					e.Errorf("EOF on %s after byte %d, in line %d", short, pos, line)
				}
			}
			return 1
		}
		pos++
		if c0 != c1 {
			status = 1
			switch {
			case silent:
				return 1
			case verbose && printBytes:
				fmt.Fprintf(out, "%*d %3o %-4s %3o %s\n", width, pos, c0, printChar(c0), c1, printChar(c1))
			case verbose:
				fmt.Fprintf(out, "%*d %3o %3o\n", width, pos, c0, c1)
			case printBytes:
				fmt.Fprintf(out, "%s %s differ: byte %d, line %d is %3o %s %3o %s\n", names[0], names[1], pos, line, c0, printChar(c0), c1, printChar(c1))
				return flush(e, out, 1)
			default:
				fmt.Fprintf(out, "%s %s differ: char %d, line %d\n", names[0], names[1], pos, line)
				return flush(e, out, 1)
			}
		}
		lastNL = c0 == '\n'
		if lastNL {
			line++
		}
	}
	return flush(e, out, status)
}
