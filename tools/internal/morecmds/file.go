package morecmds

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("file", fileMain) }

// fileMain is file(1) with a magic table of our own: the formats an agent
// meets (text in ASCII, UTF-8 or ISO-8859, scripts, JSON, HTML, XML, ELF,
// PNG, JPEG, GIF, PDF, gzip, bzip2, xz, zip, tar, wasm), described in the
// words of file 5.44; anything else is "data".
func fileMain(e *cmd.Env) int {
	spec := []cmd.Option{{Short: 'b', Long: "brief"}, {Short: 'i', Long: "mime"}, {Long: "mime-type"}, {Long: "mime-encoding"},
		{Short: 'L', Long: "dereference"}, {Short: 'h', Long: "no-dereference"}, {Short: 'f', Long: "files-from", Arg: cmd.RequiredArg},
		{Short: 'N', Long: "no-pad"}, {Short: 'z', Long: "uncompress"}, {Short: 'E'}, {Short: 'v', Long: "version"}, {Long: "help"}}
	opts, files, err := cmd.Getopt(e.Args[1:], spec, false)
	if err != nil {
		e.Errorf("%s", err)
		fmt.Fprintf(e.Stderr, "Usage: file [-bcCdEhikLlNnprsSvzZ0] [--apple] [--extension] [--mime-encoding]\n            [--mime-type] [-e <testname>] [-F <separator>]  [-f <namefile>]\n            [-m <magicfiles>] [-P <parameter=value>] [--exclude-quiet]\n            <file> ...\n       file -C [-m <magicfiles>]\n       file [--help]\n")
		return 1
	}
	var brief, mime, mimeType, mimeEnc, deref, noPad, exitErr bool
	for _, o := range opts {
		switch o.Name {
		case "brief":
			brief = true
		case "mime":
			mime = true
		case "mime-type":
			mimeType = true
		case "mime-encoding":
			mimeEnc = true
		case "dereference":
			deref = true
		case "no-dereference":
			deref = false
		case "no-pad":
			noPad = true
		case "E":
			exitErr = true
		case "files-from":
			data, err := readAll(e, o.Value)
			if err != nil {
				e.Errorf("Cannot open `%s' (%s).", o.Value, strerror(err))
				return 1
			}
			for _, l := range strings.Split(string(data), "\n") {
				if l != "" {
					files = append(files, l)
				}
			}
		case "version":
			fmt.Fprintf(e.Stdout, "file-5.44 %s\n", version)
			return 0
		case "help":
			fmt.Fprintln(e.Stdout, "Usage: file [OPTION...] [FILE...]")
			return 0
		}
	}
	if len(files) == 0 {
		fmt.Fprintf(e.Stderr, "Usage: file [-bcCdEhikLlNnprsSvzZ0] [--apple] [--extension] [--mime-encoding]\n            [--mime-type] [-e <testname>] [-F <separator>]  [-f <namefile>]\n            [-m <magicfiles>] [-P <parameter=value>] [--exclude-quiet]\n            <file> ...\n       file -C [-m <magicfiles>]\n       file [--help]\n")
		return 1
	}
	width := 0
	for _, f := range files {
		width = max(width, len(f)+1)
	}
	out := bufio.NewWriter(e.Stdout)
	status := 0
	for _, name := range files {
		d := describeFile(name, deref)
		if d.err != "" && exitErr {
			status = 1
		}
		text := d.text
		switch {
		case mime:
			text = d.mime + "; charset=" + d.charset
			if d.charset == "" {
				text = d.mime
			}
		case mimeType:
			text = d.mime
		case mimeEnc:
			text = d.charset
		}
		if d.err != "" {
			text = d.err
		}
		if !brief {
			if noPad {
				out.WriteString(name + ": ")
			} else {
				fmt.Fprintf(out, "%-*s ", width, name+":")
			}
		}
		out.WriteString(text + "\n")
	}
	return flush(e, out, status)
}

type fileDesc struct {
	text, mime, charset, err string
}

func describeFile(name string, deref bool) fileDesc {
	if name == "-" {
		data, _ := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
		return describeData(data, false)
	}
	fi, err := os.Lstat(name)
	if err != nil {
		return fileDesc{err: fmt.Sprintf("cannot open `%s' (%s)", name, strerror(err))}
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(name)
		st, err := os.Stat(name)
		switch {
		case err != nil && deref:
			return fileDesc{err: fmt.Sprintf("cannot open `%s' (%s)", name, strerror(err))}
		case err != nil:
			return fileDesc{text: "broken symbolic link to " + target, mime: "inode/symlink"}
		case !deref:
			return fileDesc{text: "symbolic link to " + target, mime: "inode/symlink", charset: "binary"}
		}
		fi = st
	}
	switch {
	case fi.IsDir():
		return fileDesc{text: "directory", mime: "inode/directory", charset: "binary"}
	case fi.Mode()&os.ModeNamedPipe != 0:
		return fileDesc{text: "fifo (named pipe)", mime: "inode/fifo", charset: "binary"}
	case fi.Mode()&os.ModeSocket != 0:
		return fileDesc{text: "socket", mime: "inode/socket", charset: "binary"}
	case fi.Mode()&os.ModeCharDevice != 0:
		return fileDesc{text: "character special", mime: "inode/chardevice", charset: "binary"}
	}
	f, err := os.Open(name)
	if err != nil {
		return fileDesc{err: fmt.Sprintf("cannot open `%s' (%s)", name, strerror(err))}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return fileDesc{err: fmt.Sprintf("cannot read `%s' (%s)", name, strerror(err))}
	}
	return describeData(data, true)
}

