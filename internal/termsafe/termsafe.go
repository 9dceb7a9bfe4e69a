// Package termsafe makes untrusted output safe to show on a terminal.
//
// A program's output reaches the user's terminal emulator, which acts on
// the escape sequences in it. Some of those act far beyond the screen:
// OSC 52 writes the clipboard, CSI 6n (cursor position report), CSI c
// (device attributes), CSI ... t (window reports) and DECRQSS make the
// terminal type an answer into the program's input as if the user had,
// private modes turn on mouse or focus reports and keep the terminal
// changed after the program ends, titles and hyperlinks (OSC 0/2, OSC 8)
// misstate what the user sees, and DCS, APC, PM and SOS strings reach
// terminal-specific handlers. [Writer] lets through only what ordinary
// output needs and escapes the rest visibly, as less -R does:
//
//   - text: printable ASCII, valid UTF-8 except the C1 controls
//     U+0080..U+009F (8-bit CSI, OSC, DCS... in some terminals), and the
//     controls TAB, LF, CR, BS, BEL, VT, FF;
//   - CSI sequences "ESC [ params final" without intermediate bytes and
//     without a private-parameter prefix (< = > ?), of at most
//     [MaxSequence] bytes, whose final byte is: m (SGR: colours and
//     attributes), A B C D E F G H f d (cursor movement), J with
//     parameter 0, 1 or 2 and K (erase in display and line; not J 3,
//     which wipes the scrollback), @ P X (insert, delete, erase
//     characters), and s u without parameters (save and restore the
//     cursor).
//
// Everything else is escaped into printable text: ESC becomes "^[" (and
// the bytes of the sequence it started follow as ordinary text, so the
// terminal never sees an introducer: "ESC ] 52 ; c ; ... BEL" shows as
// "^[]52;c;...^G" — BEL is a terminator only inside such a string, and
// there is none), other C0 controls and DEL become caret notation ("^O",
// "^?"), a C1 control becomes "<U+009B>", and a byte that is not valid
// UTF-8 becomes "<9B>" (hex). The filter is a stream: a sequence or a
// UTF-8 character split across writes is held (at most MaxSequence bytes)
// until it is complete, so the result does not depend on how the input
// was cut. [Writer.Flush] escapes and writes what is held.
package termsafe

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// MaxSequence bounds an allowed CSI sequence, ESC and final byte
// included; a longer one is escaped as text.
const MaxSequence = 64

const esc = 0x1b

type state uint8

const (
	stText state = iota // text; pend may hold a partial UTF-8 character
	stEsc               // after ESC
	stCSI               // after ESC [; pend holds the sequence so far
)

// Writer filters what is written to it (see the package documentation)
// and writes the result to the underlying writer. It is not safe for
// concurrent use.
type Writer struct {
	w    io.Writer
	st   state
	pend []byte // a partial UTF-8 character (stText) or CSI sequence (stCSI)
	out  []byte
}

