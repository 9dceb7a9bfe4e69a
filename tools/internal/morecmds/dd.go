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
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("dd", ddMain) }

// ddUsage prints a dd operand error with the "Try" line and returns 1.
func ddUsage(e *cmd.Env, format string, args ...any) int {
	e.Errorf(format, args...)
	fmt.Fprintf(e.Stderr, "Try '%s --help' for more information.\n", e.Name())
	return 1
}

// parseDDNumber parses a dd number: N[SUFFIX] products joined by 'x'.
func parseDDNumber(s string) (int64, bool) {
	n := int64(1)
	for _, part := range strings.Split(s, "x") {
		v, ok := parseSuffixed(part)
		if !ok {
			return 0, false
		}
		if v != 0 && n > math.MaxInt64/v {
			return 0, false
		}
		n *= v
	}
	return n, true
}

type ddConfig struct {
	ifile, ofile             string
	ibs, obs                 int64
	bsSet                    bool
	count, skip, seek        int64
	conv                     map[string]bool
	iflag, oflag             map[string]bool
	status                   string
	countBytes, skipBytes    bool
	seekBytes                bool
	ucase, lcase, swab, sync bool
}

func ddMain(e *cmd.Env) int {
	c := ddConfig{ibs: 512, obs: 512, count: -1, conv: map[string]bool{}, iflag: map[string]bool{}, oflag: map[string]bool{}}
	for _, a := range e.Args[1:] {
		switch a {
		case "--help":
			fmt.Fprintln(e.Stdout, "Usage: dd [OPERAND]...")
			return 0
		case "--version":
			fmt.Fprintf(e.Stdout, "dd %s\n", version)
			return 0
		case "--":
			continue
		}
		key, val, ok := strings.Cut(a, "=")
		if !ok {
			return ddUsage(e, "unrecognized operand %s", quote(a))
		}
		num := func(min int64) (int64, bool) {
			n, ok := parseDDNumber(val)
			if !ok || n < min {
				e.Errorf("invalid number: %s", quote(val))
				return 0, false
			}
			return n, true
		}
		var ok2 bool
		switch key {
		case "if":
			c.ifile = val
		case "of":
			c.ofile = val
		case "bs":
			if c.ibs, ok2 = num(1); !ok2 {
				return 1
			}
			c.obs, c.bsSet = c.ibs, true
		case "ibs":
			if c.ibs, ok2 = num(1); !ok2 {
				return 1
			}
		case "obs":
			if c.obs, ok2 = num(1); !ok2 {
				return 1
			}
		case "count":
			if c.count, ok2 = num(0); !ok2 {
				return 1
			}
		case "skip", "iseek":
			if c.skip, ok2 = num(0); !ok2 {
				return 1
			}
		case "seek", "oseek":
			if c.seek, ok2 = num(0); !ok2 {
				return 1
			}
		case "conv", "iflag", "oflag":
			valid, set, what := ddConvs, c.conv, "conversion"
			if key == "iflag" {
				valid, set, what = ddFlags, c.iflag, "input flag"
			} else if key == "oflag" {
				valid, set, what = ddFlags, c.oflag, "output flag"
			}
			for _, f := range strings.Split(val, ",") {
				if !strings.Contains(valid, " "+f+" ") {
					return ddUsage(e, "invalid %s: %s", what, quote(f))
				}
				set[f] = true
			}
		case "status":
			switch val {
			case "none", "noxfer", "progress":
				c.status = val
			default:
				return ddUsage(e, "invalid status level: %s", quote(val))
			}
		default:
			return ddUsage(e, "unrecognized operand %s", quote(a))
		}
	}
	if c.conv["ucase"] && c.conv["lcase"] {
		e.Errorf("cannot combine lcase and ucase")
		return 1
	}
	if c.conv["excl"] && c.conv["nocreat"] {
		e.Errorf("cannot combine excl and nocreat")
		return 1
	}
	return ddRun(e, &c)
}

const (
	ddConvs = " ascii ebcdic ibm block unblock lcase ucase sparse swab sync excl nocreat notrunc noerror fdatasync fsync "
	ddFlags = " append binary cio count_bytes direct directory dsync fullblock noatime nocache noctty nofollow nolinks nonblock seek_bytes skip_bytes sync text "
)

