package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendStateJSON: AppendStateJSON gives exactly what encoding/json
// gives for every state, strings of any bytes included.
func FuzzAppendStateJSON(f *testing.F) {
	f.Add("/tmp", "x", "hello <&> \"q\" \\ \n\t\x00\x7f é \u2028 \xff", "f() { :; }", "pipefail", uint32(0o22), 3, true)
	f.Add("", "", "", "", "", uint32(0), 0, false)
	f.Fuzz(func(t *testing.T, dir, name, str, fn, opt string, umask uint32, idx int, flag bool) {
		st := State{
			Dir: dir, Umask: umask, ErrTrap: str,
			Vars: []Var{
				{Name: name, Kind: "string", Str: str, Exported: flag},
				{Name: "a", Kind: "indexed", List: []string{str, fn}, Indexes: []int{idx, idx + 1}, ReadOnly: !flag},
				{Name: "m", Kind: "associative", Map: map[string]string{str: fn, fn: opt}},
				{Name: "e", Kind: "string"},
			},
			Funcs:   map[string]string{name: fn, "g": str},
			Aliases: map[string]string{opt: str},
			Options: []string{opt}, ShellOptions: []string{},
		}
		if flag {
			st.Funcs, st.ShellOptions, st.Vars = nil, nil, nil
		}
		want, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendStateJSON(nil, st)
		if !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}
