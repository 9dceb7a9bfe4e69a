package termsafe

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func filter(in string) string {
	var b bytes.Buffer
	w := NewWriter(&b)
	w.Write([]byte(in))
	w.Flush()
	return b.String()
}

var cases = []struct{ name, in, want string }{
	{"plain", "hello, world\n", "hello, world\n"},
	{"utf8", "héllo 世界 🎉\n", "héllo 世界 🎉\n"},
	{"whitespace controls", "a\tb\r\nc\bd\a\v\f", "a\tb\r\nc\bd\a\v\f"},
	{"sgr", "\x1b[1;31mred\x1b[0m \x1b[38;2;1;2;3mrgb\x1b[m \x1b[38:5:208mx", "\x1b[1;31mred\x1b[0m \x1b[38;2;1;2;3mrgb\x1b[m \x1b[38:5:208mx"},
	{"cursor and erase", "\x1b[2K\r50%\x1b[1A\x1b[3C\x1b[10;5H\x1b[J\x1b[2J\x1b[5P\x1b[2X\x1b[s\x1b[u\x1b[7d\x1b[3G",
		"\x1b[2K\r50%\x1b[1A\x1b[3C\x1b[10;5H\x1b[J\x1b[2J\x1b[5P\x1b[2X\x1b[s\x1b[u\x1b[7d\x1b[3G"},
	// The attacks of the issue.
	{"osc 52 clipboard", "\x1b]52;c;ZWNobyBwd25lZA==\x07after", "^[]52;c;ZWNobyBwd25lZA==\aafter"},
	{"osc 52 with ST", "\x1b]52;c;eA==\x1b\\after", "^[]52;c;eA==^[\\after"},
	{"cursor position report", "\x1b[6n", "^[[6n"},
	{"device status", "\x1b[5n\x1b[c\x1b[>c\x1b[=c", "^[[5n^[[c^[[>c^[[=c"},
	{"window ops", "\x1b[21t\x1b[8;100;100t\x1b[14t", "^[[21t^[[8;100;100t^[[14t"},
	{"title", "\x1b]0;owned\x07\x1b]2;x\x1b\\", "^[]0;owned\a^[]2;x^[\\"},
	{"hyperlink", "\x1b]8;;http://evil/\x1b\\click\x1b]8;;\x1b\\", "^[]8;;http://evil/^[\\click^[]8;;^[\\"},
	{"dcs decrqss", "\x1bP$qm\x1b\\", "^[P$qm^[\\"},
	{"apc pm sos", "\x1b_x\x1b\\\x1b^y\x1b\\\x1bXz\x1b\\", "^[_x^[\\^[^y^[\\^[Xz^[\\"},
	{"decrqm", "\x1b[?2004$p", "^[[?2004$p"},
	{"private modes", "\x1b[?1000h\x1b[?25l\x1b[?1049h\x1b[?2004h", "^[[?1000h^[[?25l^[[?1049h^[[?2004h"},
	{"intermediates", "\x1b[2 q\x1b[!p", "^[[2 q^[[!p"},
	{"scroll region and clear scrollback", "\x1b[1;5r\x1b[3J", "^[[1;5r^[[3J"},
	{"reset and charset", "\x1bc\x1b(0q\x1b)B\x0e\x0f\x1b7\x1b8", "^[c^[(0q^[)B^N^O^[7^[8"},
	{"c0 and del", "\x00\x01\x1f\x7f", "^@^A^_^?"},
	{"c1 as utf8", "\u009b6n\u009d52;c;x\u0007", "<U+009B>6n<U+009D>52;c;x\a"},
	{"c1 raw bytes", "\x9b6n\x9d0;t\x07", "<9B>6n<9D>0;t\a"},
	{"invalid utf8", "a\xffb\xc3(c\xe2\x82d\xf0\x9f\x8e", "a<FF>b<C3>(c<E2><82>d<F0><9F><8E>"},
	{"overlong", "\xc0\x80\xe0\x80\x80", "<C0><80><E0><80><80>"},
	{"control inside csi", "\x1b[1\n2m", "^[[1\n2m"},
	{"esc inside csi", "\x1b[31\x1b[0m", "^[[31\x1b[0m"},
	{"esc esc", "\x1b\x1b[1m", "^[\x1b[1m"},
	{"csi too long", "\x1b[" + strings.Repeat("1", MaxSequence) + "m", "^[[" + strings.Repeat("1", MaxSequence-2) + strings.Repeat("1", 2) + "m"},
	{"csi at the bound", "\x1b[" + strings.Repeat("1", MaxSequence-3) + "m", "\x1b[" + strings.Repeat("1", MaxSequence-3) + "m"},
	{"trailing esc", "a\x1b", "a^["},
	{"trailing csi", "a\x1b[3", "a^[[3"},
}

