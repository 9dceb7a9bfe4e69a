package sandbox

import (
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/shell/wire"
)

// TestInterpStateScriptRefusesCode: the script that declares an
// interpreter snapshot's state in bash runs nothing of the snapshot's:
// a function that is more than its definition, a bad name or option is
// refused, and values are quoted.
func TestInterpStateScriptRefusesCode(t *testing.T) {
	bad := []wire.State{
		{Funcs: map[string]string{"f": "f() { :; }; touch /tmp/pwned"}},
		{Funcs: map[string]string{"f": "g() { :; }"}},
		{Funcs: map[string]string{"f": "f() { :; } &"}},
		{Funcs: map[string]string{"f": "f() {"}},
		{Aliases: map[string]string{"a;touch x": "b"}},
		{Vars: []wire.Var{{Name: "x=$(touch y)", Kind: "string"}}},
		{Vars: []wire.Var{{Name: "r", Kind: "nameref", Str: "a[$(touch y)]"}}},
		{Vars: []wire.Var{{Name: "v", Kind: "weird"}}},
		{Options: []string{"errexit; touch z"}},
		{ShellOptions: []string{"extglob\ntouch z"}},
	}
	for _, st := range bad {
		if script, err := interpStateScript(st); err == nil {
			t.Errorf("%+v accepted:\n%s", st, script)
		}
	}
	script, err := interpStateScript(wire.State{
		Funcs:   map[string]string{"f": "f() { echo \"f $V\"; } >>/dev/wasmbox/frame"},
		Aliases: map[string]string{"a": "echo 'it''s'"},
		Vars:    []wire.Var{{Name: "V", Kind: "string", Str: "$(touch x)'", Exported: true}, {Name: "RANDOM", Kind: "string", Str: "1"}},
		Umask:   0o22,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"f() { echo \"f $V\"; }\n", `declare -g -x V='$(touch x)'\''' 2>/dev/null`, "shopt -s expand_aliases\n", `alias a='echo '\''it'\'''\''s'\'''`, "umask 22\n"} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	if strings.Contains(script, "RANDOM") || strings.Contains(script, "wasmbox/frame") {
		t.Errorf("script:\n%s", script)
	}
}
