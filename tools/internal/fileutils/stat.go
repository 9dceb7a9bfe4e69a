package fileutils

import (
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("stat", statMain) }

var statUsage = usage{
	synopsis: "[OPTION]... FILE...",
	text: `Display file status.

  -L, --dereference     follow links
  -c  --format=FORMAT   use the specified FORMAT instead of the default;
                          output a newline after each use of FORMAT
      --printf=FORMAT   like --format, but interpret backslash escapes,
                          and do not output a mandatory trailing newline
  -t, --terse           print the information in terse form

The valid format sequences for files:
  %a   permission bits in octal      %A   permission bits and file type
  %b   number of blocks allocated    %B   the size in bytes of each block
  %d   device number in decimal      %D   device number in hex
  %f   raw mode in hex               %F   file type
  %g   group ID of owner             %G   group name of owner
  %h   number of hard links          %i   inode number
  %n   file name                     %N   quoted file name with dereference if symbolic link
  %o   optimal I/O transfer size     %s   total size, in bytes
  %u   user ID of owner              %U   user name of owner
  %w   time of file birth, or '-'    %W   birth time, seconds since Epoch, or 0
  %x   time of last access           %X   last access, seconds since Epoch
  %y   time of last data modification %Y  last modification, seconds since Epoch
  %z   time of last status change    %Z   last status change, seconds since Epoch
`,
	bad: 1,
}

const statDefault = "  File: %N\n  Size: %-10s\tBlocks: %-10b IO Block: %-6o %F\nDevice: %Hd,%Ld\tInode: %-11i Links: %h\nAccess: (%04a/%10.10A)  Uid: (%5u/%8U)   Gid: (%5g/%8G)\nAccess: %x\nModify: %y\nChange: %z\n Birth: %w\n"

const statTerse = "%n %s %b %f %u %g %D %i %h %t %T %X %Y %Z %W %o\n"

func statMain(e *cmd.Env) int {
	opts, files, st, done := getopt(e, "L,dereference f,file-system c: ,format: ,printf: t,terse ,cached:", statUsage)
	if done {
		return st
	}
	deref := has(opts, "dereference")
	format, custom := statDefault, false
	for _, o := range opts {
		switch o.name {
		case "c", "format":
			format, custom = o.val+"\n", true
		case "printf":
			format, custom = unescapeC(o.val), true
		case "terse":
			format, custom = statTerse, true
		}
	}
	if has(opts, "file-system") {
		e.Errorf("--file-system is not supported in the sandbox; use df")
		return 1
	}
	if len(files) == 0 {
		return usageErr(e, statUsage, "missing operand")
	}
	out := newOut(e)
	defer out.Flush()
	s := &statPrinter{}
	status := 0
	for _, f := range files {
		var fi fs.FileInfo
		var err error
		if deref {
			fi, err = metaStat(f)
		} else {
			fi, err = metaLstat(f)
		}
		if err != nil {
			out.Flush()
			e.Errorf("cannot statx %s: %s", quote(f), strerror(err))
			status = 1
			continue
		}
		out.WriteString(s.format(format, f, fi, !custom))
	}
	return status
}

type statPrinter struct{ names idNames }

// statTime renders a timestamp as stat does.
func statTime(t time.Time) string { return t.Format("2006-01-02 15:04:05.000000000 -0700") }

// rawMode is the st_mode value with the file type bits.
func rawMode(m fs.FileMode) uint32 {
	u := unixMode(m)
	switch {
	case m.IsDir():
		u |= 0o040000
	case m&fs.ModeSymlink != 0:
		u |= 0o120000
	case m&fs.ModeNamedPipe != 0:
		u |= 0o010000
	case m&fs.ModeSocket != 0:
		u |= 0o140000
	case m&fs.ModeCharDevice != 0:
		u |= 0o020000
	case m&fs.ModeDevice != 0:
		u |= 0o060000
	default:
		u |= 0o100000
	}
	return u
}

