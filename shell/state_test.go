package shell

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestStatePersistsAcrossRuns(t *testing.T) {
	ts := newTestShell(t, nil)
	steps := []struct{ script, stdout string }{
		{`cd /tmp; x=1; export E=exp; f() { echo "f $x"; }; alias ll='echo listing'; set -o pipefail`, ""},
		{`pwd; echo $x; f; ll; sh -c 'echo $E'; echo $-`, "/tmp\n1\nf 1\nlisting\nexp\n\n"},
		{`exit 3`, ""},
		{`echo still $x; [[ -o pipefail ]] && echo pf`, "still 1\npf\n"},
		{`trap 'echo bye' EXIT`, "bye\n"},
		{`echo no trap now`, "no trap now\n"},
	}
	for _, st := range steps {
		out, errOut, _, err := ts.run(t, st.script)
		if err != nil || out != st.stdout {
			t.Fatalf("%q: stdout %q err %v stderr %q, want %q", st.script, out, err, errOut, st.stdout)
		}
	}
}

func TestSnapshotRestore(t *testing.T) {
	ts := newTestShell(t, nil)
	setup := `cd /tmp
s='a b'"'"'c'; export EXP=1; readonly RO=fixed
arr=(one 'two words' three); sparse=([3]=x [7]=y)
declare -A m=([k1]=v1 ['k 2']=v2)
declare -n ref=s
f() { echo "f: $1 $$"; local l=1; for i in 1 2; do echo $i; done; }
alias hi='echo hello'
set -o pipefail; shopt -s extglob
trap 'echo err trap' ERR
umask 027
unset USER`
	if _, errOut, code, err := ts.run(t, setup); code != 0 || err != nil {
		t.Fatalf("setup: %d %v %q", code, err, errOut)
	}
	st, err := ts.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// The state survives a JSON round trip.
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var st2 State
	if err := json.Unmarshal(b, &st2); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st, st2) {
		t.Fatalf("JSON round trip changed the state:\n%+v\n%+v", st, st2)
	}
	check := `pwd; echo "$s|$EXP|$RO"; echo "${arr[1]}|${#arr[@]}|${!sparse[@]}|${m[k1]}|$ref"
f x; hi; echo "$-"; [[ -o pipefail ]] && echo pf; umask; echo "user=${USER-unset}"
sh -c 'echo child $EXP'; false`
	want := "/tmp\na b'c|1|fixed\ntwo words|3|3 7|v1|a b'c\nf: x 2\n1\n2\nhello\n\npf\n0027\nuser=unset\nchild 1\nerr trap\n"
	ts2 := newTestShell(t, nil)
	if err := ts2.Restore(st2); err != nil {
		t.Fatal(err)
	}
	out, errOut, code, _ := ts2.run(t, check)
	if out != want {
		t.Errorf("restored shell:\n got %q\nwant %q\nstderr %q", out, want, errOut)
	}
	if code != 1 {
		t.Errorf("status %d, want 1", code)
	}
	// Snapshot of the restored shell equals the original (idempotent
	// sanitizing of functions included).
	st3, err := ts2.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Funcs, st3.Funcs) {
		t.Errorf("functions changed by restore:\n%q\n%q", st.Funcs, st3.Funcs)
	}
	if st.Dir != st3.Dir || !reflect.DeepEqual(st.Aliases, st3.Aliases) || st.ErrTrap != st3.ErrTrap {
		t.Errorf("state changed by restore:\n%+v\n%+v", st, st3)
	}
}

func TestClone(t *testing.T) {
	ts := newTestShell(t, nil)
	ts.run(t, `cd /tmp; x=orig; g() { echo g$x; }`)
	c, err := ts.Clone()
	if err != nil {
		t.Fatal(err)
	}
	ts.run(t, `x=changed; cd /`)
	ts.stdout.Reset()
	if _, err := c.Run(t.Context(), `echo $x; pwd; g`); err != nil {
		t.Fatal(err)
	}
	if got := ts.stdout.String(); got != "orig\n/tmp\ngorig\n" {
		t.Errorf("clone output %q", got)
	}
}

func TestSeededRandom(t *testing.T) {
	seed := uint64(42)
	outs := make([]string, 2)
	for i := range outs {
		ts := newTestShell(t, func(c *Config) { c.Seed = &seed })
		outs[i], _, _, _ = ts.run(t, `echo $RANDOM $RANDOM $RANDOM`)
	}
	if outs[0] != outs[1] || outs[0] == "" {
		t.Errorf("seeded $RANDOM differs: %q vs %q", outs[0], outs[1])
	}
}

func TestRestoreOnSameShellReplacesState(t *testing.T) {
	ts := newTestShell(t, nil)
	ts.run(t, `readonly R=1; g() { echo old; }; cd /tmp; X=1`)
	st, err := ts.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	st.Vars = append(st.Vars, Var{Name: "NEW", Kind: "string", Str: "v", Exported: true})
	delete(st.Funcs, "g")
	if err := ts.Restore(st); err != nil {
		t.Fatalf("restore over a shell with a read-only variable: %v", err)
	}
	out, _, _, _ := ts.run(t, `echo "$R $X $NEW $PWD"; type -t g || echo no-g; sh -c 'echo $NEW'`)
	if out != "1 1 v /tmp\nno-g\nv\n" {
		t.Errorf("stdout %q", out)
	}
	// A state that cannot be applied leaves the shell as it was.
	if err := ts.Restore(State{Dir: "/nonexistent"}); err == nil {
		t.Error("Restore accepted a missing directory")
	}
	out, _, _, _ = ts.run(t, `echo $X; pwd`)
	if out != "1\n/tmp\n" {
		t.Errorf("after a failed restore: %q", out)
	}
}
