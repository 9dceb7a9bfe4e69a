package shell

import "testing"

func TestSmoke(t *testing.T) {
	ts := newTestShell(t, nil)
	for _, sc := range []string{
		`echo hello; x=1; echo $x`,
		`echo $$ $PPID $UID $HOME; pwd; cd /tmp; pwd`,
		`pwd; echo $x`,
		`printf '%5.2f|%X|%q\n' 3.14159 255 'a b'`,
		`echo -ne 'a\tb\n'`,
		`seq 3 | wc`,
		`cat <(echo hi) <(echo there)`,
		`f() { echo in f $1; }; f 1; for i in 1 2 3; do echo $i; done`,
		`read -n 3 a <<< "abcdef"; echo $a`,
		`set -Eeuo pipefail; echo $-; false; echo no`,
		`echo $-`,
	} {
		out, errOut, code, err := ts.run(t, sc)
		t.Logf("%q -> %q %q %d %v", sc, out, errOut, code, err)
	}
}