func (s *statPrinter) format(format, name string, fi fs.FileInfo, dflt bool) string {
	sx := sysStat(fi)
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("-+ #0'", format[j]) >= 0 {
			j++
		}
		for j < len(format) && (isDigit(format[j]) || format[j] == '.') {
			j++
		}
		if j < len(format) && (format[j] == 'H' || format[j] == 'L') && j+1 < len(format) && (format[j+1] == 'd' || format[j+1] == 'r') {
			j++
		}
		if j >= len(format) {
			b.WriteString(format[i:])
			break
		}
		spec := format[i+1 : j]
		verb := format[j]
		i = j
		var num *int64
		var unum *uint64
		var str string
		isStr := false
		setU := func(v uint64) { unum = &v }
		setI := func(v int64) { num = &v }
		setS := func(v string) { str, isStr = v, true }
		switch verb {
		case '%':
			b.WriteByte('%')
			continue
		case 'a':
			setS(strconv.FormatUint(uint64(unixMode(fi.Mode())), 8))
			if strings.ContainsAny(spec, "0123456789") {
				v, _ := strconv.ParseUint(str, 10, 64)
				isStr = false
				setU(v)
			}
		case 'A':
			setS(modeString(fi.Mode()))
		case 'b':
			setI(sx.blocks)
		case 'B':
			setI(512)
		case 'd':
			if strings.HasSuffix(spec, "H") {
				spec = spec[:len(spec)-1]
				setU(sx.dev >> 8)
			} else if strings.HasSuffix(spec, "L") {
				spec = spec[:len(spec)-1]
				setU(sx.dev & 0xff)
			} else {
				setU(sx.dev)
			}
		case 'D':
			setS(strconv.FormatUint(sx.dev, 16))
		case 'f':
			setS(strconv.FormatUint(uint64(rawMode(fi.Mode())), 16))
		case 'F':
			setS(fileTypeName(fi))
		case 'g':
			setU(uint64(sx.gid))
		case 'G':
			setS(s.names.group(sx.gid))
		case 'h':
			setU(sx.nlink)
		case 'i':
			setU(sx.ino)
		case 'm':
			setS("/")
		case 'n':
			setS(name)
		case 'N':
			q := quote(name)
			if dflt {
				q = name
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				if t, err := os.Readlink(name); err == nil {
					if dflt {
						q += " -> " + t
					} else {
						q += " -> " + quote(t)
					}
				}
			}
			setS(q)
		case 'o':
			setI(4096)
		case 's':
			setI(fi.Size())
		case 't':
			setS(strconv.FormatUint(sx.rdev>>8, 16))
		case 'T':
			setS(strconv.FormatUint(sx.rdev&0xff, 16))
		case 'u':
			setU(uint64(sx.uid))
		case 'U':
			setS(s.names.user(sx.uid))
		case 'w':
			setS("-")
		case 'W':
			setI(0)
		case 'x':
			setS(statTime(sx.atime))
		case 'X':
			setI(sx.atime.Unix())
		case 'y':
			setS(statTime(fi.ModTime()))
		case 'Y':
			setI(fi.ModTime().Unix())
		case 'z':
			setS(statTime(sx.ctime))
		case 'Z':
			setI(sx.ctime.Unix())
		case 'C':
			setS("?")
		default:
			b.WriteString("?")
			continue
		}
		spec = strings.ReplaceAll(spec, "'", "")
		switch {
		case isStr:
			fmt.Fprintf(&b, "%"+spec+"s", str)
		case num != nil:
			fmt.Fprintf(&b, "%"+spec+"d", *num)
		case unum != nil:
			fmt.Fprintf(&b, "%"+spec+"d", *unum)
		}
	}
	return b.String()
}

// unescapeC interprets the backslash escapes of printf formats.
func unescapeC(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\':
			b.WriteByte('\\')
		case '"':
			b.WriteByte('"')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v, n := 0, 0
			for n < 3 && i < len(s) && s[i] >= '0' && s[i] <= '7' {
				v = v*8 + int(s[i]-'0')
				i++
				n++
			}
			i--
			b.WriteByte(byte(v))
		case 'x':
			v, n := 0, 0
			for n < 2 && i+1 < len(s) && isHex(s[i+1]) {
				i++
				v = v*16 + hexVal(s[i])
				n++
			}
			if n == 0 {
				b.WriteString(`\x`)
			} else {
				b.WriteByte(byte(v))
			}
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case isDigit(c):
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return int(c-'A') + 10
}