func ddRun(e *cmd.Env, c *ddConfig) int {
	start := time.Now()
	var in io.Reader = e.Stdin
	if c.ifile != "" {
		f, err := os.Open(c.ifile)
		if err != nil {
			e.Errorf("failed to open %s: %s", quote(c.ifile), strerror(err))
			return 1
		}
		defer f.Close()
		in = f
	}
	var out io.Writer = e.Stdout
	var outFile *os.File
	seekOff := c.seek * c.obs
	if c.oflag["seek_bytes"] {
		seekOff = c.seek
	}
	if c.ofile != "" {
		flags := os.O_WRONLY | os.O_CREATE
		switch {
		case c.conv["excl"]:
			flags |= os.O_EXCL
		case c.conv["nocreat"]:
			flags &^= os.O_CREATE
		}
		if c.oflag["append"] {
			flags |= os.O_APPEND
		}
		if !c.conv["notrunc"] && seekOff == 0 && !c.oflag["append"] {
			flags |= os.O_TRUNC
		}
		f, err := os.OpenFile(c.ofile, flags, 0o666)
		if err != nil {
			e.Errorf("failed to open %s: %s", quote(c.ofile), strerror(err))
			return 1
		}
		defer f.Close()
		if seekOff > 0 && !c.oflag["append"] {
			if !c.conv["notrunc"] {
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					if err := f.Truncate(seekOff); err != nil {
						e.Errorf("failed to truncate to %d bytes in output file %s: %s", seekOff, quote(c.ofile), strerror(err))
						return 1
					}
				}
			}
			if _, err := f.Seek(seekOff, io.SeekStart); err != nil {
				e.Errorf("%s: cannot seek: %s", quotef(c.ofile), strerror(err))
				return 1
			}
		}
		out, outFile = f, f
	} else if seekOff > 0 {
		// Standard output cannot seek here: write the gap as zeros,
		// as GNU dd does on a non-seekable output.
		if _, err := out.Write(make([]byte, seekOff)); err != nil {
			e.Errorf("writing to 'standard output': %s", strerror(err))
			return 1
		}
	}
	iname := "'standard input'"
	if c.ifile != "" {
		iname = quote(c.ifile)
	}
	oname := "'standard output'"
	if c.ofile != "" {
		oname = quote(c.ofile)
	}

	// Skip input.
	skipOff := c.skip * c.ibs
	if c.iflag["skip_bytes"] {
		skipOff = c.skip
	}
	if skipOff > 0 {
		if s, ok := in.(io.Seeker); ok && c.ifile != "" {
			if _, err := s.Seek(skipOff, io.SeekCurrent); err != nil {
				e.Errorf("%s: cannot skip: %s", iname, strerror(err))
				return 1
			}
		} else if n, err := io.CopyN(io.Discard, in, skipOff); err != nil && !errors.Is(err, io.EOF) {
			e.Errorf("error reading %s: %s", iname, strerror(err))
			return 1
		} else if n < skipOff {
			e.Errorf("%s: cannot skip to specified offset", iname)
		}
	}

	var fullIn, partIn, fullOut, partOut, total int64
	status := 0
	buf := make([]byte, c.ibs)
	obuf := make([]byte, 0, c.obs)
	write := func(p []byte) error {
		n, err := out.Write(p)
		total += int64(n)
		if err == nil && n < len(p) {
			err = io.ErrShortWrite
		}
		if int64(n) == c.obs || (c.bsSet && n == len(p) && n > 0 && int64(n) == c.ibs) {
			fullOut++
		} else if n > 0 {
			partOut++
		}
		return err
	}
	remaining := c.count
	if c.iflag["count_bytes"] && c.count >= 0 {
		remaining = c.count
	}
	for {
		if c.count >= 0 && remaining <= 0 {
			break
		}
		want := c.ibs
		if c.iflag["count_bytes"] && c.count >= 0 && remaining < want {
			want = remaining
		}
		var n int
		var err error
		if c.iflag["fullblock"] {
			n, err = io.ReadFull(in, buf[:want])
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = nil
			}
		} else {
			n, err = in.Read(buf[:want])
		}
		if n == 0 && err == nil {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			e.Errorf("error reading %s: %s", iname, strerror(err))
			if !c.conv["noerror"] {
				status = 1
				break
			}
			status = 1
		}
		if n == 0 {
			break
		}
		if int64(n) == c.ibs {
			fullIn++
		} else {
			partIn++
		}
		if c.iflag["count_bytes"] {
			remaining -= int64(n)
		} else {
			remaining--
		}
		blk := buf[:n]
		if c.conv["sync"] && int64(n) < c.ibs {
			fill := byte(0)
			if c.conv["block"] || c.conv["unblock"] {
				fill = ' '
			}
			for i := n; i < int(c.ibs); i++ {
				buf[i] = fill
			}
			blk = buf[:c.ibs]
		}
		if c.conv["swab"] {
			for i := 0; i+1 < len(blk); i += 2 {
				blk[i], blk[i+1] = blk[i+1], blk[i]
			}
		}
		if c.conv["ucase"] || c.conv["lcase"] {
			for i, b := range blk {
				switch {
				case c.conv["ucase"] && b >= 'a' && b <= 'z':
					blk[i] = b - 32
				case c.conv["lcase"] && b >= 'A' && b <= 'Z':
					blk[i] = b + 32
				}
			}
		}
		if c.bsSet {
			if err := write(blk); err != nil {
				e.Errorf("error writing %s: %s", oname, strerror(err))
				status = 1
				break
			}
			continue
		}
		for len(blk) > 0 {
			k := min(int(c.obs)-len(obuf), len(blk))
			obuf = append(obuf, blk[:k]...)
			blk = blk[k:]
			if int64(len(obuf)) == c.obs {
				if err := write(obuf); err != nil {
					e.Errorf("error writing %s: %s", oname, strerror(err))
					status = 1
					break
				}
				obuf = obuf[:0]
			}
		}
		if status != 0 && !c.conv["noerror"] {
			break
		}
	}
	if len(obuf) > 0 {
		if err := write(obuf); err != nil {
			e.Errorf("error writing %s: %s", oname, strerror(err))
			status = 1
		}
	}
	if outFile != nil && (c.conv["fsync"] || c.conv["fdatasync"]) {
		outFile.Sync()
	}
	if c.status != "none" {
		w := bufio.NewWriter(e.Stderr)
		fmt.Fprintf(w, "%d+%d records in\n%d+%d records out\n", fullIn, partIn, fullOut, partOut)
		if c.status != "noxfer" {
			secs := time.Since(start).Seconds()
			fmt.Fprintf(w, "%s copied, %s s, %s/s\n", ddBytes(total), strconv.FormatFloat(secs, 'g', 5, 64), ddRate(total, secs))
		}
		w.Flush()
	}
	return status
}

