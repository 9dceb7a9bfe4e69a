package runtime_test

import (
	"errors"
	"testing"

	"github.com/wasmbox/wasmbox/runtime"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		err  string
	}{
		{"1048576", 1 << 20, ""},
		{"64MiB", 64 << 20, ""},
		{"64mb", 64 << 20, ""},
		{"1G", 1 << 30, ""},
		{"512k", 512 << 10, ""},
		{" 2 GiB ", 2 << 30, ""},
		{"1T", 1 << 40, ""},
		{"0", 0, `bad size "0": must be positive`},
		{"", 0, `bad size "": want a number with an optional unit, e.g. 64MiB`},
		{"MiB", 0, `bad size "MiB": want a number with an optional unit, e.g. 64MiB`},
		{"1.5G", 0, `bad size "1.5G": unknown unit ".5G"`},
		{"10 parsecs", 0, `bad size "10 parsecs": unknown unit "parsecs"`},
		{"-1", 0, `bad size "-1": want a number with an optional unit, e.g. 64MiB`},
		{"99999999999T", 0, `bad size "99999999999T": too large`},
		{"99999999999999999999", 0, `bad size "99999999999999999999": strconv.ParseUint: parsing "99999999999999999999": value out of range`},
	}
	for _, tc := range tests {
		got, err := runtime.ParseBytes(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err || !errors.Is(err, runtime.ErrBadSize) {
				t.Errorf("%q: err = %v, want %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	if runtime.FormatBytes(256<<20) != "256MiB" || runtime.FormatBytes(1536<<10) != "1536KiB" || runtime.FormatBytes(17) != "17B" {
		t.Error("FormatBytes")
	}
}
