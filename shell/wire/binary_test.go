package wire

import (
	"reflect"
	"testing"
)

func sampleState(dir, name, str, fn, opt string, umask uint32, idx int, flag bool) State {
	st := State{
		Dir: dir, Umask: umask & 0o777, ErrTrap: str,
		Vars: []Var{
			{Name: name, Kind: "string", Str: str, Exported: flag},
			{Name: "a", Kind: "indexed", List: []string{str, fn}, Indexes: []int{idx & 0xffff, idx&0xffff + 1}, ReadOnly: !flag},
			{Name: "m", Kind: "associative", Map: map[string]string{str: fn, fn: opt}},
			{Name: "n", Kind: "nameref", Str: "a"},
			{Name: "e", Kind: "string"},
		},
		Funcs:   map[string]string{name + "f": fn, "g": str},
		Aliases: map[string]string{opt: str},
		Options: []string{opt}, ShellOptions: []string{"extglob"},
	}
	if flag {
		st.Vars, st.Options, st.ShellOptions = nil, nil, nil
		st.Funcs, st.Aliases = map[string]string{}, map[string]string{}
	}
	return st
}

// FuzzBinaryState: the binary form round-trips every state, and the
// decoder takes any bytes without panicking or allocating past them.
func FuzzBinaryState(f *testing.F) {
	f.Add("/tmp", "x", "hello <&> \"q\" \\ \n\t\x00\x7f é \xff", "f() { :; }", "pipefail", uint32(0o22), 3, true, []byte("WBS1"))
	f.Add("/", "y", "", "", "", uint32(0), 0, false, AppendState(nil, sampleState("/", "z", "v", "", "o", 0, 1, false)))
	f.Fuzz(func(t *testing.T, dir, name, str, fn, opt string, umask uint32, idx int, flag bool, raw []byte) {
		if st, err := DecodeBinaryState(raw); err == nil {
			if got, err := DecodeBinaryState(AppendState(nil, st)); err != nil || !reflect.DeepEqual(got, st) {
				t.Fatalf("re-encoding a decoded state: %v\n%+v\n%+v", err, got, st)
			}
		}
		st := sampleState("/"+dir, "v"+name, str, fn, opt, umask, idx, flag)
		if len(st.Vars) > 0 && !validName(st.Vars[0].Name) {
			return
		}
		got, err := DecodeBinaryState(AppendState(nil, st))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !reflect.DeepEqual(got, st) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, st)
		}
	})
}

func TestDecodeBinaryStateRejects(t *testing.T) {
	good := AppendState(nil, sampleState("/tmp", "x", "s", "f() { :; }", "o", 0o22, 1, false))
	for name, b := range map[string][]byte{
		"empty":        nil,
		"magic":        []byte("WBS0"),
		"truncated":    good[:len(good)-1],
		"trailing":     append(append([]byte(nil), good...), 0),
		"huge count":   append([]byte("WBS1\x01/\x00"), 0xff, 0xff, 0xff, 0xff, 0x0f),
		"relative dir": AppendState(nil, State{Dir: "tmp"}),
		"bad name":     AppendState(nil, State{Dir: "/", Vars: []Var{{Name: "1x", Kind: "string"}}}),
	} {
		if _, err := DecodeBinaryState(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := DecodeBinaryState(good); err != nil {
		t.Fatal(err)
	}
}