// ddBytes renders the byte count of dd's transfer line: "N bytes" or
// "N bytes (1.0 kB, 1000 B)" style with SI and IEC figures.
func ddBytes(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	if n < 1000 {
		return fmt.Sprintf("%d bytes", n)
	}
	si := humanUnits(float64(n), 1000, "kMGTPE", "B")
	iec := humanUnits(float64(n), 1024, "KMGTPE", "iB")
	return fmt.Sprintf("%d bytes (%s, %s)", n, si, iec)
}

func ddRate(n int64, secs float64) string {
	if secs <= 0 {
		return "Infinity B"
	}
	return humanUnits(float64(n)/secs, 1000, "kMGTPE", "B")
}

// humanUnits renders v with two or three significant digits and a unit
// prefix, as coreutils' human_readable with human_ceiling does.
func humanUnits(v, base float64, prefixes, suffix string) string {
	if v < base {
		return fmt.Sprintf("%.0f B", math.Ceil(v))
	}
	i := -1
	for v >= base && i+1 < len(prefixes) {
		v /= base
		i++
	}
	unit := string(prefixes[i]) + suffix
	if v < 10 {
		return fmt.Sprintf("%.1f %s", math.Ceil(v*10)/10, unit)
	}
	return fmt.Sprintf("%.0f %s", math.Ceil(v), unit)
}