func describeData(data []byte, isFile bool) fileDesc {
	bin := func(text, mime string) fileDesc { return fileDesc{text: text, mime: mime, charset: "binary"} }
	has := func(prefix string) bool { return bytes.HasPrefix(data, []byte(prefix)) }
	switch {
	case len(data) == 0:
		return fileDesc{text: "empty", mime: "inode/x-empty", charset: "binary"}
	case has("\x7fELF"):
		t := describeELF(data)
		mime := "application/x-executable"
		switch {
		case strings.Contains(t, "pie executable"):
			mime = "application/x-pie-executable"
		case strings.Contains(t, "shared object"):
			mime = "application/x-sharedlib"
		case strings.Contains(t, "relocatable"):
			mime = "application/x-object"
		}
		return bin(t, mime)
	case has("\x89PNG\r\n\x1a\n"):
		t := "PNG image data"
		if len(data) >= 29 && string(data[12:16]) == "IHDR" {
			w, h := binary.BigEndian.Uint32(data[16:]), binary.BigEndian.Uint32(data[20:])
			depth, ct, il := data[24], data[25], data[28]
			color := map[byte]string{0: "grayscale", 2: "/color RGB", 3: "colormap", 4: "gray+alpha", 6: "/color RGBA"}[ct]
			if !strings.HasPrefix(color, "/") {
				color = " " + color
			}
			inter := "non-interlaced"
			if il == 1 {
				inter = "interlaced"
			}
			t += fmt.Sprintf(", %d x %d, %d-bit%s, %s", w, h, depth, color, inter)
		}
		return bin(t, "image/png")
	case has("GIF87a") || has("GIF89a"):
		t := "GIF image data, version " + string(data[3:6])
		if len(data) >= 10 {
			t += fmt.Sprintf(", %d x %d", binary.LittleEndian.Uint16(data[6:]), binary.LittleEndian.Uint16(data[8:]))
		}
		return bin(t, "image/gif")
	case has("\xff\xd8\xff"):
		return bin(describeJPEG(data), "image/jpeg")
	case has("%PDF-"):
		v := string(data[5:min(len(data), 8)])
		d := fileDesc{text: "PDF document, version " + v, mime: "application/pdf", charset: "binary"}
		if textKind(data) != "" {
			d.charset = textCharset(data)
		}
		return d
	case has("\x1f\x8b"):
		return bin(describeGzip(data, isFile), "application/gzip")
	case has("BZh") && len(data) >= 4 && data[3] >= '1' && data[3] <= '9':
		return bin(fmt.Sprintf("bzip2 compressed data, block size = %c00k", data[3]), "application/x-bzip2")
	case has("\xfd7zXZ\x00"):
		t := "XZ compressed data"
		if len(data) >= 8 {
			switch data[7] & 0x0f {
			case 0:
				t += ", checksum NONE"
			case 1:
				t += ", checksum CRC32"
			case 4:
				t += ", checksum CRC64"
			case 10:
				t += ", checksum SHA-256"
			}
		}
		return bin(t, "application/x-xz")
	case has("PK\x03\x04"):
		t := "Zip archive data"
		if len(data) >= 10 {
			v := binary.LittleEndian.Uint16(data[4:])
			t += fmt.Sprintf(", at least v%d.%d to extract", v/10, v%10)
			switch binary.LittleEndian.Uint16(data[8:]) {
			case 0:
				t += ", compression method=store"
			case 8:
				t += ", compression method=deflate"
			}
		}
		return bin(t, "application/zip")
	case len(data) >= 263 && string(data[257:265]) == "ustar  \x00":
		return bin("POSIX tar archive (GNU)", "application/x-tar")
	case len(data) >= 263 && string(data[257:263]) == "ustar\x00":
		return bin("POSIX tar archive", "application/x-tar")
	case has("\x00asm") && len(data) >= 8:
		v := binary.LittleEndian.Uint32(data[4:])
		t := fmt.Sprintf("WebAssembly (wasm) binary module version %#x", v)
		if v == 1 {
			t += " (MVP)"
		}
		return bin(t, "application/wasm")
	case has("7z\xbc\xaf\x27\x1c"):
		return bin("7-zip archive data", "application/x-7z-compressed")
	}
	kind := textKind(data)
	if kind == "" {
		return bin("data", "application/octet-stream")
	}
	cs := textCharset(data)
	suffix := textSuffix(data)
	if has("#!") {
		line, _, _ := bytes.Cut(data[2:], []byte("\n"))
		fields := strings.Fields(string(line))
		interp := ""
		if len(fields) > 0 {
			interp = fields[0]
			if strings.HasSuffix(interp, "/env") && len(fields) > 1 {
				interp = fields[1]
			}
		}
		base := interp[strings.LastIndexByte(interp, '/')+1:]
		switch {
		case base == "sh":
			return fileDesc{text: "POSIX shell script, " + kind + " executable" + suffix, mime: "text/x-shellscript", charset: cs}
		case base == "bash":
			return fileDesc{text: "Bourne-Again shell script, " + kind + " executable" + suffix, mime: "text/x-shellscript", charset: cs}
		case base == "zsh":
			return fileDesc{text: "Paul Falstad's zsh script, " + kind + " executable" + suffix, mime: "text/x-shellscript", charset: cs}
		case strings.HasPrefix(base, "python"):
			return fileDesc{text: "Python script, " + kind + " executable" + suffix, mime: "text/x-script.python", charset: cs}
		case base == "perl":
			return fileDesc{text: "Perl script text executable", mime: "text/x-perl", charset: cs}
		case base == "node":
			return fileDesc{text: "Node.js script executable, " + kind + suffix, mime: "application/javascript", charset: cs}
		case interp != "":
			return fileDesc{text: "a " + strings.Join(fields, " ") + " script, " + kind + " executable" + suffix, mime: "text/plain", charset: cs}
		}
	}
	trim := bytes.TrimLeft(data, " \t\r\n")
	lower := strings.ToLower(string(trim[:min(len(trim), 64)]))
	switch {
	case strings.HasPrefix(lower, "<?xml"):
		return fileDesc{text: "XML 1.0 document, " + kind + suffix, mime: "text/xml", charset: cs}
	case strings.HasPrefix(lower, "<!doctype html") || strings.HasPrefix(lower, "<html") || strings.HasPrefix(lower, "<head") || strings.HasPrefix(lower, "<body"):
		return fileDesc{text: "HTML document, " + kind + suffix, mime: "text/html", charset: cs}
	case (len(trim) > 0 && (trim[0] == '{' || trim[0] == '[')) && json.Valid(data):
		return fileDesc{text: "JSON text data", mime: "application/json", charset: cs}
	}
	return fileDesc{text: kind + suffix, mime: "text/plain", charset: cs}
}

