package sandbox

import (
	"bytes"
	"errors"
	"syscall"
	"testing"
)

// TestCapWriterLineBoundary: the output is cut after the last whole line
// that fits, and every write from the cut on fails with EPIPE.
func TestCapWriterLineBoundary(t *testing.T) {
	cases := []struct {
		name      string
		writes    []string
		want      string
		truncated bool
	}{
		{"fits", []string{"ab\n", "cd\n"}, "ab\ncd\n", false},
		{"exact fill ends a line", []string{"abcd\n", "efgh\n"}, "abcd\nefgh\n", false},
		{"exact fill then nothing", []string{"abcd\n", "efg\nh"}, "abcd\nefg\nh", false},
		{"exact fill then more", []string{"abcd\n", "efg\nh", "i"}, "abcd\nefg\n", true},
		{"past the cap", []string{"abc\n", "de\nfghijk\n"}, "abc\nde\n", true},
		{"past the cap, no newline in reach", []string{"abc\n", "defghijkl"}, "abc\n", true},
		{"one long line", []string{"abcdefghijklmn"}, "abcdefghij", true},
		{"long line in two writes", []string{"abcdefgh", "ijklmn"}, "abcdefghij", true},
		{"exact fill of a long line", []string{"abcdefghij", "k"}, "abcdefghij", true},
		{"mid-line exact fill", []string{"abc", "defghij", "k"}, "abcdefghij", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			c := newCapWriter(&out, 10)
			var werr error
			for _, w := range tc.writes {
				if _, err := c.Write([]byte(w)); err != nil {
					werr = err
				}
			}
			c.flush()
			if out.String() != tc.want || c.Truncated() != tc.truncated {
				t.Fatalf("got %q truncated %v, want %q %v", out.String(), c.Truncated(), tc.want, tc.truncated)
			}
			if tc.truncated {
				if !errors.Is(werr, syscall.EPIPE) {
					t.Fatalf("write error %v, want EPIPE", werr)
				}
				if n, err := c.Write([]byte("\n")); n != 0 || !errors.Is(err, syscall.EPIPE) {
					t.Fatalf("write after the cut: %d %v", n, err)
				}
			}
		})
	}
}
