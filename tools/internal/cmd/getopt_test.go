package cmd

import (
	"fmt"
	"strings"
	"testing"
)

func TestGetopt(t *testing.T) {
	spec := []Option{
		{Short: 'n', Long: "lines", Arg: RequiredArg},
		{Short: 'v', Long: "verbose"},
		{Short: 'q'},
		{Long: "quiet"},
		{Long: "color", Arg: OptionalArg},
		{Short: 'o', Arg: OptionalArg},
	}
	tests := []struct {
		args string
		stop bool
		want string
	}{
		{"-n 5 a", false, "lines=5 | a"},
		{"-n5 -vq a b", false, "lines=5 verbose q | a b"},
		{"a -v b", false, "verbose | a b"},
		{"a -v b", true, " | a -v b"},
		{"--lines=3 --verb x", false, "lines=3 verbose | x"},
		{"--lines 3 -- -v", false, "lines=3 | -v"},
		{"- -q", false, "q | -"},
		{"--color --color=never -o -ox", false, "color color=never o o=x | "},
		{"--qu", false, "quiet | "},
		{"-x", false, "error: invalid option -- 'x'"},
		{"-n", false, "error: option requires an argument -- 'n'"},
		{"--lines", false, "error: option '--lines' requires an argument"},
		{"--nope", false, "error: unrecognized option '--nope'"},
		{"--verbose=1", false, "error: option '--verbose' doesn't allow an argument"},
		{"--co", false, "color | "},
	}
	for _, tt := range tests {
		opts, ops, err := Getopt(strings.Fields(tt.args), spec, tt.stop)
		var got string
		if err != nil {
			got = "error: " + err.Error()
		} else {
			var parts []string
			for _, o := range opts {
				if o.HasValue {
					parts = append(parts, o.Name+"="+o.Value)
				} else {
					parts = append(parts, o.Name)
				}
			}
			got = fmt.Sprintf("%s | %s", strings.Join(parts, " "), strings.Join(ops, " "))
		}
		if got != tt.want {
			t.Errorf("Getopt(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