func TestWriterTable(t *testing.T) {
	for _, tc := range cases {
		if got := filter(tc.in); got != tc.want {
			t.Errorf("%s: filter(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
		// The same bytes one at a time: a sequence split across writes.
		var b bytes.Buffer
		w := NewWriter(&b)
		for i := 0; i < len(tc.in); i++ {
			if n, err := w.Write([]byte{tc.in[i]}); n != 1 || err != nil {
				t.Fatalf("Write: %d %v", n, err)
			}
		}
		w.Flush()
		if b.String() != tc.want {
			t.Errorf("%s, byte by byte: %q, want %q", tc.name, b.String(), tc.want)
		}
	}
}

// checkSafe fails unless out holds only allowed text and sequences.
func checkSafe(t *testing.T, in, out []byte) {
	t.Helper()
	for i := 0; i < len(out); {
		b := out[i]
		switch {
		case b == esc:
			j := i + 1
			if j >= len(out) || out[j] != '[' {
				t.Fatalf("filter(%q) = %q: ESC not starting CSI at %d", in, out, i)
			}
			j++
			start := j
			for j < len(out) && out[j] >= 0x30 && out[j] <= 0x3f {
				j++
			}
			if j >= len(out) || j-i+1 > MaxSequence {
				t.Fatalf("filter(%q) = %q: unfinished or long CSI at %d", in, out, i)
			}
			if p := out[start:j]; len(p) > 0 && bytes.IndexByte([]byte("<=>?"), p[0]) >= 0 || !allowedCSI(p, out[j]) {
				t.Fatalf("filter(%q) = %q: CSI %q let through", in, out, out[i:j+1])
			}
			i = j + 1
		case b < 0x20 && !bytes.Contains([]byte("\t\n\r\b\a\v\f"), []byte{b}), b == 0x7f:
			t.Fatalf("filter(%q) = %q: control %#x let through", in, out, b)
		case b >= 0x80:
			r, n := utf8.DecodeRune(out[i:])
			if r == utf8.RuneError && n <= 1 || r >= 0x80 && r <= 0x9f {
				t.Fatalf("filter(%q) = %q: invalid UTF-8 or C1 at %d", in, out, i)
			}
			i += n
		default:
			i++
		}
	}
}

func FuzzWriter(f *testing.F) {
	for _, tc := range cases {
		f.Add([]byte(tc.in), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint8) {
		var whole bytes.Buffer
		w := NewWriter(&whole)
		w.Write(in)
		w.Flush()
		checkSafe(t, in, whole.Bytes())
		// Cut into pieces of 1..cut bytes: the same output.
		var parts bytes.Buffer
		w = NewWriter(&parts)
		step := int(cut%16) + 1
		for i := 0; i < len(in); i += step {
			w.Write(in[i:min(i+step, len(in))])
		}
		w.Flush()
		if !bytes.Equal(parts.Bytes(), whole.Bytes()) {
			t.Fatalf("filter(%q) in pieces of %d = %q, whole %q", in, step, parts.Bytes(), whole.Bytes())
		}
		// Safe text passes unchanged.
		if utf8.Valid(in) && !bytes.ContainsFunc(in, func(r rune) bool {
			return r < 0x20 && !strings.ContainsRune("\t\n\r\b\a\v\f", r) || r >= 0x7f && r <= 0x9f
		}) && !bytes.Equal(whole.Bytes(), in) {
			t.Fatalf("filter(%q) = %q, want it unchanged", in, whole.Bytes())
		}
	})
}