// NewWriter returns a Writer that filters into w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write filters p. It reports len(p) when the filtered bytes were all
// written (the output may be longer or shorter than p), or the underlying
// writer's error.
func (t *Writer) Write(p []byte) (int, error) {
	t.out = t.out[:0]
	for _, b := range p {
		t.step(b)
	}
	if len(t.out) > 0 {
		if _, err := t.w.Write(t.out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush escapes a held partial sequence or character and writes it.
func (t *Writer) Flush() error {
	t.out = t.out[:0]
	t.flushPending()
	if len(t.out) == 0 {
		return nil
	}
	_, err := t.w.Write(t.out)
	return err
}

// flushPending escapes what is held into out and returns to stText.
func (t *Writer) flushPending() {
	switch t.st {
	case stEsc:
		t.out = append(t.out, '^', '[')
	case stCSI:
		t.rejectCSI()
	case stText:
		for _, b := range t.pend {
			t.out = fmt.Appendf(t.out, "<%02X>", b)
		}
	}
	t.pend = t.pend[:0]
	t.st = stText
}

func (t *Writer) step(b byte) {
	switch t.st {
	case stEsc:
		if b == '[' {
			t.st = stCSI
			t.pend = append(t.pend[:0], esc, '[')
			return
		}
		// Any other sequence: its ESC is shown, its bytes are text.
		t.out = append(t.out, '^', '[')
		t.st = stText
		t.text(b)
	case stCSI:
		switch {
		case b >= 0x30 && b <= 0x3f: // parameter bytes
			if len(t.pend) == 2 && (b == '<' || b == '=' || b == '>' || b == '?') {
				t.pend = append(t.pend, b)
				t.rejectCSI()
				return
			}
			if len(t.pend)+1 >= MaxSequence {
				t.pend = append(t.pend, b)
				t.rejectCSI()
				return
			}
			t.pend = append(t.pend, b)
		case b >= 0x40 && b <= 0x7e: // final byte
			t.pend = append(t.pend, b)
			if allowedCSI(t.pend[2:len(t.pend)-1], b) {
				t.out = append(t.out, t.pend...)
				t.pend = t.pend[:0]
				t.st = stText
				return
			}
			t.rejectCSI()
		default:
			// An intermediate byte, a control or anything else ends
			// the sequence as text; b is then read afresh.
			t.rejectCSI()
			t.text(b)
		}
	default:
		t.text(b)
	}
}

// rejectCSI writes the held CSI sequence escaped and returns to stText.
func (t *Writer) rejectCSI() {
	t.out = append(t.out, '^', '[')
	for _, c := range t.pend[1:] { // printable bytes 0x20..0x7e
		t.out = append(t.out, c)
	}
	t.pend = t.pend[:0]
	t.st = stText
}

// text handles b in stText.
func (t *Writer) text(b byte) {
	if len(t.pend) > 0 || b >= 0x80 {
		t.utf8(b)
		return
	}
	switch {
	case b == esc:
		t.st = stEsc
	case b == '\t' || b == '\n' || b == '\r' || b == '\b' || b == '\a' || b == '\v' || b == '\f':
		t.out = append(t.out, b)
	case b < 0x20:
		t.out = append(t.out, '^', b+0x40)
	case b == 0x7f:
		t.out = append(t.out, '^', '?')
	default:
		t.out = append(t.out, b)
	}
}

// utf8 collects the bytes of a non-ASCII character in pend.
func (t *Writer) utf8(b byte) {
	if len(t.pend) > 0 && (b < 0x80 || b > 0xbf) {
		// Not a continuation byte: what is held is invalid.
		t.invalid()
		t.text(b)
		return
	}
	t.pend = append(t.pend, b)
	if !utf8.FullRune(t.pend) {
		return
	}
	r, n := utf8.DecodeRune(t.pend)
	if r == utf8.RuneError && n <= 1 {
		// The first byte cannot start this character.
		rest := append([]byte(nil), t.pend[1:]...)
		t.out = fmt.Appendf(t.out, "<%02X>", t.pend[0])
		t.pend = t.pend[:0]
		for _, c := range rest {
			t.text(c)
		}
		return
	}
	if r >= 0x80 && r <= 0x9f {
		t.out = fmt.Appendf(t.out, "<U+%04X>", r)
	} else {
		t.out = append(t.out, t.pend[:n]...)
	}
	t.pend = t.pend[:0]
}

// invalid escapes the held bytes of a character cut short.
func (t *Writer) invalid() {
	for _, c := range t.pend {
		t.out = fmt.Appendf(t.out, "<%02X>", c)
	}
	t.pend = t.pend[:0]
}

// allowedCSI reports whether the CSI sequence with these parameter bytes
// and final byte is let through.
func allowedCSI(params []byte, final byte) bool {
	switch final {
	case 'm', 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'f', 'd', 'K', '@', 'P', 'X':
		return true
	case 'J':
		p := string(params)
		return p == "" || p == "0" || p == "1" || p == "2"
	case 's', 'u':
		return len(params) == 0
	}
	return false
}