// isTextByte is file's set of characters found in text.
func isTextByte(c byte) bool {
	return c >= 0x20 && c < 0x7f || c == '\a' || c == '\b' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' || c == 0x1b
}

// textKind returns "ASCII text", "Unicode text, UTF-8 text" or
// "ISO-8859 text", or "" for data that is not text.
func textKind(data []byte) string {
	ascii := true
	for _, c := range data {
		if c >= 0x80 {
			ascii = false
		} else if !isTextByte(c) {
			return ""
		}
	}
	switch {
	case ascii:
		return "ASCII text"
	case utf8.Valid(data):
		return "Unicode text, UTF-8 text"
	}
	for _, c := range data {
		if c >= 0x80 && c < 0xa0 {
			return ""
		}
	}
	return "ISO-8859 text"
}

func textCharset(data []byte) string {
	switch textKind(data) {
	case "ASCII text":
		return "us-ascii"
	case "ISO-8859 text":
		return "iso-8859-1"
	}
	return "utf-8"
}

// textSuffix describes line terminators, long lines and escapes.
func textSuffix(data []byte) string {
	var s []string
	crlf, cr, lf := 0, 0, 0
	longest, cur := 0, 0
	esc := false
	for i, c := range data {
		switch c {
		case '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				crlf++
			} else {
				cr++
			}
			cur = 0
		case '\n':
			if i == 0 || data[i-1] != '\r' {
				lf++
			}
			cur = 0
		case 0x1b:
			esc = true
			cur++
		default:
			cur++
		}
		longest = max(longest, cur)
	}
	if longest > 300 {
		s = append(s, fmt.Sprintf("with very long lines (%d)", longest))
	}
	switch {
	case crlf > 0 && lf == 0 && cr == 0:
		s = append(s, "with CRLF line terminators")
	case cr > 0 && lf == 0 && crlf == 0:
		s = append(s, "with CR line terminators")
	case crlf > 0 && lf > 0 && cr == 0:
		s = append(s, "with CRLF, LF line terminators")
	case crlf == 0 && lf == 0 && cr == 0:
		s = append(s, "with no line terminators")
	}
	if esc {
		s = append(s, "with escape sequences")
	}
	if len(s) == 0 {
		return ""
	}
	return ", " + strings.Join(s, ", ")
}

func describeGzip(data []byte, isFile bool) string {
	t := "gzip compressed data"
	if len(data) < 10 {
		return t
	}
	flags := data[3]
	mtime := binary.LittleEndian.Uint32(data[4:])
	xfl, osb := data[8], data[9]
	p := 10
	if flags&4 != 0 && len(data) >= p+2 {
		p += 2 + int(binary.LittleEndian.Uint16(data[p:]))
	}
	if flags&8 != 0 && p < len(data) {
		if end := bytes.IndexByte(data[p:], 0); end >= 0 {
			t += fmt.Sprintf(", was \"%s\"", data[p:p+end])
		}
	}
	if mtime != 0 {
		t += ", last modified: " + time.Unix(int64(mtime), 0).UTC().Format("Mon Jan _2 15:04:05 2006")
	}
	switch xfl {
	case 2:
		t += ", max compression"
	case 4:
		t += ", max speed"
	}
	if name, ok := map[byte]string{0: "FAT filesystem (MS-DOS, OS/2, NT)", 3: "Unix", 7: "Macintosh", 11: "NTFS filesystem (NT)"}[osb]; ok {
		t += ", from " + name
	}
	if isFile && len(data) >= 18 && len(data) < 1<<20 {
		t += fmt.Sprintf(", original size modulo 2^32 %d", binary.LittleEndian.Uint32(data[len(data)-4:]))
	}
	return t
}

func describeJPEG(data []byte) string {
	t := "JPEG image data"
	if len(data) >= 18 && string(data[6:11]) == "JFIF\x00" {
		t += fmt.Sprintf(", JFIF standard %d.%02d", data[11], data[12])
		units := data[13]
		xd, yd := binary.BigEndian.Uint16(data[14:]), binary.BigEndian.Uint16(data[16:])
		switch units {
		case 0:
			t += fmt.Sprintf(", aspect ratio, density %dx%d", xd, yd)
		case 1:
			t += fmt.Sprintf(", resolution (DPI), density %dx%d", xd, yd)
		case 2:
			t += fmt.Sprintf(", resolution (DPCM), density %dx%d", xd, yd)
		}
		t += fmt.Sprintf(", segment length %d", binary.BigEndian.Uint16(data[4:]))
	}
	// The frame header gives the size.
	for p := 2; p+4 <= len(data); {
		if data[p] != 0xff {
			break
		}
		m := data[p+1]
		l := int(binary.BigEndian.Uint16(data[p+2:]))
		if (m == 0xc0 || m == 0xc2) && p+9 < len(data) {
			kind := "baseline"
			if m == 0xc2 {
				kind = "progressive"
			}
			h, w := binary.BigEndian.Uint16(data[p+5:]), binary.BigEndian.Uint16(data[p+7:])
			t += fmt.Sprintf(", %s, precision %d, %dx%d, components %d", kind, data[p+4], w, h, data[p+9])
			break
		}
		p += 2 + l
	}
	return t
}

func describeELF(data []byte) string {
	if len(data) < 20 {
		return "ELF"
	}
	class := map[byte]string{1: "32-bit", 2: "64-bit"}[data[4]]
	var order binary.ByteOrder = binary.LittleEndian
	endian := "LSB"
	if data[5] == 2 {
		order, endian = binary.BigEndian, "MSB"
	}
	typ := order.Uint16(data[16:])
	mach := order.Uint16(data[18:])
	kinds := map[uint16]string{1: "relocatable", 2: "executable", 3: "shared object", 4: "core file"}
	kind := kinds[typ]
	machine := map[uint16]string{3: "Intel 80386", 40: "ARM", 62: "x86-64", 183: "ARM aarch64", 243: "UCB RISC-V"}[mach]
	interp := false
	if data[4] == 2 && len(data) >= 64 {
		phoff := order.Uint64(data[32:])
		phentsize := uint64(order.Uint16(data[54:]))
		phnum := uint64(order.Uint16(data[56:]))
		for i := uint64(0); i < phnum; i++ {
			off := phoff + i*phentsize
			if off+4 > uint64(len(data)) {
				break
			}
			switch order.Uint32(data[off:]) {
			case 3: // PT_INTERP
				interp = true
			}
		}
	}
	if typ == 3 && interp {
		kind = "pie executable"
	}
	t := fmt.Sprintf("ELF %s %s %s", class, endian, kind)
	if machine != "" {
		t += ", " + machine
	}
	t += fmt.Sprintf(", version %d (SYSV)", data[6])
	return t
}
